"""Jockey's guarantees (DESIGN.md, pipeline step 2): the capacity an app's AM asks to be guaranteed
(``AppTerms.guarantee``, sent in its allocate calls) is a floor the app is served up to before fair shares.

``GuaranteeStage`` runs after the deadline stage (every MRM claim has been served) and before the fair-share
stage. Rules:

* **Drawn from the app's own queue.** In each leaf queue the floors together get at most ``max_fraction``
  (0.8, as the deadline books) of the queue's capacity. Apps are granted in EDF order (apps with a deadline
  first, earliest first, then by submission), each the smaller, per resource, of its request and what its
  queue's budget still holds. So the floors of a queue's apps never add up to more than its own capacity.
* **Not beyond the floor.** The stage places the app's DEFAULT asks (most important first) while what it holds
  in tasks, this cycle's placements included, plus one more container stays within its floor. Its ALTRUISTIC
  asks wait for the leftover, as any yielding app's. Above its floor the app is an ordinary app of the later
  stages: the fair-share stage counts its guaranteed containers as its use.
* **Above an MRM claim, free room only.** An app has one guarantee source (DESIGN.md). For an app with an
  admitted deadline the source is its claim, which the deadline stage serves and may reclaim room for; what
  its AM asks beyond that is an extension, placed only into room nothing else holds, after every claim.
* **Otherwise, taken back only from what others hold beyond what they keep.** An app whose floor is its only
  guarantee and finds no room asks the ledger to take back (``GUARANTEE_CAPACITY_LENT``, newest apps first)
  what the others hold beyond what they keep: a best-effort app of the same queue its fair share of what the
  queue's floors leave (so it loses no more than the floors allow), any other app its fair share, a deadline
  app the larger of its claim's due and its share, a guaranteed app the larger of its floor and its share.
  Apps in a reservation lend nothing here, and are skipped as guaranteed apps too (their source is the
  reservation).

Every cycle's floors go in its plan (``Plan.guarantees``), with each app's ceiling (``Plan.ceilings``: its
queue's whole budget, the most any request of it could be granted); the ledger keeps them as ``App.granted``
and ``App.guarantee_ceiling`` when it applies the plan, and the app's AM hears both in its allocate answers
(Jockey's controller asks for no more than the ceiling).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from common.ids import AppId, QueuePath
from common.resources import Resources, component_max
from rm.core.deadlines.stage import take_back
from rm.core.model import AppView, AskView, ClusterSnapshot
from rm.core.plan import Preempt
from rm.core.policies.api import SHARES, Input, NodeScorer, Stage, app_tiebreak
from rm.core.policies.drf import ask_importance
from rm.core.policies.node_index import choose_node

if TYPE_CHECKING:
    from rm.core.context import CycleContext

MAX_GUARANTEE_FRACTION = 0.8
"""Of a leaf queue's capacity, what its apps' guarantees may hold together (the rest: fair shares)."""
GUARANTEE_LENT = "GUARANTEE_CAPACITY_LENT"  # a floor's room is held beyond others' keep: reclaim asked


@dataclass(frozen=True, slots=True)
class Grant:
    """What the stage grants an app this cycle: its request cut to its queue's budget."""

    app_id: AppId
    queue: QueuePath
    requested: Resources
    floor: Resources
    ceiling: Resources  # the queue's whole budget for guarantees: no request above it can be granted
    claimed: bool  # the app has an admitted deadline: above it, free room only


def _min(a: Resources, b: Resources) -> Resources:
    return Resources({r: min(v, b.get(r)) for r, v in a.amounts.items()})


def _scaled(r: Resources, f: float) -> Resources:
    return Resources({k: int(v * f + 1e-9) for k, v in r.amounts.items()})


def _edf_key(app: AppView) -> tuple[int, float, float, str]:
    d = app.terms.deadline
    return (0 if d is not None else 1, d if d is not None else 0.0, *app_tiebreak(app))


def _queue_capacity(snap: ClusterSnapshot, queue: QueuePath) -> Resources:
    view = snap.queues.get(queue)
    return _scaled(snap.capacity, view.abs_capacity if view is not None else 0.0)


def grants(snap: ClusterSnapshot, max_fraction: float = MAX_GUARANTEE_FRACTION) -> list[Grant]:
    """Every app's floor, in the order the stage serves them: requests in EDF order, each cut to what its
    queue's budget (``max_fraction`` of the queue's capacity) still holds after the earlier ones."""
    members = snap.reservations.members()
    wanting = [a for a in snap.apps.values() if a.terms.guarantee is not None and not a.terms.guarantee.is_zero()
               and a.app_id not in members]
    budget: dict[QueuePath, Resources] = {}
    whole: dict[QueuePath, Resources] = {}
    out: list[Grant] = []
    for app in sorted(wanting, key=_edf_key):
        requested = app.terms.guarantee
        assert requested is not None
        ceiling = whole.get(app.queue)
        if ceiling is None:
            ceiling = whole[app.queue] = _scaled(_queue_capacity(snap, app.queue), max_fraction)
        left = budget.get(app.queue, ceiling)
        floor = _min(requested, left).clamp_min_zero()
        budget[app.queue] = (left - floor).clamp_min_zero()
        out.append(Grant(app.app_id, app.queue, requested, floor, ceiling,
                         snap.deadlines.of(app.app_id) is not None))
    return out


