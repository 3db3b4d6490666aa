"""The discrete-event simulator: trace events and a virtual clock drive the real scheduler and AM code.

One run replays a workload (a list of native ``Job``s) on simulated NodeManagers under one policy:

* the RM side is the live RM's own ledger (``rm.core.ledger.Ledger``, without a store: ``durable=False``)
  plus the real ``rm.core.cycle.run_cycle`` with the policy's real pipeline and share calculator; nodes
  register, AMs register and allocate with their AMRM tokens, and NodeManagers report completed containers
  in heartbeats, as live; a cycle runs when capacity came free or asks grew and something is pending, at
  most once per ``cycle_interval_s`` (the live scheduler loop's minimum gap);
* each job's AM is ``sim.am.SimAM`` (the real ``DagState``, ``AskPolicy`` and ``AskTable``), started in an
  AM container like any other (``is_am``), ``am_startup_s`` after it is placed, heartbeating every
  ``am_interval_s`` on its own phase, and at once after a heartbeat that brought completions;
* a task starts ``launch_s`` after its container reaches the AM, runs its trace duration (optionally with
  seeded noise, stragglers and failures), and its end reaches the RM at its node's next NodeManager
  heartbeat (every ``nm_heartbeat_s``, a per-node phase): only then is the container freed.
* a pipeline with the reservation stage (``morpheus``) gets the reservation plan of ``sim.reservations``:
  a ``PlanTick`` at every plan step (roll, DRA), the active reservations in every snapshot, and the stage's
  preemptions applied by the ledger (exit -102 to the AM, which asks again).

Heartbeats that cannot change anything are not simulated: an AM whose asks depend only on its DAG (the
greedy policy) heartbeats only when containers or completions are waiting for it — on its own phase, so
the timing is what it would have been. Everything random comes from ``random.Random`` seeded by ``seed``;
a run is a pure function of (workload, nodes, policy, config).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from random import Random
from typing import cast

from am.jobspec import Job
from am.policies import JOCKEY_POLICIES, make_ask_policy
from am.policies.api import FollowsDeadline, FollowsGrant
from am.policies.jockey.profile import JobProfile
from common.errors import AdmissionRefused
from common.exits import EXIT_PREEMPTED
from common.ids import ContainerId, NodeId, QueuePath
from common.resources import Resources
from common.terms import AppTerms
from rm.core.cycle import run_cycle
from rm.core.deadlines.admission import DeadlineAdmission
from rm.core.entities import Ask, CompletedStatus
from rm.core.events import ContainerCompleted, Event, Journal
from rm.core.ledger import Ledger
from rm.core.policies.registry import make_admission
from rm.core.queues import build_queues, resolve_queue
from rm.core.reservation.stage import ReservationStage
from rm.core.state_types import NodeStatus, SubmitSpec
from sim import sizes as sim_sizes
from sim.am import Finished, RemainingPath, SimAM, declared_only, exact, undeclared
from sim.attempts import Attempts
from sim.config import NEVER, SIM_CORE, Faults, NodeSpec, SimConfig, TaskRun, Timing, uniform_nodes
from sim.events import (
    LATE,
    AmHeartbeatDue,
    AmRegistered,
    ContainerReported,
    CycleDue,
    DeadlineMoved,
    EventQueue,
    JobArrived,
    PlanTick,
)
from sim.history import RunHistory
from sim.metrics import JobRecord, Recorder, RunResult, deadline_of
from sim.policies import SimPolicy
from sim.reservations import MorpheusConfig, SimReservations

CLUSTER_TS = 1
AM_LAUNCH = {"commands": ["sim-am"]}  # what a simulated AM container "runs" (the ledger wants a command)
SHARE_BLIND_ASK_POLICIES = frozenset({"greedy"})
"""Ask policies whose decisions depend only on the DAG state, not on the fair share or the time."""
__all__ = ["NEVER", "SIM_CORE", "Faults", "NodeSpec", "SimConfig", "Simulator", "TaskRun", "Timing", "simulate",
           "uniform_nodes"]


class Simulator:
    """One run of a workload under one policy; see the module docstring."""

    def __init__(self, jobs: Sequence[Job], nodes: Sequence[NodeSpec], policy: SimPolicy,
                 config: SimConfig | None = None) -> None:
        if not nodes:
            raise ValueError("the simulated cluster needs at least one node")
        self.jobs = list(jobs)
        self.policy = policy
        self._prices = policy.admission == DeadlineAdmission.name  # deadlines are bought: the RM reads job files
        self.cfg = config or SimConfig()
        self.timing = self.cfg.timing
        phases = Random(self.cfg.seed * 7_919 + 1)
        hb = self.timing.nm_heartbeat_s
        self.queues = build_queues()
        capacity = Resources()
        for n in nodes:
            capacity = capacity + n.capability
        self.morpheus: SimReservations | None = None
        if any(isinstance(s, ReservationStage) for s in policy.pipeline):
            self.morpheus = SimReservations(self.cfg.morpheus or MorpheusConfig(), capacity, self.queues,
                                            CLUSTER_TS)
        self.ledger = Ledger(Ledger.fresh_meta(CLUSTER_TS), self.queues,
                             replace(SIM_CORE, sampling=self.cfg.sampling),
                             reservations=self.morpheus.system if self.morpheus is not None else None,
                             admission=make_admission(policy.admission))
        sim_sizes.setup(self.ledger.sizes, policy, self.cfg.size_history)  # SLearn's gate, GS's estimator
        self.ledger.subscribe(self)
        self.phase: dict[NodeId, float] = {}
        self.node_name: dict[NodeId, str] = {}
        for n in nodes:
            node = self.ledger.register_node(f"{n.name}:8041", f"{n.name}:8042", n.rack, n.capability, (), 0.0)
            self.phase[node.node_id] = phases.random() * hb
            self.node_name[node.node_id] = n.name
        self.history = RunHistory()  # the stage reports of finished Jockey runs, for their jobs' next runs
        self.attempts = Attempts(self.cfg.faults, self.cfg.seed, max((j.arrival_s for j in self.jobs), default=0.0),
                                 [n.name for n in nodes])
        # application ids in workload order, as a client asks for them before it submits
        self.app_ids = [self.ledger.new_application(0.0) for _ in self.jobs]
        self.index_of = {aid: i for i, aid in enumerate(self.app_ids)}
        self.runs: dict[ContainerId, TaskRun] = {}
        self.usage: dict[int, list[tuple[float, float, Resources]]] = {}  # tracked jobs' containers
        self.events = EventQueue()
        self.recorder = Recorder(capacity, self.cfg.fair_sample_s, self.policy.shares)
        self.ams: dict[int, SimAM] = {}
        self.paths: dict[int, RemainingPath] = {}
        self.planned: dict[int, list[list[float]]] = {}
        self.records: dict[int, JobRecord] = {}
        self.now = 0.0
        self.cycles = 0
        self.task_completions = 0
        self.decisions: list[tuple[float, str, str, str]] = []
        self._last_cycle = -math.inf
        self._cycle_queued = False
        self._wakes: set[float] = set()  # times a policy asked to be woken at (one cycle each)
        self._share_aware = 0  # AMs whose asks depend on their fair share or the time
        self._am_resource = Resources.of(memory_mb=self.timing.am_memory_mb, vcores=self.timing.am_vcores)
        self._idle_ticks = 0
        if self.morpheus is not None:
            first = min((j.arrival_s for j in self.jobs), default=0.0)
            for r in self.morpheus.config.reservations:
                first = min(first, r.at)
            step = self.morpheus.step_s
            self.events.push(math.floor(first / step) * step, PlanTick())  # before arrivals at the same time
        for i, job in enumerate(self.jobs):
            self.events.push(job.arrival_s, JobArrived(i))

    # ------------------------------------------------------------------------------ the loop

    def run(self, progress: Callable[[float, int, int], None] | None = None) -> RunResult:
        """Replay every job to the end; ``progress(now, jobs_done, jobs)`` is called now and then."""
        batches = 0
        ledger = self.ledger
        while self.events:
            t = self.events.peek_time()
            self.recorder.before(t, ledger)
            self.now = t
            while self.events.next_is(t):
                _, event = self.events.pop()
                self._handle(event)
            self.recorder.after(t, ledger)
            self._maybe_cycle(t)
            batches += 1
            if progress is not None and batches % 2_000 == 0:
                progress(t, len(self.records) - len(self.ams), len(self.jobs))
            if batches % 20_000 == 0:
                ledger.forget_completed_containers()
        if progress is not None:
            progress(self.now, len(self.records), len(self.jobs))
        result = self.recorder.result(self.policy.name, list(self.records.values()), self.cycles,
                                      self.task_completions)
        if self.morpheus is not None:
            result.reservations = self.morpheus.stats.to_dict()
        return result

    def _handle(self, event: object) -> None:
        if isinstance(event, ContainerReported):
            self._reported(ContainerId(event.container))
        elif isinstance(event, AmHeartbeatDue):
            am = self.ams.get(event.app)
            if am is not None and am.token == event.token:
                self._heartbeat(event.app)
        elif isinstance(event, CycleDue):
            self._wakes.discard(self.now)
            self._cycle()
        elif isinstance(event, JobArrived):
            self._arrived(event.job)
        elif isinstance(event, AmRegistered):
            am = self.ams.get(event.app)
            if am is not None:
                self.ledger.am_register(am.amrm_token, "sim", 0, "", self.now)
                am.registered = True
                self._heartbeat(event.app)
        elif isinstance(event, PlanTick):
            self._tick()
        elif isinstance(event, DeadlineMoved):
            self._move_deadline(event.app, event.deadline)

    def _maybe_cycle(self, t: float, *, force: bool = False) -> None:
        ledger = self.ledger
        if self._cycle_queued or not (force or ledger.capacity_freed or ledger.asks_grew) \
                or not ledger.has_pending():
            return
        self._cycle_queued = True
        self.events.push(max(t, self._last_cycle + self.timing.cycle_interval_s), CycleDue(), LATE)

    # ------------------------------------------------------------------------------ RM side

    def _arrived(self, index: int) -> None:
        job = self.jobs[index]
        app_id = self.app_ids[index]
        planned = [[self.attempts.first_duration(s.task_duration_s(i)) for i in range(s.tasks)] for s in job.stages]
        self.planned[index] = planned
        self.paths[index] = RemainingPath(job, planned)
        policy_name = getattr(job, "am_policy", None) or self.cfg.ask_policy or self.policy.ask_policy
        known = declared_only(job) if self.cfg.declared_durations else job  # what its AM and job file say
        am = self.ams[index] = SimAM(known, make_ask_policy(policy_name, p_altruism=job.altruism,
                                                         seed=self.cfg.seed * 1_000_003 + index,
                                                         floor=job.altruism_floor, started_at=self.now,
                                                         profile=self._profile(job, policy_name),
                                                         control=self.cfg.control))
        am.share_blind = policy_name in SHARE_BLIND_ASK_POLICIES
        self._share_aware += not am.share_blind
        record = self.records[index] = JobRecord(job.id, self.now, job.total_tasks)
        due = deadline_of(job)
        record.deadline = None if due is None else self.now + due
        move = self.cfg.deadline_moves.get(job.id)
        if move is not None and due is not None:
            fraction, factor = move
            self.events.push(self.now + fraction * due, DeadlineMoved(index, self.now + factor * due))
        reservation = None
        if self.morpheus is not None:
            reservation = record.reservation = self.morpheus.choose(job)
            if self.morpheus.tracks(job):
                self.usage[index] = []
        deadline = self.now + job.deadline_s if job.deadline_s is not None and not reservation else None
        try:
            self.ledger.submit(SubmitSpec(
                app_id=app_id, name=job.name or job.id, queue=self._queue_of(job), user=job.user or "sim",
                app_type=sim_sizes.APP_TYPE, priority=job.priority, am_resource=self._am_resource, am_launch=AM_LAUNCH,
                reservation_id=reservation or "", terms=AppTerms(deadline=deadline),
                job_spec_json=(known if self.cfg.job_file_durations else undeclared(known)).to_json()
                if self._reads_spec(deadline) else "",
            ), self.now)
        except AdmissionRefused:  # the scheduler's admission rule turned the job away
            record.status = "REFUSED"
            self._share_aware -= not am.share_blind
            del self.ams[index], self.paths[index], self.planned[index]
            self.usage.pop(index, None)
            return
        if not self.ledger.sizes.sampling and self.policy.estimator in (None, "oracle"):  # else learnt as live
            self.ledger.report_size(app_id, exact(self.paths[index], self.now))

    def _move_deadline(self, index: int, deadline: float) -> None:
        """The owner moves a running job's deadline: the RM's, when it holds one (admission may refuse the
        move, which then changes nothing), and the one its AM plans for (the RM's next answers carry it)."""
        record, am = self.records[index], self.ams.get(index)
        if am is None or record.finish is not None:
            return
        app = self.ledger.apps[self.app_ids[index]]
        if app.terms.deadline is not None:
            try:
                self.ledger.change_deadline(app.app_id, deadline, self.now)
            except AdmissionRefused:
                return
        if record.first_deadline is None:
            record.first_deadline = record.deadline
        record.deadline = deadline
        if isinstance(am.policy, FollowsDeadline):
            am.policy.set_deadline(deadline)

    def _reads_spec(self, deadline: float | None) -> bool:
        """The RM reads the job file to price a deadline, and to count a job's tasks under GS (as live)."""
        return (deadline is not None and self._prices) or self.policy.estimator is not None

    def _queue_of(self, job: Job) -> QueuePath:
        try:
            return resolve_queue(self.queues, job.queue).path
        except ValueError:
            return QueuePath("root.default")  # trace queues map to the default queue unless configured

    def _cycle(self) -> None:
        self._cycle_queued = False
        self._last_cycle = self.now
        ledger = self.ledger
        ledger.capacity_freed = ledger.asks_grew = False
        if self.policy.needs_sizes:
            for index, path in self.paths.items():
                app = ledger.apps[self.app_ids[index]]
                current = app.current
                if current is not None and any(a.num_containers > 0 for a in current.asks.values()):
                    ledger.report_size(app.app_id, exact(path, self.now))
        snap = ledger.snapshot(self.now)
        self.cycles += 1
        shares = self.policy.shares if self.policy.needs_shares or self._share_aware else None
        plan = run_cycle(snap, self.policy.pipeline, shares=shares, now=self.now,
                         rng=Random(self.cfg.seed * 1_000_003 + self.cycles))
        before = {aid: ledger.apps[aid].fair_share for aid in plan.shares if aid in ledger.apps}
        applied = ledger.apply_plan(plan, self.now)
        for launch in ledger.drain_launches():
            self.ams[self.index_of[launch.app_id]].amrm_token = launch.amrm_token
        for p in applied:
            index = self.index_of[p.app_id]
            if self.cfg.record_decisions:
                self.decisions.append((round(self.now, 6), self.jobs[index].id, p.stage or "am",
                                       ledger.nodes[p.node_id].host))
            if p.is_am:
                start = self.now + self.timing.launch_s + self.timing.am_startup_s
                self.events.push(start, AmRegistered(index))
            else:
                self._wake(index)
        for wake in plan.wake:  # a policy that leaves asks waiting for a time asks to be woken then
            if wake.t > self.now and wake.t not in self._wakes:  # once per time, however many ask
                self._wakes.add(wake.t)
                self.events.push(wake.t, CycleDue(), LATE)
        for aid, share in plan.shares.items():
            shared = self.index_of.get(aid)
            if shared is not None and share != before.get(aid):
                am = self.ams.get(shared)
                if am is not None and not am.share_blind:  # a share-blind AM's asks do not change with it
                    self._wake(shared)

    hears: frozenset[type] = frozenset({ContainerCompleted})

    def on_event(self, event: Event, journal: Journal) -> None:
        """The ledger's lifecycle, heard as a listener: containers that end (usage for the reservation
        system's run history; preempted tasks lose their remaining work and their AM hears of it)."""
        if not isinstance(event, ContainerCompleted):
            return
        c = event.container
        index = self.index_of.get(c.app_id)
        if index is None:
            return
        usage = self.usage.get(index)
        if usage is not None:
            usage.append((c.allocate_time, event.now, c.resource))
        record = self.records.get(index)
        if record is not None and record.deadline is not None and not c.is_am:
            record.held.append((c.allocate_time, event.now, c.resource))
        if c.exit_status != EXIT_PREEMPTED:
            return
        run = self.runs.get(c.container_id)
        if run is not None and run.task >= 0:
            if run.end > self.now:
                self.records[index].task_seconds -= run.end - max(self.now, run.start)
            run.end = max(self.now, run.start)
        if self.morpheus is not None:
            self.morpheus.stats.preempted += 1
        self._wake(index)

    # ------------------------------------------------------------------------------ reservations

    def _tick(self) -> None:
        """A plan step boundary: the plan rolls, DRA runs when due, and a cycle sees the new guarantees."""
        assert self.morpheus is not None
        self.morpheus.tick(self.now, self.ledger.snapshot)
        self._maybe_cycle(self.now, force=True)
        # keep ticking while anything else can still happen, and for a day at most while nothing does
        self._idle_ticks = 0 if self.events else self._idle_ticks + 1
        step = self.morpheus.step_s
        if self._idle_ticks * step < self.morpheus.config.reservation.window_s and (self.events or self.ledger.active):
            self.events.push((math.floor(self.now / step + 1e-9) + 1) * step, PlanTick())

    # ------------------------------------------------------------------------------ NodeManager side

    def _reported(self, cid: ContainerId) -> None:
        """The container's process ended: its node's heartbeat reports it."""
        c = self.ledger.containers.get(cid)
        run = self.runs.get(cid)
        if c is None or not c.live or run is None:
            self.runs.pop(cid, None)  # preempted, or released when its job ended
            return
        self.ledger.node_heartbeat(c.node_id, 0, (NodeStatus(cid, "COMPLETE", run.exit_status, "", run.start),),
                                   True, "", self.now)
        if not c.is_am:
            self._wake(run.index)

    # ------------------------------------------------------------------------------ AM side

    def _wake(self, index: int) -> None:
        """Schedule the AM's next heartbeat on its own phase, unless one is already queued."""
        am = self.ams.get(index)
        if am is None or not am.registered or am.scheduled is not None:
            return
        interval = self.timing.am_interval_s
        k = math.floor((self.now - am.last_heartbeat) / interval + 1e-9) + 1
        self._schedule(index, am, am.last_heartbeat + k * interval)

    def _schedule(self, index: int, am: SimAM, t: float) -> None:
        am.token += 1
        am.scheduled = t
        self.events.push(t, AmHeartbeatDue(index, am.token))

    def _heartbeat(self, index: int) -> None:
        am, now, ledger = self.ams[index], self.now, self.ledger
        am.last_heartbeat = now
        am.scheduled = None
        am.fair_share = ledger.apps[self.app_ids[index]].fair_share
        asks = [Ask(allocation_request_id=d.allocation_request_id, priority=d.priority, capability=d.capability,
                    num_containers=d.num_containers, ask_type=d.ask_type, remaining_work_s=d.remaining_work_s,
                    stage=d.stage) for d in am.ask_changes(now)]
        signals = am.policy.signals()
        res = ledger.am_allocate(am.amrm_token, am.response_id, asks, am.take_releases(), 0.0, (), (), now,
                                 signals=signals)
        self.records[index].note_guarantees(now, signals.guarantee, res.granted_guarantee)
        am.response_id = res.response_id
        if res.deadline is not None and isinstance(am.policy, FollowsDeadline):
            am.policy.set_deadline(res.deadline)  # as the DAG AM hears the RM's deadline in every answer
        if _follows_grant(type(am.policy)):  # and the guarantee it grants, as the DAG AM does
            cast(FollowsGrant, am.policy).set_granted(res.granted_guarantee, res.guarantee_ceiling)
        done = [self._finished(s) for s in res.completed]
        outcomes = am.on_completed(done, now)
        path = self.paths[index]
        for stage, task, outcome in outcomes:
            path.ended(stage, task, outcome)
        allocated: list[tuple[str, int]] = [(c.container_id, c.allocation_request_id) for c in res.allocated]
        for c in res.allocated:
            self.runs[c.container_id] = TaskRun(index, c.node_id)
        for start in am.on_allocated(allocated, now):
            self._launch(index, ContainerId(start.container), start.stage, start.task, start.attempt)
        if am.dag.finished:
            self._finish(index, am)
        elif outcomes:
            self._schedule(index, am, now)  # the live AM heartbeats again at once after completions
        elif not am.share_blind:
            self._schedule(index, am, now + self.timing.am_interval_s)

    def _finished(self, status: CompletedStatus) -> Finished:
        run = self.runs.pop(status.container_id, None)
        duration = max(0.0, run.end - run.start) if run is not None and run.task >= 0 else 0.0
        return Finished(status.container_id, status.exit_status, duration)

    def _launch(self, index: int, cid: ContainerId, stage: str, task: int, attempt: int) -> None:
        run = self.runs[cid]
        job = self.jobs[index]
        stage_index = self.ams[index].dag.stage_index(stage)
        base = self.planned[index][stage_index][task] if attempt == 0 else \
            self.attempts.first_duration(job.stages[stage_index].task_duration_s(task))
        work, exit_status = self.attempts.outcome(base)
        run.stage, run.task = stage, task
        run.start = self.now + self.timing.launch_s
        run.end = self.attempts.end(self.node_name.get(run.node, ""), run.start, work)  # "": a resumed run's node
        duration = run.end - run.start
        run.exit_status = exit_status
        self.paths[index].started(stage, task, run.end)
        record = self.records[index]
        if record.first_task_start is None:
            record.first_task_start = run.start
        record.task_seconds += duration
        self.events.push(self._report_time(run.node, run.end), ContainerReported(cid))

    def _profile(self, job: Job, policy_name: str) -> JobProfile | None:
        """A Jockey job's profile: the one given for it, else the one its earlier runs here make, as the RM's."""
        given = self.cfg.profiles.get(job.id)
        if given is not None or not self.cfg.learn_profiles or policy_name not in JOCKEY_POLICIES:
            return given
        return self.history.profile(self._history_key(job))

    def _history_key(self, job: Job) -> tuple[str, str, str]:
        """What the RM files a job's runs under: its app's name, queue and user, as submitted."""
        return job.name or job.id, str(self._queue_of(job)), job.user or "sim"

    def _report_time(self, node: NodeId, t: float) -> float:
        hb = self.timing.nm_heartbeat_s
        phase = self.phase[node]
        return phase + math.ceil((t - phase) / hb - 1e-9) * hb

    def _finish(self, index: int, am: SimAM) -> None:
        record = self.records[index]
        record.finish = self.now
        record.status = "FAILED" if am.dag.failed_task is not None else "SUCCEEDED"
        self.task_completions += am.dag.succeeded
        app = self.ledger.apps[self.app_ids[index]]
        self.ledger.am_finish(am.amrm_token, record.status, "", "", self.now)
        if self.cfg.learn_profiles and am.policy.name in JOCKEY_POLICIES:
            self.history.record(str(app.app_id), self._history_key(self.jobs[index]), self.now,
                                record.status == "SUCCEEDED", am.dag)
        if self.morpheus is not None:
            self.morpheus.finished(self.jobs[index], app.app_id, submit=app.submit_time, finish=self.now,
                                   usage=self.usage.pop(index, ()), succeeded=record.status == "SUCCEEDED",
                                   queue=app.queue, now=self.now)
        self._share_aware -= not am.share_blind
        del self.ams[index]
        del self.paths[index]
        del self.planned[index]


def simulate(jobs: Sequence[Job], nodes: Sequence[NodeSpec], policy: SimPolicy,
             config: SimConfig | None = None) -> RunResult:
    return Simulator(jobs, nodes, policy, config).run()



@cache
def _follows_grant(kind: type) -> bool:
    """Whether an AM policy of this class hears the granted guarantee (a protocol check is slow on every beat)."""
    return issubclass(kind, FollowsGrant)
