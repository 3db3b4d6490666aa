"""The simulated ApplicationMaster: the DAG AM's decisions (``am.dag.DagAM``) without its I/O.

The same pure pieces the live AM uses do the work: a ``DagState`` for task states and duration estimates,
an ``AskPolicy`` for the asks, and an ``AskTable`` that sends only what changed (withdrawing entries the
policy no longer decides) and counts entries down as containers arrive. As live, a heartbeat computes the
asks before it reads the response; completions come first, then allocations; an allocated container goes to
the lowest-numbered runnable task of its stage or is released when no task needs it; and after a
heartbeat that brought completions the AM heartbeats again at once (new tasks may have become runnable).

``RemainingPath`` is the simulator's oracle for size-based baselines (SJF): the job's remaining
critical-path length computed from the exact task durations, kept per stage so it costs O(stages).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from am.dag_state import DagState
from am.jobspec import Job
from am.policies import AskDecision, AskPolicy, AskTable, stage_index_of
from common.resources import Resources
from common.terms import SizeEstimate


@dataclass(frozen=True, slots=True)
class Finished:
    """A container the RM reported as completed, as the AM reads it."""

    container: str
    exit_status: int
    duration_s: float


@dataclass(frozen=True, slots=True)
class Start:
    """The AM starts task ``task`` of ``stage`` (launch number ``attempt``) in ``container``."""

    container: str
    stage: str
    task: int
    attempt: int


def declared_only(job: Job) -> Job:
    """The job as an AM (and the RM reading its job file) would know it before it runs: each stage's declared
    ``duration_s`` (the mean of its ``durations_s`` where it declares none), not the time each task will take.
    A stage's ``durations_s`` are what its tasks really take; the simulator runs those."""
    stages = tuple(s.model_copy(update={"duration_s": s.estimated_task_s, "durations_s": None})
                   if s.durations_s is not None else s for s in job.stages)
    return job.model_copy(update={"stages": stages})


def undeclared(job: Job) -> Job:
    """The job file with no durations at all: what the RM reads of a job whose file says nothing of how long
    its tasks take (a stock YARN app's, or SLearn's setting, where every size is learnt)."""
    stages = tuple(s.model_copy(update={"duration_s": None, "durations_s": None}) for s in job.stages)
    return job.model_copy(update={"stages": stages})


class SimAM:
    """One job's AM attempt: ask decisions, task assignment, completion handling."""

    def __init__(self, job: Job, policy: AskPolicy) -> None:
        self.job = job
        self.dag = DagState(job)
        self.policy = policy
        self.table = AskTable()
        self.fair_share = Resources.ZERO
        self.releases: list[str] = []
        self.amrm_token = ""  # the RM's token for this attempt, handed over with its AM container
        self.response_id = 0
        self.registered = False
        self.share_blind = True  # its asks depend only on the DAG: idle heartbeats can be skipped
        self.last_heartbeat = 0.0
        self.scheduled: float | None = None  # the time of its next heartbeat event, if one is queued
        self.token = 0

    def ask_changes(self, now: float) -> list[AskDecision]:
        """The policy's decisions, as the changes to send (``AskTable.update``)."""
        return self.table.update(self.policy.asks(self.dag, self.fair_share, now))

    def take_releases(self) -> list[str]:
        out, self.releases = self.releases, []
        return out

    def on_completed(self, finished: list[Finished], now: float) -> list[tuple[str, int, str]]:
        """Apply completions; returns (stage, task, outcome) for each container the DAG knew."""
        out: list[tuple[str, int, str]] = []
        for f in finished:
            done = self.dag.complete(str(f.container), f.exit_status, now, measured_s=f.duration_s)
            if done.outcome != "unknown":
                out.append((done.stage, done.task, done.outcome))
        return out

    def on_allocated(self, containers: list[tuple[str, int]], now: float) -> list[Start]:
        """Hand each (container, allocation_request_id) to a runnable task of its stage, or release it."""
        starts: list[Start] = []
        runnable: dict[str, deque[int]] = {}
        finished = bool(containers) and self.dag.finished  # starting tasks cannot finish the job
        for cid, rid in containers:
            self.table.delivered(rid)
            index = stage_index_of(rid)
            if index is None or not 0 <= index < len(self.job.stages) or finished:
                self.releases.append(cid)
                continue
            stage = self.job.stages[index].name
            queue = runnable.get(stage)
            if queue is None:
                queue = runnable[stage] = deque(self.dag.runnable(stage))
            if not queue:
                self.releases.append(cid)
                continue
            task = queue.popleft()
            attempt = self.dag.start(stage, task, str(cid), now)
            starts.append(Start(cid, stage, task, attempt))
        return starts


@dataclass(slots=True)
class _StagePath:
    durations: list[float]
    suffix_max: list[float]  # suffix_max[i] = max(durations[i:]), with a trailing 0
    children: list[int]
    started: int = 0  # tasks started at least once (first starts go in index order)
    succeeded: int = 0
    retry: dict[int, float] = field(default_factory=dict)  # tasks waiting to run again -> duration
    max_end: float = float("-inf")  # latest end of an attempt started so far


class RemainingPath:
    """A job's remaining critical-path length in seconds, from exact durations (SJF's size)."""

    def __init__(self, job: Job, durations: list[list[float]]) -> None:
        names = {s.name: i for i, s in enumerate(job.stages)}
        self._order = [names[s.name] for s in job.topological_order()]
        self._names = names
        self._stages: list[_StagePath] = []
        self.total_s = sum(sum(d) for d in durations)  # every task once: the job's size in task-seconds
        for i, stage in enumerate(job.stages):
            d = durations[i]
            suffix = [0.0] * (len(d) + 1)
            for k in range(len(d) - 1, -1, -1):
                suffix[k] = max(d[k], suffix[k + 1])
            children = [names[c.name] for c in job.children(stage.name)]
            self._stages.append(_StagePath(d, suffix, children))

    def started(self, stage: str, task: int, end: float) -> None:
        st = self._stages[self._names[stage]]
        if st.retry.pop(task, None) is None:
            st.started = max(st.started, task + 1)
        st.max_end = max(st.max_end, end)

    def ended(self, stage: str, task: int, outcome: str) -> None:
        st = self._stages[self._names[stage]]
        if outcome == "succeeded":
            st.succeeded += 1
        elif outcome in ("retry", "requeued"):
            st.retry[task] = st.durations[task]

    def remaining_s(self, now: float) -> float:
        cp = [0.0] * len(self._stages)
        for i in reversed(self._order):
            st = self._stages[i]
            if st.succeeded >= len(st.durations):
                own = 0.0
            else:
                own = max(st.suffix_max[st.started], max(st.retry.values(), default=0.0), st.max_end - now, 0.0)
            cp[i] = own + max((cp[c] for c in st.children), default=0.0)
        return max(cp, default=0.0)


def exact(path: RemainingPath, now: float = 0.0) -> SizeEstimate:
    """The simulator's size of a job: its exact remaining critical path (SJF's oracle), and its total
    task-seconds (GS's oracle)."""
    return SizeEstimate(path.remaining_s(now), "oracle", path.total_s, confidence=1.0)
