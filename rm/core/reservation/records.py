"""What the state store keeps of a reservation: its definition and its bookings, exactly as placed, so a
restart restores the same plan without placing anything again (accepted reservations never move)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rm.core.reservation.book import Booking


@dataclass(frozen=True, slots=True)
class ReservationRecord:
    reservation_id: str
    queue: str
    user: str
    definition: dict[str, Any]  # the YARN JSON shape of the reservation-definition (numbers as numbers)
    acceptance_ms: int
    bookings: tuple[dict[str, Any], ...] = ()
    apps: tuple[str, ...] = ()
    period: int = 0
    per_instance: bool = False
    next_instance: int = 0
    missed: tuple[int, ...] = field(default_factory=tuple)
    deleted: bool = False  # a tombstone: the store drops the row


def booking_to_dict(b: Booking, types: Sequence[str]) -> dict[str, Any]:
    return {
        "start": b.start,
        "period": b.period,
        "kind": b.kind,
        "instance": b.instance,
        "loads": {t: [float(x) for x in b.loads[i]] for i, t in enumerate(types) if b.loads[i].any()},
        "length": b.length,
    }


def booking_from_dict(raw: dict[str, Any], types: Sequence[str]) -> Booking:
    length = int(raw["length"])
    loads = np.zeros((len(types), length))
    for i, t in enumerate(types):
        row = raw.get("loads", {}).get(t)
        if row is not None:
            loads[i, :] = np.asarray(row, dtype=np.float64)
    kind = raw.get("kind", "plan")
    if kind not in ("plan", "instance", "dra"):
        raise ValueError(f"unknown booking kind {kind!r}")
    return Booking(int(raw["start"]), loads, int(raw.get("period", 0)), kind, int(raw.get("instance", 0)))
