"""Dominant resource fairness (Ghodsi et al., NSDI 2011): shares, app order and the assignment loop.

An app's *dominant share* is the largest fraction of any one cluster resource it holds: an app with 3 of 9
cores and 2 of 18 GB has a dominant share of 1/3. DRF equalizes dominant shares (scaled by weight), which
gives each user at least what an equal split of the cluster would, and nobody can gain by lying about demand.

``DrfShares`` (``drf_shares.py``) computes the fair-share vector every AM is told about, by progressive
filling at the same two levels ``DrfStage`` orders by: across leaf queues in proportion to their capacities,
then among each queue's apps.

``DrfStage`` is the YARN-like assignment loop that realizes those shares container by container: pick the
leaf queue furthest below its guarantee, in it the app with the smallest ``DrfOrder`` key, take that app's
most important ask, place it on the node the scorer likes best, and repeat. Heaps keep the cost of a cycle
near O(placements × (log apps + nodes)). An ask that cannot be placed gets a rejection with its numbers and
the app moves on to its next ask; everything that fails once in a cycle stays failed, since the cluster only
fills up as the cycle goes on, so nothing that fits is left waiting (work conservation).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from common.ids import AppId, QueuePath
from common.resources import Resources
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView, QueueView
from rm.core.plan import AM_LIMIT, LOCALITY_WAIT, NO_CAPACITY_NOW, NO_NODE_FITS, QUEUE_AT_MAX
from rm.core.policies.api import (
    NOTHING,
    SHARES,
    AppOrder,
    Input,
    NodeScorer,
    Stage,
    app_tiebreak,
)
from rm.core.policies.node_index import node_index
from rm.core.policies.tetris import CapacityMemo

if TYPE_CHECKING:
    from rm.core.context import CycleContext

_EPS = 1e-9
_ALONE = (0, 0.0, "")  # the heap key of the only queue left
_ROUND_UP = 1e-6  # 2.9999999 cores is 3 cores when shares are rounded down to integers
_MIN_WEIGHT = 1e-3  # a zero weight means "far behind the others", not "never"

SortKey = tuple[float | int | str, ...]


# ------------------------------------------------------------------------------------------ app order


class DrfOrder:
    """Smallest weighted dominant share first, then higher app priority, then (submit_time, app_id)."""

    name: ClassVar[str] = "drf"
    reads: frozenset[Input] = NOTHING  # what the app holds, overlaid with this cycle's placements

    def __init__(self) -> None:
        self._capacity = CapacityMemo()

    def sort_key(self, app: AppView, ctx: CycleContext) -> SortKey:
        share = ctx.app_used(app.app_id).dominant_share(self._capacity.get(ctx.snap))
        weighted = share / app.weight if app.weight > 0 else math.inf
        return (weighted, -app.priority, *app_tiebreak(app))


# ------------------------------------------------------------------------------------------ the loop


def ask_importance(ask: AskView) -> tuple[int, bool, bool, int]:
    """Lowest priority number first; AM asks first; DEFAULT before ALTRUISTIC; then request id."""
    return (ask.priority, not ask.is_am, ask.ask_type != "DEFAULT", ask.allocation_request_id)


@dataclass(slots=True)
class _AppCursor:
    app: AppView
    asks: list[AskView]
    pos: int = 0
    limit: float = math.inf  # the dominant share at which the stage stops serving the app

    def full(self, ctx: CycleContext, capacity: Resources) -> bool:
        return self.limit != math.inf and (
            ctx.app_used(self.app.app_id).dominant_share(capacity) >= self.limit - _EPS)

    def current(self, ctx: CycleContext) -> AskView | None:
        while self.pos < len(self.asks) and ctx.remaining(self.asks[self.pos]) <= 0:
            self.pos += 1
        return self.asks[self.pos] if self.pos < len(self.asks) else None


@dataclass(slots=True)
class _LeafQueue:
    view: QueueView
    lineage: list[QueuePath]  # the leaf and its ancestors
    capped: list[QueuePath]  # those of them whose max capacity is below the whole cluster
    tracked: list[QueuePath]  # the queues whose usage the loop reads: the leaf and the capped ones
    apps: list[_AppCursor]
    heap: list[tuple[SortKey, AppId]] = field(default_factory=list)
    am_used: Resources = field(default_factory=Resources)


class DrfStage:
    """Assign containers queue by queue and app by app in DRF order, placing each with the scorer.

    Inside a leaf queue apps take turns by ``order`` (``DrfOrder`` by default: the lowest weighted dominant
    share of what the app holds, this cycle's placements included, re-keyed after every placement); any
    ``AppOrder`` plugs in there, e.g. an EDF or shortest-estimate order. Queues take turns by how far each is
    below its guarantee.

    With ``within_share`` an app that is yielding (``AppView.yielding``: it asks ALTRUISTIC now) is served
    only while its dominant share is below that of its fair share (``CycleContext.fair_share``; the container
    that crosses it is the last); its other asks are left to the leftover stage after this one. Other apps,
    and an app with no share computed yet, are served as without it: DRF, work-conserving."""

    name: ClassVar[str] = "drf"

    def __init__(
        self, scorer: NodeScorer, ask_types: frozenset[str] = frozenset({"DEFAULT", "ALTRUISTIC"}),
        *, within_share: bool = False, order: AppOrder | None = None,
    ) -> None:
        self.scorer = scorer
        self.ask_types = ask_types
        self.within_share = within_share
        self.order: AppOrder = DrfOrder() if order is None else order

    @property
    def reads(self) -> frozenset[Input]:
        return self.order.reads | ({SHARES} if self.within_share else NOTHING)

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        _Run(self, snap, ctx).loop()


class _Run:
    """One ``DrfStage.run``: the queue heap, per-queue app heaps, and usage that grows with placements."""

    def __init__(self, stage: DrfStage, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        self.stage, self.snap, self.ctx = stage, snap, ctx
        self.capacity = snap.capacity
        self.index = node_index(ctx)  # built here, before any placement, as it draws the ring's start
        self.no_fit: dict[tuple[object, ...], tuple[str, dict[str, object]]] = {}
        self.fit_keys: dict[tuple[AppId, int], tuple[object, ...]] = {}
        self.usage: dict[QueuePath, Resources] = {}
        self.limits: dict[tuple[QueuePath, float], dict[str, float]] = {}
        self.leaves: dict[QueuePath, _LeafQueue] = {}
        summed: dict[QueuePath, dict[str, int]] = {}  # what each queue's apps hold, summed in place
        for app in sorted(snap.apps.values(), key=app_tiebreak):
            view = snap.queues.get(app.queue)
            if view is None or not view.is_leaf:
                continue
            leaf = self.leaves.get(view.path)
            if leaf is None:
                lineage = self._lineage(view)
                capped = [p for p in lineage if snap.queues[p].abs_max_capacity < 1.0 - _EPS]
                tracked = [view.path, *(p for p in capped if p != view.path)]
                leaf = self.leaves[view.path] = _LeafQueue(view, lineage, capped, tracked, [])
            if not app.am_used.is_zero():
                leaf.am_used = leaf.am_used + app.am_used
            am_now = ctx.app_am_alloc.get(app.app_id)
            if am_now is not None:
                leaf.am_used = leaf.am_used + am_now
            used = ctx.app_used(app.app_id).amounts
            for path in leaf.lineage:
                held = summed.get(path)
                if held is None:
                    summed[path] = dict(used)
                else:
                    for r, v in used.items():
                        held[r] = held.get(r, 0) + v
            asks = sorted(
                (a for a in app.asks if a.ask_type in stage.ask_types and ctx.remaining(a) > 0),
                key=ask_importance,
            )
            if asks:
                cursor = _AppCursor(app, asks)
                fair = ctx.fair_share(app.app_id) if stage.within_share and app.yielding else None
                if fair is not None:
                    cursor.limit = fair.dominant_share(self.capacity)
                leaf.apps.append(cursor)
                heapq.heappush(leaf.heap, (stage.order.sort_key(app, ctx), app.app_id))
        self.usage.update((path, Resources(amounts)) for path, amounts in summed.items())
        self.cursors = {c.app.app_id: c for leaf in self.leaves.values() for c in leaf.apps}
        self.heap = [(self._queue_key(leaf), path) for path, leaf in self.leaves.items() if leaf.heap]
        heapq.heapify(self.heap)

    def _lineage(self, view: QueueView) -> list[QueuePath]:
        out = [view.path]
        parent = view.parent
        while parent is not None and parent in self.snap.queues and parent not in out:
            out.append(parent)
            parent = self.snap.queues[parent].parent
        return out

    def _queue_key(self, leaf: _LeafQueue) -> tuple[int, float, str]:
        share = self.usage[leaf.view.path].dominant_share(self.capacity)
        if leaf.view.abs_capacity > 0:
            return (0, share / leaf.view.abs_capacity, leaf.view.path)
        return (1, share, leaf.view.path)

    def _limit(self, path: QueuePath, fraction: float) -> dict[str, float]:
        """``fraction`` of the queue's max capacity, in absolute amounts."""
        key = (path, fraction)
        limit = self.limits.get(key)
        if limit is None:
            scale = fraction * self.snap.queues[path].abs_max_capacity
            limit = self.limits[key] = {r: scale * c for r, c in self.capacity.amounts.items()}
        return limit

    def loop(self) -> None:
        ctx, heap, usage, sort_key = self.ctx, self.heap, self.usage, self.stage.order.sort_key
        heappop, heappush = heapq.heappop, heapq.heappush
        while heap:
            _, path = heappop(heap)
            leaf = self.leaves[path]
            if leaf.capped:
                full = self._full_ancestor(leaf)
                if full is not None:
                    self._reject_queue(leaf, full)
                    continue
            _, app_id = heappop(leaf.heap)
            cursor = self.cursors[app_id]
            ask = None if cursor.full(ctx, self.capacity) else cursor.current(ctx)
            node = None
            while ask is not None:
                # an ask that finds no node changes nothing: the app and its queue would come off their heaps
                # next again, with the same keys, so its next ask is tried here (on a busy cluster most are)
                node = self._try(leaf, ask)
                if node is not None:
                    break
                cursor.pos += 1
                ask = cursor.current(ctx)
            if ask is not None and node is not None:
                ctx.place(ask, node)
                for p in leaf.tracked:  # the other ancestors' usage is never read again
                    usage[p] = usage[p] + ask.capability
                if ask.is_am:
                    leaf.am_used = leaf.am_used + ask.capability
                heappush(leaf.heap, (sort_key(cursor.app, ctx), app_id))
            if leaf.heap:
                # with no other queue waiting, none can come back: the key would order nothing
                heappush(heap, (self._queue_key(leaf) if heap else _ALONE, path))

    def _full_ancestor(self, leaf: _LeafQueue) -> QueuePath | None:
        """The first queue of the leaf's lineage whose usage reached its max capacity in some resource."""
        for p in leaf.capped:
            used = self.usage[p]
            for r, limit in self._limit(p, 1.0).items():
                if used.get(r) >= limit - _EPS:
                    return p
        return None

    def _reject_queue(self, leaf: _LeafQueue, full: QueuePath) -> None:
        detail = self._queue_detail(full)
        for _, app_id in leaf.heap:
            cursor = self.cursors[app_id]
            for ask in cursor.asks[cursor.pos :]:
                if self.ctx.remaining(ask) > 0:
                    self.ctx.reject_with(ask, QUEUE_AT_MAX, {"ask": ask.capability.to_dict(), **detail})
        leaf.heap.clear()

    def _queue_detail(self, path: QueuePath) -> dict[str, object]:
        return {
            "queue": path,
            "used": _numbers(self.usage[path], self.capacity),
            "max": {r: math.floor(v + _ROUND_UP) for r, v in self._limit(path, 1.0).items()},
        }

    def _try(self, leaf: _LeafQueue, ask: AskView) -> NodeView | None:
        """The node for one container of ``ask``, or None after recording why there is none."""
        ctx = self.ctx
        for p in leaf.capped:
            after = self.usage[p] + ask.capability
            limit = self._limit(p, 1.0)
            if any(after.get(r) > limit.get(r, 0.0) + _EPS for r in ask.capability.amounts):
                detail = {"ask": ask.capability.to_dict(), **self._queue_detail(p)}
                ctx.reject_with(ask, QUEUE_AT_MAX, detail)
                return None
        if ask.is_am and not leaf.am_used.is_zero():
            am_limit = self._limit(leaf.view.path, leaf.view.max_am_share)
            after = leaf.am_used + ask.capability
            if any(v > am_limit.get(r, 0.0) + _EPS for r, v in after.amounts.items()):
                detail = {
                    "queue": leaf.view.path,
                    "ask": ask.capability.to_dict(),
                    "am_used": _numbers(leaf.am_used, ask.capability),
                    "am_limit": {r: math.floor(v + _ROUND_UP) for r, v in am_limit.items()},
                }
                ctx.reject_with(ask, AM_LIMIT, detail)
                return None
        key = self.fit_keys.get((ask.app_id, ask.allocation_request_id))
        if key is None:  # asks with equal keys fit on exactly the same nodes
            key = self.fit_keys[(ask.app_id, ask.allocation_request_id)] = (
                tuple(sorted(ask.capability.amounts.items())),
                ask.nodes,
                ask.racks,
                ask.relax_locality,
                self.cursors[ask.app_id].app.blacklist,
            )
        known = self.no_fit.get(key)
        if known is None:
            node = self.index.choose(ask, self.stage.scorer)
            if node is not None:
                return node
            known = self.no_fit[key] = self._why_no_node(ask)
        ctx.reject_with(ask, known[0], known[1])
        return None

    def _why_no_node(self, ask: AskView) -> tuple[str, dict[str, object]]:
        index = self.index
        allowed = index.allowed(self.cursors[ask.app_id].app.blacklist)
        demand = ask.capability
        ever = allowed & index.ever_fits(demand)
        if not ever.any():
            closest = index.nearest(demand, allowed, empty=True)
            return NO_NODE_FITS, {
                "ask": demand.to_dict(),
                "largest_node": _numbers(closest.capability, demand) if closest else {},
                "node": closest.node_id if closest else "",
                "nodes": int(allowed.sum()),
            }
        named = np.zeros(len(index.nodes), dtype=np.bool_)
        named[index.named(ask)] = True
        strict = not ask.relax_locality and bool(ask.nodes or ask.racks)
        local = ever & named if strict else ever
        if not local.any():
            return LOCALITY_WAIT, {
                "ask": demand.to_dict(),
                "nodes": list(ask.nodes),
                "racks": list(ask.racks),
                "local_nodes": int((allowed & named).sum()),
            }
        closest = index.nearest(demand, local, empty=False)
        return NO_CAPACITY_NOW, {
            "ask": demand.to_dict(),
            "largest_free": _numbers(self.ctx.available(closest), demand) if closest else {},
            "node": closest.node_id if closest else "",
        }


def _numbers(amounts: Resources, like: Resources) -> dict[str, int]:
    """``amounts`` as a dict that also shows zeros for the types of ``like`` (readable rejection details)."""
    return {r: amounts.get(r) for r in sorted(set(amounts.amounts) | set(like.amounts))}


_order: type[AppOrder] = DrfOrder
_stage: type[Stage] = DrfStage
