"""A job's profile: what one or more earlier runs say about each stage (Jockey §4.1).

Per stage: the task count, observed task run times (drawn from with replacement when simulating),
initialisation latencies (time a task holds its container before its work starts), the mean time a
task waited in the queue (the ``Q_s`` of the totalworkWithQ indicator), the probability that an attempt
fails, the parent stages (every edge is a barrier: a stage starts when all its parents have finished)
and the container size. From these come the paper's per-stage figures:

* ``T_s`` — total run time of the stage's tasks (``tasks × mean run time``);
* ``Q_s`` — total queued time of the stage's tasks (``tasks × mean queue time``);
* ``l_s`` — the longest task (the largest observed run time);
* ``L_s`` — the longest path from the stage to the end of the job, *excluding* the stage itself:
  ``max over children c of (l_c + L_c)``, 0 for a stage without children.

A profile comes from a job file (``profile_from_job``: declared durations, no noise) or from recorded
runs (``profile_from_runs``). The allocation unit is the job's most common container size.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from am.dag_state import DagState
from am.jobspec import Job
from common.resources import Resources


class ProfileError(ValueError):
    """A profile is malformed: unknown parent, cycle, empty samples, bad probability."""


@dataclass(frozen=True, slots=True)
class StageProfile:
    name: str
    tasks: int
    run_s: tuple[float, ...]  # observed task run times; one value = deterministic
    init_s: tuple[float, ...] = (0.0,)  # initialisation latency samples (container held, not yet working)
    queue_s: float | None = None  # mean queued time per task for Q_s; None = mean of init_s
    failure_p: float = 0.0  # probability that one attempt fails (and is restarted)
    parents: tuple[str, ...] = ()
    container: Resources | None = None
    typical_start_s: float | None = None  # when the stage started in a reference run (minstage)
    typical_end_s: float | None = None  # when it ended in that run

    def __post_init__(self) -> None:
        if self.tasks < 1:
            raise ProfileError(f"stage {self.name!r}: tasks must be >= 1, got {self.tasks}")
        for label, samples in (("run_s", self.run_s), ("init_s", self.init_s)):
            if not samples:
                raise ProfileError(f"stage {self.name!r}: {label} has no samples")
            if any(not math.isfinite(x) or x < 0 for x in samples):
                raise ProfileError(f"stage {self.name!r}: {label} samples must be finite and >= 0")
        if not 0.0 <= self.failure_p < 1.0:
            raise ProfileError(f"stage {self.name!r}: failure_p must be in [0, 1), got {self.failure_p}")
        if self.queue_s is not None and (not math.isfinite(self.queue_s) or self.queue_s < 0):
            raise ProfileError(f"stage {self.name!r}: queue_s must be finite and >= 0")

    @property
    def mean_run_s(self) -> float:
        return sum(self.run_s) / len(self.run_s)

    @property
    def mean_init_s(self) -> float:
        return sum(self.init_s) / len(self.init_s)

    @property
    def mean_queue_s(self) -> float:
        return self.mean_init_s if self.queue_s is None else self.queue_s

    @property
    def total_work_s(self) -> float:
        """T_s."""
        return self.tasks * self.mean_run_s

    @property
    def total_queue_s(self) -> float:
        """Q_s."""
        return self.tasks * self.mean_queue_s

    @property
    def longest_s(self) -> float:
        """l_s."""
        return max(self.run_s)


@dataclass(frozen=True, slots=True)
class JobProfile:
    """Stages in a topological order (every parent before its children)."""

    name: str
    stages: tuple[StageProfile, ...]
    _index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.stages:
            raise ProfileError(f"profile {self.name!r} has no stages")
        index: dict[str, int] = {}
        for i, s in enumerate(self.stages):
            if s.name in index:
                raise ProfileError(f"profile {self.name!r}: stage {s.name!r} appears twice")
            for p in s.parents:
                if p not in index:
                    known = p in {x.name for x in self.stages}
                    why = "comes after it (order stages parents first, no cycles)" if known else "is unknown"
                    raise ProfileError(
                        f"profile {self.name!r}: stage {s.name!r} has parent {p!r} which {why}"
                    )
            index[s.name] = i
        object.__setattr__(self, "_index", index)

    def index(self, stage: str) -> int:
        return self._index[stage]

    @property
    def total_tasks(self) -> int:
        return sum(s.tasks for s in self.stages)

    @property
    def total_work_s(self) -> float:
        return sum(s.total_work_s for s in self.stages)

    def children(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.stages]
        for i, s in enumerate(self.stages):
            for p in s.parents:
                out[self._index[p]].append(i)
        return out

    def path_to_end_s(self) -> list[float]:
        """L_s per stage: the longest chain of longest tasks after the stage, to the end of the job."""
        kids = self.children()
        out = [0.0] * len(self.stages)
        for i in range(len(self.stages) - 1, -1, -1):
            out[i] = max((self.stages[c].longest_s + out[c] for c in kids[i]), default=0.0)
        return out

    def earliest_start_s(self, per_task_s: Sequence[float] | None = None) -> list[float]:
        """When each stage could start with unlimited containers, its tasks taking ``per_task_s``."""
        dur = per_task_s if per_task_s is not None else [s.mean_init_s + s.mean_run_s for s in self.stages]
        out = [0.0] * len(self.stages)
        for i, s in enumerate(self.stages):
            out[i] = max((out[self._index[p]] + dur[self._index[p]] for p in s.parents), default=0.0)
        return out

    def max_parallelism(self) -> int:
        return max(s.tasks for s in self.stages)


def profile_from_job(job: Job, *, queue_s: float = 0.0, failure_p: float = 0.0) -> JobProfile:
    """A profile from a job file: the declared durations, no noise (a first run with no history)."""
    stages = [
        StageProfile(
            name=s.name,
            tasks=s.tasks,
            run_s=tuple(s.durations_s) if s.durations_s else (s.estimated_task_s,),
            init_s=(queue_s,),
            failure_p=failure_p,
            parents=tuple(s.parents),
            container=s.capability,
        )
        for s in job.topological_order()
    ]
    return JobProfile(job.key, tuple(stages))


@dataclass(frozen=True, slots=True)
class StageRun:
    """What one run recorded about one stage."""

    name: str
    tasks: int
    run_s: tuple[float, ...]  # successful attempts' run times
    queue_s: tuple[float, ...] = ()  # per task: ready (or asked) to running
    init_s: tuple[float, ...] = ()  # per task: container granted to work started
    attempts: int = 0  # every attempt, failed ones included
    failed_attempts: int = 0
    parents: tuple[str, ...] = ()
    container: Resources | None = None
    started_s: float | None = None  # relative to the job's start
    ended_s: float | None = None


def stage_runs_from_dag(dag: DagState) -> list[StageRun]:
    """What the DAG ApplicationMaster knows about each stage of this run (no queue or init times yet)."""
    out: list[StageRun] = []
    for spec in dag.stages:
        tasks = list(dag.tasks(spec.name))
        out.append(
            StageRun(
                name=spec.name,
                tasks=spec.tasks,
                run_s=tuple(dag.measured_durations(spec.name)),
                attempts=sum(t.launches for t in tasks),
                failed_attempts=sum(t.failures for t in tasks),
                parents=tuple(spec.parents),
                container=spec.capability,
            )
        )
    return out


def profile_from_runs(name: str, runs: Iterable[Sequence[StageRun]]) -> JobProfile:
    """Merge the stage records of one or more runs: samples pooled, the largest task count kept
    (the paper builds from the largest input), failure probability = failed / all attempts."""
    merged: dict[str, list[StageRun]] = {}
    order: list[str] = []
    for run in runs:
        for st in run:
            if st.name not in merged:
                merged[st.name] = []
                order.append(st.name)
            merged[st.name].append(st)
    stages: list[StageProfile] = []
    for stage in order:
        recs = merged[stage]
        run_s = tuple(x for r in recs for x in r.run_s)
        if not run_s:
            raise ProfileError(f"profile {name!r}: stage {stage!r} has no recorded run times")
        init_s = tuple(x for r in recs for x in r.init_s) or (0.0,)
        queue = [x for r in recs for x in r.queue_s]
        attempts = sum(max(r.attempts, len(r.run_s)) for r in recs)
        failed = sum(r.failed_attempts for r in recs)
        last = recs[-1]
        starts = [r.started_s for r in recs if r.started_s is not None]
        ends = [r.ended_s for r in recs if r.ended_s is not None]
        stages.append(
            StageProfile(
                name=stage,
                tasks=max(r.tasks for r in recs),
                run_s=run_s,
                init_s=init_s,
                queue_s=sum(queue) / len(queue) if queue else None,
                failure_p=min(failed / attempts, 0.99) if attempts else 0.0,
                parents=last.parents,
                container=last.container,
                typical_start_s=sum(starts) / len(starts) if starts else None,
                typical_end_s=sum(ends) / len(ends) if ends else None,
            )
        )
    return JobProfile(name, tuple(_parents_first(stages)))


def _parents_first(stages: Sequence[StageProfile]) -> list[StageProfile]:
    by_name = {s.name: s for s in stages}
    done: set[str] = set()
    out: list[StageProfile] = []
    while len(out) < len(stages):
        progressed = False
        for s in stages:
            if s.name not in done and all(p in done or p not in by_name for p in s.parents):
                out.append(s)
                done.add(s.name)
                progressed = True
        if not progressed:
            left = sorted(s.name for s in stages if s.name not in done)
            raise ProfileError(f"stages {left} form a cycle")
    return out


def allocation_unit(profile: JobProfile) -> Resources:
    """The job's unit of allocation: the container size most of its tasks use (ties: the smaller)."""
    counts: Counter[Resources] = Counter()
    for s in profile.stages:
        if s.container is not None:
            counts[s.container] += s.tasks
    if not counts:
        raise ProfileError(f"profile {profile.name!r} records no container sizes")
    return min(counts, key=lambda r: (-counts[r], sorted(r.to_dict().items())))


def units_of(container: Resources, unit: Resources) -> int:
    """How many whole units a container counts as: its largest multiple of the unit that fits."""
    n: int | None = None
    for rtype in unit.types():
        need = unit.get(rtype)
        if need > 0:
            q = max(0, container.get(rtype)) // need
            n = q if n is None else min(n, q)
    return 0 if n is None else n
