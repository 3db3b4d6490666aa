"""What a user asks a reservation for: YARN's ReservationDefinition and ReservationRequest, validated.

Times are integer milliseconds since the epoch, as on YARN's wire, so a definition read twice from the same
JSON compares equal (resubmitting an identical definition under the same id is not an error).

A ``ReservationRequest`` asks for ``num_containers`` containers of ``capability``, each held for ``duration_ms``,
delivered in gangs of ``min_concurrency`` containers that start and end together; its parallelism never
exceeds ``num_containers``. How the requests of a definition combine is its interpreter:

* ``R_ALL`` — every request, each anywhere between arrival and deadline;
* ``R_ANY`` — one of them (alternatives);
* ``R_ORDER`` — every request, each starting after the previous one ended;
* ``R_ORDER_NO_GAP`` — the same, each starting right when the previous one ends (a skyline).

A definition with ``recurrence_ms > 0`` repeats with that period: instance k spans
``[arrival + k·P, deadline + k·P]``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal, NewType

from common.errors import BadRequest
from common.ids import AppId, QueuePath
from common.resources import Resources

ReservationId = NewType("ReservationId", str)

Interpreter = Literal["R_ANY", "R_ALL", "R_ORDER", "R_ORDER_NO_GAP"]
INTERPRETERS: tuple[Interpreter, ...] = ("R_ANY", "R_ALL", "R_ORDER", "R_ORDER_NO_GAP")  # YARN's 0..3
ORDERED: frozenset[str] = frozenset({"R_ORDER", "R_ORDER_NO_GAP"})

_RESERVATION = re.compile(r"^reservation_(\d+)_(\d+)$")


def reservation_id(cluster_ts: int, seq: int) -> ReservationId:
    """``reservation_<clusterTimestamp>_<seq>``, the sequence number printed with at least four digits."""
    return ReservationId(f"reservation_{cluster_ts}_{seq:04d}")


def parse_reservation_id(value: str) -> tuple[int, int]:
    m = _RESERVATION.match(value or "")
    if not m:
        raise BadRequest(f"Invalid ReservationId: {value}")
    return int(m.group(1)), int(m.group(2))


@dataclass(frozen=True, slots=True)
class ReservationRequest:
    capability: Resources
    num_containers: int
    duration_ms: int
    min_concurrency: int = 1

    @property
    def gang(self) -> Resources:
        """What one gang holds at once."""
        return self.capability * self.min_concurrency

    @property
    def gangs(self) -> int:
        """Gangs to place; rounded up, so a remainder smaller than a gang is still reserved."""
        return -(-self.num_containers // self.min_concurrency)


@dataclass(frozen=True, slots=True)
class ReservationDefinition:
    arrival_ms: int
    deadline_ms: int
    requests: tuple[ReservationRequest, ...]
    interpreter: Interpreter = "R_ALL"
    name: str = ""
    priority: int = 0
    recurrence_ms: int = 0  # the period; 0 = one-off
    # shepherd extension: weight of LowCost's alignment penalty (Morpheus §7), 0 = none
    alignment: float = 0.0

    @property
    def periodic(self) -> bool:
        return self.recurrence_ms > 0

    @property
    def window_ms(self) -> int:
        return self.deadline_ms - self.arrival_ms

    def min_duration_ms(self) -> int:
        """The shortest time the requests can take: the sum for ordered interpreters, else the longest."""
        durations = [r.duration_ms for r in self.requests]
        if not durations:
            return 0
        return sum(durations) if self.interpreter in ORDERED else max(durations)

    def instance(self, k: int) -> tuple[int, int]:
        """(arrival, deadline) of instance ``k`` (ms); a one-off has only instance 0."""
        shift = k * self.recurrence_ms
        return self.arrival_ms + shift, self.deadline_ms + shift

    def instance_at(self, t_ms: int) -> int:
        """The latest instance that has arrived by ``t_ms`` (0 for one-offs and before the first arrival)."""
        if not self.periodic or t_ms <= self.arrival_ms:
            return 0
        return (t_ms - self.arrival_ms) // self.recurrence_ms


def _fmt(r: Resources) -> str:
    return f"<memory:{r.memory_mb}, vCores:{r.vcores}" + "".join(
        f", {k}:{v}" for k, v in sorted(r.amounts.items()) if k not in ("memory-mb", "vcores")
    ) + ">"


def validate_definition(defn: ReservationDefinition, *, now_ms: int, capacity: Resources | None = None) -> None:
    """Raise BadRequest (YARN's messages where YARN has one) unless the definition can be planned at all.

    ``capacity`` is the plan's capacity: a gang larger than it can never be placed.
    """
    if defn.interpreter not in INTERPRETERS:
        raise BadRequest(f"Invalid reservation-request-interpreter {defn.interpreter!r}; known: {INTERPRETERS}")
    if defn.deadline_ms <= now_ms:
        raise BadRequest(
            f"The specified deadline: {defn.deadline_ms} is the past. Please try again with deadline in the future."
        )
    if not defn.requests:
        raise BadRequest(
            "No resources have been specified to reserve. Please try again by specifying the resources to reserve."
        )
    if defn.arrival_ms < 0:
        raise BadRequest(f"The arrival {defn.arrival_ms} must not be negative")
    for i, r in enumerate(defn.requests):
        if r.num_containers < 1:
            raise BadRequest(f"reservation-request {i}: num-containers must be at least 1, got {r.num_containers}")
        if not 1 <= r.min_concurrency <= r.num_containers:
            raise BadRequest(
                f"reservation-request {i}: min-concurrency must be between 1 and num-containers "
                f"({r.num_containers}), got {r.min_concurrency}"
            )
        if r.duration_ms <= 0:
            raise BadRequest(f"reservation-request {i}: duration must be positive, got {r.duration_ms}")
        if r.capability.is_zero() or r.capability.any_negative():
            raise BadRequest(f"reservation-request {i}: capability must be positive, got {_fmt(r.capability)}")
    min_duration = defn.min_duration_ms()
    if defn.interpreter != "R_ANY" and defn.window_ms < min_duration:
        raise BadRequest(
            f"The time difference ({defn.window_ms}) between arrival ({defn.arrival_ms}) and deadline "
            f"({defn.deadline_ms}) must be greater or equal to the minimum resource duration ({min_duration})"
        )
    if defn.interpreter == "R_ANY" and defn.window_ms < min(r.duration_ms for r in defn.requests):
        raise BadRequest(
            f"The time difference ({defn.window_ms}) between arrival ({defn.arrival_ms}) and deadline "
            f"({defn.deadline_ms}) is shorter than every alternative's duration"
        )
    if capacity is not None:
        for r in defn.requests:
            if not r.gang.fits_in(capacity) and defn.interpreter != "R_ANY":
                raise BadRequest(
                    f"The size of the largest gang in the reservation definition ({_fmt(r.gang)}) exceeds the "
                    f"capacity available ({_fmt(capacity)})"
                )
        if defn.interpreter == "R_ANY" and not any(r.gang.fits_in(capacity) for r in defn.requests):
            raise BadRequest(f"No alternative's gang fits in the capacity available ({_fmt(capacity)})")
    if defn.recurrence_ms < 0:
        raise BadRequest(f"Negative Period : {defn.recurrence_ms}")
    if defn.periodic and defn.recurrence_ms <= defn.window_ms:
        raise BadRequest(
            f"The recurrence ({defn.recurrence_ms}) must be greater than the time between arrival and "
            f"deadline ({defn.window_ms})"
        )
    if not math.isfinite(defn.alignment) or defn.alignment < 0:
        raise BadRequest(f"The alignment penalty weight must be a non-negative number, got {defn.alignment}")


def skyline_definition(
    skyline: list[int] | tuple[int, ...],
    unit: Resources,
    *,
    arrival_ms: int,
    deadline_ms: int,
    step_ms: int,
    recurrence_ms: int = 0,
    min_concurrency: int = 1,
    name: str = "",
    alignment: float = 0.0,
) -> ReservationDefinition:
    """A skyline (containers of ``unit`` per step) as an R_ORDER_NO_GAP definition.

    Equal consecutive steps become one request (``n`` containers for ``d`` steps, stretchable as Morpheus
    assumes with a minimum parallelism of ``min_concurrency``); zero steps inside the skyline stay as the
    smallest request (one gang for the step) so the shape keeps its length; leading and trailing zeros go.
    """
    values = list(skyline)
    while values and values[-1] <= 0:
        values.pop()
    while values and values[0] <= 0:
        values.pop(0)
    if not values:
        raise BadRequest("the skyline is empty")
    requests: list[ReservationRequest] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        n = max(int(values[i]), min_concurrency)
        requests.append(ReservationRequest(unit, n, (j - i + 1) * step_ms, min(min_concurrency, n)))
        i = j + 1
    return ReservationDefinition(
        arrival_ms=arrival_ms,
        deadline_ms=deadline_ms,
        requests=tuple(requests),
        interpreter="R_ORDER_NO_GAP",
        name=name,
        recurrence_ms=recurrence_ms,
        alignment=alignment,
    )


@dataclass(slots=True)
class Reservation:
    reservation_id: ReservationId
    queue: QueuePath
    user: str
    definition: ReservationDefinition
    acceptance_ms: int
    period: int = 0  # steps, when periodic inside the window
    per_instance: bool = False  # periodic with a period that does not divide the window
    next_instance: int = 0  # per-instance: the next instance to place
    missed: list[int] = field(default_factory=list)  # per-instance: instances that found no room
    apps: set[AppId] = field(default_factory=set)
