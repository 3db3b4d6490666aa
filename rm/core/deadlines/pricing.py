"""Price–deadline quotes (MRM §4–5): the earliest feasible finish and the price of every later deadline.

The price of finishing job ``j`` by ``d`` is MRM's eq. 13,

    c(d) = κ · ( p_j / (δ_j + 1)  +  Σ_{i queued, d_i > d} [ p_i / (δ'_i + 1) − p_i / (δ_i + 1) ] ),

floored at ``p_j`` (one token buys one unit-second), where

* ``p_j`` is the job's work, the upper bound of its prediction interval, in unit-seconds;
* ``δ_j`` is the slack it offers: the time it could still run, at its own width, in the room between its
  earliest finish and ``d`` (the unit-seconds it could run there over its width), normalised by the average
  job's duration (its work over its width) — so a delay-tolerant job pays only ``p`` once it offers about
  ``κ - 1`` average job durations of slack, whatever its width, as in the paper's single-server reading;
* ``δ_i`` is the slack an admitted claim ``i`` has until its deadline (the free unit-seconds before ``d_i``
  in the lazy layout, normalised the same way) and ``δ'_i`` the same after ``j`` takes its ``p_j`` before
  ``d_i``. The sum charges ``j`` for the slack it takes from every deadline it jumps ahead of; it is zero for
  a deadline after every queued one.

The first term falls as ``d`` grows and the sum loses terms, so prices never rise with the deadline; they are
load dependent through the sum and through the room the earliest finish sees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rm.core.deadlines.book import DeadlineBook
from rm.core.deadlines.layout import Phase, critical_path, usable

DEFAULT_KAPPA = 2.0
CURVE_POINTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
"""Deadlines of a curve, as f^e + x × the job's critical path (at least one step)."""
JUMP_POINTS = 8
"""A curve also has a point at each of the first admitted deadlines after the earliest finish (where the price
drops: finishing after one no longer jumps ahead of it)."""


@dataclass(frozen=True, slots=True)
class Point:
    deadline: float
    price: float
    jump_ahead: float = 0.0  # the part of the price charged for the slack taken from later deadlines
    jumps: int = 0  # how many admitted deadlines it finishes ahead of


@dataclass(frozen=True, slots=True)
class PriceQuote:
    earliest: float  # f^e, seconds since the epoch
    critical_path: float  # seconds
    work: float  # p_j: unit-seconds (the PI upper bound)
    curve: tuple[Point, ...]


