"""The greedy agent YARN uses by default (GreedyReservationAgent): every stage as late as it fits.

Stages are handled from the last to the first (for ordered interpreters each must end before the next one
starts). A stage walks back from its latest possible end in blocks of its duration and puts as many gangs
in each block as fit, until all are placed; it ignores how loaded the plan is, which is what LowCost
improves on. R_ANY takes the first alternative that fits, as YARN does; R_ORDER_NO_GAP refuses a placement
that leaves a gap inside or between stages.
"""

from __future__ import annotations

from typing import ClassVar

from rm.core.reservation.placement import (
    DOES_NOT_FIT,
    NO_GAP_BROKEN,
    Placement,
    PlacementProblem,
    PlacementRejected,
    ReservationAgent,
    StageSpec,
    describe,
    gangs_that_fit,
    min_steps,
)
from rm.core.reservation.timeline import FloatArray, step_cost


class GreedyAgent:
    name: ClassVar[str] = "greedy"

    def place(self, problem: PlacementProblem) -> Placement | PlacementRejected:
        n = problem.steps
        if n < min_steps(problem.stages, problem.interpreter):
            return PlacementRejected(DOES_NOT_FIT, "the requests do not fit between arrival and deadline",
                                     {"window_steps": n})
        if problem.interpreter == "R_ANY":
            first: PlacementRejected | None = None
            for st in problem.stages:
                got = self._stages(problem, (st,), ordered=False)
                if isinstance(got, Placement):
                    return got
                first = first or got
            assert first is not None
            return first
        ordered = problem.interpreter in ("R_ORDER", "R_ORDER_NO_GAP")
        return self._stages(problem, problem.stages, ordered=ordered)

    def _stages(
        self, problem: PlacementProblem, stages: tuple[StageSpec, ...], *, ordered: bool
    ) -> Placement | PlacementRejected:
        load = problem.base.copy()
        no_gap = problem.interpreter == "R_ORDER_NO_GAP"
        floors = [sum(s.duration for s in stages[:k]) if ordered else 0 for k in range(len(stages))]
        hi = problem.steps - 1
        spans: list[tuple[int, int, int]] = []
        for k in range(len(stages) - 1, -1, -1):
            st = stages[k]
            got = _latest_first(load, problem.cap, st, hi if ordered else problem.steps - 1, floors[k])
            if got is None:
                d = describe(problem, st)
                return PlacementRejected(
                    DOES_NOT_FIT,
                    f"request {st.request} needs {st.gangs} gang(s) for {st.duration} step(s) each and does not "
                    f"fit between arrival and deadline (at most {d['most_gangs_at_once']} gang(s) fit at once)",
                    d,
                )
            first, last, holes = got
            if no_gap and (holes or (spans and last != hi)):
                return PlacementRejected(
                    NO_GAP_BROKEN, f"request {st.request} could only be placed with a gap (R_ORDER_NO_GAP)",
                    {"request": st.request},
                )
            spans.append((st.request, first, last))
            if ordered:
                hi = first - 1
        alloc = load - problem.base
        used = alloc.any(axis=0)
        cost = float(step_cost(load[:, used], problem.cap).max()) if used.any() else 0.0
        return Placement(alloc, tuple(sorted(spans)), cost)


def _latest_first(
    load: FloatArray, cap: FloatArray, st: StageSpec, hi: int, floor: int
) -> tuple[int, int, bool] | None:
    """Blocks of ``duration`` steps from ``hi`` back to ``floor``, each taking as many gangs as fit.
    Returns (first step, last step, whether a block in between stayed empty), or None."""
    d = st.duration
    left = st.gangs
    end = hi
    first = last = -1
    holes = False
    while left > 0 and end - d + 1 >= floor:
        s = end - d + 1
        window = load[:, s : end + 1]
        m = min(left, gangs_that_fit(window, cap, st.unit))
        if m > 0:
            window += m * st.unit[:, None]
            left -= m
            if last < 0:
                last = end
            elif first != end + 1:
                holes = True
            first = s
        end -= d
    if left > 0:
        return None
    return first, last, holes


_: type[ReservationAgent] = GreedyAgent
