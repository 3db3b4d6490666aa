"""What ``ReservationSystem.list`` reports: a reservation's extent and its allocation over time as
YARN's resource-allocations (runs of equal resources, zero runs included, as the real RM prints them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from common.ids import QueuePath
from common.resources import Resources
from rm.core.reservation.book import PlanBook
from rm.core.reservation.requests import Reservation, ReservationDefinition, ReservationId

LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class AllocationSegment:
    start_ms: int
    end_ms: int
    resource: Resources


@dataclass(frozen=True, slots=True)
class ReservationInfo:
    reservation_id: ReservationId
    queue: QueuePath
    user: str
    acceptance_ms: int
    definition: ReservationDefinition
    allocations: tuple[AllocationSegment, ...] | None = None
    missed_instances: tuple[int, ...] = ()
    start_ms: int = 0  # the first ms it holds capacity (``extent``)
    end_ms: int = 0  # the last; LONG_MAX for a periodic one


def extent(res: Reservation, book: PlanBook) -> tuple[int, int]:
    """[first, last] ms the reservation holds capacity; a periodic one lasts until deleted."""
    step = book.timeline.step_ms
    items = book.bookings.get(res.reservation_id, [])
    if not items:
        return res.definition.arrival_ms, res.definition.deadline_ms
    first = min(b.start for b in items) * step
    if res.definition.periodic:
        return first, LONG_MAX
    return first, max(b.end for b in items) * step


def _windows(res: Reservation, start_ms: int, end_ms: int, window_steps: int, step_ms: int) -> list[tuple[int, int]]:
    d = res.definition
    if not d.periodic:
        return [(d.arrival_ms, d.deadline_ms)]
    limit = max(1, (window_steps * step_ms) // d.recurrence_ms)  # at most one window's worth of instances
    k = max(0, d.instance_at(start_ms) if start_ms > d.arrival_ms else 0)
    out: list[tuple[int, int]] = []
    while len(out) < limit:
        arr, dl = d.instance(k)
        if arr > end_ms:
            break
        if dl >= start_ms:
            out.append((arr, dl))
        k += 1
    return out


def allocation_segments(res: Reservation, book: PlanBook, start_ms: int, end_ms: int) -> tuple[AllocationSegment, ...]:
    """Runs of equal allocation over each listed instance's [arrival, deadline], extensions beyond it
    included; zero runs are reported too."""
    tl = book.timeline
    step = tl.step_ms
    out: list[AllocationSegment] = []
    for arr, dl in _windows(res, start_ms, end_ms, tl.window, step):
        lo = arr // step
        hi = plan_hi = -(-dl // step)
        for b in book.bookings.get(res.reservation_id, ()):  # reprovisioning may run past the deadline
            if b.kind == "dra" and b.start < plan_hi + tl.window and b.end > hi:
                hi = b.end
        if hi <= lo:
            continue
        limit = hi * step if hi > plan_hi else dl
        loads = np.stack([book.load_of(res.reservation_id, s) for s in range(lo, hi)], axis=1)
        i = 0
        while i < hi - lo:
            j = i
            while j + 1 < hi - lo and np.array_equal(loads[:, j + 1], loads[:, i]):
                j += 1
            seg = AllocationSegment(max(arr, (lo + i) * step), min((lo + j + 1) * step, limit),
                                    tl.resources(loads[:, i]))
            out.append(seg)
            i = j + 1
    return tuple(out)
