"""Rebuilding the ledger from the state store after an RM restart."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Self

from common.exits import EXIT_KILLED_BY_RESOURCEMANAGER, EXIT_PREEMPTED
from common.ids import AppId, AttemptId, ContainerId, NodeId, QueuePath
from common.resources import Resources
from common.terms import AppTerms, ControlStep
from rm.core import deadlines_glue
from rm.core.admission import Admission
from rm.core.entities import App, Attempt, CompletedStatus, Container, Node
from rm.core.events import AppStarted, ContainerCompleted
from rm.core.ledger.key_commands import KeyCommands
from rm.core.ledger.keys import KeyRing
from rm.core.model import QueueView
from rm.core.queues import QueueConfigError, resolve_queue
from rm.core.records import ContainerRecord, StoredState
from rm.core.state_types import CoreConfig, NodeStatus


class Recovery(KeyCommands):

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
        """Rebuild from the store, with a new epoch (the containers it allocates from now on say so). With
        work-preserving recovery (the default) unfinished attempts and their containers carry over; without
        it they fail over to a new attempt."""
        meta = stored.meta or cls.fresh_meta(int(now * 1000))
        keys = meta.container_keys or KeyRing.from_records((), meta.container_key_hex, created=now).records()
        meta = replace(meta, epoch=meta.epoch + 1, container_keys=keys)
        st = cls(meta, queues, config, admission=admission)
        st.restore(stored, now=now)
        st.roll_container_keys(now)  # the key that signs now (a key made before the restart may be due)
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
                # must re-register to be used; a decommissioned one may not, a decommissioning one stays so
                state=n.state if n.state in ("LOST", "DECOMMISSIONED") else "NEW",
                registered_at=n.registered_at, last_heartbeat=now, health_report=n.health_report,
                decommission_deadline=n.decommission_deadline if n.state == "DECOMMISSIONING" else 0.0,
                session_hash=n.session_hash,  # its NodeManager comes back with the session; another may not
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
                keep_containers=r.keep_containers, am_checkpoint=r.am_checkpoint, sizing=dict(r.sizing),
                control=[ControlStep.from_dict(step) for step in r.control],
            )
            for ar in sorted(by_app.get(r.app_id, []), key=lambda x: x.number):
                app.attempts.append(Attempt(
                    attempt_id=AttemptId(ar.attempt_id), app_id=app.app_id, number=ar.number,
                    state=ar.state, start_time=ar.start_time,
                    am_container_id=ContainerId(ar.am_container_id) if ar.am_container_id else None,
                    node_id=NodeId(ar.node_id) if ar.node_id else None, finish_time=ar.finish_time,
                    diagnostics=ar.diagnostics, counts_as_failure=ar.counts_as_failure, host=ar.host,
                    rpc_port=ar.rpc_port, tracking_url=ar.tracking_url, delivered_until=ar.delivered_until,
                ))
            self.apps[app.app_id] = app
            if not app.final:
                self.active[app.app_id] = app
        if self.config.work_preserving:
            self._carry_over(stored, now)
        else:
            self._fail_over(stored, now)
        self._restore_deadlines(stored, now)
        self._replay(stored, now)
        for app in self.active.values():  # every unfinished app is seen by the first cycle, asking or not
            self.views.app_changed(app.app_id)
        self.version += 1

    def _fail_over(self, stored: StoredState, now: float) -> None:
        """Without work-preserving recovery: every unfinished app starts a new attempt, and the containers of
        the previous RM life are killed (their NodeManagers are told to clean them up)."""
        for app in list(self.active.values()):
            cur = app.current
            if cur is not None and not cur.final:
                self._end_attempt(app, cur, "FAILED", "ResourceManager restarted", counts=False, now=now)
            if app.queue not in self.queues:
                self._finish_app(app, "FAILED", "FAILED", f"queue {app.queue} no longer exists", now)
            else:
                app.state = "ACCEPTED"
                self._start_attempt(app, now)
        for c in stored.containers:
            self._note_history(c, now)
            if c.state != "COMPLETED":
                self._drop(c, now)

    def _carry_over(self, stored: StoredState, now: float) -> None:
        """Work-preserving recovery (YARN's default): the containers of every unfinished attempt stay where they
        are, held on their nodes until the NodeManagers re-register and say which still run; AMs re-register
        and resend their asks; completions the AM was not yet handed are handed over."""
        for c in stored.containers:
            self._note_history(c, now)
            app = self.active.get(AppId(c.app_id))
            att = app.current if app is not None else None
            current = att is not None and not att.final and att.attempt_id == c.attempt_id
            if c.state == "COMPLETED":
                if current and att is not None and not c.is_am and c.finish_time > att.delivered_until:
                    att.completed.append(CompletedStatus(ContainerId(c.container_id), c.exit_status,
                                                         c.diagnostics, c.start_time, c.finish_time))
                continue
            node = self.nodes.get(NodeId(c.node_id))
            if app is None or node is None or node.state in ("LOST", "DECOMMISSIONED") or not current:
                self._drop(c, now)
            elif c.state == "ALLOCATED" and not c.is_am:
                # stored before its AM was handed it, or while the handing was not yet written: only its
                # NodeManager can say whether the AM started it; until then it holds nothing
                self.unconfirmed[ContainerId(c.container_id)] = c
            else:
                self._hold(app, node, c)
        for app in list(self.active.values()):
            att = app.current
            if app.queue not in self.queues:
                self._finish_app(app, "FAILED", "FAILED", f"queue {app.queue} no longer exists", now)
                continue
            if att is None or att.final:
                app.state = "ACCEPTED"
                self._start_attempt(app, now)
                continue
            att.last_contact = now  # its AM has until the expiry to re-register
            att.completed.sort(key=lambda s: s.finish_time)
            am_alive = att.am_container_id is not None and att.am_container_id in self.containers
            if app.unmanaged or am_alive:
                continue
            if att.state == "SCHEDULED" and att.am_container_id is None:
                att.am_ask_pending = True  # its AM container was never placed: ask again
                self.asks_grew = True
                continue
            self._end_attempt(app, att, "FAILED", "ResourceManager restarted; the AM container is gone",
                              counts=False, now=now)
            app.state = "ACCEPTED"
            self._start_attempt(app, now)

    def _hold(self, app: App, node: Node, c: ContainerRecord) -> None:
        """Put a container of the previous RM life back on its node and into its app's use."""
        held = _container(c)
        self.containers[held.container_id] = held
        node.containers.add(held.container_id)
        self._allocate_on(node, held.resource)
        app.containers.add(held.container_id)
        app.used = app.used + held.resource
        if held.is_am:
            app.am_used = app.am_used + held.resource

    def _adopt(self, node: Node, reported: Mapping[ContainerId, NodeStatus], now: float) -> None:
        """A node re-registered after a restart: the containers of the previous RM life that it runs are held
        again; those it does not know were never started (their AMs ask again), and are given up."""
        for cid, c in list(self.unconfirmed.items()):
            if c.node_id != node.node_id:
                continue
            del self.unconfirmed[cid]
            app = self.active.get(AppId(c.app_id))
            att = app.current if app is not None else None
            status = reported.get(cid)
            if app is not None and att is not None and not att.final and att.attempt_id == c.attempt_id \
                    and status is not None and status.state != "COMPLETE":
                self._hold(app, node, c)
            else:
                self._drop(c, now, cleanup=False)

    def _forget_unconfirmed(self, node: Node, now: float) -> None:
        """The node is gone: what it might have run of the previous RM life is given up."""
        for cid, c in list(self.unconfirmed.items()):
            if c.node_id == node.node_id:
                del self.unconfirmed[cid]
                self._drop(c, now, cleanup=False)

    def _drop(self, c: ContainerRecord, now: float, *, cleanup: bool = True) -> None:
        owner = self.apps.get(AppId(c.app_id))
        if owner is not None and not owner.final and c.start_time:  # its run's skyline keeps it
            owner.spans.append((c.start_time, now, Resources(c.resource)))
        node = self.nodes.get(NodeId(c.node_id))
        if node is not None and cleanup:
            node.to_cleanup.add(ContainerId(c.container_id))
        self._mark(replace(c, state="COMPLETED", exit_status=EXIT_KILLED_BY_RESOURCEMANAGER,
                           diagnostics="ResourceManager restarted", finish_time=now))

    def _note_history(self, c: ContainerRecord, now: float) -> None:
        owner = self.apps.get(AppId(c.app_id))
        if owner is None:
            return
        owner.ran_on.add(NodeId(c.node_id))
        if c.state == "COMPLETED" and c.exit_status == EXIT_PREEMPTED:
            owner.note_preempted(Resources(c.resource), is_am=c.is_am)
        if not owner.final and c.start_time and c.state == "COMPLETED":  # its run's skyline keeps them
            owner.spans.append((c.start_time, c.finish_time or now, Resources(c.resource)))

    def _replay(self, stored: StoredState, now: float) -> None:
        """The listeners that keep per-app progress in memory (deadline progress, the size tracker) hear again
        that the unfinished apps started and which of their containers completed."""
        for app in self.active.values():
            if app.state == "RUNNING":
                self._emit(AppStarted(app, now))
        done = sorted((c for c in stored.containers if c.state == "COMPLETED" and AppId(c.app_id) in self.active),
                      key=lambda c: c.finish_time)
        for c in done:
            self._emit(ContainerCompleted(_container(c), c.finish_time or now))

    def _restore_deadlines(self, stored: StoredState, now: float) -> None:
        """The estimators' history, and every unfinished app's bought deadline laid again (the work its
        completed containers did is taken off by the replay that follows)."""
        deadlines = self.deadline_system()
        for run in stored.work_runs:
            deadlines.record_run(deadlines_glue.run_of(run))
        self.sizes.learn([run.sizes for run in stored.work_runs if run.sizes])  # history predictor, ratio
        for app in sorted(self.active.values(), key=lambda a: (a.terms.deadline or 0.0, a.app_id)):
            if app.terms.claim is not None:
                deadlines.restore(app.app_id, app.queue, app.terms, 0.0, now)



def _container(c: ContainerRecord) -> Container:
    return Container(
        container_id=ContainerId(c.container_id), app_id=AppId(c.app_id), attempt_id=AttemptId(c.attempt_id),
        node_id=NodeId(c.node_id), resource=Resources(c.resource), priority=c.priority,
        allocation_request_id=c.allocation_request_id, ask_type="ALTRUISTIC" if c.ask_type == "ALTRUISTIC" else "DEFAULT",
        is_am=c.is_am, state=c.state, allocate_time=c.allocate_time, start_time=c.start_time,
        finish_time=c.finish_time, exit_status=c.exit_status, diagnostics=c.diagnostics,
        from_leftover=c.from_leftover,
    )
