"""One queue's plan: the timeline plus who booked what, indexed by step for the scheduling hot path.

A ``Booking`` is one contiguous block of load owned by a reservation: the planned allocation (repeating with
``period`` for a periodic reservation whose period divides the window), one instance of a periodic
reservation whose period does not, or a dynamic-reprovisioning extension. The book keeps, per window
position and per absolute step, which reservations have load there, so ``active(step)`` costs
O(reservations active at that step), however large the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from rm.core.reservation.requests import ReservationId
from rm.core.reservation.timeline import FloatArray, Timeline

BookingKind = Literal["plan", "instance", "dra"]


@dataclass(slots=True, eq=False)
class Booking:
    start: int  # absolute step of its first step (for a periodic one: of its first instance)
    loads: FloatArray  # (R, L), rows in the timeline's type order
    period: int = 0  # > 0: repeats every ``period`` steps forever
    kind: BookingKind = "plan"
    instance: int = 0  # which instance, for kind "instance"

    @property
    def length(self) -> int:
        return int(self.loads.shape[1])

    @property
    def end(self) -> int:
        """One past the last step of the (first) block."""
        return self.start + self.length

    def offset(self, step: int) -> int | None:
        """Which column of ``loads`` is in force at absolute ``step``, or None."""
        j = (step - self.start) % self.period if self.period else step - self.start
        return j if 0 <= j < self.length else None

    def at(self, step: int) -> FloatArray | None:
        j = self.offset(step)
        return None if j is None else self.loads[:, j]


class PlanBook:
    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.bookings: dict[ReservationId, list[Booking]] = {}
        self._by_position: list[dict[ReservationId, int]] = [{} for _ in range(timeline.window)]
        self._by_step: dict[int, dict[ReservationId, int]] = {}

    # ------------------------------------------------------------------------------------ changes

    def add(self, rid: ReservationId, booking: Booking) -> None:
        if booking.length == 0:
            return
        self._grow_types(booking)
        self.timeline.add(booking.start, booking.loads, period=booking.period)
        self.bookings.setdefault(rid, []).append(booking)
        self._index(rid, booking, +1)

    def remove(self, rid: ReservationId, booking: Booking) -> None:
        items = self.bookings.get(rid, [])
        if booking not in items:
            return
        items.remove(booking)
        if not items:
            del self.bookings[rid]
        self._grow_types(booking)  # booked before the timeline gained a type: zero of it
        self.timeline.add(booking.start, booking.loads, period=booking.period, sign=-1.0)
        self._index(rid, booking, -1)

    def remove_all(self, rid: ReservationId, kinds: frozenset[str] | None = None) -> list[Booking]:
        """Remove the reservation's bookings (of ``kinds``, default all); returns what was removed."""
        gone = [b for b in self.bookings.get(rid, []) if kinds is None or b.kind in kinds]
        for b in gone:
            self.remove(rid, b)
        return gone

    def _grow_types(self, booking: Booking) -> None:
        rows = booking.loads.shape[0]
        have = len(self.timeline.types)
        if rows > have:
            raise ValueError(f"a booking with {rows} resource rows on a timeline of {have}")
        if rows < have:  # the timeline gained a type since the booking was made
            booking.loads = np.vstack([booking.loads, np.zeros((have - rows, booking.length))])

    def _index(self, rid: ReservationId, b: Booking, delta: int) -> None:
        if b.period:
            w = self.timeline.window
            reps = w // b.period
            positions = (
                ((b.start + np.arange(b.length))[None, :] + b.period * np.arange(reps)[:, None]) % w
            ).ravel()
            for p in positions.tolist():
                _bump(self._by_position[p], rid, delta)
        else:
            for s in range(b.start, b.end):
                slot = self._by_step.get(s)
                if slot is None:
                    slot = self._by_step[s] = {}
                _bump(slot, rid, delta)
                if not slot:
                    del self._by_step[s]

    # ------------------------------------------------------------------------------------ lookups

    def active(self, step: int, kinds: frozenset[str] | None = None) -> dict[ReservationId, FloatArray]:
        """Every reservation with load at ``step`` and that load: O(reservations active there)."""
        rids = set(self._by_position[step % self.timeline.window])
        rids.update(self._by_step.get(step, ()))
        out: dict[ReservationId, FloatArray] = {}
        for rid in sorted(rids):
            total: FloatArray | None = None
            for b in self.bookings.get(rid, ()):
                if kinds is not None and b.kind not in kinds:
                    continue
                v = b.at(step)
                if v is not None:  # a booking made before the timeline gained a type is shorter
                    if total is None:
                        total = np.zeros(len(self.timeline.types))
                    total[: len(v)] += v
            if total is not None and total.any():
                out[rid] = total
        return out

    def load_of(self, rid: ReservationId, step: int, kinds: frozenset[str] | None = None) -> FloatArray:
        total = np.zeros(len(self.timeline.types))
        for b in self.bookings.get(rid, ()):
            if kinds is None or b.kind in kinds:
                v = b.at(step)
                if v is not None:
                    total[: len(v)] += v
        return total

    def prune(self, before_step: int) -> None:
        """Drop one-off bookings that ended before ``before_step``, then the timeline's past pages."""
        for rid in list(self.bookings):
            for b in [b for b in self.bookings[rid] if not b.period and b.end <= before_step]:
                self.remove(rid, b)
        self.timeline.prune(before_step)


def _bump(slot: dict[ReservationId, int], rid: ReservationId, delta: int) -> None:
    n = slot.get(rid, 0) + delta
    if n > 0:
        slot[rid] = n
    else:
        slot.pop(rid, None)
