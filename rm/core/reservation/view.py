"""What one scheduling cycle sees of the reservation plan: the reservations active at this step.

Kept free of the scheduling model so ``rm.core.model.ClusterSnapshot`` can carry it.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.ids import AppId, QueuePath
from common.resources import Resources
from rm.core.reservation.requests import ReservationId


@dataclass(frozen=True, slots=True)
class ActiveReservation:
    reservation_id: ReservationId
    queue: QueuePath
    guaranteed: Resources  # the plan's allocation at this step, extensions included
    apps: tuple[AppId, ...] = ()


@dataclass(frozen=True, slots=True)
class ReservationView:
    """The reservations active at one step, as the scheduling cycle needs them."""

    active: tuple[ActiveReservation, ...] = ()
    next_change: float | None = None  # when the guarantees may change next (a step boundary)

    def members(self) -> dict[AppId, ReservationId]:
        return {a: r.reservation_id for r in self.active for a in r.apps}


EMPTY_VIEW = ReservationView()
