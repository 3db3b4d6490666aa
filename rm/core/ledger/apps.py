"""Application commands: new ids, submit, kill, move, priority, lifetime; and pending-demand reports."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace

from am.jobspec import Job, parse_job
from common import ids
from common.errors import AdmissionRefused, BadRequest, Conflict
from common.ids import AppId, QueuePath
from common.resources import Resources
from rm.core import reservations_glue as glue
from rm.core import run_history as history
from rm.core.admission import Refuse
from rm.core.entities import App
from rm.core.ledger.base import LedgerBase
from rm.core.model import QueueView
from rm.core.plan_token import ClusterBasis, check_token, cluster_basis
from rm.core.queues import QueueConfigError, resolve_queue
from rm.core.records import APP_FINAL_STATES, AppRecord, Record
from rm.core.state_types import SubmitSpec


class AppCommands(LedgerBase):

    def stored(self, records: Iterable[Record]) -> None:
        """The service has written these records to the store: an ended app whose final record is among them is
        reported as ended from now on."""
        for r in records:
            if isinstance(r, AppRecord) and r.state in APP_FINAL_STATES:
                self.saving.pop(AppId(r.app_id), None)

    def reported_state(self, app: App) -> tuple[str, str]:
        """(state, final status) as clients are told them. An app whose end is not in the store yet is shown as it
        was before it ended (YARN's FINAL_SAVING), so that no client acts on an end a restart would undo."""
        before = self.saving.get(app.app_id)
        return (app.state, app.final_status) if before is None else (before, "UNDEFINED")

    def new_application(self, now: float) -> AppId:
        seq = self.meta.next_app_seq
        self.meta = replace(self.meta, next_app_seq=seq + 1)
        self.mark_meta()
        return ids.app_id(self.meta.cluster_timestamp, seq)


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
        recurring = None if spec.reservation_id else glue.recurring_reservation(
            self.slo_decisions, self.reservations, self.queues, name, spec.queue)
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
        self.check_tasks(job_tasks(spec.job_spec_json))
        if spec.plan_token:
            check_token(spec.plan_token, job_of_spec(spec.job_spec_json), self.plan_basis())
        if spec.lifetime_s < 0 or spec.lifetime_s != spec.lifetime_s:
            raise BadRequest(f"Invalid application timeout, value={spec.lifetime_s} for type=LIFETIME")
        priority = self._check_priority(spec.priority)
        inputs = history.check_datasets(spec.inputs, "inputs")
        outputs = history.check_datasets(spec.outputs, "outputs")
        deadline = spec.terms.deadline
        if deadline is not None and not (math.isfinite(deadline) and deadline > now):
            raise BadRequest(f"the deadline {deadline!r} is not a time in the future (seconds since the epoch)")
        if deadline is not None and (spec.reservation_id or recurring is not None):
            raise BadRequest("an application runs inside a reservation or under a deadline, not both")
        decision = self.admission.admit(spec, queue.path, self, now)
        if isinstance(decision, Refuse):
            raise AdmissionRefused(f"the admission rule {self.admission.name} refused {spec.app_id}: "
                                   f"{decision.reason}", dict(decision.quote), conflict=decision.conflict)
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
            reservation_id=reservation_id, inputs=inputs, outputs=outputs, terms=decision.terms,
            keep_containers=spec.keep_containers,
        )
        self.apps[app.app_id] = app
        self.active[app.app_id] = app
        self._start_attempt(app, now)
        return app

    def plan_basis(self) -> ClusterBasis:
        """What a dry run's plan rests on (``rm.core.plan_token``): the unfinished apps, the schedulable nodes
        and the queues."""
        return cluster_basis(self.active, ((n.node_id, n.capability) for n in self.nodes.values() if n.schedulable),
                             self.queues)

    def check_tasks(self, tasks: Iterable[tuple[str, Resources]]) -> None:
        """Refuse (``InvalidResourceRequest``, naming the stage and its amount) a job with a task that no node
        could ever hold: of a resource type the cluster does not know, or above the maximum allocation (the
        configured one, else the largest node's), as YARN refuses such an ask. With no node registered, no
        maximum and no resource types configured there is nothing to judge by, and every job passes.
        ``tasks``: (stage, what one of its tasks needs), read only when there is something to judge by."""
        if self.max_allocation() is None and self.config.resource_types is None:
            return
        for stage, need in tasks:
            self._check_resource(need, f"stage {stage!r}: a task of")

    def check_queues(self, queues: Mapping[QueuePath, QueueView]) -> None:
        """Refuse (``BadRequest``) a queue tree in which a queue that holds unfinished apps would be gone or no
        longer a leaf; change nothing."""
        stranded = sorted({str(a.queue) for a in self.active.values()
                           if a.queue not in queues or not queues[a.queue].is_leaf})
        if stranded:
            raise BadRequest(f"queue(s) {', '.join(stranded)} hold unfinished applications and must stay leaf "
                             "queues; the queues were not changed")

    def refresh_queues(self, queues: Mapping[QueuePath, QueueView]) -> None:
        """Replace the queue tree while the RM runs (YARN's refreshQueues). Refused, the old tree kept, when a
        queue that holds unfinished apps would be gone or no longer a leaf."""
        self.check_queues(queues)
        self.queues = dict(queues)
        self._plan_capacity = None  # reservation and deadline capacities follow the new shares
        for app_id in self.active:
            self.views.app_changed(app_id)
        self.version += 1

    def kill(self, app_id: str, diagnostics: str, now: float) -> App:
        app = self.get_app(app_id)
        if app.final:
            raise Conflict(f"application {app_id} is already {app.state}; it cannot be killed")
        self._kill_app(app, diagnostics, now)
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


    def pending_of(self, app: App) -> tuple[Resources, int, int, int]:
        """(pending resources, pending containers, DEFAULT asks pending, ALTRUISTIC asks pending)."""
        att = app.current
        if app.final or att is None or att.final:
            return Resources.ZERO, 0, 0, 0
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


def job_of_spec(job_spec_json: str) -> Job | None:
    """An app's DAG job file; None without one, or with one its ApplicationMaster cannot read either (that
    AM fails the app when it starts)."""
    if not job_spec_json:
        return None
    try:
        return parse_job(json.loads(job_spec_json), where="the job")
    except (ValueError, RecursionError):  # bad JSON, a JobSpecError, or nesting too deep
        return None


def job_tasks(job_spec_json: str) -> Iterator[tuple[str, Resources]]:
    """Each stage of an app's DAG job file with what one of its tasks needs (``job_of_spec``)."""
    job = job_of_spec(job_spec_json)
    for stage in job.stages if job is not None else ():
        yield stage.name, stage.capability
