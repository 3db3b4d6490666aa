"""Pipeline step 1 (DESIGN.md): capacity the plan promises at time t goes to reservations first.

``ReservationStage`` runs before the fair-share stages. For every reservation active now (its skyline at this
step plus any dynamic-reprovisioning extension) it places the asks of the apps running inside it, up to the
reservation's guarantee, with the cycle's packer. It places nothing else, so what reservations do not use
right now stays free and the later stages lend it to everyone else (work conservation); apps inside a
reservation can also get more than their guarantee from those stages, as ordinary apps.

When a reservation's app asks for guaranteed capacity that has been lent out (no node can take the ask
now), the stage asks for it back: a ``Reclaim`` per lender — apps outside any active reservation first,
newest first, then apps of other reservations using more than their own guarantee — for the amount that is
short. The applier preempts that app's newest non-AM containers until the amount is covered (YARN's
preemption, exit status -102). The blocked ask gets the rejection ``RESERVATION_CAPACITY_LENT`` with the
reclaims in its detail, so explain endpoints show why it waits.

Lookups are O(active reservations + their apps): the stage reads a ``ReservationView`` the plan built for
this step and never scans the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from common.ids import AppId
from common.resources import Resources, whole_units
from rm.core.model import AppView, AskView, ClusterSnapshot
from rm.core.plan import Preempt, WakeAt
from rm.core.policies.api import WAKES, Input, NodeScorer, Stage, app_tiebreak
from rm.core.policies.drf import ask_importance
from rm.core.policies.node_index import choose_node
from rm.core.reservation.requests import ReservationId
from rm.core.reservation.view import (  # the view types are re-exported: callers import them from here
    EMPTY_VIEW,
    ActiveReservation,
    ReservationView,
)

if TYPE_CHECKING:
    from rm.core.context import CycleContext

RESERVATION_LENT = "RESERVATION_CAPACITY_LENT"  # the guarantee is held by others; reclaim requested
RESERVATION_USED_UP = "RESERVATION_USED_UP"  # the reservation's guarantee is all in use; fair share may help




@dataclass(frozen=True, slots=True)
class Reclaim:
    """Take at least ``amount`` back from ``app_id`` for ``for_reservation`` (newest non-AM containers)."""

    app_id: AppId
    amount: Resources
    for_reservation: ReservationId
    reason: str = RESERVATION_LENT


ViewSource = Callable[[ClusterSnapshot, float], ReservationView]


def view_from_snapshot(snap: ClusterSnapshot, now: float) -> ReservationView:
    """The view the snapshot carries (``ClusterSnapshot.reservations``)."""
    return snap.reservations


class ReservationStage:
    name: ClassVar[str] = "reservation"
    reads: frozenset[Input] = frozenset({WAKES})  # a cycle at every step where a reservation's due changes

    def __init__(
        self,
        scorer: NodeScorer,
        source: ViewSource = view_from_snapshot,
        on_reclaim: Callable[[Sequence[Reclaim]], None] | None = None,
    ) -> None:
        self.scorer = scorer
        self.source = source
        self.on_reclaim = on_reclaim

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        view = self.source(snap, ctx.now)
        if not view.active:
            return
        reclaims = serve_reservations(snap, ctx, view, self.scorer)
        if view.next_change is not None:
            ctx.plan.wake.append(WakeAt(view.next_change, "reservation-step"))
        if reclaims:
            ctx.plan.counters["reservation_reclaims"] += len(reclaims)
            ctx.plan.preemptions.extend(
                Preempt(r.app_id, r.amount, r.reason, r.for_reservation) for r in reclaims
            )
            if self.on_reclaim is not None:
                self.on_reclaim(reclaims)


def serve_reservations(
    snap: ClusterSnapshot, ctx: CycleContext, view: ReservationView, scorer: NodeScorer
) -> list[Reclaim]:
    """Place reservation apps' asks within their guarantees; return what must be reclaimed from lenders."""
    capacity = snap.capacity
    used: dict[ReservationId, Resources] = {}
    for res in view.active:
        used[res.reservation_id] = _sum(ctx.app_used(a) for a in res.apps if a in snap.apps)

    def fill(res: ActiveReservation) -> tuple[float, str]:
        return (used[res.reservation_id].dominant_share(capacity), res.reservation_id)

    shortfalls: list[tuple[ActiveReservation, Resources, list[AskView]]] = []
    for res in sorted(view.active, key=fill):
        headroom = res.guaranteed - used[res.reservation_id]
        short = Resources()
        blocked: list[AskView] = []
        apps = sorted((snap.apps[a] for a in res.apps if a in snap.apps), key=app_tiebreak)
        for app in apps:
            for ask in sorted(app.asks, key=ask_importance):
                while ctx.remaining(ask) > 0 and ask.capability.fits_in(headroom):
                    node = choose_node(ask, ctx, scorer)
                    if node is None:
                        k = min(ctx.remaining(ask), whole_units(headroom, ask.capability))
                        short = short + ask.capability * k
                        headroom = headroom - ask.capability * k
                        blocked.append(ask)
                        break
                    ctx.place(ask, node)
                    headroom = headroom - ask.capability
                    ctx.plan.counters["placed_in_reservation"] += 1
                if ctx.remaining(ask) > 0 and ask not in blocked:
                    ctx.reject(ask, RESERVATION_USED_UP, reservation=res.reservation_id,
                               guaranteed=res.guaranteed.to_dict())
        if not short.is_zero():
            shortfalls.append((res, short, blocked))
    if not shortfalls:
        return []
    return _reclaim(snap, ctx, view, shortfalls)