class GuaranteeStage:
    name: ClassVar[str] = "guarantee"
    reads: frozenset[Input] = frozenset({SHARES})

    def __init__(self, scorer: NodeScorer, max_fraction: float = MAX_GUARANTEE_FRACTION) -> None:
        if not 0 < max_fraction <= 1:
            raise ValueError(f"max_fraction must be in (0, 1], got {max_fraction}")
        self.scorer = scorer
        self.max_fraction = max_fraction

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        granted = grants(snap, self.max_fraction)
        ctx.plan.guarantees = {g.app_id: g.floor for g in granted}
        ctx.plan.ceilings = {g.app_id: g.ceiling for g in granted}
        lendable: dict[AppId, Resources] | None = None
        for g in granted:
            short = self._serve(snap.apps[g.app_id], g.floor, ctx)
            if short is None or g.claimed:
                continue
            if lendable is None:
                lendable = _lendable(snap, ctx, granted)
            taken = take_back(lendable, short, exclude=g.app_id)
            ctx.plan.preemptions.extend(Preempt(a, r, GUARANTEE_LENT, "") for a, r in taken)
            ctx.plan.counters["guarantee_reclaims"] += len(taken)

    def _serve(self, app: AppView, floor: Resources, ctx: CycleContext) -> Resources | None:
        """Place the app's DEFAULT asks while what it holds in tasks stays within ``floor``; what it still
        wants within the floor when no node has room (None when nothing is short)."""
        aid = app.app_id

        def held() -> Resources:
            am = app.am_used + ctx.app_am_alloc.get(aid, Resources())
            return (ctx.app_used(aid) - am).clamp_min_zero()

        asks = [a for a in sorted(app.asks, key=ask_importance) if not a.is_am and a.ask_type == "DEFAULT"]
        for i, ask in enumerate(asks):
            while ctx.remaining(ask) > 0:
                if not (held() + ask.capability).fits_in(floor):
                    break
                node = choose_node(ask, ctx, self.scorer)
                if node is None:
                    return _wanted(asks[i:], held(), floor, ctx)
                ctx.place(ask, node)
                ctx.plan.counters["placed_for_guarantee"] += 1
        return None


def _wanted(asks: list[AskView], held: Resources, floor: Resources, ctx: CycleContext) -> Resources | None:
    """The containers of ``asks`` that still fit within ``floor`` on top of ``held``, as one amount."""
    want = Resources()
    for ask in asks:
        for _ in range(ctx.remaining(ask)):
            if not (held + want + ask.capability).fits_in(floor):
                break
            want = want + ask.capability
    return None if want.is_zero() else want


def _lendable(snap: ClusterSnapshot, ctx: CycleContext, granted: list[Grant]) -> dict[AppId, Resources]:
    """What each app holds beyond what it keeps (see the module docstring), newest apps first, less what the
    earlier stages of this cycle already take back."""
    members = snap.reservations.members()
    floors = {g.app_id: g.floor for g in granted}
    per_queue: dict[QueuePath, Resources] = {}
    for g in granted:
        per_queue[g.queue] = per_queue.get(g.queue, Resources()) + g.floor
    keep_fraction: dict[QueuePath, float] = {}
    for q, total in per_queue.items():
        cap = _queue_capacity(snap, q)
        used = max((v / cap.get(r) for r, v in total.amounts.items() if cap.get(r) > 0), default=0.0)
        keep_fraction[q] = max(0.0, 1.0 - used)
    planned: dict[AppId, Resources] = {}
    for p in ctx.plan.preemptions:
        planned[p.app_id] = planned.get(p.app_id, Resources()) + p.amount
    out: dict[AppId, Resources] = {}
    for app in sorted(snap.apps.values(), key=_newest_first):
        if app.app_id in members:
            continue
        share = ctx.fair_share(app.app_id)
        if share is None:
            continue
        entry = snap.deadlines.of(app.app_id)
        if app.app_id in floors:
            keep = component_max(share, floors[app.app_id])
        elif entry is not None:
            keep = component_max(share, entry.unit * max(0, int(entry.owed + 1 - 1e-9)))
        else:
            keep = _scaled(share, keep_fraction.get(app.queue, 1.0))
        spare = (app.used - app.am_used - keep - planned.get(app.app_id, Resources())).clamp_min_zero()
        if not spare.is_zero():
            out[app.app_id] = spare
    return out


def _newest_first(app: AppView) -> tuple[float, str]:
    t, a = app_tiebreak(app)
    return (-t, "".join(chr(0x10FFFF - ord(c)) for c in a))


_stage: type[Stage] = GuaranteeStage
