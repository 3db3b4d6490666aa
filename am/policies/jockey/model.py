"""The remaining-time model C(p, a) and its Amdahl fallback (Jockey §4.1).

C(p, a) is the distribution of the time a job still needs when its progress indicator reads ``p`` and it
holds ``a`` units. ``build_table`` estimates it offline: it simulates the job ``runs`` times at every
allocation of a grid (``simulate.py``) and, for every run and every progress level ``p_j`` of a grid
over [0, 1], takes one sample: the run's finish time minus the first time its progress reached ``p_j``.
(The paper takes a sample at every instant of a run; first passage gives every level exactly one sample
per run, and a job whose progress stalls sees its predicted finish slide later, as the paper's Fig. 9
shows for a stuck indicator.) Each (level, allocation) cell keeps ``samples`` equally likely quantiles
of those remaining times, at levels (i + 0.5) / samples. Along the allocation axis the table is made
non-increasing (a cumulative minimum), so more units never predict a later finish.

Lookups interpolate linearly between progress levels, and between grid allocations linearly in 1 / a (a
job's remaining time goes roughly as S + P / a, which is a straight line in 1 / a, so a point between two
grid allocations is not over-stated by the chord in ``a``); below the smallest grid allocation the
remaining time grows as a_min / a, above the largest it stays flat.

``Amdahl`` is the model without the simulator: remaining(a) = S_t + P_t / a, with
S_t = max over unfinished stages of (1 − f_s) l_s + L_s and P_t = Σ over unfinished stages of
(1 − f_s) T_s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from am.policies.jockey.profile import JobProfile
from am.policies.jockey.progress import (
    JobState,
    ProgressIndicator,
    TotalWorkWithQ,
    fractions,
    remaining_critical_path,
)
from am.policies.jockey.simulate import Draws, draw, schedule

FloatArray = npt.NDArray[np.float64]

DEFAULT_RUNS = 32
DEFAULT_SAMPLES = 16
DEFAULT_LEVELS = 50
DEFAULT_GRID_POINTS = 20
_EPS = 1e-9


@dataclass(frozen=True, slots=True, eq=False)
class Forecast:
    """Remaining seconds per allocation: ``samples[i]`` are equally likely values for ``allocations[i]``."""

    progress: float
    allocations: tuple[float, ...]
    samples: FloatArray  # (len(allocations), k), each row sorted


class RemainingModel(Protocol):
    @property
    def allocations(self) -> tuple[int, ...]:
        """The allocations (in units) the model was sampled at; it interpolates between them."""
        ...

    def forecast(self, state: JobState, allocations: Sequence[float]) -> Forecast: ...


def allocation_grid(max_units: int, points: int = DEFAULT_GRID_POINTS) -> tuple[int, ...]:
    """Every allocation 1..max_units if there are few, else about ``points`` of them, geometrically spaced."""
    if max_units < 1:
        raise ValueError(f"max_units must be >= 1, got {max_units}")
    if max_units <= points:
        return tuple(range(1, max_units + 1))
    grid = np.unique(np.round(np.geomspace(1, max_units, points)).astype(np.int64))
    return tuple(int(a) for a in grid)


def _interp_rows(x: float, xs: FloatArray, rows: FloatArray) -> FloatArray:
    """Linear interpolation of ``rows[i]`` (stacked along axis 0) at ``x`` in ``xs``, clamped at the ends."""
    if x <= xs[0]:
        return np.asarray(rows[0], dtype=np.float64)
    if x >= xs[-1]:
        return np.asarray(rows[-1], dtype=np.float64)
    i = int(np.searchsorted(xs, x, side="right")) - 1
    w = (x - xs[i]) / (xs[i + 1] - xs[i])
    return np.asarray((1.0 - w) * rows[i] + w * rows[i + 1], dtype=np.float64)


@dataclass(frozen=True, slots=True, eq=False)
class CpaTable:
    """C(p, a) as a table: ``remaining_s[level, allocation, k]`` with each cell's samples sorted."""

    levels: FloatArray  # (L,), increasing from 0 to 1
    grid: tuple[int, ...]  # (A,), increasing
    remaining_s: FloatArray  # (L, A, K)
    indicator: ProgressIndicator | None = None  # how ``forecast`` turns a job state into p

    def __post_init__(self) -> None:
        shape = self.remaining_s.shape
        if len(shape) != 3 or shape[0] != len(self.levels) or shape[1] != len(self.grid) or shape[2] < 1:
            raise ValueError(
                f"remaining_s has shape {shape}; expected ({len(self.levels)}, {len(self.grid)}, samples)"
            )
        if len(self.levels) < 1 or np.any(np.diff(self.levels) <= 0):
            raise ValueError("progress levels must be strictly increasing")
        if any(b <= a for a, b in zip(self.grid, self.grid[1:], strict=False)) or self.grid[0] < 1:
            raise ValueError(f"allocation grid {self.grid} must be strictly increasing, from 1 up")
        object.__setattr__(self, "remaining_s", np.sort(self.remaining_s, axis=2))

    @staticmethod
    def of(
        levels: Sequence[float],
        grid: Sequence[int],
        remaining_s: npt.ArrayLike,
        indicator: ProgressIndicator | None = None,
    ) -> CpaTable:
        """A hand-made table: ``remaining_s`` indexed [level][allocation] (a number or a list of samples)."""
        arr = np.asarray(remaining_s, dtype=np.float64)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        return CpaTable(np.asarray(levels, dtype=np.float64), tuple(int(a) for a in grid), arr, indicator)

    @property
    def allocations(self) -> tuple[int, ...]:
        return self.grid

    def lookup(self, p: float, a: float) -> FloatArray:
        """Samples of C(p, a), sorted."""
        return self._at_level(p, [a])[0]

    def _at_level(self, p: float, allocations: Sequence[float]) -> list[FloatArray]:
        """C(p, a) for each allocation: the level interpolated once, then each allocation linearly in 1 / a."""
        by_level = _interp_rows(p, self.levels, self.remaining_s)  # (A, K)
        lowest = float(self.grid[0])
        inverse = 1.0 / np.asarray(self.grid[::-1], dtype=np.float64)  # increasing
        widest_first = by_level[::-1]
        return [np.asarray(by_level[0] * (lowest / max(a, _EPS)), dtype=np.float64) if a < lowest
                else _interp_rows(1.0 / a, inverse, widest_first) for a in allocations]

    def forecast(self, state: JobState, allocations: Sequence[float]) -> Forecast:
        if self.indicator is None:
            raise ValueError("this table was built without a progress indicator; use lookup(p, a)")
        return self.forecast_at(self.indicator.progress(state), allocations)

    def forecast_at(self, p: float, allocations: Sequence[float]) -> Forecast:
        rows = np.stack(self._at_level(p, allocations)) if allocations else np.zeros((0, 1))
        return Forecast(p, tuple(float(a) for a in allocations), rows)