def _reclaim(
    snap: ClusterSnapshot,
    ctx: CycleContext,
    view: ReservationView,
    shortfalls: list[tuple[ActiveReservation, Resources, list[AskView]]],
) -> list[Reclaim]:
    members = view.members()
    guarantees = {r.reservation_id: r.guaranteed for r in view.active}
    lendable: dict[AppId, Resources] = {}
    outsiders = sorted((a for a in snap.apps.values() if a.app_id not in members), key=_newest_first)
    insiders = sorted((a for a in snap.apps.values() if a.app_id in members), key=_newest_first)
    for app in outsiders:
        lendable[app.app_id] = (app.used - app.am_used).clamp_min_zero()
    over: dict[ReservationId, Resources] = {}
    for app in insiders:  # a reservation using more than its guarantee lends the excess, newest apps first
        rid = members[app.app_id]
        spare = over.get(rid)
        if spare is None:
            total = _sum(a.used for a in insiders if members[a.app_id] == rid)
            spare = over[rid] = (total - guarantees[rid]).clamp_min_zero()
        take = _min(spare, (app.used - app.am_used).clamp_min_zero())
        over[rid] = spare - take
        if not take.is_zero():
            lendable[app.app_id] = take
    order = [a.app_id for a in outsiders] + [a.app_id for a in insiders]
    out: list[Reclaim] = []
    for res, short, blocked in shortfalls:
        need = short
        taken: list[Reclaim] = []
        for app_id in order:
            if need.is_zero():
                break
            if members.get(app_id) == res.reservation_id:
                continue
            have = lendable.get(app_id, Resources())
            take = _min(have, need)
            if take.is_zero():
                continue
            lendable[app_id] = have - take
            need = (need - take).clamp_min_zero()
            taken.append(Reclaim(app_id, take, res.reservation_id))
        out.extend(taken)
        detail = [{"app": r.app_id, "amount": r.amount.to_dict()} for r in taken]
        for ask in blocked:
            ctx.reject(ask, RESERVATION_LENT, reservation=res.reservation_id, short=short.to_dict(),
                       reclaim=detail)
    return out


def _newest_first(app: AppView) -> tuple[float, str]:
    t, a = app_tiebreak(app)
    return (-t, "".join(chr(0x10FFFF - ord(c)) for c in a))


def _sum(items: Iterable[Resources]) -> Resources:
    out = Resources()
    for r in items:
        out = out + r
    return out


def _min(a: Resources, b: Resources) -> Resources:
    """Componentwise minimum over the types ``b`` needs."""
    return Resources({r: min(a.get(r), v) for r, v in b.amounts.items()})


def guarantees_of(view: ReservationView) -> Mapping[ReservationId, Resources]:
    return {r.reservation_id: r.guaranteed for r in view.active}


_: type[Stage] = ReservationStage

__all__ = [
    "EMPTY_VIEW",
    "RESERVATION_LENT",
    "RESERVATION_USED_UP",
    "ActiveReservation",
    "Reclaim",
    "ReservationStage",
    "ReservationView",
    "guarantees_of",
    "serve_reservations",
    "view_from_snapshot",
]
