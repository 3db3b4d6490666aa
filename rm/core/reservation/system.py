"""The reservation system: reservable queues' plans, reservation ids, submit/update/delete/list, the apps
running inside reservations, and the records that make all of it survive a restart.

Every leaf queue the service gives a capacity to (``set_capacity``) is reservable and has its own plan, so
two queues' reservations never compete for the same capacity. A reservation is placed once by the plan's
agent and its bookings never move afterwards (an update is a try-and-swap: the old bookings come back if
the new definition does not fit). How a definition becomes bookings:

* one-off: one placement between ``max(arrival, now)`` and the deadline;
* periodic with a period that divides the window (default one day): one placement on the folded window —
  the same offset for every instance, forever;
* periodic with any other period: one one-off placement per instance, made ``horizon_s`` ahead by ``roll``.

Methods validate before they change anything and raise ``BadRequest`` (YARN's 400) with YARN's message; a
reservation that does not fit raises ``ReservationRejected`` with a constant reason and the numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from common.errors import BadRequest
from common.ids import AppId, QueuePath
from common.resources import Resources
from rm.core.reservation.book import Booking, PlanBook
from rm.core.reservation.greedy import GreedyAgent
from rm.core.reservation.listing import LONG_MAX, ReservationInfo, allocation_segments, extent
from rm.core.reservation.lowcost import LowCostAgent
from rm.core.reservation.placement import (
    UNKNOWN_RESOURCE,
    PlacementProblem,
    PlacementRejected,
    ReservationAgent,
    build_stages,
    gangs_that_fit,
)
from rm.core.reservation.records import ReservationRecord, booking_from_dict, booking_to_dict
from rm.core.reservation.requests import (
    Reservation,
    ReservationDefinition,
    ReservationId,
    parse_reservation_id,
    reservation_id,
    validate_definition,
)
from rm.core.reservation.stage import ActiveReservation, ReservationView
from rm.core.reservation.timeline import DEFAULT_STEP_S, DEFAULT_WINDOW_S, Timeline
from rm.core.reservation.yarn import definition_from_json, definition_to_json


@dataclass(frozen=True, slots=True)
class ReservationConfig:
    step_s: int = DEFAULT_STEP_S
    window_s: int = DEFAULT_WINDOW_S  # the LCM of the periods; periods that do not divide it go per instance
    agent: str = "lowcost"
    max_endpoints: int = 8  # LowCost: end points tried per refinement round
    resolution: int = 8  # LowCost: placement decisions per stage (gangs are batched)
    horizon_s: int = DEFAULT_WINDOW_S  # how far ahead per-instance reservations are placed

    def validate(self) -> None:
        if self.agent not in AGENTS:
            raise ValueError(f"unknown reservation agent {self.agent!r}; known: {', '.join(sorted(AGENTS))}")
        Timeline(Resources(), step_s=self.step_s, window_s=self.window_s)
        if self.horizon_s < self.step_s:
            raise ValueError("the instance horizon must be at least one step")


AGENTS: dict[str, Callable[[ReservationConfig], ReservationAgent]] = {
    LowCostAgent.name: lambda c: LowCostAgent(c.max_endpoints, c.resolution),
    GreedyAgent.name: lambda c: GreedyAgent(),
}


class ReservationRejected(BadRequest):
    """The plan has no room for the reservation (nothing changed)."""

    def __init__(self, message: str, reason: str, detail: Mapping[str, object]) -> None:
        super().__init__(message)
        self.reason = reason
        self.detail = dict(detail)


@dataclass(frozen=True, slots=True)
class RollReport:
    expired: tuple[ReservationId, ...] = ()
    placed: tuple[tuple[ReservationId, int], ...] = ()
    missed: tuple[tuple[ReservationId, int], ...] = ()


class ReservationSystem:
    def __init__(self, config: ReservationConfig | None = None, *, cluster_ts: int, next_seq: int = 1) -> None:
        self.config = config or ReservationConfig()
        self.config.validate()
        self.agent = AGENTS[self.config.agent](self.config)
        self.cluster_ts = cluster_ts
        self.next_seq = next_seq
        self.plans: dict[QueuePath, PlanBook] = {}
        self.reservations: dict[ReservationId, Reservation] = {}
        self.app_reservation: dict[AppId, ReservationId] = {}
        self._dirty: set[ReservationId] = set()

    # ---------------------------------------------------------------------------------- plans, ids

    def set_capacity(self, queue: str, capacity: Resources) -> None:
        """Make ``queue`` reservable with ``capacity`` (its share of the cluster), or update that capacity."""
        q = QueuePath(queue)
        book = self.plans.get(q)
        if book is None:
            tl = Timeline(capacity, step_s=self.config.step_s, window_s=self.config.window_s)
            self.plans[q] = PlanBook(tl)
        else:
            book.timeline.set_capacity(capacity)

    def plan(self, queue: str) -> PlanBook:
        return self.plans[self.resolve(queue)]

    def resolve(self, queue: str) -> QueuePath:
        """A reservable queue by full path or, as YARN clients name it, by leaf name ("default")."""
        if not queue:
            raise BadRequest("The queue is not specified. Please try again with a valid reservable queue.")
        for q in (QueuePath(queue), QueuePath(f"root.{queue}")):
            if q in self.plans:
                return q
        leaf = [p for p in self.plans if p.rsplit(".", 1)[-1] == queue]
        if len(leaf) == 1:
            return leaf[0]
        raise BadRequest(
            f"The specified queue: {queue} is not managed by reservation system. "
            "Please try again with a valid reservable queue."
        )

    def new_reservation_id(self) -> ReservationId:
        rid = reservation_id(self.cluster_ts, self.next_seq)
        self.next_seq += 1
        return rid

    def get(self, rid: str) -> Reservation:
        if not rid:
            raise BadRequest("Missing reservation id. Please try again by specifying a reservation id.")
        res = self.reservations.get(ReservationId(rid))
        if res is None:
            raise BadRequest(
                f"The specified reservation with ID: {rid} is unknown. Please try again with a valid reservation."
            )
        return res

    # ---------------------------------------------------------------------------------- lifecycle

    def submit(
        self, rid: str, queue: str, definition: ReservationDefinition, *, user: str, now: float
    ) -> Reservation:
        if not rid:
            raise BadRequest(
                "Reservation id cannot be null. Please try again specifying a valid reservation id by "
                "creating a new reservation id."
            )
        parse_reservation_id(rid)
        path = self.resolve(queue)
        book = self.plans[path]
        old = self.reservations.get(ReservationId(rid))
        if old is not None:
            if old.definition == definition and old.queue == path:
                return old  # YARN: the same id and definition again is the same reservation
            raise BadRequest(f"Reservation {rid} already exists with a different definition or queue")
        now_ms = _ms(now)
        validate_definition(definition, now_ms=now_ms, capacity=book.timeline.capacity)
        res = Reservation(ReservationId(rid), path, user, definition, now_ms)
        self._place_or_raise(res, book, now_ms)
        self.reservations[res.reservation_id] = res
        seq = parse_reservation_id(rid)[1]
        if parse_reservation_id(rid)[0] == self.cluster_ts and seq >= self.next_seq:
            self.next_seq = seq + 1
        self._dirty.add(res.reservation_id)
        return res

    def update(self, rid: str, definition: ReservationDefinition, *, now: float) -> Reservation:
        """Try-and-swap: the new definition replaces the old only if it fits (the old one's room counts)."""
        res = self.get(rid)
        book = self.plans[res.queue]
        now_ms = _ms(now)
        validate_definition(definition, now_ms=now_ms, capacity=book.timeline.capacity)
        old_bookings = book.remove_all(res.reservation_id)
        old = (res.definition, res.period, res.per_instance, res.next_instance, list(res.missed))
        res.definition, res.missed, res.next_instance = definition, [], 0
        try:
            self._place_or_raise(res, book, now_ms)
        except ReservationRejected:
            res.definition, res.period, res.per_instance, res.next_instance, res.missed = old
            for b in old_bookings:
                book.add(res.reservation_id, b)
            raise
        self._dirty.add(res.reservation_id)
        return res

    def delete(self, rid: str) -> None:
        res = self.get(rid)
        self.plans[res.queue].remove_all(res.reservation_id)
        for app in res.apps:
            self.app_reservation.pop(app, None)
        del self.reservations[res.reservation_id]
        self._dirty.add(res.reservation_id)

    def _place_or_raise(self, res: Reservation, book: PlanBook, now_ms: int) -> None:
        got = self._place(res, book, now_ms)
        if isinstance(got, PlacementRejected):
            d = res.definition
            raise ReservationRejected(
                f"The reservation {res.reservation_id} cannot be placed between arrival ({d.arrival_ms}) and "
                f"deadline ({d.deadline_ms}) in queue {res.queue}: {got.message}",
                got.reason,
                got.detail,
            )

    def _place(self, res: Reservation, book: PlanBook, now_ms: int) -> PlacementRejected | None:
        d, tl = res.definition, book.timeline
        try:
            stages = build_stages(d, tl)
        except ValueError as exc:
            return PlacementRejected(UNKNOWN_RESOURCE, str(exc))
        res.period, res.per_instance = 0, False
        if d.periodic:
            if d.recurrence_ms % tl.step_ms == 0 and tl.window % (d.recurrence_ms // tl.step_ms) == 0:
                period = d.recurrence_ms // tl.step_ms
                a, b = _ceil(d.arrival_ms, tl.step_ms), d.deadline_ms // tl.step_ms
                problem = PlacementProblem(tl.folded(period, a, b - a), tl.cap, stages, d.interpreter, d.alignment)
                got = self.agent.place(problem)
                if isinstance(got, PlacementRejected):
                    return got
                book.add(res.reservation_id, _booking(a, got.alloc, got.first, got.last, period=period))
                res.period = period
                return None
            res.per_instance = True
            res.next_instance = d.instance_at(now_ms)
            placed: list[Booking] = []
            failed = self._roll_instances(res, book, now_ms, placed)
            if failed is not None:
                for bk in placed:
                    book.remove(res.reservation_id, bk)
                return failed
            return None
        return self._place_window(res, book, d.arrival_ms, d.deadline_ms, now_ms, "plan", 0)

    def _place_window(
        self, res: Reservation, book: PlanBook, arrival_ms: int, deadline_ms: int, now_ms: int,
        kind: str, instance: int,
    ) -> PlacementRejected | None:
        tl = book.timeline
        d = res.definition
        a = max(_ceil(arrival_ms, tl.step_ms), now_ms // tl.step_ms)
        b = deadline_ms // tl.step_ms
        stages = build_stages(d, tl)
        problem = PlacementProblem(tl.load(a, max(a, b)), tl.cap, stages, d.interpreter, d.alignment)
        got = self.agent.place(problem)
        if isinstance(got, PlacementRejected):
            return got
        booking = _booking(a, got.alloc, got.first, got.last)
        booking.kind = "instance" if kind == "instance" else "plan"
        booking.instance = instance
        book.add(res.reservation_id, booking)
        return None

    def _roll_instances(
        self, res: Reservation, book: PlanBook, now_ms: int, placed: list[Booking] | None
    ) -> PlacementRejected | None:
        """Place per-instance bookings up to the horizon. With ``placed`` (at submit) the first failure is
        returned; without (later rolls) a failed instance is recorded in ``missed``."""
        d = res.definition
        horizon = now_ms + self.config.horizon_s * 1000
        while d.instance(res.next_instance)[0] < horizon:
            k = res.next_instance
            arr, dl = d.instance(k)
            res.next_instance += 1
            if dl <= now_ms:
                continue
            before = list(book.bookings.get(res.reservation_id, ()))
            got = self._place_window(res, book, arr, dl, now_ms, "instance", k)
            if got is not None:
                if placed is not None:
                    return got
                res.missed.append(k)
                continue
            if placed is not None:
                placed.extend(b for b in book.bookings[res.reservation_id] if b not in before)
        return None

    # ---------------------------------------------------------------------------------- apps

    def attach(self, app_id: str, rid: str, queue: str | None = None) -> Reservation:
        """An app submitted with a reservation id runs inside it (YARN: in the reservation's queue)."""
        res = self.get(rid)
        if queue and queue not in (res.queue, res.queue.rsplit(".", 1)[-1], res.queue.removeprefix("root.")):
            raise BadRequest(f"Reservation {rid} belongs to queue {res.queue}, not {queue}")
        self.detach(app_id)
        res.apps.add(AppId(app_id))
        self.app_reservation[AppId(app_id)] = res.reservation_id
        self._dirty.add(res.reservation_id)
        return res

    def detach(self, app_id: str) -> None:
        rid = self.app_reservation.pop(AppId(app_id), None)
        if rid is not None and rid in self.reservations:
            self.reservations[rid].apps.discard(AppId(app_id))
            self._dirty.add(rid)

    def reservation_of(self, app_id: str) -> ReservationId | None:
        return self.app_reservation.get(AppId(app_id))

    # ---------------------------------------------------------------------------------- scheduling

    def view(self, now: float) -> ReservationView:
        """The reservations active now with their guarantees and apps: O(active reservations)."""
        active: list[ActiveReservation] = []
        step = self.config.step_s
        s = int(now // step)
        for queue in sorted(self.plans):
            book = self.plans[queue]
            for rid, load in book.active(s).items():
                res = self.reservations.get(rid)
                if res is not None:
                    active.append(ActiveReservation(rid, queue, book.timeline.resources(load), tuple(sorted(res.apps))))
        return ReservationView(tuple(active), float((s + 1) * step) if active else None)

    def planned_at(self, rid: str, now: float, *, with_extensions: bool = False) -> Resources:
        res = self.get(rid)
        book = self.plans[res.queue]
        kinds = None if with_extensions else frozenset({"plan", "instance"})
        return book.timeline.resources(book.load_of(res.reservation_id, int(now // self.config.step_s), kinds))

    def recent_max(self, rid: str, now: float, window_s: float, *, with_extensions: bool = True) -> Resources:
        """The most the reservation was given per type over the last ``window_s`` (its skyline, and by default
        the extensions that locally increased it)."""
        res = self.get(rid)
        book = self.plans[res.queue]
        s = int(now // self.config.step_s)
        steps = max(1, -(-int(window_s) // self.config.step_s))
        kinds = None if with_extensions else frozenset({"plan", "instance"})
        loads = [book.load_of(res.reservation_id, t, kinds) for t in range(s - steps + 1, s + 1)]
        return book.timeline.resources(np.max(loads, axis=0))

    def extend(self, rid: str, units: int, unit: Resources, *, now: float, duration_s: float) -> int:
        """Book up to ``units`` × ``unit`` more for the reservation over ``[now, now + duration_s)``, only as
        far as the plan has room at every step of it; replaces the reservation's previous extension. Returns
        the units granted."""
        res = self.get(rid)
        book = self.plans[res.queue]
        tl = book.timeline
        self.clear_extension(rid)
        if units <= 0:
            return 0
        try:
            vec = tl.vector(unit)
        except ValueError:
            return 0
        s = int(now // tl.step_s)
        steps = max(1, -(-int(duration_s) // tl.step_s))
        granted = min(units, gangs_that_fit(tl.load(s, s + steps), tl.cap, vec))
        if granted > 0:
            loads = np.repeat((vec * granted)[:, None], steps, axis=1)
            book.add(res.reservation_id, Booking(s, loads, kind="dra"))
            self._dirty.add(res.reservation_id)
        return granted

    def clear_extension(self, rid: str) -> None:
        res = self.get(rid)
        if self.plans[res.queue].remove_all(res.reservation_id, frozenset({"dra"})):
            self._dirty.add(res.reservation_id)

    # ---------------------------------------------------------------------------------- time

    def roll(self, now: float) -> RollReport:
        """Forget the past, expire one-off reservations that are over, place upcoming instances."""
        now_ms = _ms(now)
        step = int(now // self.config.step_s)
        expired: list[ReservationId] = []
        placed: list[tuple[ReservationId, int]] = []
        missed: list[tuple[ReservationId, int]] = []
        for book in self.plans.values():
            book.prune(step)
        for rid, res in sorted(self.reservations.items()):
            book = self.plans[res.queue]
            if not res.definition.periodic:
                if res.definition.deadline_ms <= now_ms and not book.bookings.get(rid):
                    expired.append(rid)
                continue
            if res.per_instance:
                before_missed = len(res.missed)
                before = {b.instance for b in book.bookings.get(rid, ()) if b.kind == "instance"}
                self._roll_instances(res, book, now_ms, None)
                after = {b.instance for b in book.bookings.get(rid, ()) if b.kind == "instance"}
                placed.extend((rid, k) for k in sorted(after - before))
                missed.extend((rid, k) for k in res.missed[before_missed:])
                if after != before or len(res.missed) != before_missed:
                    self._dirty.add(rid)
        for rid in expired:
            self.delete(rid)
        return RollReport(tuple(expired), tuple(placed), tuple(missed))

    # ---------------------------------------------------------------------------------- listing

    def list_reservations(
        self,
        queue: str,
        rid: str | None = None,
        start_ms: int = 0,
        end_ms: int = LONG_MAX,
        include_allocations: bool = False,
    ) -> list[ReservationInfo]:
        """YARN's list: the queue's reservations whose allocation overlaps ``[start_ms, end_ms]``, or one by id."""
        q = self.resolve(queue)
        if end_ms < start_ms:
            raise BadRequest("The specified end time must be greater than the specified start time.")
        out = []
        if rid:
            res = self.get(rid)
            chosen = [res] if res.queue == q else []
        else:
            chosen = [r for _, r in sorted(self.reservations.items()) if r.queue == q]
        for res in chosen:
            book = self.plans[res.queue]
            first, last = extent(res, book)
            if not rid and (last < start_ms or first > end_ms):
                continue
            allocs = allocation_segments(res, book, start_ms, end_ms) if include_allocations else None
            out.append(ReservationInfo(res.reservation_id, res.queue, res.user, res.acceptance_ms, res.definition,
                                       allocs, tuple(res.missed), first, last))
        return out

    # ---------------------------------------------------------------------------------- records

    def drain_records(self) -> list[ReservationRecord]:
        out = []
        for rid in sorted(self._dirty):
            res = self.reservations.get(rid)
            if res is None:
                out.append(ReservationRecord(rid, "", "", {}, 0, deleted=True))
                continue
            book = self.plans[res.queue]
            out.append(ReservationRecord(
                reservation_id=rid, queue=res.queue, user=res.user,
                definition=definition_to_json(res.definition), acceptance_ms=res.acceptance_ms,
                bookings=tuple(booking_to_dict(b, book.timeline.types) for b in book.bookings.get(rid, ())),
                apps=tuple(sorted(res.apps)), period=res.period, per_instance=res.per_instance,
                next_instance=res.next_instance, missed=tuple(res.missed),
            ))
        self._dirty.clear()
        return out

    def restore(self, records: Iterable[ReservationRecord]) -> None:
        """Rebuild reservations exactly as booked (nothing is placed again). Capacities first."""
        for rec in records:
            if rec.deleted:
                continue
            q = QueuePath(rec.queue)
            if q not in self.plans:
                self.set_capacity(q, Resources())
            book = self.plans[q]
            rid = ReservationId(rec.reservation_id)
            res = Reservation(rid, q, rec.user, definition_from_json(rec.definition), rec.acceptance_ms,
                              rec.period, rec.per_instance, rec.next_instance, list(rec.missed),
                              {AppId(a) for a in rec.apps})
            self.reservations[rid] = res
            for a in res.apps:
                self.app_reservation[a] = rid
            for raw in rec.bookings:
                book.timeline.ensure_types(raw.get("loads", {}))
                book.add(rid, booking_from_dict(raw, book.timeline.types))
            ts, seq = parse_reservation_id(rid)
            if ts == self.cluster_ts and seq >= self.next_seq:
                self.next_seq = seq + 1


def _ms(now: float) -> int:
    return round(now * 1000)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _booking(a: int, alloc: Any, first: int, last: int, *, period: int = 0) -> Booking:
    return Booking(a + first, np.ascontiguousarray(alloc[:, first : last + 1]), period=period)