def _first_passage_linear(finish: FloatArray, task_weight: FloatArray, levels: FloatArray) -> FloatArray:
    """Per run and level: the first time progress (Σ weights of finished tasks) reached the level."""
    order = np.argsort(finish, axis=1, kind="stable")
    times = np.take_along_axis(finish, order, axis=1)
    cum = np.cumsum(task_weight[order], axis=1)
    out = np.empty((finish.shape[0], len(levels)), dtype=np.float64)
    last = finish.shape[1] - 1
    for r in range(finish.shape[0]):
        idx = np.minimum(np.searchsorted(cum[r], levels - _EPS, side="left"), last)
        out[r] = times[r, idx]
    out[:, levels <= _EPS] = 0.0
    return out


def _first_passage_general(
    finish: FloatArray, draws: Draws, indicator: ProgressIndicator, levels: FloatArray, points: int
) -> FloatArray:
    """As above for any indicator, evaluated at up to ``points`` completion instants per run."""
    runs, tasks = finish.shape
    stages = len(draws.offsets) - 1
    out = np.empty((runs, len(levels)), dtype=np.float64)
    for r in range(runs):
        times = np.sort(finish[r])
        at = times[np.unique(np.linspace(0, tasks - 1, min(points, tasks)).round().astype(np.int64))]
        f = np.empty((len(at), stages), dtype=np.float64)
        for s in range(stages):
            lo, hi = draws.offsets[s], draws.offsets[s + 1]
            ends = np.sort(finish[r, lo:hi])
            f[:, s] = np.searchsorted(ends, at, side="right") / (hi - lo)
        p = np.maximum.accumulate(indicator.batch(f))
        idx = np.minimum(np.searchsorted(p, levels - _EPS, side="left"), len(at) - 1)
        out[r] = at[idx]
    out[:, levels <= _EPS] = 0.0
    return out


