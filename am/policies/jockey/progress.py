"""Progress indicators: one number in [0, 1] for how far a running job has come (Jockey §4.2, §5.4).

Every indicator reads ``f_s``, the fraction of stage ``s``'s tasks that have finished, against the job's
profile. The paper's choice is totalworkWithQ; the others are there to compare with it (its Fig. 10):

* ``totalworkWithQ`` — Σ_s f_s (Q_s + T_s) / Σ_s (Q_s + T_s): the queued-plus-running time of the
  finished tasks, as a share of the whole job's;
* ``totalwork`` — Σ_s f_s T_s / Σ_s T_s;
* ``vertexfrac`` — finished tasks / all tasks;
* ``cp`` — 1 − S(f) / S(0), with S(f) = max over unfinished stages of (1 − f_s) l_s + L_s, the remaining
  critical path (the same S_t the Amdahl model uses);
* ``minstage`` — min over unfinished stages of t^b_s + f_s (t^e_s − t^b_s), with t^b, t^e the stage's start
  and end relative to the job's length in a reference run; ``minstage-inf`` takes them from a run with
  unlimited containers (so it follows the critical path).

Running tasks and their elapsed time are part of ``JobState`` but, as in the paper, no indicator credits
partial tasks: a task counts when it has finished.

``observed_pace`` is not an indicator: it compares the run times of the finished tasks with the profile's,
so the controller can tell a run that is slower (or faster) than the one its model was built from.

The indicator used at run time must be the one the C(p, a) table was built with; the model asks the
indicator for ``batch`` values over many simulated states, so each indicator evaluates whole arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from am.dag_state import DagState
from am.policies.jockey.profile import JobProfile, ProfileError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class StageState:
    """One stage of the running job: finished tasks, and the elapsed time of each running task."""

    done: int
    tasks: int | None = None  # this run's task count; None = the profile's
    running_elapsed_s: tuple[float, ...] = ()
    done_s: float | None = None  # the run times of ``timed`` finished tasks, summed; None = not reported
    timed: int | None = None  # how many finished tasks ``done_s`` sums; None = all ``done`` of them


@dataclass(frozen=True, slots=True)
class JobState:
    """The running job by stage name; a stage that is absent has not finished any task."""

    stages: Mapping[str, StageState] = field(default_factory=dict)

    @staticmethod
    def of(**done: int) -> JobState:
        """Shorthand for tests and examples: finished task counts by stage name."""
        return JobState({name: StageState(done=n) for name, n in done.items()})


def job_state_from_dag(dag: DagState, now: float) -> JobState:
    """The DAG ApplicationMaster's task states as the indicators read them."""
    stages: dict[str, StageState] = {}
    for spec in dag.stages:
        running = tuple(
            max(0.0, now - t.started_at)
            for t in dag.tasks(spec.name)
            if t.status == "RUNNING" and t.started_at is not None
        )
        timed, done_s = dag.measured_total(spec.name)
        stages[spec.name] = StageState(
            done=dag.count(spec.name, "SUCCEEDED"), tasks=spec.tasks, running_elapsed_s=running,
            done_s=done_s, timed=timed,
        )
    return JobState(stages)


def observed_pace(profile: JobProfile, state: JobState, prior_s: float) -> float:
    """How much slower than its profile this run is going: the finished tasks' run times over what the profile
    expects of as many tasks of each stage (its mean run time), > 1 when slower.

    ``prior_s`` is evidence of the profile's own pace, in task-seconds, pooled with the observed: the first few
    tasks (one stage's draw of its inputs and its machines) move the ratio only as far as their share of the
    pooled work. Stages that report no run times add nothing; with nothing observed the pace is 1."""
    if prior_s < 0:
        raise ValueError(f"prior_s must be >= 0, got {prior_s}")
    return pooled_pace(*pace_evidence(profile, state), prior_s)


def pooled_pace(seen: float, expected: float, prior_s: float) -> float:
    """Run times over what the profile expects of them, each with ``prior_s`` of evidence at the profile's own
    pace added; 1 with no evidence at all."""
    if expected + prior_s <= 0:
        return 1.0
    return (seen + prior_s) / (expected + prior_s)


