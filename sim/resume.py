"""The simulator resumed from a ledger that already runs apps (a fork of the live one, for the dry run).

The engine's machinery (``sim.engine.Simulator``: event heap, cycles on the real pipeline, NodeManager
heartbeats, ``SimAM``s) runs on the given ledger from time ``now`` (the ledger's own clock: seconds since
the epoch live). What runs there is continued, not dropped:

* **DAG apps** (a job spec in the ledger, ``App.job_spec_json``) get a ``SimAM`` whose ``DagState`` is rebuilt
  from the ledger: per stage (allocation request id -> stage, ``am.policies.stage_index_of``) its completed
  successful containers are succeeded tasks (their run times are the AM's measured durations), its live
  containers are running tasks, started when the container started, ending after the stage's task estimate
  (measured mean, else the spec's) counted from that start and at least ``RESUME_FLOOR_S`` from now; the
  rest are pending. Its ask table mirrors the asks the ledger holds, so its first heartbeat (on its own
  phase) sends only what changed, as the live AM's next would. A DAG app still waiting for its AM
  container starts from scratch once the pipeline places it.
* **Other apps** (stock YARN or Spark AMs, unmanaged AMs, unreadable job specs) keep what they hold for as
  long again as they have held it (at least ``HOLD_FLOOR_S``) and ask for nothing new: their outstanding
  asks are withdrawn; each container is released then, and the app ends when its AM container's time is
  up. One that still waits for its AM container holds nothing and is left out (killed in the fork).

Jobs added with :meth:`ResumedSimulator.add_job` are submitted at their time as in any simulation.
NodeManager heartbeat phases are the nodes' own (their last heartbeat), and the reservation plan is read as
it stands (not rolled forward). No fairness is sampled; :meth:`ResumedSimulator.run_until` runs until every
DAG job has ended or the horizon is reached.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from am.jobspec import Job, JobSpecError, parse_job
from am.policies import AskDecision, make_ask_policy, stage_index_of
from common import tokens
from common.ids import AppId, ContainerId, NodeId
from rm.core.entities import App, Ask, Attempt, Container
from rm.core.ledger import Ledger
from sim.am import RemainingPath, SimAM
from sim.config import NodeSpec, SimConfig, TaskRun
from sim.engine import SHARE_BLIND_ASK_POLICIES, Simulator
from sim.events import AmRegistered, AppEnds, ContainerReported, EventQueue, JobArrived
from sim.metrics import JobRecord, LedgerReading, Recorder
from sim.policies import SimPolicy

RESUME_FLOOR_S = 0.5
"""A running task is assumed to need at least this much longer, however long it has overrun its estimate."""
HOLD_FLOOR_S = 1.0
"""An app without a job spec holds each container at least this much longer."""
NO_TASK = -1  # the job index of containers no simulated AM runs tasks in


@dataclass(frozen=True, slots=True)
class TaskStarted:
    """A task's first run started in a container on a node."""

    app_id: AppId
    stage: str
    task: int
    node: NodeId
    time: float


@dataclass(frozen=True, slots=True)
class Held:
    """An app without a job spec, continued on the dry run's assumption."""

    app_id: AppId
    name: str
    until: float  # when it is assumed to end
    containers: int


class _UsageOnly(Recorder):
    """Utilization only: a dry run samples no fairness (its clock starts at the ledger's ``now``)."""

    def before(self, t: float, ledger: LedgerReading) -> None:
        return None


