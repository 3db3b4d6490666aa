"""LowCost (Morpheus §6): pack a reservation where the plan is least loaded, without moving anything.

The cost of a step is ``c(t) = max over resources of load/capacity``. For ordered requests (a skyline is
R_ORDER_NO_GAP) LowCost handles the stages in reverse chronological order. Stage k gets an interval
``I_k = [τl, τr]`` that ends right before the allocation of stage k+1 and whose length is proportional to the
stage's share of the demand still to place, ``s_k / Σ_{k'≤k} s_k'``. Gangs are placed one position at a time at
the cheapest eligible step: to keep the allocation contiguous, the eligible starts are those that touch the
stage's allocation so far (``[τcur − 1, τr]`` for one-step gangs). Only when the interval is full does a
stage spill further left, down to where the earlier stages still fit. The whole procedure runs for several
end points of the last stage and the allocation of least cost wins: its peak c(t) once placed, plus the
optional alignment penalty (distance of the allocation's middle from the middle of the window, relative
to half the window, times the definition's weight), then the load-weighted mean cost; ties go to the earliest
end (slack left for dynamic reprovisioning).

* R_ORDER_NO_GAP: every stage starts at the right end of its interval (no gaps);
  R_ORDER: only the last stage is anchored at the end point, the others start at the cheapest step of their
  interval and grow contiguously from there.
* R_ALL: each request is placed on its own anywhere in the window, the largest first.
* R_ANY: each alternative is placed alone; the cheapest wins.

Periodic jobs need nothing special here: the plan hands over the folded load (the worst over all instances
at each offset), so one placement serves every instance. Placing the same gang count at one position is
batched while it stays cheaper than every other position, so a stage costs a few numpy operations per
distinct position it uses rather than one per gang.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from rm.core.reservation.placement import (
    DOES_NOT_FIT,
    Placement,
    PlacementProblem,
    PlacementRejected,
    ReservationAgent,
    StageSpec,
    describe,
    gang_cost,
    gangs_that_fit,
    min_steps,
)
from rm.core.reservation.timeline import FloatArray, step_cost

_DIGITS = 9
Score = tuple[float, float]


class LowCostAgent:
    name: ClassVar[str] = "lowcost"

    def __init__(self, max_endpoints: int = 8, resolution: int = 8) -> None:
        if max_endpoints < 2:
            raise ValueError("LowCost needs at least two end points to compare")
        if resolution < 1:
            raise ValueError("LowCost's resolution must be at least one batch per stage")
        self.max_endpoints = max_endpoints
        self.resolution = resolution

    def place(self, problem: PlacementProblem) -> Placement | PlacementRejected:
        if problem.steps < min_steps(problem.stages, problem.interpreter):
            return _too_short(problem)
        if problem.interpreter == "R_ANY":
            return self._any(problem)
        if problem.interpreter == "R_ALL":
            return _all(problem, self.resolution)
        return self._ordered(problem)

    # ------------------------------------------------------------------------------- interpreters

    def _any(self, problem: PlacementProblem) -> Placement | PlacementRejected:
        best: Placement | None = None
        best_score: Score | None = None
        first_no: PlacementRejected | None = None
        for st in problem.stages:
            sub = PlacementProblem(problem.base, problem.cap, (st,), "R_ALL", problem.alignment)
            got = _all(sub, self.resolution)
            if isinstance(got, PlacementRejected):
                first_no = first_no or got
                continue
            score = _score(problem, got.alloc, got.first, got.last)
            if best_score is None or score < best_score:
                best, best_score = got, score
        if best is None:
            assert first_no is not None
            return first_no
        return best

    def _ordered(self, problem: PlacementProblem) -> Placement | PlacementRejected:
        n = problem.steps
        earliest = sum(s.duration for s in problem.stages)
        ends = _spread(earliest, n, self.max_endpoints)
        results: dict[int, tuple[Score, Placement] | PlacementRejected] = {}

        def run(end: int) -> None:
            if end not in results:
                best = _best(results)
                bound = results[best][0][0] if best is not None else np.inf  # type: ignore[index]
                results[end] = _ordered_at(problem, end, self.resolution, bound)

        for e in ends:
            run(e)
        best_end = _best(results)
        if best_end is not None and len(ends) > 1:  # refine between the neighbours of the best coarse end
            i = ends.index(best_end)
            lo = ends[max(0, i - 1)]
            hi = ends[min(len(ends) - 1, i + 1)]
            for e in _spread(lo, hi, self.max_endpoints):
                run(e)
            best_end = _best(results)
        if best_end is None:
            fails = [r for r in results.values() if isinstance(r, PlacementRejected)]
            return fails[-1]  # nothing fitted, so nothing was pruned
        found = results[best_end]
        assert not isinstance(found, PlacementRejected)
        return found[1]


def _spread(lo: int, hi: int, count: int) -> list[int]:
    """At most ``count`` integers evenly spread over ``[lo, hi]``, both ends included."""
    if hi - lo + 1 <= count:
        return list(range(lo, hi + 1))
    return sorted({round(lo + (hi - lo) * i / (count - 1)) for i in range(count)})


def _best(results: dict[int, tuple[Score, Placement] | PlacementRejected]) -> int | None:
    best: int | None = None
    best_score: Score | None = None
    for end in sorted(results):
        r = results[end]
        if isinstance(r, PlacementRejected):
            continue
        if best_score is None or r[0] < best_score:
            best, best_score = end, r[0]
    return best


def _too_short(problem: PlacementProblem) -> PlacementRejected:
    need = min_steps(problem.stages, problem.interpreter)
    return PlacementRejected(
        DOES_NOT_FIT,
        f"the requests need at least {need} steps but only {problem.steps} lie between arrival and deadline",
        {"min_steps": need, "window_steps": problem.steps},
    )


def _no_fit(problem: PlacementProblem, st: StageSpec) -> PlacementRejected:
    d = describe(problem, st)
    return PlacementRejected(
        DOES_NOT_FIT,
        f"request {st.request} needs {st.gangs} gang(s) for {st.duration} step(s) each and does not fit "
        f"between arrival and deadline (at most {d['most_gangs_at_once']} gang(s) fit at once there)",
        d,
    )


def _all(problem: PlacementProblem, resolution: int) -> Placement | PlacementRejected:
    load = problem.base.copy()
    n = problem.steps
    spans = []
    for st in sorted(problem.stages, key=lambda s: (-s.demand(problem.cap), s.request)):
        span = fill(load, problem.cap, st, 0, n - 1, anchored=False, floor=0, resolution=resolution)
        if span is None:
            return _no_fit(problem, st)
        spans.append((st.request, span[0], span[1]))
    alloc = load - problem.base
    return Placement(alloc, tuple(sorted(spans)), _peak(problem, alloc))


def _ordered_at(
    problem: PlacementProblem, end: int, resolution: int, bound: float = np.inf
) -> tuple[Score, Placement] | PlacementRejected:
    """LowCost with the last stage ending at step ``end - 1``; given up (as costlier) as soon as its peak
    exceeds ``bound``, the best peak found so far (a stage can only raise the peak)."""
    stages = problem.stages
    cap = problem.cap
    load = problem.base.copy()
    demands = [s.demand(cap) for s in stages]
    floors = np.concatenate([[0], np.cumsum([s.duration for s in stages])]).astype(int)
    hi = end - 1
    spans: list[tuple[int, int, int]] = []
    no_gap = problem.interpreter == "R_ORDER_NO_GAP"
    for k in range(len(stages) - 1, -1, -1):
        st = stages[k]
        floor = int(floors[k])
        if hi - st.duration + 1 < floor:
            return _no_fit(problem, st)
        remaining = sum(demands[: k + 1])
        length = max(st.duration, round((hi + 1) * demands[k] / remaining)) if remaining > 0 else st.duration
        lo = max(floor, hi - length + 1)
        anchored = no_gap or k == len(stages) - 1
        span = fill(load, cap, st, lo, hi, anchored=anchored, floor=floor, resolution=resolution)
        if span is None:
            return _no_fit(problem, st)
        spans.append((st.request, span[0], span[1]))
        hi = span[0] - 1
        if np.isfinite(bound) and float(step_cost(load[:, span[0] : span[1] + 1], cap).max()) > bound + 1e-9:
            return PlacementRejected(DOES_NOT_FIT, "costlier than a placement already found", {"pruned": True})
    alloc = load - problem.base
    first = min(s[1] for s in spans)
    placement = Placement(alloc, tuple(sorted(spans)), _peak(problem, alloc))
    return _score(problem, alloc, first, end - 1), placement


def _peak(problem: PlacementProblem, alloc: FloatArray) -> float:
    used = alloc.any(axis=0)
    if not used.any():
        return 0.0
    return float(step_cost(problem.base[:, used] + alloc[:, used], problem.cap).max())


def _score(problem: PlacementProblem, alloc: FloatArray, first: int, last: int) -> Score:
    used = alloc.any(axis=0)
    if not used.any():
        return (0.0, 0.0)
    post = step_cost(problem.base[:, used] + alloc[:, used], problem.cap)
    weight = step_cost(alloc[:, used], problem.cap)
    spread = float((post * weight).sum() / max(weight.sum(), 1e-12))
    peak = float(post.max())
    if problem.alignment > 0:
        n = problem.steps
        peak += problem.alignment * abs((first + last) / 2 - (n - 1) / 2) / max(1.0, n / 2)
    return (round(peak, _DIGITS), round(spread, _DIGITS))


def fill(
    load: FloatArray,
    cap: FloatArray,
    st: StageSpec,
    lo: int,
    hi: int,
    *,
    anchored: bool,
    floor: int,
    resolution: int = 8,
) -> tuple[int, int] | None:
    """Place all gangs of ``st`` into ``load`` (changed in place) within steps ``[lo, hi]``, contiguously.

    Anchored: the first gang ends at ``hi``. Each next gang starts where it touches the allocation so far, at
    the cheapest such start (ties: no growth first, then nearest the anchor, or the earliest when unanchored).
    When no start in ``[lo, hi]`` fits any more, the stage may spill down to ``floor``. Gangs go in batches
    of ``ceil(gangs / resolution)`` (the last one smaller), so a stage takes about ``resolution`` placement
    decisions however many containers it asks for. Returns the stage's (first, last) step, or None (``load``
    then holds a partial stage; callers discard it).
    """
    d = st.duration
    batch = -(-st.gangs // resolution)
    left = -(-st.gangs // batch)  # batches; the last one is ``short`` gangs short of a full batch
    short = left * batch - st.gangs
    unit = st.unit * batch
    region = lo
    span: tuple[int, int] | None = None
    while left > 0:
        if span is None:
            s_lo, s_hi = (hi - d + 1, hi - d + 1) if anchored else (region, hi - d + 1)
        else:
            s_lo, s_hi = max(region, span[0] - d), min(hi - d + 1, span[1] + 1)
        s_lo = max(s_lo, 0)
        costs = gang_cost(load[:, s_lo : s_hi + d], cap, unit, d) if s_lo <= s_hi else np.empty(0)
        if costs.size == 0 or not np.isfinite(costs).any():
            if region > floor:
                region = floor
                continue
            return None
        starts = np.arange(s_lo, s_lo + costs.size)
        rounded = np.round(costs, _DIGITS)
        if span is None:
            grows = np.zeros(costs.size, dtype=bool)
        else:
            grows = (starts < span[0]) | (starts + d - 1 > span[1])
        prefer = -starts if anchored else starts
        i = int(np.lexsort((prefer, grows, rounded))[0])
        s = int(starts[i])
        window = load[:, s : s + d]
        m = 1
        if span is not None and not grows[i]:
            c2 = float(np.partition(rounded, 1)[1]) if rounded.size > 1 else np.inf
            m = gangs_that_fit(window, cap, unit)
            if np.isfinite(c2):
                need = (unit > 0) & (cap > 0)
                bound = np.floor((c2 * cap[need] - window[need].max(axis=1)) / unit[need] + 1e-9)
                m = min(m, int(bound.min()) if bound.size else m)
            m = max(1, min(m, left))
        add = m * unit if (left > m or short == 0) else m * unit - short * st.unit
        window += add[:, None]
        left -= m
        span = (s, s + d - 1) if span is None else (min(span[0], s), max(span[1], s + d - 1))
    return span


_: type[ReservationAgent] = LowCostAgent
