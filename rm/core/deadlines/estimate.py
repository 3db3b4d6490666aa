"""Processing-time estimates with prediction intervals (MRM §3, §5): how much work a job about to be submitted
will take, per phase, and an upper bound it stays under with known probability.

A job is described by ``JobFeatures``: its name, type, user and queue, its input size, and per phase (a stage
group at one DAG depth; map then reduce for MapReduce) the task count and the container size in units. A
finished run adds a ``RunRecord``: the same features and the work each phase actually took, in unit-seconds,
with its longest task.

Estimators (``ESTIMATORS``, one ``WorkEstimator`` protocol):

* ``bin`` — Verma et al.'s method: the mean and standard deviation of the same job's past runs (same name,
  same phase count). Needs two runs.
* ``ridge`` — a ridge regression per phase on the job's features, fitted on every run of the history (MRM's
  regression on *similar* jobs): intercept, tasks, tasks × container units, input size, and per job type an
  offset and a slope in tasks and in input. The prediction interval uses the residual spread and the new
  job's leverage, ``s·√(1 + xᵀ(XᵀX + λI)⁻¹x)``.
* ``auto`` — ``bin`` when the job has enough runs of its own, else ``ridge``.

The PI upper bound is ``μ + z·σ`` (z = 1.96 by default, the paper's two-sided 95 %); a phase's claim is that
bound, so a deadline is admitted against the work the job stays under with that probability.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from rm.core.deadlines.layout import Phase

DEFAULT_Z = 1.96
MIN_BIN_RUNS = 2


@dataclass(frozen=True, slots=True)
class PhaseShape:
    tasks: int
    units: float  # one container, in units of the queue's minimum allocation


@dataclass(frozen=True, slots=True)
class JobFeatures:
    name: str
    phases: tuple[PhaseShape, ...]
    kind: str = ""
    user: str = ""
    queue: str = ""
    input_bytes: float = 0.0


def features_to_dict(f: JobFeatures) -> dict[str, Any]:
    return {"name": f.name, "kind": f.kind, "user": f.user, "queue": f.queue, "input_bytes": f.input_bytes,
            "phases": [[p.tasks, p.units] for p in f.phases]}


def features_from_dict(d: Mapping[str, Any]) -> JobFeatures:
    return JobFeatures(str(d["name"]), tuple(PhaseShape(int(t), float(u)) for t, u in d.get("phases", ())),
                       kind=str(d.get("kind", "")), user=str(d.get("user", "")), queue=str(d.get("queue", "")),
                       input_bytes=float(d.get("input_bytes", 0.0)))


@dataclass(frozen=True, slots=True)
class RunRecord:
    features: JobFeatures
    work: tuple[float, ...]  # unit-seconds per phase
    longest: tuple[float, ...] = ()  # seconds, the longest task per phase


@dataclass(frozen=True, slots=True)
class PhaseEstimate:
    mean: float  # unit-seconds
    std: float  # of the prediction error
    upper: float  # mean + z·std
    min_s: float = 0.0  # the longest task expected (seconds)


@dataclass(frozen=True, slots=True)
class WorkEstimate:
    phases: tuple[PhaseEstimate, ...]
    z: float
    method: str
    runs: int
    shapes: tuple[PhaseShape, ...]  # the phases' task counts and container sizes the claim is laid with

    @property
    def mean(self) -> float:
        return sum(p.mean for p in self.phases)

    @property
    def std(self) -> float:
        return math.sqrt(sum(p.std**2 for p in self.phases))

    @property
    def upper(self) -> float:
        return sum(p.upper for p in self.phases)

    def claim(self) -> tuple[Phase, ...]:
        """The phases a deadline claim holds: each phase's PI upper bound at its full width."""
        out = []
        for est, shape in zip(self.phases, self.shapes, strict=True):
            width = max(shape.tasks, 1) * max(shape.units, 1e-9)
            out.append(Phase(est.upper, width, max(est.min_s, 0.0)))
        return tuple(out)


