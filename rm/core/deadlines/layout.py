"""Laying deadline work on a capacity timeline: as late as possible (the lazy layout every admitted claim keeps)
and as early as possible (the earliest feasible finish of a new job).

Everything here is one resource, measured in *units*: a unit is the queue's minimum allocation, a container
counts as the largest multiple of it any of its resource types needs, and a job's work is in unit-seconds
(MRM's "processing time", generalised from slots to resource vectors). Time is cut into steps of ``dt``
seconds counted from ``now``: step ``s`` covers ``[now + s·dt, now + (s+1)·dt)``. ``free[s]`` is the capacity
in units nobody has laid work on at step ``s``.

Work is fluid within a step (a phase may run at any rate up to its width), phases of one job run one after
the other, and a phase never runs faster than its critical path allows: its rate is capped at
``min(width, work / min_s)`` where ``min_s`` is its longest task. Both layouts are greedy over phases and
steps; exact placement on several machines is NP-hard (MRM §5), so every admission is verified by laying
every claim again rather than trusted to the quote.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Phase:
    """One phase of a job's remaining work: ``work`` unit-seconds, at most ``width`` units at once, lasting at
    least ``min_s`` seconds (its longest task: the critical path)."""

    work: float
    width: float
    min_s: float = 0.0

    def __post_init__(self) -> None:
        if not (self.work >= 0 and self.width > 0 and self.min_s >= 0):
            raise ValueError(f"a phase needs work >= 0, width > 0 and min_s >= 0, got {self}")

    @property
    def rate(self) -> float:
        """The most units it can use at once."""
        if self.min_s > 0 and self.work > 0:
            return min(self.width, self.work / self.min_s)
        return self.width


def critical_path(phases: tuple[Phase, ...]) -> float:
    """The shortest time the phases can take on an empty cluster of unbounded size."""
    return sum(p.work / p.rate for p in phases if p.work > 0)


@dataclass(slots=True)
class Placed:
    """A claim's lazy layout: ``rate[k]`` units at step ``start + k``."""

    start: int
    rate: FloatArray

    def at(self, step: int) -> float:
        k = step - self.start
        return float(self.rate[k]) if 0 <= k < len(self.rate) else 0.0


def _chunk(need: float, rate: float, dt: float) -> int:
    return max(64, math.ceil(2.0 * need / max(rate * dt, _EPS)) + 2)


def lay_late(free: FloatArray, phases: tuple[Phase, ...], end: float, dt: float) -> Placed | None:
    """Lay ``phases`` as late as possible ending by offset ``end`` (seconds from now), taking from ``free``
    (changed in place only on success). None when they do not fit between now and ``end``."""
    if end < 0:
        return None
    top = float(min(math.floor(end / dt + 1e-9), len(free)))  # whole steps only: a partial last one is not used
    taken: list[tuple[int, FloatArray]] = []
    for phase in reversed(phases):
        if phase.work <= _EPS:
            continue
        hi = int(top)  # steps [.., hi) are candidates
        if hi <= 0:
            _undo(free, taken)
            return None
        need = phase.work
        rate = phase.rate
        span = _chunk(need, rate, dt)
        while True:
            lo = max(0, hi - span)
            lens = np.full(hi - lo, dt)
            avail = np.clip(np.minimum(free[lo:hi], rate), 0.0, None) * lens  # a step held beyond capacity: none
            cum = np.cumsum(avail[::-1])
            if cum[-1] >= need - _EPS or lo == 0:
                break
            span *= 2
        if cum[-1] < need - _EPS:
            _undo(free, taken)
            return None
        k = int(np.searchsorted(cum, need - _EPS))  # steps hi-1 .. hi-1-k are used, the last one partly
        first = hi - 1 - k
        amounts = avail[first - lo:].copy()
        before = float(cum[k - 1]) if k > 0 else 0.0
        amounts[0] = need - before
        per_step = amounts / lens[first - lo:]
        free[first:hi] -= per_step
        taken.append((first, per_step))
        top = float(first)  # the phase before ends by the start of this one's first step (conservative)
    if not taken:
        return Placed(0, np.zeros(0))
    start = min(s for s, _ in taken)
    stop = max(s + len(r) for s, r in taken)
    rate_all = np.zeros(stop - start)
    for s, r in taken:
        rate_all[s - start : s - start + len(r)] += r
    return Placed(start, rate_all)


def _undo(free: FloatArray, taken: list[tuple[int, FloatArray]]) -> None:
    for s, r in taken:
        free[s : s + len(r)] += r


@dataclass(frozen=True, slots=True)
class Fill:
    """An early layout: the job finishes ``finish`` seconds from now; ``rate`` is what it takes per step."""

    finish: float
    start: int
    rate: FloatArray


def fill_early(free: FloatArray, phases: tuple[Phase, ...], dt: float, beyond: float) -> Fill:
    """Lay ``phases`` as early as possible from now into ``free`` (not changed); past the end of ``free``
    every step has ``beyond`` units. Each phase starts at the step boundary after the one before ended."""
    pos = 0.0  # seconds from now
    rates: dict[int, float] = {}
    for phase in phases:
        if phase.work <= _EPS:
            continue
        rate = phase.rate
        start = math.ceil(pos / dt - _EPS)
        need = phase.work
        s = start
        while True:
            span = _chunk(need, rate, dt)
            window = free[s : s + span] if s < len(free) else np.zeros(0)
            if len(window) < span:
                window = np.concatenate([window, np.full(span - len(window), beyond)])
            avail = np.clip(np.minimum(window, rate), 0.0, None) * dt
            cum = np.cumsum(avail)
            if cum[-1] >= need - _EPS:
                k = int(np.searchsorted(cum, need - _EPS))
                before = float(cum[k - 1]) if k > 0 else 0.0
                for i in range(k):
                    rates[s + i] = rates.get(s + i, 0.0) + float(avail[i]) / dt
                part = need - before
                rates[s + k] = rates.get(s + k, 0.0) + part / dt
                pos = (s + k) * dt + part / float(avail[k] / dt)
                break
            if beyond <= _EPS and s + span >= len(free):
                return Fill(math.inf, 0, np.zeros(0))
            for i in range(span):
                if avail[i] > 0:
                    rates[s + i] = rates.get(s + i, 0.0) + float(avail[i]) / dt
            need -= float(cum[-1])
            s += span
    if not rates:
        return Fill(0.0, 0, np.zeros(0))
    lo, hi = min(rates), max(rates) + 1
    arr = np.zeros(hi - lo)
    for k, v in rates.items():
        arr[k - lo] = v
    return Fill(pos, lo, arr)


def usable(free: FloatArray, start_s: float, end_s: float, dt: float, rate: float, beyond: float) -> float:
    """Unit-seconds a job of at most ``rate`` units could run between ``start_s`` and ``end_s`` (seconds from
    now) in ``free``: the slack it leaves there."""
    if end_s <= start_s:
        return 0.0
    a, b = start_s / dt, end_s / dt
    lo, hi = math.floor(a), math.ceil(b)
    window = free[lo:hi] if lo < len(free) else np.zeros(0)
    if len(window) < hi - lo:
        window = np.concatenate([window, np.full(hi - lo - len(window), beyond)])
    lens = np.full(hi - lo, dt)
    lens[0] -= (a - lo) * dt
    lens[-1] -= (hi - b) * dt
    return float((np.clip(np.minimum(window, rate), 0.0, None) * np.clip(lens, 0.0, None)).sum())