class ResumedSimulator(Simulator):
    """The engine resumed on ``ledger`` at ``now``; see the module docstring."""

    def __init__(self, ledger: Ledger, policy: SimPolicy, *, now: float, config: SimConfig | None = None) -> None:
        # the engine sets up its per-run state over a placeholder cluster, then the ledger takes its place
        super().__init__([], [NodeSpec("placeholder", 1, 1)], policy, config)
        self.ledger = ledger
        ledger.subscribe(self)
        ledger.drain_launches()
        self.queues = ledger.queues
        self.morpheus = None
        self.events = EventQueue()  # nothing of the placeholder's (a reservation plan's tick)
        self.now = now
        self.recorder = _UsageOnly(ledger.cluster_capacity(), self.cfg.fair_sample_s, policy.shares)
        hb = self.timing.nm_heartbeat_s
        self.phase = {nid: node.last_heartbeat % hb for nid, node in ledger.nodes.items()}
        self.held: list[Held] = []
        self.left_out: list[AppId] = []
        self.resumed: list[AppId] = []
        self.started: list[TaskStarted] = []  # first runs of the tasks the simulated AMs start
        ledger.capacity_freed = True
        for app in sorted(ledger.active.values(), key=lambda a: (a.submit_time, a.app_id)):
            att = app.current
            if att is None or att.final:
                continue
            job = None if app.unmanaged else job_of(app)
            if job is not None:
                self._resume(app, att, job)
            else:
                self._hold(app, att)

    # ------------------------------------------------------------------------------ jobs and the loop

    def add_job(self, job: Job, at: float) -> AppId:
        """Submit ``job`` at time ``at`` (its ``arrival_s`` is not read); returns its application id."""
        index = len(self.jobs)
        self.jobs.append(job)
        app_id = self.ledger.new_application(at)
        self.app_ids.append(app_id)
        self.index_of[app_id] = index
        self.events.push(at, JobArrived(index))
        return app_id

    def record_of(self, app_id: AppId) -> JobRecord | None:
        index = self.index_of.get(app_id)
        return None if index is None else self.records.get(index)

    def run_until(self, until: float, done: Callable[[], bool] | None = None) -> float:
        """Run until ``done()`` (by default: every DAG job has ended), no event is left, or the next one is after
        ``until``; returns the simulated time reached."""
        ledger = self.ledger
        finished = done if done is not None else self.jobs_done
        while self.events and self.events.peek_time() <= until and not finished():
            t = self.events.peek_time()
            self.now = t
            while self.events.next_is(t):
                _, event = self.events.pop()
                self._handle(event)
            self.recorder.after(t, ledger)
            self._maybe_cycle(t)
        return self.now

    def jobs_done(self) -> bool:
        """Every DAG job (resumed or added) has ended."""
        return len(self.records) == len(self.jobs) and not self.ams

    def _launch(self, index: int, cid: ContainerId, stage: str, task: int, attempt: int) -> None:
        super()._launch(index, cid, stage, task, attempt)
        if attempt == 0:
            run = self.runs[cid]
            self.started.append(TaskStarted(self.app_ids[index], stage, task, run.node, run.start))

    def _handle(self, event: object) -> None:
        if isinstance(event, AppEnds):
            app = self.ledger.apps.get(AppId(event.app_id))
            if app is not None and not app.final:
                self.ledger.kill(app.app_id, "dry run: the assumed end of an app without a job spec", self.now)
            return
        super()._handle(event)

    # ------------------------------------------------------------------------------ DAG apps

    def _resume(self, app: App, att: Attempt, job: Job) -> None:
        ledger, now = self.ledger, self.now
        index = len(self.jobs)
        self.jobs.append(job)
        self.app_ids.append(app.app_id)
        self.index_of[app.app_id] = index
        self.resumed.append(app.app_id)
        policy_name = job.am_policy or self.cfg.ask_policy or self.policy.ask_policy
        am = SimAM(job, make_ask_policy(policy_name, p_altruism=job.altruism, seed=zlib.crc32(app.app_id.encode()),
                                        floor=job.altruism_floor))  # seeded as the live AM seeds it
        am.share_blind = policy_name in SHARE_BLIND_ASK_POLICIES
        self._share_aware += not am.share_blind
        self.ams[index] = am
        planned = [[s.task_duration_s(i) for i in range(s.tasks)] for s in job.stages]
        self.planned[index] = planned
        path = self.paths[index] = RemainingPath(job, planned)
        record = self.records[index] = JobRecord(job.id, app.submit_time, job.total_tasks)
        am.amrm_token = tokens.amrm_token(ledger.amrm_key, att.attempt_id)
        am.response_id = att.response_id
        mine = [c for c in ledger.containers.values() if c.attempt_id == att.attempt_id and not c.is_am]
        undelivered = set(att.undelivered)
        for stage in job.topological_order():
            i = job.stage_index(stage.name)
            done = sorted((c for c in mine if not c.live and c.exit_status == 0
                           and stage_index_of(c.allocation_request_id) == i),
                          key=lambda c: (c.finish_time, c.container_id))
            for c in done:
                runnable = am.dag.runnable(stage.name)
                if not runnable:
                    break
                started = _started(c)
                am.dag.start(stage.name, runnable[0], c.container_id, started)
                am.dag.complete(c.container_id, 0, c.finish_time, measured_s=max(0.0, c.finish_time - started))
                path.started(stage.name, runnable[0], c.finish_time)
                path.ended(stage.name, runnable[0], "succeeded")
                record.task_seconds += max(0.0, c.finish_time - started)
                record.first_task_start = min(record.first_task_start or started, started)
        for c in sorted((c for c in mine if c.live and c.container_id not in undelivered),
                        key=lambda c: (c.allocate_time, c.container_id)):
            self._continue_task(index, am, c)
        am.table.update(_decisions(job, att.asks.values()))  # mirror what the RM holds
        if att.registered:
            am.registered = True
            am.last_heartbeat = att.last_contact
            interval = self.timing.am_interval_s
            k = max(0, math.floor((now - att.last_contact) / interval + 1e-9) + 1)
            self._schedule(index, am, att.last_contact + k * interval)
        elif att.am_container_id is not None:
            holder = ledger.containers.get(att.am_container_id)
            placed = holder.allocate_time if holder is not None else now
            self.events.push(max(now, placed + self.timing.launch_s + self.timing.am_startup_s),
                             AmRegistered(index))

    def _continue_task(self, index: int, am: SimAM, c: Container) -> None:
        """A live container of a DAG app: its stage's next runnable task runs in it, for what is left of
        the task's estimate (at least ``RESUME_FLOOR_S``)."""
        stage_index = stage_index_of(c.allocation_request_id)
        job = am.job
        if stage_index is None or not 0 <= stage_index < len(job.stages):
            am.releases.append(c.container_id)
            return
        stage = job.stages[stage_index].name
        runnable = am.dag.runnable(stage)
        if not runnable:
            am.releases.append(c.container_id)
            return
        task = runnable[0]
        started = _started(c)
        am.dag.start(stage, task, c.container_id, started)
        end = max(self.now + RESUME_FLOOR_S, started + am.dag.estimate_s(stage, task))
        self.runs[c.container_id] = TaskRun(index, c.node_id, stage, task, started, end, 0)
        self.paths[index].started(stage, task, end)
        record = self.records[index]
        record.task_seconds += end - started
        record.first_task_start = min(record.first_task_start or started, started)
        self.events.push(self._report_time(c.node_id, end), ContainerReported(c.container_id))

    # ------------------------------------------------------------------------------ other apps

    def _hold(self, app: App, att: Attempt) -> None:
        ledger, now = self.ledger, self.now
        if not app.unmanaged and att.am_container_id is None:  # still waits for its AM container
            self.left_out.append(app.app_id)
            ledger.kill(app.app_id, "dry run: an app without a job spec that waits for its AM is left out", now)
            return
        if att.registered and any(a.num_containers > 0 for a in att.asks.values()):
            withdraw = [Ask(a.allocation_request_id, a.priority, a.capability, 0) for a in att.asks.values()]
            ledger.am_allocate(tokens.amrm_token(ledger.amrm_key, att.attempt_id), att.response_id, withdraw, (),
                               app.progress, (), (), now)
        held = 0
        for cid in sorted(app.containers):
            c = ledger.containers.get(cid)
            if c is None or not c.live or c.is_am:
                continue
            end = now + max(HOLD_FLOOR_S, now - c.allocate_time)
            self.runs[cid] = TaskRun(NO_TASK, c.node_id, start=_started(c), end=end)
            self.events.push(self._report_time(c.node_id, end), ContainerReported(ContainerId(cid)))
            held += 1
        am = ledger.containers.get(att.am_container_id) if att.am_container_id is not None else None
        since = am.allocate_time if am is not None else app.start_time
        until = now + max(HOLD_FLOOR_S, now - since)
        self.events.push(until, AppEnds(app.app_id))
        self.held.append(Held(app.app_id, app.name, until, held + (am is not None)))


def job_of(app: App) -> Job | None:
    """The DAG job an app runs, from the job spec its submission carried; None for other apps."""
    if not app.job_spec_json:
        return None
    try:
        data = json.loads(app.job_spec_json)
        return parse_job(data, where=f"{app.app_id}'s job spec") if isinstance(data, dict) else None
    except (json.JSONDecodeError, JobSpecError):
        return None


def _started(c: Container) -> float:
    return c.start_time or c.allocate_time


def _decisions(job: Job, asks: Iterable[Ask]) -> list[AskDecision]:
    """The ledger's asks of a DAG app as its AM's ask-table entries."""
    out: list[AskDecision] = []
    for a in asks:
        i = stage_index_of(a.allocation_request_id)
        if a.num_containers <= 0 or i is None or not 0 <= i < len(job.stages):
            continue
        out.append(AskDecision(a.allocation_request_id, a.stage or job.stages[i].name, a.priority, a.capability,
                               a.num_containers, a.ask_type, a.remaining_work_s))
    return out