class WorkEstimator(Protocol):
    name: ClassVar[str]

    def fit(self, runs: Sequence[RunRecord]) -> None: ...

    def estimate(self, features: JobFeatures) -> WorkEstimate | None: ...


class BinEstimator:
    """The same job's past runs: per phase, their mean and standard deviation."""

    name: ClassVar[str] = "bin"

    def __init__(self, z: float = DEFAULT_Z, min_runs: int = MIN_BIN_RUNS) -> None:
        self.z = z
        self.min_runs = min_runs
        self._by_job: dict[str, list[RunRecord]] = defaultdict(list)

    def fit(self, runs: Sequence[RunRecord]) -> None:
        self._by_job.clear()
        for r in runs:
            self._by_job[r.features.name].append(r)

    def _runs(self, features: JobFeatures) -> list[RunRecord]:
        """The same job's runs with as many phases as it has (a job that does not say: its most common)."""
        runs = self._by_job.get(features.name, [])
        depth = len(features.phases)
        if not depth and runs:
            counts: dict[int, int] = defaultdict(int)
            for r in runs:
                counts[len(r.work)] += 1
            depth = max(counts, key=lambda k: (counts[k], k))
        return [r for r in runs if len(r.work) == depth]

    def runs_of(self, features: JobFeatures) -> int:
        return len(self._runs(features))

    def estimate(self, features: JobFeatures) -> WorkEstimate | None:
        runs = self._runs(features)
        if len(runs) < self.min_runs:
            return None
        n = len(runs)
        shapes = features.phases or runs[-1].features.phases
        phases = []
        for k in range(len(shapes)):
            w = np.array([r.work[k] for r in runs], dtype=np.float64)
            mu = float(w.mean())
            sd = float(w.std(ddof=1)) * math.sqrt(1.0 + 1.0 / n)  # the spread of one more run
            longest = max((r.longest[k] for r in runs if len(r.longest) > k), default=0.0)
            # few runs: Student's t with n - 1 degrees of freedom, not the normal quantile
            phases.append(PhaseEstimate(mu, sd, mu + t_quantile(self.z, n - 1) * sd, longest))
        return WorkEstimate(tuple(phases), self.z, self.name, n, shapes)


FloatArray = npt.NDArray[np.float64]


