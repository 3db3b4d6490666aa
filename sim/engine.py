"""The discrete-event simulator: trace events and a virtual clock drive the real scheduler and AM code.

One run replays a workload (a list of native ``Job``s) on simulated NodeManagers under one policy:

* the RM side is ``sim.cluster.SimCluster`` plus the real ``rm.core.cycle.run_cycle`` with the policy's
  real pipeline and share calculator; a cycle runs when capacity came free or asks grew and something is
  pending, at most once per ``cycle_interval_s`` (the live scheduler loop's minimum gap);
* each job's AM is ``sim.am.SimAM`` (the real ``DagState``, ``AskPolicy`` and ``AskTable``), started in an
  AM container like any other (``is_am``), ``am_startup_s`` after it is placed, heartbeating every
  ``am_interval_s`` on its own phase, and at once after a heartbeat that brought completions;
* a task starts ``launch_s`` after its container reaches the AM, runs its trace duration (optionally with
  seeded noise, stragglers and failures), and its end reaches the RM at its node's next NodeManager
  heartbeat (every ``nm_heartbeat_s``, a per-node phase): only then is the container freed.
* a pipeline with the reservation stage (``morpheus``) gets the reservation plan of ``sim.reservations``:
  a ``PlanTick`` at every plan step (roll, DRA), the active reservations in every snapshot, and the stage's
  preemptions applied (exit -102 to the AM, which asks again).

Heartbeats that cannot change anything are not simulated: an AM whose asks depend only on its DAG (the
greedy policy) heartbeats only when containers or completions are waiting for it — on its own phase, so
the timing is what it would have been. Everything random comes from ``random.Random`` seeded by ``seed``;
a run is a pure function of (workload, nodes, policy, config).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random

from am.jobspec import Job
from am.policies import make_ask_policy
from common.exits import EXIT_PREEMPTED
from common.ids import AppId, NodeId, QueuePath, app_id
from common.resources import Resources
from rm.core.cycle import run_cycle
from rm.core.plan import Preempt
from rm.core.queues import build_queues, resolve_queue
from rm.core.reservation.stage import ReservationStage
from rm.core.reservation.view import EMPTY_VIEW
from sim.am import Finished, RemainingPath, SimAM
from sim.cluster import SimApp, SimCluster, SimContainer, SimNode
from sim.events import (
    LATE,
    AmHeartbeatDue,
    AmRegistered,
    ContainerReported,
    CycleDue,
    EventQueue,
    JobArrived,
    PlanTick,
)
from sim.metrics import JobRecord, Recorder, RunResult
from sim.policies import SimPolicy
from sim.reservations import MorpheusConfig, SimReservations

CLUSTER_TS = 1
SHARE_BLIND_ASK_POLICIES = frozenset({"greedy"})
"""Ask policies whose decisions depend only on the DAG state, not on the fair share or the time."""


@dataclass(frozen=True, slots=True)
class Timing:
    """Latencies of the live system the simulation models (calibrated against ``shepherd up`` runs)."""

    am_interval_s: float = 0.5  # the DAG AM's allocate interval
    nm_heartbeat_s: float = 1.0  # NodeManager heartbeat interval
    am_startup_s: float = 0.3  # AM container placed -> AM registered and sending its first asks
    launch_s: float = 0.02  # container handed to the AM -> task process running
    cycle_interval_s: float = 0.05  # smallest gap between two scheduling cycles
    am_memory_mb: int = 256
    am_vcores: int = 1


@dataclass(frozen=True, slots=True)
class Faults:
    """Seeded perturbations of task attempts."""

    noise: float = 0.0  # sigma of a log-normal factor on every attempt's duration (0: exact)
    failure_rate: float = 0.0  # probability that an attempt fails (exit 1) part-way through
    straggler_rate: float = 0.0  # probability that an attempt is a straggler
    straggler_factor: float = 4.0  # a straggler runs this many times longer


@dataclass(frozen=True, slots=True)
class SimConfig:
    seed: int = 0
    timing: Timing = field(default_factory=Timing)
    faults: Faults = field(default_factory=Faults)
    ask_policy: str | None = None  # AM ask policy of jobs that name none; None: the scheduler's (SimPolicy)
    fair_sample_s: float = 5.0  # how often fairness is sampled (Jain's index uses 60 s windows of these)
    record_decisions: bool = False  # keep every placement as (time, job, stage, node) in ``decisions``
    morpheus: MorpheusConfig | None = None  # reservations, DRA, inference (pipelines with a reservation stage)


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    memory_mb: int
    vcores: int
    rack: str = "/default-rack"
    others: tuple[tuple[str, int], ...] = ()

    @property
    def capability(self) -> Resources:
        return Resources.of(memory_mb=self.memory_mb, vcores=self.vcores, **dict(self.others))


def uniform_nodes(count: int, memory_mb: int, vcores: int) -> list[NodeSpec]:
    return [NodeSpec(f"node{i + 1}", memory_mb, vcores) for i in range(count)]


class Simulator:
    """One run of a workload under one policy; see the module docstring."""

    def __init__(self, jobs: Sequence[Job], nodes: Sequence[NodeSpec], policy: SimPolicy,
                 config: SimConfig | None = None) -> None:
        if not nodes:
            raise ValueError("the simulated cluster needs at least one node")
        self.jobs = list(jobs)
        self.policy = policy
        self.cfg = config or SimConfig()
        self.timing = self.cfg.timing
        self.rng = Random(self.cfg.seed)
        phases = Random(self.cfg.seed * 7_919 + 1)
        hb = self.timing.nm_heartbeat_s
        self.queues = build_queues()
        self.cluster = SimCluster(
            [SimNode(NodeId(f"{n.name}:8041"), n.name, n.rack, n.capability, phases.random() * hb) for n in nodes],
            self.queues,
        )
        self.events = EventQueue()
        self.recorder = Recorder(self.cluster.capacity, self.cfg.fair_sample_s, self.policy.shares)
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
        self.morpheus: SimReservations | None = None
        self._idle_ticks = 0
        if any(isinstance(s, ReservationStage) for s in policy.pipeline):
            self.morpheus = SimReservations(self.cfg.morpheus or MorpheusConfig(), self.cluster.capacity,
                                            self.queues, CLUSTER_TS)
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
        while self.events:
            t = self.events.peek_time()
            self.recorder.before(t, self.cluster)
            self.now = t
            while self.events.next_is(t):
                _, event = self.events.pop()
                self._handle(event)
            self.recorder.after(t, self.cluster)
            self._maybe_cycle(t)
            batches += 1
            if progress is not None and batches % 2_000 == 0:
                progress(t, len(self.records) - len(self.ams), len(self.jobs))
        if progress is not None:
            progress(self.now, len(self.records), len(self.jobs))
        result = self.recorder.result(self.policy.name, list(self.records.values()), self.cycles,
                                      self.task_completions)
        if self.morpheus is not None:
            result.reservations = self.morpheus.stats.to_dict()
        return result

    def _handle(self, event: object) -> None:
        if isinstance(event, ContainerReported):
            self._reported(event.container)
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
                am.registered = True
                self._heartbeat(event.app)
        elif isinstance(event, PlanTick):
            self._tick()

    def _maybe_cycle(self, t: float, *, force: bool = False) -> None:
        c = self.cluster
        if self._cycle_queued or not (force or c.freed or c.asked) or not c.has_pending():
            return
        self._cycle_queued = True
        self.events.push(max(t, self._last_cycle + self.timing.cycle_interval_s), CycleDue(), LATE)

    # ------------------------------------------------------------------------------ RM side

    def _arrived(self, index: int) -> None:
        job = self.jobs[index]
        queue = self._queue_of(job)
        app = SimApp(index, app_id(CLUSTER_TS, index + 1), queue, job.user or "sim", job.priority, self.now,
                     self._am_resource)
        planned = [[self._first_duration(s.task_duration_s(i)) for i in range(s.tasks)] for s in job.stages]
        self.planned[index] = planned
        self.paths[index] = RemainingPath(job, planned)
        app.size_hint_s = self.paths[index].remaining_s(self.now)
        policy_name = getattr(job, "am_policy", None) or self.cfg.ask_policy or self.policy.ask_policy
        am = self.ams[index] = SimAM(job, make_ask_policy(policy_name, p_altruism=job.altruism,
                                                         seed=self.cfg.seed * 1_000_003 + index,
                                                         floor=job.altruism_floor))
        am.share_blind = policy_name in SHARE_BLIND_ASK_POLICIES
        self._share_aware += not am.share_blind
        self.records[index] = JobRecord(job.id, self.now, job.total_tasks)
        if self.morpheus is not None:
            app.reservation_id = self.records[index].reservation = self.morpheus.attach(job, app.app_id)
            if self.morpheus.tracks(job):
                app.usage = []
        self.cluster.add_app(app)

    def _queue_of(self, job: Job) -> QueuePath:
        try:
            return resolve_queue(self.queues, job.queue).path
        except ValueError:
            return QueuePath("root.default")  # trace queues map to the default queue unless configured

    def _cycle(self) -> None:
        self._cycle_queued = False
        self._last_cycle = self.now
        c = self.cluster
        c.freed = c.asked = False
        if self.policy.needs_sizes:
            for index, app in c.apps.items():
                if app.asks:
                    size = self.paths[index].remaining_s(self.now)
                    if size != app.size_hint_s:
                        app.size_hint_s = size
                        c.touch(app)
        snap = c.snapshot(EMPTY_VIEW if self.morpheus is None else self.morpheus.view(self.now))
        self.cycles += 1
        shares = self.policy.shares if self.policy.needs_shares or self._share_aware else None
        plan = run_cycle(snap, self.policy.pipeline, shares=shares, now=self.now,
                         rng=Random(self.cfg.seed * 1_000_003 + self.cycles))
        for p in plan.placements:
            container = c.allocate(p, self.now)
            if container is None:
                continue
            if self.cfg.record_decisions:
                self.decisions.append((round(self.now, 6), self.jobs[container.app].id, p.stage or "am",
                                       c.nodes[p.node_id].host))
            if container.is_am:
                start = self.now + self.timing.launch_s + self.timing.am_startup_s
                self.events.push(start, AmRegistered(container.app))
            else:
                self._wake(container.app)
        for wake in plan.wake:  # a policy that leaves asks waiting for a time asks to be woken then
            if wake.t > self.now and wake.t not in self._wakes:  # once per time, however many ask
                self._wakes.add(wake.t)
                self.events.push(wake.t, CycleDue(), LATE)
        for aid, share in plan.shares.items():
            shared = c.by_id.get(AppId(aid))
            if shared is not None and share != shared.fair_share:
                shared.fair_share = share
                am = self.ams.get(shared.index)
                if am is not None and not am.share_blind:  # a share-blind AM's asks do not change with it
                    self._wake(shared.index)
        for pre in plan.preemptions:
            self._preempt(pre)

    # ------------------------------------------------------------------------------ reservations

    def _tick(self) -> None:
        """A plan step boundary: the plan rolls, DRA runs when due, and a cycle sees the new guarantees."""
        assert self.morpheus is not None
        self.morpheus.tick(self.now, lambda: self.cluster.snapshot())
        self._maybe_cycle(self.now, force=True)
        # keep ticking while anything else can still happen, and for a day at most while nothing does
        self._idle_ticks = 0 if self.events else self._idle_ticks + 1
        step = self.morpheus.step_s
        if self._idle_ticks * step < self.morpheus.config.reservation.window_s and (self.events or self.cluster.apps):
            self.events.push((math.floor(self.now / step + 1e-9) + 1) * step, PlanTick())

    def _preempt(self, pre: Preempt) -> None:
        """Take ``pre.amount`` back from the app (exit -102, reported to its AM, which asks again)."""
        app = self.cluster.by_id.get(AppId(pre.app_id))
        if app is None or self.morpheus is None:
            return
        for c in self.cluster.victims(app, pre.amount):
            self._kill(app, c)
            self.morpheus.stats.preempted += 1

    def _kill(self, app: SimApp, c: SimContainer) -> None:
        if c.end > self.now:
            self.records[app.index].task_seconds -= c.end - max(self.now, c.start)
        c.exit_status = EXIT_PREEMPTED
        c.end = max(self.now, c.start)
        self.cluster.free(c, self.now)
        app.completed.append(c.cid)
        self._wake(app.index)

    def _reported(self, cid: int) -> None:
        c = self.cluster.containers.get(cid)
        if c is None or not c.live:
            return
        self.cluster.free(c, self.now)
        app = self.cluster.apps.get(c.app)
        if app is not None and not c.is_am:
            app.completed.append(cid)
            self._wake(c.app)

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
        am, app, now = self.ams[index], self.cluster.apps[index], self.now
        am.last_heartbeat = now
        am.scheduled = None
        am.fair_share = app.fair_share
        for cid in am.take_releases():
            c = self.cluster.containers.pop(cid, None)
            if c is not None:
                self.cluster.free(c, now)
        self.cluster.update_asks(app, am.ask_changes(now))
        allocated = [(cid, self.cluster.containers[cid].rid) for cid in app.undelivered]
        done = [self._finished(cid) for cid in app.completed]
        app.undelivered.clear()
        app.completed.clear()
        outcomes = am.on_completed(done, now)
        path = self.paths[index]
        for stage, task, outcome in outcomes:
            path.ended(stage, task, outcome)
        for start in am.on_allocated(allocated, now):
            self._launch(index, start.container, start.stage, start.task, start.attempt)
        if am.dag.finished:
            self._finish(index, am, app)
        elif outcomes:
            self._schedule(index, am, now)  # the live AM heartbeats again at once after completions
        elif not am.share_blind:
            self._schedule(index, am, now + self.timing.am_interval_s)

    def _finished(self, cid: int) -> Finished:
        c = self.cluster.containers.pop(cid)
        return Finished(cid, c.exit_status, max(0.0, c.end - c.start))

    def _launch(self, index: int, cid: int, stage: str, task: int, attempt: int) -> None:
        c = self.cluster.containers[cid]
        job = self.jobs[index]
        stage_index = job.stage_index(stage)
        base = self.planned[index][stage_index][task] if attempt == 0 else \
            self._first_duration(job.stages[stage_index].task_duration_s(task))
        duration, exit_status = self._attempt(base)
        c.stage, c.task = stage, task
        c.start = self.now + self.timing.launch_s
        c.end = c.start + duration
        c.exit_status = exit_status
        self.paths[index].started(stage, task, c.end)
        record = self.records[index]
        if record.first_task_start is None:
            record.first_task_start = c.start
        record.task_seconds += duration
        self.events.push(self._report_time(self.cluster.nodes[c.node], c.end), ContainerReported(cid))

    def _report_time(self, node: SimNode, t: float) -> float:
        hb = self.timing.nm_heartbeat_s
        return node.phase + math.ceil((t - node.phase) / hb - 1e-9) * hb

    def _first_duration(self, base: float) -> float:
        f = self.cfg.faults
        d = base
        if f.noise > 0:
            d *= self.rng.lognormvariate(0.0, f.noise)
        if f.straggler_rate > 0 and self.rng.random() < f.straggler_rate:
            d *= f.straggler_factor
        return d

    def _attempt(self, duration: float) -> tuple[float, int]:
        f = self.cfg.faults
        if f.failure_rate > 0 and self.rng.random() < f.failure_rate:
            return duration * self.rng.random(), 1
        return duration, 0

    def _finish(self, index: int, am: SimAM, app: SimApp) -> None:
        record = self.records[index]
        record.finish = self.now
        record.status = "FAILED" if am.dag.failed_task is not None else "SUCCEEDED"
        self.task_completions += am.dag.succeeded
        self.cluster.finish_app(app, self.now)
        if self.morpheus is not None:
            self.morpheus.finished(self.jobs[index], app.app_id, submit=app.submit_time, finish=self.now,
                                   usage=app.usage or (), succeeded=record.status == "SUCCEEDED",
                                   queue=app.queue, now=self.now)
        self._share_aware -= not am.share_blind
        del self.ams[index]
        del self.paths[index]
        del self.planned[index]


def simulate(jobs: Sequence[Job], nodes: Sequence[NodeSpec], policy: SimPolicy,
             config: SimConfig | None = None) -> RunResult:
    return Simulator(jobs, nodes, policy, config).run()

