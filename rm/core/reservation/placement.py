"""What a placement agent is given and what it answers, shared by LowCost and the greedy agent.

The plan turns a reservation into a ``PlacementProblem`` over ``n`` candidate steps: the load already booked
at each of them (for a periodic job, the worst over all its instances in the window), the capacity, and one
``StageSpec`` per reservation request. An agent answers a ``Placement`` (the load to add at each of the ``n``
steps) or a ``PlacementRejected`` saying why not. Agents never change the plan: the plan commits an accepted
placement, so accepted reservations never move.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np

from rm.core.reservation.requests import Interpreter, ReservationDefinition
from rm.core.reservation.timeline import FloatArray, Timeline, step_cost

# Constant reasons a reservation is refused (the message carries the numbers).
DOES_NOT_FIT = "RESERVATION_DOES_NOT_FIT"  # not enough room between arrival and deadline
WINDOW_TOO_SHORT = "RESERVATION_WINDOW_TOO_SHORT"  # the requests cannot fit the window even on an empty plan
UNKNOWN_RESOURCE = "RESERVATION_UNKNOWN_RESOURCE"  # a resource type the plan has no capacity of
NO_GAP_BROKEN = "RESERVATION_GAP"  # R_ORDER_NO_GAP could only be met with a gap

_TOL = 1e-9


@dataclass(frozen=True, slots=True, eq=False)
class StageSpec:
    """One reservation request in steps: ``gangs`` gangs, each ``unit`` of load for ``duration`` steps."""

    request: int  # index of the request in its definition
    unit: FloatArray
    gangs: int
    duration: int

    def demand(self, cap: FloatArray) -> float:
        """Its area in dominant-share steps (the measure LowCost splits the time by)."""
        share = float(step_cost(self.unit[:, None], cap)[0])
        return self.gangs * self.duration * (share if np.isfinite(share) and share > 0 else 1.0)


@dataclass(frozen=True, slots=True, eq=False)
class PlacementProblem:
    base: FloatArray  # (R, n): load already booked at each candidate step
    cap: FloatArray  # (R,)
    stages: tuple[StageSpec, ...]
    interpreter: Interpreter
    alignment: float = 0.0  # weight of the alignment penalty (0: none)

    @property
    def steps(self) -> int:
        return int(self.base.shape[1])


@dataclass(frozen=True, slots=True, eq=False)
class Placement:
    alloc: FloatArray  # (R, n): the load to add
    spans: tuple[tuple[int, int, int], ...]  # (request index, first step, last step) per placed stage
    cost: float  # the highest c(t) over the allocated steps once placed

    @property
    def first(self) -> int:
        return min(s[1] for s in self.spans)

    @property
    def last(self) -> int:
        return max(s[2] for s in self.spans)


@dataclass(frozen=True, slots=True)
class PlacementRejected:
    reason: str
    message: str
    detail: dict[str, object] = field(default_factory=dict)


class ReservationAgent(Protocol):
    """Places one reservation on the plan without moving any other (YARN's ReservationAgent)."""

    name: ClassVar[str]

    def place(self, problem: PlacementProblem) -> Placement | PlacementRejected: ...


def build_stages(defn: ReservationDefinition, timeline: Timeline) -> tuple[StageSpec, ...]:
    """The definition's requests in the timeline's steps (ValueError on a resource type it lacks)."""
    out = []
    for i, r in enumerate(defn.requests):
        duration = -(-r.duration_ms // timeline.step_ms)
        out.append(StageSpec(i, timeline.vector(r.gang), r.gangs, max(1, duration)))
    return tuple(out)


def min_steps(stages: tuple[StageSpec, ...], interpreter: Interpreter) -> int:
    durations = [s.duration for s in stages]
    if interpreter in ("R_ORDER", "R_ORDER_NO_GAP"):
        return sum(durations)
    if interpreter == "R_ANY":
        return min(durations)
    return max(durations)


def sliding_max(a: FloatArray, d: int) -> FloatArray:
    """``out[i] = max(a[i : i + d])`` for every full window, in O(n log d)."""
    if d <= 1:
        return a.copy()
    n = len(a) - d + 1
    if n <= 0:
        return np.empty(0)
    out = a
    w = 1
    while 2 * w <= d:
        out = np.maximum(out[:-w], out[w:])
        w *= 2
    if w < d:
        out = np.maximum(out[:n], out[d - w : d - w + n])
    return out[:n]


def gang_cost(load: FloatArray, cap: FloatArray, unit: FloatArray, d: int) -> FloatArray:
    """For each gang start in ``load`` (R × m), c(t) at the worst step of the gang once it is added;
    infinity where it does not fit."""
    c = step_cost(load + unit[:, None], cap)
    c[c > 1.0 + _TOL] = np.inf  # over capacity in some type (a type without capacity is infinite already)
    return sliding_max(c, d)


def gangs_that_fit(load: FloatArray, cap: FloatArray, unit: FloatArray) -> int:
    """How many gangs fit on top of ``load`` (R × d) at every one of its steps."""
    need = unit > 0
    if not need.any():
        return 1 << 30
    free = (cap[need, None] - load[need]).min(axis=1)
    return max(0, int(np.floor(((free + _TOL) / unit[need]).min())))


def describe(problem: PlacementProblem, stage: StageSpec) -> dict[str, object]:
    """Numbers for a rejection: what the stage needs and the most gangs that fit at once anywhere."""
    need = stage.unit > 0
    if need.any() and problem.steps >= stage.duration:
        free = problem.cap[need, None] - problem.base[need]
        per_step = np.floor((free + _TOL) / stage.unit[need, None]).min(axis=0)
        best = max(0, int(-sliding_max(-per_step, stage.duration).max()))
    else:
        best = 0
    return {
        "request": stage.request,
        "gangs": stage.gangs,
        "duration_steps": stage.duration,
        "window_steps": problem.steps,
        "most_gangs_at_once": best,
    }