class RidgeEstimator:
    """A ridge regression per phase position on every run's features."""

    name: ClassVar[str] = "ridge"

    def __init__(self, z: float = DEFAULT_Z, alpha: float = 1e-3, min_rows: int = 10) -> None:
        self.z = z
        self.alpha = alpha
        self.min_rows = min_rows  # fewer runs than this (or twice the features) answer nothing
        self._kinds: tuple[str, ...] = ()
        self._models: dict[int, tuple[FloatArray, FloatArray, float, int, FloatArray]] = {}
        self._runs = 0

    def _x(self, f: JobFeatures, k: int) -> FloatArray:
        shape = f.phases[k]
        gb = f.input_bytes / 1e9
        row = [1.0, float(shape.tasks), shape.tasks * shape.units, gb]
        for kind in self._kinds:
            on = 1.0 if f.kind == kind else 0.0
            row += [on, on * shape.tasks, on * gb]
        return np.array(row, dtype=np.float64)

    def fit(self, runs: Sequence[RunRecord]) -> None:
        self._kinds = tuple(sorted({r.features.kind for r in runs}))
        self._models.clear()
        self._runs = len(runs)
        depth = max((len(r.work) for r in runs), default=0)
        for k in range(depth):
            rows = [r for r in runs if len(r.work) > k and len(r.features.phases) > k]
            x = np.array([self._x(r.features, k) for r in rows]) if rows else np.zeros((0, 0))
            if len(rows) < max(self.min_rows, 2 * x.shape[1]):
                continue
            y = np.array([r.work[k] for r in rows], dtype=np.float64)
            top = np.abs(x).max(axis=0)
            # a feature that never varied in training says nothing: it is left out (set to 0 to predict)
            scale = np.where((top > 0) & (x.std(axis=0) > 0) | (np.arange(x.shape[1]) == 0), top, np.inf)
            xs = x / scale
            gram = xs.T @ xs + self.alpha * np.eye(xs.shape[1])
            inv: FloatArray = np.asarray(np.linalg.pinv(gram), dtype=np.float64)
            beta = inv @ xs.T @ y
            resid = y - xs @ beta
            dof = max(1, len(rows) - np.linalg.matrix_rank(xs))
            s = float(math.sqrt(float(resid @ resid) / dof))
            # the critical path: the longest task over the mean task, a high quantile over the runs
            spread = [r.longest[k] / (r.work[k] / r.features.phases[k].tasks / max(r.features.phases[k].units, 1e-9))
                      for r in rows if len(r.longest) > k and r.work[k] > 0 and r.features.phases[k].tasks > 0]
            ratio = float(np.quantile(spread, 0.975)) if spread else 1.0
            self._models[k] = (beta, inv, s, len(rows), np.concatenate([scale, [max(ratio, 1.0)]]))

    def estimate(self, features: JobFeatures) -> WorkEstimate | None:
        if not features.phases or any(k not in self._models for k in range(len(features.phases))):
            return None
        phases = []
        for k in range(len(features.phases)):
            beta, inv, s, _, extra = self._models[k]
            scale, ratio = extra[:-1], float(extra[-1])
            x = self._x(features, k) / scale
            mu = max(0.0, float(x @ beta))
            sd = s * math.sqrt(1.0 + float(x @ inv @ x))
            upper = mu + self.z * sd
            shape = features.phases[k]
            mean_task_s = upper / max(shape.tasks, 1) / max(shape.units, 1e-9)
            phases.append(PhaseEstimate(mu, sd, upper, mean_task_s * ratio))
        return WorkEstimate(tuple(phases), self.z, self.name, self._runs, features.phases)


class AutoEstimator:
    """``bin`` for a job with enough runs of its own, else ``ridge`` over every job's runs."""

    name: ClassVar[str] = "auto"

    def __init__(self, z: float = DEFAULT_Z) -> None:
        self.bin = BinEstimator(z)
        self.ridge = RidgeEstimator(z)

    def fit(self, runs: Sequence[RunRecord]) -> None:
        self.bin.fit(runs)
        self.ridge.fit(runs)

    def estimate(self, features: JobFeatures) -> WorkEstimate | None:
        return self.bin.estimate(features) or self.ridge.estimate(features)


ESTIMATORS: dict[str, Callable[[float], WorkEstimator]] = {
    BinEstimator.name: BinEstimator,
    RidgeEstimator.name: RidgeEstimator,
    AutoEstimator.name: AutoEstimator,
}


def make_estimator(name: str, z: float = DEFAULT_Z) -> WorkEstimator:
    if name not in ESTIMATORS:
        raise ValueError(f"unknown work estimator {name!r}; known: {', '.join(sorted(ESTIMATORS))}")
    return ESTIMATORS[name](z)


def t_quantile(z: float, dof: int) -> float:
    """Student's t quantile at the probability the normal quantile ``z`` has, for ``dof`` degrees of freedom
    (exact for 1 and 2, a Cornish–Fisher expansion beyond, within 1 % from 3 on)."""
    if dof <= 0:
        return math.inf
    p = 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    if dof == 1:
        return math.tan(math.pi * (p - 0.5))
    if dof == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    v = float(dof)
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
            + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4))


def r_squared(actual: Iterable[float], predicted: Iterable[float]) -> float:
    a = np.asarray(list(actual), dtype=np.float64)
    p = np.asarray(list(predicted), dtype=np.float64)
    ss = float(((a - a.mean()) ** 2).sum())
    return 1.0 - float(((a - p) ** 2).sum()) / ss if ss > 0 else 0.0
