"""Dynamic reprovisioning (Morpheus §7): stretch a reservation whose job runs slower than its skyline.

Every ``period_s`` (T, default 60 s) each reservation with apps running in it is re-evaluated. When the
apps' demand (used plus pending) exceeds what the skyline gives at this step, the reservation gets extra
capacity for the next T: as much as the demand asks, but never more than ``rho`` (default 2) times the most
the reservation was given over the last ``window_s`` (default 2 min; the skyline plus the extensions that
locally increased it), so an elastic job can use extra parallelism
to catch up without ever being given more than it asks for. The extension is booked through the plan only
where the plan has room at every step of the next T (a partial grant when only some fits; nothing when none
does); it replaces the previous extension, so a reservation holds at most one. Extra capacity comes in whole
containers of the reservation's own container size.

``evaluate`` is pure apart from the bookings it asks the system for; both drivers call it every T (the
answer's ``next_at``) with the demands they see (``demands_from_snapshot`` builds them from a snapshot).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from common.resources import Resources, whole_units
from rm.core.model import ClusterSnapshot
from rm.core.reservation.requests import ReservationId
from rm.core.reservation.system import ReservationSystem

EXTENDED = "EXTENDED"  # the full extra was granted
PARTIAL = "EXTENDED_PARTIALLY"  # the plan had room for only part of it
NO_ROOM = "NO_ROOM_IN_PLAN"  # the plan had no room at all
WITHIN_SKYLINE = "WITHIN_SKYLINE"  # demand is within the skyline; any extension is dropped
NO_SKYLINE = "NO_RECENT_SKYLINE"  # nothing was planned recently, so the cap is zero


@dataclass(frozen=True, slots=True)
class DraConfig:
    period_s: float = 60.0  # T
    rho: float = 2.0
    window_s: float = 120.0

    def validate(self) -> None:
        if self.period_s <= 0 or self.window_s <= 0 or self.rho <= 0:
            raise ValueError("DRA period, window and rho must all be positive")


@dataclass(frozen=True, slots=True)
class DraDecision:
    reservation_id: ReservationId
    outcome: str
    demand: Resources
    planned: Resources  # what the skyline gives now
    cap: Resources  # rho × the recent skyline maximum
    wanted: int  # extra containers the demand asked for (within the cap)
    granted: int  # extra containers booked
    unit: Resources
    until: float


@dataclass(frozen=True, slots=True)
class DraRound:
    decisions: tuple[DraDecision, ...]
    next_at: float


def evaluate(
    system: ReservationSystem,
    demands: Mapping[ReservationId, Resources],
    *,
    now: float,
    config: DraConfig | None = None,
) -> DraRound:
    cfg = config or DraConfig()
    until = now + cfg.period_s
    out: list[DraDecision] = []
    for rid in sorted(demands):
        if rid not in system.reservations:
            continue
        demand = demands[rid]
        unit = container_unit(system, rid)
        planned = system.planned_at(rid, now)
        recent = system.recent_max(rid, now, cfg.window_s)
        cap = Resources({r: math.floor(v * cfg.rho) for r, v in recent.amounts.items()})
        if demand.fits_in(planned):
            system.clear_extension(rid)
            out.append(DraDecision(rid, WITHIN_SKYLINE, demand, planned, cap, 0, 0, unit, now))
            continue
        target = Resources({r: min(demand.get(r), cap.get(r)) for r in set(demand.amounts) | set(cap.amounts)})
        extra = (target - planned).clamp_min_zero()
        wanted = whole_units(extra, unit)  # never more than the smallest type allows
        if wanted == 0:
            system.clear_extension(rid)
            outcome = NO_SKYLINE if recent.is_zero() else WITHIN_SKYLINE
            out.append(DraDecision(rid, outcome, demand, planned, cap, 0, 0, unit, now))
            continue
        granted = system.extend(rid, wanted, unit, now=now, duration_s=cfg.period_s)
        outcome = EXTENDED if granted == wanted else PARTIAL if granted else NO_ROOM
        out.append(DraDecision(rid, outcome, demand, planned, cap, wanted, granted, unit, until))
    return DraRound(tuple(out), until)


def container_unit(system: ReservationSystem, rid: ReservationId) -> Resources:
    """The reservation's container size: its largest request's capability."""
    reqs = system.reservations[rid].definition.requests
    return max(reqs, key=lambda r: r.num_containers * r.duration_ms).capability


def demands_from_snapshot(snap: ClusterSnapshot, system: ReservationSystem) -> dict[ReservationId, Resources]:
    """Used plus pending of the apps running inside each reservation (active now or not: a job still running
    after its skyline ended is exactly the one to stretch)."""
    out: dict[ReservationId, Resources] = {}
    for app_id, rid in system.app_reservation.items():
        app = snap.apps.get(app_id)
        if app is not None:
            out[rid] = out.get(rid, Resources()) + app.used + app.pending
    return {rid: r for rid, r in out.items() if not r.is_zero()}
