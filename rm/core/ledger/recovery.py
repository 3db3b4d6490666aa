"""Rebuilding the ledger from the state store after an RM restart."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Self

from common.exits import EXIT_KILLED_BY_RESOURCEMANAGER, EXIT_PREEMPTED
from common.ids import AppId, AttemptId, ContainerId, NodeId, QueuePath
from common.resources import Resources
from common.terms import AppTerms
from rm.core import deadlines_glue
from rm.core.admission import Admission
from rm.core.entities import App, Attempt, Node
from rm.core.ledger.base import LedgerBase
from rm.core.model import QueueView
from rm.core.queues import QueueConfigError, resolve_queue
from rm.core.records import MetaRecord, StoredState
from rm.core.state_types import CoreConfig


class Recovery(LedgerBase):

    @classmethod
    def recover(
        cls,
        stored: StoredState,
        queues: Mapping[QueuePath, QueueView],
        config: CoreConfig | None,
        *,
        now: float,
        admission: Admission | None = None,
    ) -> Self:
        """Rebuild from the store. Unfinished apps fail over to a new attempt; containers of the
        previous RM life are gone (their NodeManagers are told to clean them up)."""
        meta = stored.meta or cls.fresh_meta(int(now * 1000))
        meta = MetaRecord(
            cluster_timestamp=meta.cluster_timestamp,
            next_app_seq=meta.next_app_seq,
            epoch=meta.epoch + 1,
            amrm_key_hex=meta.amrm_key_hex,
            container_key_hex=meta.container_key_hex,
            extra=meta.extra,
        )
        st = cls(meta, queues, config, admission=admission)
        st.restore(stored, now=now)
        return st

    @classmethod
    def fresh(cls, queues: Mapping[QueuePath, QueueView], config: CoreConfig | None, *, now: float,
              admission: Admission | None = None) -> Self:
        """A ledger for a new, empty store: a new cluster timestamp and new token keys."""
        st = cls(cls.fresh_meta(int(now * 1000)), queues, config, admission=admission)
        st.mark_meta()
        return st

    def restore(self, stored: StoredState, *, now: float) -> None:
        """Load the stored nodes, apps, attempts and containers into this (new) ledger."""
        self.mark_meta()
        self.reservations.restore(stored.reservations)
        self.slo_decisions = {d.job: d for d in stored.slo_decisions}
        for n in stored.nodes:
            host, _, port = n.node_id.rpartition(":")
            self.nodes[NodeId(n.node_id)] = Node(
                node_id=NodeId(n.node_id), host=host, port=int(port or 0), http_address=n.http_address,
                rack=n.rack, capability=Resources(n.capability),
                state="LOST" if n.state == "LOST" else "NEW",  # must re-register to be used
                registered_at=n.registered_at, last_heartbeat=now, health_report=n.health_report,
            )
            self._nodes_changed(self.nodes[NodeId(n.node_id)])
        by_app: dict[str, list[Any]] = {}
        for a in stored.attempts:
            by_app.setdefault(a.app_id, []).append(a)
        for r in stored.apps:
            try:
                queue = resolve_queue(self.queues, r.queue).path
            except QueueConfigError:
                queue = QueuePath(r.queue)
            app = App(
                app_id=AppId(r.app_id), name=r.name, queue=queue, user=r.user, app_type=r.app_type,
                priority=r.priority, am_resource=Resources(r.am_resource), am_launch=dict(r.am_launch),
                max_attempts=r.max_attempts, tags=tuple(r.tags), unmanaged=r.unmanaged,
                job_spec_json=r.job_spec_json, submit_time=r.submit_time, state=r.state,
                final_status=r.final_status, diagnostics=r.diagnostics, tracking_url=r.tracking_url,
                progress=r.progress, start_time=r.start_time, launch_time=r.launch_time,
                finish_time=r.finish_time, failed_attempts=r.failed_attempts,
                lifetime_expiry=r.lifetime_expiry, reservation_id=r.reservation_id, inputs=tuple(r.inputs),
                outputs=tuple(r.outputs), inputs_read=r.state == "RUNNING", terms=AppTerms.from_dict(r.terms),
            )
            for ar in sorted(by_app.get(r.app_id, []), key=lambda x: x.number):
                app.attempts.append(Attempt(
                    attempt_id=AttemptId(ar.attempt_id), app_id=app.app_id, number=ar.number,
                    state=ar.state, start_time=ar.start_time,
                    am_container_id=ContainerId(ar.am_container_id) if ar.am_container_id else None,
                    node_id=NodeId(ar.node_id) if ar.node_id else None, finish_time=ar.finish_time,
                    diagnostics=ar.diagnostics, counts_as_failure=ar.counts_as_failure, host=ar.host,
                    rpc_port=ar.rpc_port, tracking_url=ar.tracking_url,
                ))
            self.apps[app.app_id] = app
            if not app.final:
                self.active[app.app_id] = app
            if not app.final:
                cur = app.current
                if cur is not None and not cur.final:
                    self._end_attempt(app, cur, "FAILED", "ResourceManager restarted", counts=False, now=now)
                if app.queue not in self.queues:
                    self._finish_app(app, "FAILED", "FAILED", f"queue {app.queue} no longer exists", now)
                else:
                    app.state = "ACCEPTED"
                    self._start_attempt(app, now)
        for c in stored.containers:
            owner = self.apps.get(AppId(c.app_id))
            if owner is not None:
                owner.ran_on.add(NodeId(c.node_id))
            if owner is not None and c.state == "COMPLETED" and c.exit_status == EXIT_PREEMPTED:
                owner.note_preempted(Resources(c.resource), is_am=c.is_am)
            if owner is not None and not owner.final and c.start_time:  # its run's skyline keeps them
                end = c.finish_time if c.state == "COMPLETED" and c.finish_time else now
                owner.spans.append((c.start_time, end, Resources(c.resource)))
            if c.state != "COMPLETED":
                node = self.nodes.get(NodeId(c.node_id))
                if node is not None:
                    node.to_cleanup.add(ContainerId(c.container_id))
                self._mark(replace(c, state="COMPLETED", exit_status=EXIT_KILLED_BY_RESOURCEMANAGER,
                                 diagnostics="ResourceManager restarted", finish_time=now))
        self._restore_deadlines(stored, now)
        self.version += 1

    def _restore_deadlines(self, stored: StoredState, now: float) -> None:
        """The estimators' history, and every unfinished app's bought deadline laid again (its work starts
        over: containers of the previous RM life are gone)."""
        deadlines = self.deadline_system()
        for run in stored.work_runs:
            deadlines.record_run(deadlines_glue.run_of(run))
        for app in sorted(self.active.values(), key=lambda a: (a.terms.deadline or 0.0, a.app_id)):
            if app.terms.claim is not None:
                deadlines.restore(app.app_id, app.queue, app.terms, 0.0, now)