def pace_evidence(profile: JobProfile, state: JobState) -> tuple[float, float]:
    """The finished tasks' run times, and what the profile expects of as many tasks of each stage (both in
    task-seconds): ``observed_pace`` is their ratio, pooled with a prior."""
    seen = 0.0
    expected = 0.0
    for name, st in state.stages.items():
        timed = st.done if st.timed is None else st.timed
        if st.done_s is None or timed <= 0:
            continue
        try:
            i = profile.index(name)
        except KeyError:
            raise ProfileError(
                f"the job reports stage {name!r}, which profile {profile.name!r} lacks"
            ) from None
        seen += st.done_s
        expected += timed * profile.stages[i].mean_run_s
    return seen, expected


def fractions(profile: JobProfile, state: JobState) -> FloatArray:
    """f_s for every stage of the profile, in profile order, clamped to [0, 1]."""
    out = np.zeros(len(profile.stages), dtype=np.float64)
    for name, st in state.stages.items():
        try:
            i = profile.index(name)
        except KeyError:
            raise ProfileError(
                f"the job reports stage {name!r}, which profile {profile.name!r} lacks"
            ) from None
        tasks = st.tasks if st.tasks is not None else profile.stages[i].tasks
        out[i] = min(1.0, max(0.0, st.done / tasks)) if tasks > 0 else 1.0
    return out


class ProgressIndicator(Protocol):
    name: ClassVar[str]

    @property
    def profile(self) -> JobProfile: ...

    def batch(self, f: FloatArray) -> FloatArray:
        """Progress for every row of ``f`` (shape ``(k, stages)``)."""
        ...

    def progress(self, state: JobState) -> float: ...

    def stage_weights(self) -> FloatArray | None:
        """Per-stage weights when progress is Σ_s w_s f_s (lets the model take a faster path), else None."""
        ...


class _Linear:
    """Progress = Σ_s w_s f_s with weights summing to 1."""

    name: ClassVar[str] = ""

    def __init__(self, profile: JobProfile) -> None:
        raw = self._raw_weights(profile)
        total = float(raw.sum())
        self._profile = profile
        # a job with no weight at all (e.g. zero durations) falls back to counting tasks
        self._w = raw / total if total > 0 else _task_weights(profile)

    def _raw_weights(self, profile: JobProfile) -> FloatArray:
        raise NotImplementedError

    @property
    def profile(self) -> JobProfile:
        return self._profile

    def stage_weights(self) -> FloatArray | None:
        return np.array(self._w, dtype=np.float64)

    def batch(self, f: FloatArray) -> FloatArray:
        return np.asarray(np.clip(f @ self._w, 0.0, 1.0), dtype=np.float64)

    def progress(self, state: JobState) -> float:
        return float(self.batch(fractions(self._profile, state)[None, :])[0])


def _task_weights(profile: JobProfile) -> FloatArray:
    n = np.array([s.tasks for s in profile.stages], dtype=np.float64)
    return np.asarray(n / n.sum(), dtype=np.float64)


class TotalWorkWithQ(_Linear):
    name: ClassVar[str] = "totalworkWithQ"

    def _raw_weights(self, profile: JobProfile) -> FloatArray:
        return np.array([s.total_queue_s + s.total_work_s for s in profile.stages], dtype=np.float64)


class TotalWork(_Linear):
    name: ClassVar[str] = "totalwork"

    def _raw_weights(self, profile: JobProfile) -> FloatArray:
        return np.array([s.total_work_s for s in profile.stages], dtype=np.float64)


class VertexFrac(_Linear):
    name: ClassVar[str] = "vertexfrac"

    def _raw_weights(self, profile: JobProfile) -> FloatArray:
        return _task_weights(profile)


def remaining_critical_path(profile: JobProfile, f: FloatArray) -> FloatArray:
    """S(f) = max over stages with f_s < 1 of (1 − f_s) l_s + L_s, row by row (0 when all are done)."""
    longest = np.array([s.longest_s for s in profile.stages], dtype=np.float64)
    to_end = np.array(profile.path_to_end_s(), dtype=np.float64)
    per_stage = np.where(f < 1.0, (1.0 - f) * longest + to_end, 0.0)
    return np.asarray(per_stage.max(axis=-1), dtype=np.float64)


