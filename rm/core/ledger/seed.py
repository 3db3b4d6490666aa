"""Building a ledger's state directly, for what-if questions: the test harness's tiny clusters and the dry run.

Seeded nodes and apps are ordinary ledger entities, scheduled, placed and reported like any other; they skip
only the protocol that brings them about live (registration, submission, the AM's register and allocate
calls) and may start with capacity in use that no container of this ledger accounts for (``held``): a node
busy with something else, an app that already holds containers elsewhere.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Self

from common import ids
from common.ids import AppId, NodeId, QueuePath
from common.resources import Resources
from rm.core.deadlines_glue import DeadlineProgress
from rm.core.entities import App, Ask, Attempt, Node
from rm.core.events import Event, Journal
from rm.core.explain import WaitingNotes
from rm.core.ledger.base import LedgerBase
from rm.core.model import QueueView
from rm.core.reservations_glue import ReservationRelease
from rm.core.run_history import RunHistory
from rm.core.sizes_glue import SizeTracker

OWN_LISTENERS = (ReservationRelease, RunHistory, DeadlineProgress, SizeTracker, WaitingNotes)
"""The listeners every ledger subscribes itself; a fork keeps (copies of) these and no others."""


class _LeftBehind:
    """What a listener the fork does not keep becomes in it: it hears nothing."""

    hears: frozenset[type] = frozenset()

    def on_event(self, event: Event, journal: Journal) -> None:
        return None


LEFT_BEHIND = _LeftBehind()


class Seeding(LedgerBase):
    def fork(self) -> Self:
        """A deep copy to ask what-if questions of (the dry run): nothing it does reaches this ledger.

        The copy is non-durable (no journal kept, no tokens minted for containers), has no AM launches
        waiting, and hears only the ledger's own listeners (run history, reservation release, deadline progress, waiting
        notes), copied with it; listeners a driver subscribed, and the size tracker's watchers, are left behind.
        """
        memo: dict[int, Any] = {id(x): LEFT_BEHIND for x in self.listeners if not isinstance(x, OWN_LISTENERS)}
        memo[id(self.sizes.watchers)] = []  # the driver's metrics of sizes stay behind too
        clone = copy.deepcopy(self, memo)
        clone.listeners[:] = [x for x in clone.listeners if x is not LEFT_BEHIND]
        clone.config = replace(clone.config, durable=False)
        clone.journal = Journal(keep=False)
        clone.drain_launches()
        return clone

    def set_queues(self, queues: Mapping[QueuePath, QueueView]) -> None:
        """Replace the queue tree (apps keep their queue paths)."""
        self.queues = dict(queues)
        for app_id in self.active:
            self.views.app_changed(app_id)
        self.version += 1

    def seed_node(
        self,
        node_id: NodeId,
        *,
        host: str,
        rack: str,
        capability: Resources,
        held: Resources | None = None,
        schedulable: bool = True,
        now: float = 0.0,
    ) -> Node:
        port = node_id.rpartition(":")[2]
        node = Node(node_id=node_id, host=host, port=int(port) if port.isdigit() else 0, http_address="",
                    rack=rack, capability=capability, state="RUNNING" if schedulable else "UNHEALTHY",
                    registered_at=now, last_heartbeat=now)
        self.nodes[node_id] = node
        self._nodes_changed(node)
        if held is not None and not held.is_zero():
            self._allocate_on(node, held)
        self.version += 1
        return node

    def seed_app(
        self,
        app_id: AppId,
        *,
        queue: QueuePath,
        user: str,
        priority: int,
        submit_time: float,
        asks: Sequence[Ask] = (),
        am_ask: Resources | None = None,
        weight: float = 1.0,
        held: Resources | None = None,
        am_held: Resources | None = None,
        blacklist: Sequence[NodeId] = (),
        fair_share: Resources | None = None,
    ) -> App:
        """A running app whose AM asks ``asks`` (and, with ``am_ask``, still waits for its AM container)."""
        app = App(app_id=app_id, name=app_id, queue=queue, user=user, app_type="SHEPHERD", priority=priority,
                  am_resource=am_ask or Resources(), am_launch={}, max_attempts=1, tags=(), unmanaged=am_ask is None,
                  job_spec_json="", submit_time=submit_time, state="RUNNING", start_time=submit_time,
                  weight=weight)
        att = Attempt(attempt_id=ids.attempt_id(app_id, 1), app_id=app_id, number=1, state="RUNNING",
                      start_time=submit_time, last_contact=submit_time, registered=True,
                      am_ask_pending=am_ask is not None)
        for a in asks:
            att.asks[a.allocation_request_id] = a
        att.blacklist.update(blacklist)
        app.attempts.append(att)
        app.used = (held or Resources()) + (am_held or Resources())
        app.am_used = am_held or Resources()
        app.fair_share = fair_share or Resources()
        self.apps[app_id] = app
        self.active[app_id] = app
        self.views.app_changed(app_id)
        self.asks_grew = True
        self.version += 1
        return app
