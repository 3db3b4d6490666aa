"""ClusterState: the RM's in-memory truth and its state machine (nodes, apps, attempts, containers).

Pure: every method takes ``now``; none does I/O. Each mutation marks the records it changed; the
service drains them with :meth:`ClusterState.drain_records` and writes them to the store before it
answers the caller. Validation happens before any mutation, so a refused request changes nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from common import ids, tokens
from common.errors import ApplicationNotFound, BadRequest, Conflict, InvalidResourceRequest, NotFound
from common.exits import (
    EXIT_ABORTED,
    EXIT_KILLED_AFTER_APP_COMPLETION,
    EXIT_KILLED_BY_RESOURCEMANAGER,
    EXIT_PREEMPTED,
    NOT_COUNTED_EXITS,
)
from common.ids import AppId, AttemptId, ContainerId, NodeId, QueuePath
from common.resources import MEMORY, VCORES, Resources, component_max
from rm.core import am_protocol
from rm.core import reservations_glue as glue
from rm.core import run_history as history
from rm.core.entities import App, Ask, Attempt, CompletedStatus, Container, Node
from rm.core.explain import primary_reason, rejections_by_app, waiting_line
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView, QueueView
from rm.core.plan import Place, Plan
from rm.core.queues import QueueConfigError, resolve_queue
from rm.core.records import (
    AppRecord,
    AttemptRecord,
    ContainerRecord,
    DatasetAccessRecord,
    JobRunRecord,
    MetaRecord,
    NodeRecord,
    Record,
    SloDecisionRecord,
    StoredState,
)
from rm.core.reservation.records import ReservationRecord
from rm.core.reservation.system import ReservationSystem
from rm.core.reservation.view import EMPTY_VIEW
from rm.core.state_types import (  # re-exported: callers import them from here
    AM_ASK_ID,
    AllocateResult,
    CoreConfig,
    HeartbeatResult,
    LaunchAM,
    NodeStatus,
    SubmitSpec,
)


class ClusterState:
    def __init__(
        self,
        meta: MetaRecord,
        queues: Mapping[QueuePath, QueueView],
        config: CoreConfig | None = None,
    ) -> None:
        self.meta = meta
        self.config = config or CoreConfig()
        self.queues = dict(queues)
        self.nodes: dict[NodeId, Node] = {}
        self.apps: dict[AppId, App] = {}
        self.containers: dict[ContainerId, Container] = {}
        self.version = 0
        self._dirty: dict[tuple[str, str], Record] = {}
        self._launches: list[LaunchAM] = []
        self.amrm_key = bytes.fromhex(meta.amrm_key_hex)
        self.container_key = bytes.fromhex(meta.container_key_hex)
        self.last_plan: Plan | None = None
        self._waiting: set[AppId] = set()  # apps whose diagnostics show a waiting reason
        # since this process started: containers_allocated, leftover_containers, containers_preempted,
        # reservation_reclaims, placed_in_reservation, reservation_extension_containers (DRA)
        self.counters: dict[str, int] = {"leftover_containers": 0, "containers_allocated": 0}
        self.preempted_by_reason: dict[str, int] = {}  # containers preempted, by the plan's reason
        self.dra_outcomes: dict[str, int] = {}  # dynamic reprovisioning decisions, by outcome
        self.reservations = glue.new_system(meta)  # reservable queues' plans (Morpheus)
        self._plan_capacity: Resources | None = None
        self.slo_decisions: dict[str, SloDecisionRecord] = {}  # per recurring job: accepted or rejected

    # ------------------------------------------------------------------ construction and recovery

    @staticmethod
    def fresh_meta(cluster_timestamp: int) -> MetaRecord:
        return MetaRecord(
            cluster_timestamp=cluster_timestamp,
            next_app_seq=1,
            epoch=0,
            amrm_key_hex=secrets.token_hex(32),
            container_key_hex=secrets.token_hex(32),
        )

    @classmethod
    def recover(
        cls,
        stored: StoredState,
        queues: Mapping[QueuePath, QueueView],
        config: CoreConfig | None,
        *,
        now: float,
    ) -> ClusterState:
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
        st = cls(meta, queues, config)
        st._mark_meta()
        st.reservations.restore(stored.reservations)
        st.slo_decisions = {d.job: d for d in stored.slo_decisions}
        for n in stored.nodes:
            host, _, port = n.node_id.rpartition(":")
            st.nodes[NodeId(n.node_id)] = Node(
                node_id=NodeId(n.node_id), host=host, port=int(port or 0), http_address=n.http_address,
                rack=n.rack, capability=Resources(n.capability),
                state="LOST" if n.state == "LOST" else "NEW",  # must re-register to be used
                registered_at=n.registered_at, last_heartbeat=now, health_report=n.health_report,
            )
        by_app: dict[str, list[Any]] = {}
        for a in stored.attempts:
            by_app.setdefault(a.app_id, []).append(a)
        for r in stored.apps:
            try:
                queue = resolve_queue(st.queues, r.queue).path
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
                outputs=tuple(r.outputs), inputs_read=r.state == "RUNNING",
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
            st.apps[app.app_id] = app
            if not app.final:
                cur = app.current
                if cur is not None and not cur.final:
                    st._end_attempt(app, cur, "FAILED", "ResourceManager restarted", counts=False, now=now)
                if app.queue not in st.queues:
                    st._finish_app(app, "FAILED", "FAILED", f"queue {app.queue} no longer exists", now)
                else:
                    app.state = "ACCEPTED"
                    st._start_attempt(app, now)
        for c in stored.containers:
            owner = st.apps.get(AppId(c.app_id))
            if owner is not None and c.state == "COMPLETED" and c.exit_status == EXIT_PREEMPTED:
                owner.note_preempted(Resources(c.resource), is_am=c.is_am)
            if owner is not None and not owner.final and c.start_time:  # its run's skyline keeps them
                end = c.finish_time if c.state == "COMPLETED" and c.finish_time else now
                owner.spans.append((c.start_time, end, Resources(c.resource)))
            if c.state != "COMPLETED":
                node = st.nodes.get(NodeId(c.node_id))
                if node is not None:
                    node.to_cleanup.add(ContainerId(c.container_id))
                st._mark(replace(c, state="COMPLETED", exit_status=EXIT_KILLED_BY_RESOURCEMANAGER,
                                 diagnostics="ResourceManager restarted", finish_time=now))
        st.version += 1
        return st

    # ------------------------------------------------------------------ durable record tracking

    def _mark(self, rec: Record) -> None:
        key = (type(rec).__name__, _record_key(rec))
        self._dirty[key] = rec
        self.version += 1

    def _mark_meta(self) -> None:
        self._mark(self.meta)

    def _touch_app(self, app: App) -> None:
        self._mark(app.record())

    def drain_records(self) -> list[Record]:
        records, meta = glue.drain(self.reservations, self.meta)
        if meta is not None:
            self.meta = meta
            self._mark_meta()
        out = list(self._dirty.values()) + records
        self._dirty.clear()
        return out

    def decide_slo(self, decision: SloDecisionRecord) -> None:
        """Record a user's decision on a recurring job's SLO proposal (persisted with the next drain)."""
        self.slo_decisions[decision.job] = decision
        self._mark(decision)

    def drain_launches(self) -> list[LaunchAM]:
        out, self._launches = self._launches, []
        return out

    # ------------------------------------------------------------------ applications

    def new_application(self, now: float) -> AppId:
        seq = self.meta.next_app_seq
        self.meta = _replace_meta(self.meta, next_app_seq=seq + 1)
        self._mark_meta()
        return ids.app_id(self.meta.cluster_timestamp, seq)

    def max_allocation(self) -> Resources | None:
        if self.config.maximum_allocation is not None:
            return self.config.maximum_allocation
        caps = [n.capability for n in self.nodes.values() if n.state in ("RUNNING", "NEW", "UNHEALTHY")]
        if not caps:
            return None
        out = caps[0]
        for c in caps[1:]:
            out = component_max(out, c)
        return out

    def _check_resource(self, r: Resources, what: str) -> None:
        if r.any_negative():
            raise InvalidResourceRequest(f"{what} has a negative amount: {r}")
        if r.get(MEMORY) <= 0 or r.get(VCORES) <= 0:
            raise InvalidResourceRequest(f"{what} must ask for memory-mb and vcores above zero: {r}")
        mx = self.max_allocation()
        if mx is not None and not r.fits_in(mx):
            raise InvalidResourceRequest(
                f"{what} {r} exceeds the maximum allocation {mx} (no node is large enough)"
            )

    def submit(self, spec: SubmitSpec, now: float) -> App:
        try:
            seq_ts = ids.parse_app_id(spec.app_id)
        except ValueError as exc:
            raise BadRequest(str(exc)) from exc
        if seq_ts[0] != self.meta.cluster_timestamp or seq_ts[1] >= self.meta.next_app_seq:
            raise BadRequest(f"application id {spec.app_id} was not handed out by this ResourceManager")
        if spec.app_id in self.apps:
            raise Conflict(f"Application with id '{spec.app_id}' is already present! Cannot add a duplicate!")
        name = spec.name or "N/A"
        # naming no reservation, an accepted recurring job's app runs in the job's, in that reservation's queue
        recurring = None if spec.reservation_id else glue.recurring_reservation(self, name, spec.queue)
        try:
            queue = resolve_queue(self.queues, recurring.queue if recurring is not None else spec.queue)
        except QueueConfigError as exc:
            raise BadRequest(str(exc)) from exc
        if not queue.running:
            raise BadRequest(f"queue {queue.path} is STOPPED")
        if not spec.unmanaged:  # an unmanaged AM runs outside the cluster: no AM container
            self._check_resource(spec.am_resource, "the AM resource")
            commands = list(spec.am_launch.get("commands") or [])
            if not commands:
                raise BadRequest("the AM container spec has no commands")
        if spec.lifetime_s < 0 or spec.lifetime_s != spec.lifetime_s:
            raise BadRequest(f"Invalid application timeout, value={spec.lifetime_s} for type=LIFETIME")
        priority = self._check_priority(spec.priority)
        inputs = history.check_datasets(spec.inputs, "inputs")
        outputs = history.check_datasets(spec.outputs, "outputs")
        reservation_id = spec.reservation_id
        if reservation_id:  # YARN: an app submitted with a reservation id runs inside it
            self.reservation_plan().attach(spec.app_id, reservation_id, queue.path)
        elif recurring is not None:
            reservation_id = recurring.reservation_id
            self.reservation_plan().attach(spec.app_id, reservation_id)
        cap = self.config.max_app_attempts
        max_attempts = cap if spec.max_attempts <= 0 else min(spec.max_attempts, cap)
        if spec.unmanaged:
            max_attempts = 1  # its client launched it; nobody here can launch another
        app = App(
            app_id=AppId(spec.app_id), name=name, queue=queue.path, user=spec.user or "dr.who",
            app_type=spec.app_type or "SHEPHERD", priority=priority, am_resource=spec.am_resource,
            am_launch=dict(spec.am_launch), max_attempts=max_attempts, tags=spec.tags,
            unmanaged=spec.unmanaged, job_spec_json=spec.job_spec_json, submit_time=now, state="ACCEPTED",
            start_time=now, lifetime_expiry=now + spec.lifetime_s if spec.lifetime_s > 0 else 0.0,
            reservation_id=reservation_id, inputs=inputs, outputs=outputs,
        )
        self.apps[app.app_id] = app
        self._start_attempt(app, now)
        return app

    def _start_attempt(self, app: App, now: float) -> Attempt:
        number = len(app.attempts) + 1
        att = Attempt(
            attempt_id=ids.attempt_id(app.app_id, number), app_id=app.app_id, number=number,
            state="LAUNCHED" if app.unmanaged else "SCHEDULED", start_time=now, last_contact=now,
            am_ask_pending=not app.unmanaged,
        )
        app.attempts.append(att)
        app.progress = 0.0
        self._mark(att.record())
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

    def kill(self, app_id: str, diagnostics: str, now: float) -> App:
        app = self.get_app(app_id)
        if app.final:
            raise Conflict(f"application {app_id} is already {app.state}; it cannot be killed")
        cur = app.current
        if cur is not None and not cur.final:
            self._end_attempt(app, cur, "KILLED", diagnostics or "Application killed by user.", counts=False,
                              now=now)
        self._finish_app(app, "KILLED", "KILLED", diagnostics or "Application killed by user.", now)
        return app

    def move(self, app_id: str, queue_name: str, now: float) -> App:
        """Move an unfinished app to another leaf queue (a no-op when it is there already)."""
        app = self.get_app(app_id)
        if app.final:
            raise BadRequest(f"App in {app.state} state cannot be moved.")
        try:
            q = resolve_queue(self.queues, queue_name)
        except QueueConfigError as exc:
            raise BadRequest(str(exc)) from exc
        if q.path == app.queue:
            return app
        if not q.running:
            raise BadRequest(f"queue {q.path} is STOPPED; it accepts no applications")
        app.queue = q.path
        self._touch_app(app)
        return app

    def _check_priority(self, priority: int) -> int:
        """A valid priority, capped at the cluster maximum as YARN caps it."""
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise BadRequest(f"priority must be an integer, got {priority!r}")
        if priority < 0:
            raise BadRequest(f"priority must not be negative, got {priority}")
        return min(priority, self.config.max_priority)

    def set_priority(self, app_id: str, priority: int) -> App:
        """Change an unfinished app's priority; returns the app with its effective (capped) priority."""
        app = self.get_app(app_id)
        if app.final:
            raise BadRequest(f"Application in {app.state} state cannot update its priority.")
        effective = self._check_priority(priority)
        if effective != app.priority:
            app.priority = effective
            self._touch_app(app)
        return app

    def set_lifetime(self, app_id: str, expiry: float, now: float) -> App:
        """Set the LIFETIME timeout: the RM kills the app at ``expiry`` (seconds since the epoch)."""
        app = self.get_app(app_id)
        if app.final:
            raise BadRequest(f"Application in {app.state} state cannot update its timeout.")
        if not expiry > now:
            raise BadRequest("the expiry time of the LIFETIME timeout must be in the future")
        app.lifetime_expiry = expiry
        self._touch_app(app)
        return app

    def _finish_app(self, app: App, state: str, final_status: str, diag: str, now: float) -> None:
        app.state = state
        app.final_status = final_status
        app.diagnostics = diag
        app.finish_time = now
        if state == "FINISHED" and final_status == "SUCCEEDED":
            app.progress = 1.0
        self._release_app_containers(app, now, EXIT_KILLED_AFTER_APP_COMPLETION,
                                     "Container killed by the ApplicationMaster's application ending.")
        self.reservations.detach(app.app_id)
        history.on_finish(self, app, now)
        self._touch_app(app)

    def _release_app_containers(self, app: App, now: float, exit_status: int, diag: str) -> None:
        for cid in list(app.containers):
            c = self.containers.get(cid)
            if c is not None and c.live:
                self._complete_container(c, exit_status, diag, now, notify=False)
                node = self.nodes.get(c.node_id)
                if node is not None:
                    node.to_cleanup.add(cid)
        for node in self.nodes.values():
            if node.schedulable:
                node.apps_to_cleanup.add(app.app_id)

    def _end_attempt(self, app: App, att: Attempt, state: str, diag: str, *, counts: bool, now: float) -> None:
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
            if c is not None and c.live and c.attempt_id == att.attempt_id:
                self._complete_container(c, EXIT_KILLED_BY_RESOURCEMANAGER,
                                         f"Container of a completed attempt {att.attempt_id}", now, notify=False)
                node = self.nodes.get(c.node_id)
                if node is not None:
                    node.to_cleanup.add(cid)
        self._mark(att.record())
        self._touch_app(app)

    def _attempt_failed(self, app: App, att: Attempt, diag: str, *, counts: bool, now: float) -> None:
        """An attempt ended without unregistering: retry or fail the app."""
        self._end_attempt(app, att, "FAILED", diag, counts=counts, now=now)
        if app.failed_attempts >= app.max_attempts:
            self._finish_app(
                app, "FAILED", "FAILED",
                f"Application {app.app_id} failed {app.failed_attempts} times (global limit "
                f"={self.config.max_app_attempts}; local limit is ={app.max_attempts}) due to: {diag}",
                now,
            )
        else:
            app.state = "ACCEPTED"
            self._start_attempt(app, now)

    # ------------------------------------------------------------------ nodes

    def register_node(
        self,
        node_id: str,
        http_address: str,
        rack: str,
        capability: Resources,
        statuses: Iterable[NodeStatus],
        now: float,
        *,
        ipc_port: int = 0,
    ) -> Node:
        host, sep, port = node_id.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise BadRequest(f"invalid node id {node_id!r}; expected host:port")
        if capability.any_negative() or capability.get(MEMORY) <= 0 or capability.get(VCORES) <= 0:
            raise BadRequest(f"node capability must offer memory-mb and vcores: {capability}")
        nid = NodeId(node_id)
        old = self.nodes.get(nid)
        if old is not None:
            # a re-registration: whatever it ran before is gone from our view
            for cid in list(old.containers):
                c = self.containers.get(cid)
                if c is not None and c.live:
                    self._complete_container(c, EXIT_ABORTED, "Container released on a re-registered node", now)
        node = Node(
            node_id=nid, host=host, port=int(port), http_address=http_address, rack=rack or "/default-rack",
            capability=capability, state="RUNNING", registered_at=now, last_heartbeat=now,
            last_health_update=now, ipc_port=ipc_port if 0 < ipc_port < 65536 else 0,
        )
        self.nodes[nid] = node
        for s in statuses:  # containers we do not know (a previous RM life) are cleaned up
            if s.state != "COMPLETE" and ContainerId(s.container_id) not in self.containers:
                node.to_cleanup.add(ContainerId(s.container_id))
        self._mark(node.record())
        return node

    def node_heartbeat(
        self,
        node_id: str,
        response_id: int,
        statuses: Iterable[NodeStatus],
        healthy: bool,
        health_report: str,
        now: float,
    ) -> HeartbeatResult:
        node = self.nodes.get(NodeId(node_id))
        if node is None or node.state in ("LOST", "NEW", "SHUTDOWN", "DECOMMISSIONED"):
            return HeartbeatResult(response_id=0, action="RESYNC",
                                   diagnostics="Node not found or not registered; re-register")
        node.last_heartbeat = now
        node.response_id += 1
        new_state = "RUNNING" if healthy else "UNHEALTHY"
        if new_state != node.state or health_report != node.health_report:
            node.state = new_state
            node.health_report = health_report
            node.last_health_update = now
            self._mark(node.record())
        for s in statuses:
            cid = ContainerId(s.container_id)
            c = self.containers.get(cid)
            if c is None or c.node_id != node.node_id:
                if s.state != "COMPLETE":
                    node.to_cleanup.add(cid)
                continue
            if s.state == "RUNNING" and c.state in ("ALLOCATED", "ACQUIRED"):
                c.state = "RUNNING"
                c.start_time = s.start_time or now
                self._mark(c.record())
                app = self.apps.get(c.app_id)
                if c.is_am and app is not None:
                    att = self._attempt(app, c.attempt_id)
                    if att is not None and att.state in ("ALLOCATED", "SCHEDULED"):
                        att.state = "LAUNCHED"
                        att.last_contact = now
                        self._mark(att.record())
                    if att is not None and att is app.current and app.state == "ACCEPTED":
                        app.state = "RUNNING"  # the AM process runs, whether or not it ever registers
                        history.on_start(self, app, now)
                        self._touch_app(app)
            elif s.state == "RUNNING" and c.is_am and c.live:
                # an AM that never registers (any plain command) stays alive while its container runs
                app = self.apps.get(c.app_id)
                att = self._attempt(app, c.attempt_id) if app is not None else None
                if att is not None and not att.registered and not att.final:
                    att.last_contact = now
            elif s.state == "COMPLETE":
                node.to_cleanup.discard(cid)
                if c.live:
                    self._complete_container(c, s.exit_status, s.diagnostics, now,
                                             start_time=s.start_time)
        cleanup = tuple(sorted(node.to_cleanup))
        node.to_cleanup.clear()
        apps = tuple(sorted(node.apps_to_cleanup))
        node.apps_to_cleanup.clear()
        return HeartbeatResult(response_id=node.response_id, action="NORMAL", containers_to_cleanup=cleanup,
                               apps_to_cleanup=apps)

    def unregister_node(self, node_id: str, now: float) -> None:
        node = self.nodes.get(NodeId(node_id))
        if node is None:
            raise NotFound(f"node {node_id} is not registered")
        self._lose_node(node, "SHUTDOWN", "Container released on a node that shut down", now)

    def _lose_node(self, node: Node, state: str, diag: str, now: float) -> None:
        node.state = state
        for cid in list(node.containers):
            c = self.containers.get(cid)
            if c is not None and c.live:
                self._complete_container(c, EXIT_ABORTED, diag, now)
        node.to_cleanup.clear()
        node.apps_to_cleanup.clear()
        self._mark(node.record())

    # ------------------------------------------------------------------ containers

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
            node.allocated = node.allocated - c.resource
        app = self.apps.get(c.app_id)
        self._mark(c.record())
        if app is None:
            return
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
        if c.is_am:
            if not att.final and not app.final:
                if att.state == "FINISHING":
                    self._end_attempt(app, att, "FINISHED", att.diagnostics, counts=False, now=now)
                elif not att.registered and exit_status == 0:
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

    def apply_plan(self, plan: Plan, now: float) -> list[Place]:
        """Turn placements into containers; returns the placements that were applied."""
        applied: list[Place] = []
        for p in plan.placements:
            app = self.apps.get(p.app_id)
            node = self.nodes.get(p.node_id)
            if app is None or app.final or node is None or not node.schedulable:
                continue
            att = app.current
            if att is None or att.final:
                continue
            if not (node.allocated + p.resource).fits_in(node.capability):
                continue
            if p.is_am:
                if not att.am_ask_pending:
                    continue
            else:
                ask = att.asks.get(p.allocation_request_id)
                if ask is None or ask.num_containers <= 0:
                    continue
            cid = ids.container_id(att.attempt_id, att.next_container_seq, self.meta.epoch)
            att.next_container_seq += 1
            c = Container(
                container_id=cid, app_id=app.app_id, attempt_id=att.attempt_id, node_id=node.node_id,
                resource=p.resource, priority=p.priority, allocation_request_id=p.allocation_request_id,
                ask_type=p.ask_type, is_am=p.is_am, state="ALLOCATED", allocate_time=now,
                from_leftover=p.from_leftover,
            )
            c.token = tokens.container_token(self.container_key, tokens.ContainerTokenFields(
                container_id=cid, node_id=node.node_id, app_id=app.app_id, user=app.user,
                resource=p.resource.to_dict(), expires=now + self.config.container_token_lifetime_s,
            ))
            self.containers[cid] = c
            node.containers.add(cid)
            node.allocated = node.allocated + p.resource
            app.containers.add(cid)
            app.used = app.used + p.resource
            self.counters["containers_allocated"] += 1
            if p.from_leftover:
                app.leftover_containers += 1
                self.counters["leftover_containers"] += 1
            if p.is_am:
                app.am_used = app.am_used + p.resource
                att.am_ask_pending = False
                att.am_container_id = cid
                att.node_id = node.node_id
                att.state = "ALLOCATED"
                att.last_contact = now
                app.launch_time = now
                self._mark(att.record())
                self._touch_app(app)
                self._launches.append(LaunchAM(
                    app_id=app.app_id, attempt_id=att.attempt_id, container_id=cid, node_id=node.node_id,
                    container_token=c.token, nm_token=tokens.nm_token(self.container_key, att.attempt_id,
                                                                     node.node_id),
                    amrm_token=tokens.amrm_token(self.amrm_key, att.attempt_id), launch=app.am_launch,
                    job_spec_json=app.job_spec_json, user=app.user,
                ))
            else:
                ask = att.asks[p.allocation_request_id]
                ask.num_containers -= 1
                att.undelivered.append(cid)
            self._mark(c.record())
            applied.append(p)
        for app_id, share in plan.shares.items():
            app = self.apps.get(app_id)
            if app is not None:
                app.fair_share = share
        glue.apply_preemptions(self, plan, now)
        glue.count_plan(self, plan)
        self.last_plan = plan
        self._note_waiting(plan)
        return applied

    def _note_waiting(self, plan: Plan) -> None:
        """Record why each unfinished app's asks wait after this plan (shown in its diagnostics)."""
        refused = rejections_by_app(plan)
        still: set[AppId] = set()
        for app_id in self._waiting | refused.keys():
            app = self.apps.get(app_id)
            if app is None:
                continue
            app.waiting = "" if app.final else waiting_line(primary_reason(app, refused.get(app_id, ())))
            if app.waiting:
                still.add(app_id)
        self._waiting = still

    def am_launch_failed(self, container_id: str, diag: str, now: float) -> None:
        c = self.containers.get(ContainerId(container_id))
        if c is not None and c.live:
            self._complete_container(c, EXIT_ABORTED, f"AM container launch failed: {diag}", now)

    # ------------------------------------------------------------------ ApplicationMaster protocol (am_protocol.py)

    def authenticate_am(self, token: str) -> tuple[App, Attempt]:
        return am_protocol.authenticate_am(self, token)

    def am_register(self, token: str, host: str, rpc_port: int, tracking_url: str, now: float) -> Attempt:
        return am_protocol.am_register(self, token, host, rpc_port, tracking_url, now)

    def validate_asks(self, asks: Iterable[Ask]) -> None:
        am_protocol.validate_asks(self, asks)

    def am_allocate(
        self,
        token: str,
        response_id: int,
        asks: list[Ask],
        releases: Iterable[str],
        progress: float,
        blacklist_add: Iterable[str],
        blacklist_remove: Iterable[str],
        now: float,
    ) -> AllocateResult:
        return am_protocol.am_allocate(self, token, response_id, asks, releases, progress, blacklist_add,
                                       blacklist_remove, now)

    def nm_token_for(self, attempt: Attempt, node_id: NodeId) -> str:
        return am_protocol.nm_token_for(self, attempt, node_id)

    def am_finish(self, token: str, final_status: str, diagnostics: str, tracking_url: str,
                  now: float) -> bool:
        return am_protocol.am_finish(self, token, final_status, diagnostics, tracking_url, now)

    # ------------------------------------------------------------------ liveness

    def check_liveness(self, now: float) -> list[str]:
        """Expire silent NodeManagers, ApplicationMasters and unused containers. Returns log lines."""
        events: list[str] = []
        for node in list(self.nodes.values()):
            if node.state in ("RUNNING", "UNHEALTHY", "NEW") and now - node.last_heartbeat > self.config.nm_expiry_s:
                events.append(f"node {node.node_id} expired: no heartbeat for {now - node.last_heartbeat:.1f}s")
                self._lose_node(node, "LOST", "Container released on a *lost* node", now)
        for app in list(self.apps.values()):
            att = app.current
            if app.final or att is None or att.final:
                continue
            if att.state in ("LAUNCHED", "RUNNING", "ALLOCATED") and now - att.last_contact > self.config.am_expiry_s:
                events.append(f"attempt {att.attempt_id} expired: no AM heartbeat")
                self._attempt_failed(app, att, f"ApplicationMaster for attempt {att.attempt_id} timed out",
                                     counts=True, now=now)
        for app in list(self.apps.values()):
            if not app.final and app.lifetime_expiry and now >= app.lifetime_expiry:
                events.append(f"application {app.app_id} exceeded its lifetime; killing it")
                self.kill(app.app_id, "Application is killed by ResourceManager as it has exceeded the "
                          "lifetime period.", now)
        for c in list(self.containers.values()):
            if c.state in ("ALLOCATED", "ACQUIRED") and not c.is_am and \
                    now - c.allocate_time > self.config.container_alloc_expiry_s:
                events.append(f"container {c.container_id} expired unused")
                self._complete_container(c, EXIT_ABORTED, "Container expired since it was unused", now)
                holder = self.nodes.get(c.node_id)
                if holder is not None:
                    holder.to_cleanup.add(c.container_id)
        return events

    def forget_completed_containers(self, keep_per_app: int = 1000) -> None:
        """Drop completed containers from memory (they stay in the store)."""
        done = [c for c in self.containers.values() if not c.live]
        if len(done) > keep_per_app * 10:
            done.sort(key=lambda c: c.finish_time)
            for c in done[: len(done) - keep_per_app * 10]:
                del self.containers[c.container_id]

    # ------------------------------------------------------------------ scheduling snapshot

    def reservation_plan(self) -> ReservationSystem:
        """The reservation system, with its queues' capacities brought up to date with the cluster."""
        self._plan_capacity = glue.sync_capacities(self, self.reservations, self._plan_capacity)
        return self.reservations

    def snapshot(self, now: float | None = None) -> ClusterSnapshot:
        """The cycle's read-only view; with ``now``, the reservations active at that time too."""
        nodes = {
            n.node_id: NodeView(node_id=n.node_id, host=n.host, rack=n.rack, capability=n.capability,
                                allocated=n.allocated, schedulable=n.schedulable)
            for n in self.nodes.values()
        }
        apps: dict[AppId, AppView] = {}
        for app in self.apps.values():
            att = app.current
            if app.final or att is None or att.final:
                continue
            asks: list[AskView] = []
            if att.am_ask_pending:
                asks.append(AskView(app_id=app.app_id, allocation_request_id=AM_ASK_ID, priority=-1,
                                    capability=app.am_resource, num_containers=1, is_am=True, stage="am"))
            for a in att.asks.values():
                if a.num_containers > 0:
                    asks.append(AskView(
                        app_id=app.app_id, allocation_request_id=a.allocation_request_id, priority=a.priority,
                        capability=a.capability, num_containers=a.num_containers, nodes=a.nodes, racks=a.racks,
                        relax_locality=a.relax_locality, ask_type=a.ask_type,
                        remaining_work_s=a.remaining_work_s, stage=a.stage,
                    ))
            if not asks and app.used.is_zero():
                continue
            apps[app.app_id] = AppView(
                app_id=app.app_id, queue=app.queue, user=app.user, priority=app.priority,
                submit_time=app.submit_time, used=app.used, asks=tuple(asks), am_used=app.am_used,
                blacklist=frozenset(att.blacklist), reservation_id=self.reservations.reservation_of(app.app_id),
                fair_share=None if app.fair_share.is_zero() else app.fair_share,
            )
        view = EMPTY_VIEW
        if now is not None and self.reservations.reservations:
            view = self.reservation_plan().view(now)
        return ClusterSnapshot(version=self.version, nodes=nodes, apps=apps, queues=self.queues, reservations=view)

    # ------------------------------------------------------------------ reports

    def cluster_capacity(self) -> Resources:
        out = Resources()
        for n in self.nodes.values():
            if n.schedulable:
                out = out + n.capability
        return out

    def pending_of(self, app: App) -> tuple[Resources, int, int, int]:
        """(pending resources, pending containers, DEFAULT asks pending, ALTRUISTIC asks pending)."""
        att = app.current
        if app.final or att is None or att.final:
            return Resources(), 0, 0, 0
        res = Resources()
        n = d = alt = 0
        if att.am_ask_pending:
            res = res + app.am_resource
            n += 1
            d += 1
        for a in att.asks.values():
            res = res + a.capability * a.num_containers
            n += a.num_containers
            if a.ask_type == "ALTRUISTIC":
                alt += a.num_containers
            else:
                d += a.num_containers
        return res, n, d, alt


def _record_key(rec: Record) -> str:
    if isinstance(rec, ContainerRecord):
        return rec.container_id
    if isinstance(rec, AttemptRecord):
        return rec.attempt_id
    if isinstance(rec, AppRecord):
        return rec.app_id
    if isinstance(rec, NodeRecord):
        return rec.node_id
    if isinstance(rec, ReservationRecord):
        return rec.reservation_id
    if isinstance(rec, JobRunRecord):
        return rec.app_id
    if isinstance(rec, DatasetAccessRecord):
        return rec.access_id
    if isinstance(rec, SloDecisionRecord):
        return rec.job
    return "meta"


def _replace_meta(meta: MetaRecord, **changes: Any) -> MetaRecord:
    return replace(meta, **changes)


__all__ = [
    "AM_ASK_ID",
    "AllocateResult",
    "ClusterState",
    "CoreConfig",
    "HeartbeatResult",
    "LaunchAM",
    "NodeStatus",
    "SubmitSpec",
]
