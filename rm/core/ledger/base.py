"""The ledger's state and its lifecycle primitives: marking durable records, starting and ending attempts,
completing containers, finishing apps, losing nodes. The command mixins beside this module (apps, nodes,
the ApplicationMaster protocol, plans, recovery) validate requests and then call these; listeners hear of
each completed transition as an event (``rm.core.events``).

Pure: every method takes ``now``; none does I/O. Each mutation marks the durable records it changed in
the journal; the service drains them (:meth:`LedgerBase.drain_records`) and writes them to the store before
it answers the caller. Validation happens before any mutation, so a refused request changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from common import ids, tokens
from common.errors import ApplicationNotFound, BadRequest
from common.exits import (
    EXIT_ABORTED,
    EXIT_KILLED_AFTER_APP_COMPLETION,
    EXIT_KILLED_BY_RESOURCEMANAGER,
    EXIT_PREEMPTED,
    NOT_COUNTED_EXITS,
)
from common.ids import AppId, AttemptId, ContainerId, NodeId, QueuePath
from common.resources import Resources
from common.terms import SizeEstimate
from rm.core import deadlines_glue
from rm.core import reservations_glue as glue
from rm.core.admission import Admission, AdmitAll
from rm.core.deadlines.system import DeadlineSystem
from rm.core.deadlines_glue import DeadlineProgress
from rm.core.entities import App, Attempt, CompletedStatus, Container, Node
from rm.core.events import (
    AppFinished,
    AppStarted,
    AttemptEnded,
    ContainerCompleted,
    Event,
    Journal,
    Listener,
)
from rm.core.explain import WaitingNotes
from rm.core.ledger import limits
from rm.core.ledger.keys import KeyRing
from rm.core.ledger.node_facts import NodeFacts
from rm.core.ledger.views import ViewCache
from rm.core.model import ClusterSnapshot, LayoutMemo, QueueView
from rm.core.plan import Plan
from rm.core.records import ContainerRecord, MetaRecord, Record, SloDecisionRecord
from rm.core.reservation.system import ReservationSystem
from rm.core.run_history import RunHistory
from rm.core.sizes_glue import SizeTracker
from rm.core.state_types import CoreConfig, LaunchAM


class LedgerBase:
    """Nodes, apps, attempts, containers and asks, and the transitions between their states."""

    def __init__(
        self,
        meta: MetaRecord,
        queues: Mapping[QueuePath, QueueView],
        config: CoreConfig | None = None,
        *,
        reservations: ReservationSystem | None = None,
        admission: Admission | None = None,
    ) -> None:
        self.meta = meta
        self.config = config or CoreConfig()
        self.admission: Admission = admission or AdmitAll()  # asked once per new submission
        self.queues = dict(queues)
        self.nodes: dict[NodeId, Node] = {}
        self.apps: dict[AppId, App] = {}
        self.active: dict[AppId, App] = {}  # the apps not yet in a final state
        # ended apps whose end the store does not hold yet (YARN's FINAL_SAVING), with the state they had before
        self.saving: dict[AppId, str] = {}
        self.containers: dict[ContainerId, Container] = {}
        # after a restart: containers stored as allocated whose NodeManager has yet to say whether they run
        self.unconfirmed: dict[ContainerId, ContainerRecord] = {}
        self.version = 0
        self.journal = Journal(keep=self.config.durable)
        self._launches: list[LaunchAM] = []
        self.amrm_key = bytes.fromhex(meta.amrm_key_hex)
        # the container-token keys (container and NM tokens): the one that signs, and those NodeManagers accept
        self.container_keys = KeyRing.from_records(meta.container_keys, meta.container_key_hex)
        self.last_plan: Plan | None = None
        # since this process started: containers_allocated, leftover_containers, containers_preempted,
        # reservation_reclaims, placed_in_reservation, reservation_extension_containers (DRA)
        self.counters: dict[str, int] = {"leftover_containers": 0, "containers_allocated": 0}
        self.preempted_by_reason: dict[str, int] = {}  # containers preempted, by the plan's reason
        self.dra_outcomes: dict[str, int] = {}  # dynamic reprovisioning decisions, by outcome
        # reservable queues' plans (Morpheus); a simulation brings its own, configured
        self.reservations = reservations if reservations is not None else glue.new_system(meta)
        self._plan_capacity: Resources | None = None
        self.slo_decisions: dict[str, SloDecisionRecord] = {}  # per recurring job: accepted or rejected
        # lifecycle listeners, in the order they hear each event: reservations let go of a finished app
        # before its run is recorded; waiting diagnostics follow every applied plan
        self.listeners: list[Listener] = []
        self._hearing: dict[type, list[Listener]] = {}
        # deadlines you can buy (MRM): per leaf queue a book of claims, fed by completed containers and runs
        self.deadlines = DeadlineSystem(self.config.deadlines)
        # the RM's own measure of each app's size, and SLearn's sampling gate when the driver turns it on
        self.sizes = SizeTracker(self.report_size, self.views_changed, history=self.config.durable,
                                 config=self.config.sampling)
        self._views_now = 0.0
        for listener in (glue.ReservationRelease(self.reservations), RunHistory(self.reservations.config.step_s),
                         DeadlineProgress(self.deadlines, self.sizes.run_summary), self.sizes,
                         WaitingNotes(self.apps)):
            self.subscribe(listener)
        self.views = ViewCache()
        self.layout = LayoutMemo()  # what the node index derives from the nodes alone, until they change
        # scheduling hints for a driver that runs cycles only when they can place something (the simulator):
        # capacity came free / an ask grew since the driver last cleared them
        self.capacity_freed = True
        self.asks_grew = False
        self.accepted_amounts = limits.AcceptedAmounts()  # ask sizes already checked against the limits now
        self._facts: NodeFacts | None = None  # free room, capacity, types, bounds of the nodes (None: not asked yet)
        self.attached_views = False  # the last snapshot had apps in reservations
        self.amrm_tokens: tokens.Remembered[tuple[AppId, AttemptId]] = tokens.Remembered()  # the attempts they stand for

    @property
    def container_key(self) -> bytes:
        """The container-token key that signs now."""
        return self.container_keys.current.key

    @property
    def container_key_id(self) -> int:
        return self.container_keys.current.key_id

    def _mark(self, item: Record | App | Attempt | Node | Container) -> None:
        """``item`` changed: its durable record goes to the journal (built only when the ledger is durable)."""
        self.version += 1
        if isinstance(item, App):
            item.changes += 1
        if self.config.durable:
            self.journal.mark(item.record() if isinstance(item, App | Attempt | Node | Container) else item)

    def mark_meta(self) -> None:
        self._mark(self.meta)

    def _touch_app(self, app: App) -> None:
        self.views.app_changed(app.app_id)
        self._mark(app)

    def _nodes_changed(self, node: Node) -> None:
        """A node registered, changed state or capability: views, headroom, limits and layout follow."""
        self.views.node_changed(node.node_id)
        self.layout = LayoutMemo()
        if self._facts is not None:
            self._facts.node_changed(node)

    def _allocate_on(self, node: Node, r: Resources) -> None:
        before = node.allocated
        node.allocated = before + r
        self.views.node_changed(node.node_id)
        if node.schedulable and self._facts is not None:
            self._facts.allocated(node, before, r)

    def _free_on(self, node: Node, r: Resources) -> None:
        before = node.allocated
        node.allocated = before - r
        self.views.node_changed(node.node_id)
        if node.schedulable and self._facts is not None:
            self._facts.freed(node, before, r)

    def headroom(self) -> Resources:
        """The free room of the schedulable nodes."""
        return self._node_facts().free()

    def _free_afresh(self) -> Resources:
        free = Resources()
        for n in self.nodes.values():
            if n.schedulable:
                free = free + (n.capability - n.allocated).clamp_min_zero()
        return free

    def schedulable_nodes(self) -> int:
        return self._node_facts().schedulable

    def resource_types(self) -> frozenset[str]:
        """The configured types (yarn.resource-types), else memory-mb, vcores and those the nodes offer."""
        if self.config.resource_types is not None:
            return self.config.resource_types
        return self._node_facts().resource_types()

    def _node_facts(self) -> NodeFacts:
        """Built from the nodes when first asked for, then kept as they change (``node_facts``)."""
        if self._facts is None:
            self._facts = NodeFacts(self.nodes.values())
        return self._facts

    def drain_records(self) -> list[Record]:
        records, meta = glue.drain(self.reservations, self.meta)
        if meta is not None:
            self.meta = meta
            self.mark_meta()
        return self.journal.drain() + records

    def decide_slo(self, decision: SloDecisionRecord) -> None:
        """Record a user's decision on a recurring job's SLO proposal (persisted with the next drain)."""
        self.slo_decisions[decision.job] = decision
        self._mark(decision)

    def drain_launches(self) -> list[LaunchAM]:
        out, self._launches = self._launches, []
        return out

    def snapshot(self, now: float | None = None) -> ClusterSnapshot:
        """The cycle's read-only view (``plans.PlanCommands`` builds it)."""
        raise NotImplementedError

    def subscribe(self, listener: Listener) -> None:
        """Hear the lifecycle events it ``hears`` from now on, after the listeners already subscribed."""
        self.listeners.append(listener)
        for kind in listener.hears:
            self._hearing.setdefault(kind, []).append(listener)

    def _emit(self, event: Event) -> None:
        for listener in self._hearing.get(type(event), ()):
            listener.on_event(event, self.journal)

    def max_allocation(self) -> Resources | None:
        """Per type, the configured maximum where one is set, else the largest node's amount; None with neither."""
        configured, nodes = self.config.maximum_allocation, self._node_facts().max_allocation()
        if configured is None or nodes is None:
            return configured if nodes is None else nodes
        return Resources({**nodes.amounts, **configured.amounts})

    def _resource_limits(self) -> limits.Limits:
        """What ``limits.check_resource`` checks against: the cluster's types (once known: configured, or a node
        registered) and its maximum allocation."""
        known = self.resource_types() if self.config.resource_types is not None or self.nodes else None
        return limits.Limits(known=known, maximum=self.max_allocation(), configured=self.config.maximum_allocation,
                             bounded=self._node_facts().max_allocation() is not None)

    def _check_resource(self, r: Resources, what: str) -> None:
        limits.check_resource(r, what, self._resource_limits())

    def _start_attempt(self, app: App, now: float) -> Attempt:
        number = len(app.attempts) + 1
        att = Attempt(
            attempt_id=ids.attempt_id(app.app_id, number), app_id=app.app_id, number=number,
            state="LAUNCHED" if app.unmanaged else "SCHEDULED", start_time=now, last_contact=now,
            am_ask_pending=not app.unmanaged,
        )
        app.attempts.append(att)
        app.progress = 0.0
        if att.am_ask_pending:
            self.asks_grew = True
        self._mark(att)
        self._touch_app(app)
        return att

    def get_app(self, app_id: str) -> App:
        app = self.apps.get(AppId(app_id))
        if app is None:
            try:
                ids.parse_app_id(app_id)
            except ValueError as exc:
                raise BadRequest(str(exc)) from exc
            raise ApplicationNotFound(f"application with id '{app_id}' doesn't exist in RM.")
        return app


    def _finish_app(self, app: App, state: str, final_status: str, diag: str, now: float) -> None:
        if self.journal.keep and not app.final:  # reported as it was until the service stores it (AppCommands)
            self.saving[app.app_id] = app.state
        app.state = state
        app.final_status = final_status
        app.diagnostics = diag
        app.finish_time = now
        if state == "FINISHED" and final_status == "SUCCEEDED":
            app.progress = 1.0
        self._release_app_containers(app, now, EXIT_KILLED_AFTER_APP_COMPLETION,
                                     "Container killed by the ApplicationMaster's application ending.")
        self.active.pop(app.app_id, None)
        self.capacity_freed = True
        self._emit(AppFinished(app, now))
        app.spans.clear()  # its run is recorded: the listeners have read them
        self._touch_app(app)

    def _release_app_containers(self, app: App, now: float, exit_status: int, diag: str) -> None:
        for cid in list(app.containers):
            c = self.containers.get(cid)
            if c is not None and c.live:
                self._complete_container(c, exit_status, diag, now, notify=False)
                node = self.nodes.get(c.node_id)
                if node is not None:
                    node.to_cleanup.add(cid)
        for node_id in app.ran_on:  # the NodeManagers that ran its containers clean up after it (YARN's ranNodes)
            node = self.nodes.get(node_id)
            if node is not None and (node.schedulable or node.state == "DECOMMISSIONING"):
                node.apps_to_cleanup.add(app.app_id)

    def _end_attempt(self, app: App, att: Attempt, state: str, diag: str, *, counts: bool, now: float,
                     keep: frozenset[ContainerId] = frozenset()) -> None:
        att.state = state
        att.diagnostics = diag
        att.finish_time = now
        att.counts_as_failure = counts and state == "FAILED"
        att.asks.clear()
        att.am_ask_pending = False
        att.undelivered.clear()
        if att.counts_as_failure:
            app.failed_attempts += 1
        # containers of an ended attempt do not outlive it
        for cid in list(app.containers):
            c = self.containers.get(cid)
            if c is not None and c.live and c.attempt_id == att.attempt_id and cid not in keep:
                self._complete_container(c, EXIT_KILLED_BY_RESOURCEMANAGER,
                                         f"Container of a completed attempt {att.attempt_id}", now, notify=False)
                node = self.nodes.get(c.node_id)
                if node is not None:
                    node.to_cleanup.add(cid)
        self._mark(att)
        self._touch_app(app)
        self._emit(AttemptEnded(app, att, now))

    def _attempt_failed(self, app: App, att: Attempt, diag: str, *, counts: bool, now: float) -> None:
        """An attempt ended without unregistering: retry or fail the app. With keep_containers, its running
        containers pass to the next attempt (YARN's keepContainersAcrossApplicationAttempts)."""
        keep = frozenset(cid for cid in app.containers if app.keep_containers and (c := self.containers.get(cid))
                         and c.attempt_id == att.attempt_id and not c.is_am and c.state in ("ACQUIRED", "RUNNING"))
        self._end_attempt(app, att, "FAILED", diag, counts=counts, now=now, keep=keep)
        if app.failed_attempts >= app.max_attempts:
            self._finish_app(
                app, "FAILED", "FAILED",
                f"Application {app.app_id} failed {app.failed_attempts} times (global limit "
                f"={self.config.max_app_attempts}; local limit is ={app.max_attempts}) due to: {diag}",
                now,
            )
        else:
            app.state = "ACCEPTED"
            new = self._start_attempt(app, now)
            for cid in sorted(keep):
                c = self.containers[cid]
                c.attempt_id = new.attempt_id
                if not c.on_node:  # its AM may have died before starting it: its node must say so soon
                    c.confirm_by = now + max(3.0, 3 * self.config.heartbeat_interval_s)
                new.inherited.append(cid)
                self._mark(c)
            if app.keep_containers:  # what ended while the failed AM could not hear it, the next one hears
                new.completed.extend(att.completed)


    def _kill_app(self, app: App, diagnostics: str, now: float) -> None:
        diag = diagnostics or "Application killed by user."
        cur = app.current
        if cur is not None and not cur.final:
            self._end_attempt(app, cur, "KILLED", diag, counts=False, now=now)
        self._finish_app(app, "KILLED", "KILLED", diag, now)

    def _app_started(self, app: App, now: float) -> None:
        """The app's AM runs (its container started, or it registered): RUNNING."""
        app.state = "RUNNING"
        self._emit(AppStarted(app, now))
        self._touch_app(app)

    def _lose_node(self, node: Node, state: str, diag: str, now: float) -> None:
        node.state = state
        self._nodes_changed(node)
        for cid in list(node.containers):
            c = self.containers.get(cid)
            if c is not None and c.live:
                self._complete_container(c, EXIT_ABORTED, diag, now)
        node.to_cleanup.clear()
        node.apps_to_cleanup.clear()
        self._mark(node)


    def _attempt(self, app: App, attempt_id: str) -> Attempt | None:
        for a in app.attempts:
            if a.attempt_id == attempt_id:
                return a
        return None

    def _complete_container(
        self,
        c: Container,
        exit_status: int,
        diag: str,
        now: float,
        *,
        notify: bool = True,
        start_time: float = 0.0,
    ) -> None:
        c.state = "COMPLETED"
        c.exit_status = exit_status
        c.diagnostics = diag
        c.finish_time = now
        if start_time and not c.start_time:
            c.start_time = start_time
        node = self.nodes.get(c.node_id)
        if node is not None:
            node.containers.discard(c.container_id)
            self._free_on(node, c.resource)
        self.capacity_freed = True
        app = self.apps.get(c.app_id)
        self._mark(c)
        if app is None:
            return
        self.views.app_changed(app.app_id)
        app.containers.discard(c.container_id)
        app.used = app.used - c.resource
        if c.is_am:
            app.am_used = app.am_used - c.resource
        if exit_status == EXIT_PREEMPTED:
            app.note_preempted(c.resource, is_am=c.is_am)
        if c.start_time:
            secs = max(0.0, now - c.start_time)
            app.memory_seconds += c.resource.memory_mb * secs
            app.vcore_seconds += c.resource.vcores * secs
            if self.config.durable:  # for its run's record in the history
                app.spans.append((c.start_time, now, c.resource))
        att = self._attempt(app, c.attempt_id)
        if att is None:
            return
        if c.container_id in att.undelivered:
            att.undelivered.remove(c.container_id)
            # never handed to its AM (preempted, its node lost): the AM still counts it as asked for, so the
            # ask gets it back, as YARN reschedules a container killed before it was acquired
            ask = att.asks.get(c.allocation_request_id)
            if ask is not None and not c.is_am and not att.final:
                ask.num_containers += 1
                self.asks_grew = True
        if c.is_am:
            if att.state == "FINISHING":  # it unregistered: its attempt is done once its container is (app or not)
                self._end_attempt(app, att, "FINISHED", att.diagnostics, counts=False, now=now)
            elif not att.final and not app.final:
                if not att.registered and exit_status == 0:
                    # a plain command as the AM (it never registers): exit 0 is success
                    self._end_attempt(app, att, "FINISHED", diag, counts=False, now=now)
                    self._finish_app(app, "FINISHED", "SUCCEEDED", "", now)
                else:
                    counts = exit_status not in NOT_COUNTED_EXITS
                    self._attempt_failed(
                        app, att,
                        f"AM Container for {att.attempt_id} exited with exitCode: {exit_status}. {diag}".strip(),
                        counts=counts, now=now,
                    )
        elif notify and not att.final:
            att.completed.append(CompletedStatus(c.container_id, exit_status, diag, c.start_time, now))
        self._emit(ContainerCompleted(c, now))

    def reservation_plan(self) -> ReservationSystem:
        """The reservation system, with its queues' capacities brought up to date with the cluster."""
        self._plan_capacity = glue.sync_capacities(self._node_facts().planned(), self.queues, self.reservations,
                                                   self._plan_capacity)
        return self.reservations

    def views_changed(self, app_id: AppId) -> None:
        """The size tracker changed the app's view or its gate (kept in the app's record)."""
        if (app := self.apps.get(app_id)) is not None:
            app.sizing = self.sizes.stored(app_id)
            self._touch_app(app)

    def report_size(self, app_id: str, size: SizeEstimate | None) -> None:
        """A size estimate for the app, kept unless a stronger source already gave one (``common.terms``);
        None forgets the estimate."""
        app = self.get_app(app_id)
        if size is not None and not size.outranks(app.terms.size):
            return
        if app.terms.size != size:
            app.terms = app.terms.with_size(size)
            self.views.app_changed(app.app_id)

    def deadline_system(self) -> DeadlineSystem:
        """The deadline system, with its books' capacities brought up to date with the cluster and the plans."""
        deadlines_glue.sync_capacities(self.deadlines, self._node_facts().planned(), self.queues,
                                       self.reservation_plan())
        return self.deadlines

    def cluster_capacity(self) -> Resources:
        """The total capability of the schedulable nodes."""
        return self._node_facts().capacity()
