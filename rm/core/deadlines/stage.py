"""Pipeline step 2 (DESIGN.md): admitted deadline apps, earliest deadline first, each get what their claim in
the deadline book is owed now.

``DeadlineStage`` runs after the reservations and before the fair shares. For every app the snapshot's
``DeadlineView`` lists (EDF order), it places the app's asks (most important first) while the app holds less
than its claim's due at this step — the lazy layout of its remaining work, so an app that fell behind is owed
more at once and one ahead of its layout is owed nothing until its layout starts. Above its claim a deadline
app is an ordinary app of the later stages. Stock YARN and Spark AMs need no change: the RM serves the claim.

When the room is held by others, the stage takes back only what they hold **beyond their fair share** (which
includes everything placed from the leftover), newest apps first, and never from another deadline app within
its own claim or a reservation's app: a best-effort app keeps what DRF gives it. The blocked ask is rejected
with ``DEADLINE_CAPACITY_LENT`` and the reclaims in its detail.

``EdfOrder`` orders apps by deadline (apps without one last, in submit order); ``edf`` is the standalone
pipeline of MRM's comparisons: apps in that order, each taking all it can.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from common.ids import AppId, QueuePath
from common.resources import Resources
from rm.core.deadlines.view import DeadlineEntry, DeadlineView, units_of
from rm.core.model import AppView, AskView, ClusterSnapshot
from rm.core.plan import Preempt, WakeAt
from rm.core.policies.api import SHARES, WAKES, AppOrder, Input, NodeScorer, Stage, app_tiebreak
from rm.core.policies.drf import SortKey, ask_importance
from rm.core.policies.fifo import OrderedStage
from rm.core.policies.node_index import choose_node

if TYPE_CHECKING:
    from rm.core.context import CycleContext

DEADLINE_LENT = "DEADLINE_CAPACITY_LENT"  # the claim's room is held beyond others' fair shares; reclaim asked
EDF_PREEMPTION = "EDF_PREEMPTION"  # an app due earlier takes the room back (the standalone ``edf`` pipeline)
DEADLINE_SHORT = "DEADLINE_CAPACITY_SHORT"  # nothing beyond anyone's fair share to take back: AT_RISK
_EPS = 1e-9


def view_from_snapshot(snap: ClusterSnapshot) -> DeadlineView:
    return snap.deadlines


class DeadlineStage:
    name: ClassVar[str] = "deadline"
    reads: frozenset[Input] = frozenset({SHARES, WAKES})

    def __init__(self, scorer: NodeScorer) -> None:
        self.scorer = scorer

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        view = view_from_snapshot(snap)
        if not view.entries:
            return
        if view.next_change is not None:
            ctx.plan.wake.append(WakeAt(view.next_change, "deadline-step"))
        claimed = {e.app_id: e for e in view.entries}
        lendable: dict[AppId, Resources] | None = None
        for entry in view.entries:
            app = snap.apps.get(entry.app_id)
            if app is None or not app.asks:
                continue
            am = next((a for a in app.asks if a.is_am and ctx.remaining(a) > 0), None)
            if am is not None:  # the AM starts at once: the claim's layout has no room for it to start late
                entry = replace(entry, owed=max(entry.owed, units_of(am.capability, entry.unit)))
            if entry.owed <= _EPS:
                continue
            short = self._serve(app, entry, ctx)
            if short is None:
                continue
            need, blocked = short
            if lendable is None:
                lendable = _lendable(snap, ctx, claimed)
            taken = take_back(lendable, need, exclude=entry.app_id)
            if taken:
                ctx.plan.preemptions.extend(Preempt(a, r, DEADLINE_LENT, "") for a, r in taken)
                ctx.plan.counters["deadline_reclaims"] += len(taken)
                detail = [{"app": a, "amount": r.to_dict()} for a, r in taken]
                for ask in blocked:
                    ctx.reject(ask, DEADLINE_LENT, deadline=entry.deadline, owed=entry.owed, reclaim=detail)
            else:
                for ask in blocked:
                    ctx.reject(ask, DEADLINE_SHORT, deadline=entry.deadline, owed=entry.owed)

    def _serve(self, app: AppView, entry: DeadlineEntry, ctx: CycleContext) -> tuple[Resources, list[AskView]] | None:
        """Place the app's asks up to its due; what is still short (and the asks it blocks), or None."""
        held = units_of(ctx.app_used(app.app_id), entry.unit)
        for ask in sorted(app.asks, key=ask_importance):
            size = units_of(ask.capability, entry.unit)
            while ctx.remaining(ask) > 0 and held < entry.owed - _EPS:
                node = choose_node(ask, ctx, self.scorer)
                if node is None:
                    missing = entry.owed - held
                    k = min(ctx.remaining(ask), max(1, int(missing / size + 1 - _EPS)) if size > 0 else 1)
                    return ask.capability * k, [ask]
                ctx.place(ask, node)
                held += size
                ctx.plan.counters["placed_for_deadline"] += 1
            if held >= entry.owed - _EPS:
                break
        return None