class CriticalPath:
    name: ClassVar[str] = "cp"

    def __init__(self, profile: JobProfile) -> None:
        self._profile = profile
        self._whole = float(remaining_critical_path(profile, np.zeros((1, len(profile.stages))))[0])

    @property
    def profile(self) -> JobProfile:
        return self._profile

    def stage_weights(self) -> FloatArray | None:
        return None

    def batch(self, f: FloatArray) -> FloatArray:
        if self._whole <= 0:
            return np.asarray(np.all(f >= 1.0, axis=-1), dtype=np.float64)
        return np.asarray(np.clip(1.0 - remaining_critical_path(self._profile, f) / self._whole, 0.0, 1.0))

    def progress(self, state: JobState) -> float:
        return float(self.batch(fractions(self._profile, state)[None, :])[0])


class MinStage:
    """``min over unfinished s of t^b_s + f_s (t^e_s − t^b_s)``, t^b and t^e as fractions of the job."""

    name: ClassVar[str] = "minstage"

    def __init__(self, profile: JobProfile, begin: FloatArray, end: FloatArray) -> None:
        self._profile = profile
        self._b = np.asarray(begin, dtype=np.float64)
        self._e = np.asarray(end, dtype=np.float64)

    @staticmethod
    def from_reference_run(profile: JobProfile) -> MinStage:
        """t^b, t^e from the stage start and end times the profile recorded (the paper's minstage)."""
        starts = [s.typical_start_s for s in profile.stages]
        ends = [s.typical_end_s for s in profile.stages]
        if any(x is None for x in starts) or any(x is None for x in ends):
            raise ProfileError(f"profile {profile.name!r} lacks stage start/end times for minstage")
        b = np.array(starts, dtype=np.float64)
        e = np.array(ends, dtype=np.float64)
        length = float(e.max())
        return (
            MinStage(profile, b / length, e / length) if length > 0 else MinStage(profile, b * 0, e * 0 + 1)
        )

    @staticmethod
    def unlimited(profile: JobProfile) -> MinStage:
        """t^b, t^e from a run with unlimited containers and longest tasks (the paper's minstage-inf)."""
        per_task = [s.mean_init_s + s.longest_s for s in profile.stages]
        b = np.array(profile.earliest_start_s(per_task), dtype=np.float64)
        e = b + np.array(per_task, dtype=np.float64)
        length = float(e.max())
        if length <= 0:
            return MinStageInf(profile, b * 0, e * 0 + 1)
        return MinStageInf(profile, b / length, e / length)

    @property
    def profile(self) -> JobProfile:
        return self._profile

    def stage_weights(self) -> FloatArray | None:
        return None

    def batch(self, f: FloatArray) -> FloatArray:
        per_stage = np.where(f < 1.0, self._b + f * (self._e - self._b), np.inf)
        low = per_stage.min(axis=-1)
        return np.asarray(np.clip(np.where(np.isfinite(low), low, 1.0), 0.0, 1.0), dtype=np.float64)

    def progress(self, state: JobState) -> float:
        return float(self.batch(fractions(self._profile, state)[None, :])[0])


class MinStageInf(MinStage):
    """minstage with t^b, t^e from a run with unlimited containers (build it with ``MinStage.unlimited``)."""

    name: ClassVar[str] = "minstage-inf"


INDICATORS: dict[str, type[TotalWorkWithQ | TotalWork | VertexFrac | CriticalPath]] = {
    TotalWorkWithQ.name: TotalWorkWithQ,
    TotalWork.name: TotalWork,
    VertexFrac.name: VertexFrac,
    CriticalPath.name: CriticalPath,
}
"""The indicators that need nothing but the profile; minstage needs ``MinStage.from_reference_run``."""

_: type[ProgressIndicator] = TotalWorkWithQ
_cp: type[ProgressIndicator] = CriticalPath
_ms: type[ProgressIndicator] = MinStage