def build_table(
    profile: JobProfile,
    *,
    grid: Sequence[int] | None = None,
    indicator: ProgressIndicator | None = None,
    runs: int = DEFAULT_RUNS,
    samples: int = DEFAULT_SAMPLES,
    levels: int = DEFAULT_LEVELS,
    seed: int = 0,
    general_points: int = 256,
) -> CpaTable:
    """Simulate the job ``runs`` times at every allocation of ``grid`` and tabulate C(p, a)."""
    if samples < 1 or levels < 1:
        raise ValueError("samples and levels must be >= 1")
    ind = indicator if indicator is not None else TotalWorkWithQ(profile)
    allocs = tuple(grid) if grid is not None else allocation_grid(profile.max_parallelism())
    level_grid = np.linspace(0.0, 1.0, levels + 1)
    draws = draw(profile, runs, np.random.default_rng(seed))
    weights = ind.stage_weights()
    task_weight = None
    if weights is not None:
        tasks = np.array([s.tasks for s in profile.stages], dtype=np.float64)
        task_weight = (weights / tasks)[draws.stage_of]
    qs = (np.arange(samples) + 0.5) / samples
    table = np.empty((len(level_grid), len(allocs), samples), dtype=np.float64)
    for j, a in enumerate(allocs):
        finish = schedule(profile, draws, a)
        if task_weight is not None:
            reached = _first_passage_linear(finish, task_weight, level_grid)
        else:
            reached = _first_passage_general(finish, draws, ind, level_grid, general_points)
        remaining = np.maximum(finish.max(axis=1)[:, None] - reached, 0.0)  # (runs, L)
        table[:, j, :] = np.quantile(remaining, qs, axis=0).T
    table = np.minimum.accumulate(table, axis=1)
    return CpaTable(level_grid, allocs, table, ind)


class Amdahl:
    """Remaining time = S_t + P_t / a from the profile's l_s, L_s and T_s ("Jockey w/o simulator")."""

    def __init__(
        self,
        profile: JobProfile,
        grid: Sequence[int] | None = None,
        indicator: ProgressIndicator | None = None,
    ) -> None:
        self._profile = profile
        self._grid = tuple(grid) if grid is not None else allocation_grid(profile.max_parallelism())
        self._indicator = indicator if indicator is not None else TotalWorkWithQ(profile)
        self._work = np.array([s.total_work_s for s in profile.stages], dtype=np.float64)

    @property
    def allocations(self) -> tuple[int, ...]:
        return self._grid

    def terms(self, state: JobState) -> tuple[float, float]:
        """(S_t, P_t): the remaining critical path and the remaining work, in seconds."""
        f = fractions(self._profile, state)
        serial = float(remaining_critical_path(self._profile, f[None, :])[0])
        parallel = float(np.sum(np.where(f < 1.0, (1.0 - f) * self._work, 0.0)))
        return serial, parallel

    def remaining_s(self, state: JobState, a: float) -> float:
        serial, parallel = self.terms(state)
        return serial + parallel / max(a, _EPS) if parallel > 0 else serial

    def forecast(self, state: JobState, allocations: Sequence[float]) -> Forecast:
        serial, parallel = self.terms(state)
        rows = np.array([[serial + parallel / max(a, _EPS)] for a in allocations], dtype=np.float64)
        return Forecast(
            self._indicator.progress(state), tuple(float(a) for a in allocations), rows.reshape(-1, 1)
        )


def oracle_units(total_work_s: float, deadline_s: float) -> int:
    """The paper's oracle allocation O(T, d) = ceil(T / d): the least that could finish T by d."""
    return max(1, math.ceil(total_work_s / deadline_s - _EPS))


_table: type[RemainingModel] = CpaTable
_amdahl: type[RemainingModel] = Amdahl