def _lendable(snap: ClusterSnapshot, ctx: CycleContext, claimed: dict[AppId, DeadlineEntry]) -> dict[AppId, Resources]:
    """What each app holds beyond what it keeps, newest apps first. A best-effort app keeps its fair share of
    what the claims leave in its queue (DESIGN.md: best-effort apps share what guarantees leave); a deadline
    app keeps the larger of its claim's due and its fair share; apps in reservations lend nothing here (the
    reservation stage owns them)."""
    members = snap.reservations.members()
    owed: dict[str, float] = {}
    for e in claimed.values():
        owed[e.queue] = owed.get(e.queue, 0.0) + e.owed
    left: dict[str, float] = {}
    for q, units in owed.items():
        view = snap.queues.get(QueuePath(q))
        unit = next(iter(claimed.values())).unit
        capacity = units_of(Resources({r: int(v * view.abs_capacity) for r, v in snap.capacity.amounts.items()}),
                            unit) if view is not None else 0.0
        left[q] = max(0.0, 1.0 - units / capacity) if capacity > 0 else 1.0
    out: dict[AppId, Resources] = {}
    for app in sorted(snap.apps.values(), key=_newest_first):
        if app.app_id in members:
            continue
        share = ctx.fair_share(app.app_id)
        if share is None:
            continue
        entry = claimed.get(app.app_id)
        if entry is not None:
            floor = _max(share, entry.unit * max(0, int(entry.owed + 1 - _EPS)))
        else:
            keep = left.get(app.queue, 1.0)
            floor = Resources({r: int(v * keep) for r, v in share.amounts.items()})
        spare = (app.used - floor).clamp_min_zero()
        if not spare.is_zero():
            out[app.app_id] = spare
    return out


def take_back(lendable: dict[AppId, Resources], need: Resources, *, exclude: AppId) -> list[tuple[AppId, Resources]]:
    """Take ``need`` back from the apps' ``lendable`` room, in their order, none from ``exclude``; what each gives
    (``lendable`` is left with what remains)."""
    out: list[tuple[AppId, Resources]] = []
    for app_id, have in lendable.items():
        if app_id == exclude or _covered(need):
            continue
        take = Resources({r: min(have.get(r), v) for r, v in need.amounts.items() if v > 0})
        if take.is_zero():
            continue
        lendable[app_id] = (have - take).clamp_min_zero()
        need = (need - take).clamp_min_zero()
        out.append((app_id, take))
    return out


def _covered(need: Resources) -> bool:
    return all(v <= 0 for v in need.amounts.values())


def _max(a: Resources, b: Resources) -> Resources:
    return Resources({r: max(a.get(r), b.get(r)) for r in {*a.amounts, *b.amounts}})


def _newest_first(app: AppView) -> tuple[float, str]:
    t, a = app_tiebreak(app)
    return (-t, "".join(chr(0x10FFFF - ord(c)) for c in a))


class EdfOrder:
    """Earliest deadline first; apps without a deadline after every app with one, oldest first."""

    name: ClassVar[str] = "edf"
    reads: frozenset[Input] = frozenset()

    def sort_key(self, app: AppView, ctx: CycleContext) -> SortKey:
        d = app.terms.deadline
        return (0 if d is not None else 1, d if d is not None else 0.0, *app_tiebreak(app))


class EdfStage(OrderedStage):
    """MRM's scheduler on its own: apps in EDF order, each taking all it can; preemptive, as MRM assumes
    (§5): a deadline app whose asks fit nowhere takes containers back from the apps latest in the order
    (no deadline last, newest first), never from an app due earlier."""

    name: ClassVar[str] = "edf"

    def __init__(self, scorer: NodeScorer, order: AppOrder | None = None) -> None:
        super().__init__(scorer, EdfOrder() if order is None else order)

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        super().run(snap, ctx)
        ordered = sorted(snap.apps.values(), key=lambda a: self.order.sort_key(a, ctx))
        spare = {a.app_id: (a.used - a.am_used).clamp_min_zero() for a in ordered}
        for i, app in enumerate(ordered):
            if app.terms.deadline is None:
                break
            need = Resources()
            for ask in app.asks:
                if ctx.remaining(ask) > 0:
                    need = need + ask.capability * ctx.remaining(ask)
            if need.is_zero():
                continue
            for victim in reversed(ordered[i + 1:]):
                if _covered(need):
                    break
                have = spare[victim.app_id]
                take = Resources({r: min(have.get(r), v) for r, v in need.amounts.items() if v > 0})
                if take.is_zero():
                    continue
                spare[victim.app_id] = (have - take).clamp_min_zero()
                need = (need - take).clamp_min_zero()
                ctx.plan.preemptions.append(Preempt(victim.app_id, take, EDF_PREEMPTION, ""))
                ctx.plan.counters["deadline_reclaims"] += 1


_order: type[AppOrder] = EdfOrder
_stage: type[Stage] = DeadlineStage
_edf: type[Stage] = EdfStage