class Pricer:
    """Eq. 13 over one book at one instant (the slack of each claim computed once)."""

    def __init__(self, book: DeadlineBook, phases: tuple[Phase, ...], now: float, *, kappa: float = DEFAULT_KAPPA,
                 avg_work: float, avg_duration: float | None = None) -> None:
        """``avg_work``: the average job's work (unit-seconds), which normalises the slack of admitted claims;
        ``avg_duration``: its duration at its width (seconds), which normalises the slack this job offers
        (None: ``avg_work`` over this job's width)."""
        if kappa <= 0 or avg_work <= 0 or (avg_duration is not None and avg_duration <= 0):
            raise ValueError(f"pricing needs kappa > 0 and positive averages, got {kappa}, {avg_work}, "
                             f"{avg_duration}")
        self.book = book
        self.phases = phases
        self.now = now
        self.kappa = kappa
        self.avg = avg_work
        self.work = sum(p.work for p in phases)
        self.s0, self.free, self.earliest = book.room(phases, now)  # the free units, computed once
        claims = book.edf()
        self._deadlines = np.array([c.deadline for c in claims])
        self._work = np.array([c.work for c in claims])
        room = np.concatenate([[0.0], np.cumsum(np.clip(self.free, 0.0, None))]) * book.dt
        ends = np.clip(np.array([book.step_of(c.deadline) for c in claims], dtype=np.int64) - self.s0, 0,
                       len(self.free))
        slack = room[ends] if len(claims) else np.zeros(0)
        self._delta = slack / avg_work
        self._delta_after = np.clip(slack - self.work, 0.0, None) / avg_work
        self._rate = max((p.rate for p in phases), default=0.0)
        self.avg_duration = avg_duration if avg_duration is not None else avg_work / max(self._rate, 1e-9)

    def jump_ahead(self, deadline: float) -> float:
        """The sum of eq. 13: what a job finishing by ``deadline`` takes from the deadlines after it."""
        later = self._deadlines > deadline
        if not later.any():
            return 0.0
        w = self._work[later]
        return float((w / (self._delta_after[later] + 1.0) - w / (self._delta[later] + 1.0)).sum())

    def price(self, deadline: float) -> float:
        """The price of finishing by ``deadline`` (infinite before the earliest finish)."""
        if deadline < self.earliest - 1e-9:
            return float("inf")
        origin = self.s0 * self.book.dt
        offered = usable(self.free, self.earliest - origin, deadline - origin, self.book.dt, self._rate,
                         self.book.beyond()) / max(self._rate, 1e-9) / self.avg_duration
        c = self.kappa * (self.work / (offered + 1.0) + self.jump_ahead(deadline))
        return max(c, self.work)

    def floor_deadline(self) -> float:
        """The earliest deadline sold at the floor price (the job's own work): after every admitted deadline
        (nothing jumped) and with slack worth ``κ - 1`` average jobs at the job's width."""
        dt = self.book.dt
        need = (self.kappa - 1.0) * self.avg
        origin = self.s0 * dt

        def offered(d: float) -> float:
            return usable(self.free, self.earliest - origin, d - origin, dt, self._rate, self.book.beyond())

        span = dt
        for _ in range(64):
            if offered(self.earliest + span) >= need - 1e-9:
                break
            span *= 2
        lo, hi = 0, max(1, round(span / dt))  # whole steps after the earliest finish
        while lo < hi:
            mid = (lo + hi) // 2
            if offered(self.earliest + mid * dt) >= need - 1e-9:
                hi = mid
            else:
                lo = mid + 1
        last = float(self._deadlines.max()) if len(self._deadlines) else self.earliest
        after = self.earliest + max(0, math.ceil((last - self.earliest) / dt - 1e-9)) * dt
        return max(self.earliest + lo * dt, after)

    def earliest_within(self, max_price: float) -> float | None:
        """The earliest deadline priced at most ``max_price`` (None below the floor, the job's own work)."""
        if max_price < self.work - 1e-9:
            return None
        if self.price(self.earliest) <= max_price + 1e-9:
            return self.earliest
        dt = self.book.dt
        lo, hi = 0, max(1, math.ceil((self.floor_deadline() - self.earliest) / dt - 1e-9))
        while lo < hi:  # prices never rise with the deadline: the first step within the budget
            mid = (lo + hi) // 2
            if self.price(self.earliest + mid * dt) <= max_price + 1e-9:
                hi = mid
            else:
                lo = mid + 1
        return self.earliest + lo * dt

    def quote(self, points: tuple[float, ...] = CURVE_POINTS) -> PriceQuote:
        cp = critical_path(self.phases)
        unit = max(cp, self.book.dt)
        after = np.sort(self._deadlines[self._deadlines > self.earliest])[:JUMP_POINTS]
        floor = self.floor_deadline()  # the curve runs until the price reaches the floor
        deadlines = sorted({d for x in points if (d := self.earliest + x * unit) < floor}
                           | {float(d) for d in after if d < floor} | {floor})
        curve = tuple(Point(d, self.price(d), self.kappa * self.jump_ahead(d), int((self._deadlines > d).sum()))
                      for d in deadlines)
        return PriceQuote(self.earliest, cp, self.work, curve)


def cheapest_by(curve: tuple[Point, ...], max_price: float) -> Point | None:
    """The earliest point of a curve priced at most ``max_price``."""
    for p in curve:
        if p.price <= max_price + 1e-9:
            return p
    return None
