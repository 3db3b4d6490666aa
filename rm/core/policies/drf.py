"""Dominant resource fairness (Ghodsi et al., NSDI 2011): shares, app order and the assignment loop.

An app's *dominant share* is the largest fraction of any one cluster resource it holds: an app with 3 of 9
cores and 2 of 18 GB has a dominant share of 1/3. DRF equalizes dominant shares (scaled by weight), which
gives each user at least what an equal split of the cluster would, and nobody can gain by lying about demand.

``DrfShares`` computes the fair-share vector every AM is told about, in two levels:

* Across queues, each resource type is divided like YARN's capacity scheduler divides it: a queue's guarantee
  is ``abs_capacity`` × the cluster, and what a queue does not need (its apps' used + pending is smaller) is
  handed to the others in proportion to their capacities, never past a queue's ``abs_max_capacity``. This
  is weighted max-min water-filling per resource type, applied down the queue tree.
* Inside a queue, apps grow together along their own demand vectors at equal weight-scaled dominant share
  (progressive filling over continuous amounts) until an app's demand is met — it stops — or a resource of
  the queue's portion runs out — every app using that resource stops. The others keep growing.

Because a queue may be unable to use all it was given in one resource while another resource binds, the
division is repeated with that queue's demand lowered to what it could use, so the slack goes to others.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from rm.core.ids import AppId, QueuePath
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView, QueueView
from rm.core.plan import AM_LIMIT, LOCALITY_WAIT, NO_CAPACITY_NOW, NO_NODE_FITS, QUEUE_AT_MAX
from rm.core.policies.api import AppOrder, NodeScorer, ShareCalculator, Stage, app_tiebreak
from rm.core.policies.tetris import CapacityMemo, FreeMemo, best_node, locality_allows, locality_level
from rm.core.resources import Resources

if TYPE_CHECKING:
    from rm.core.cycle import CycleContext

_EPS = 1e-9
_ROUND_UP = 1e-6  # 2.9999999 cores is 3 cores when shares are rounded down to integers
_MIN_WEIGHT = 1e-9  # a zero weight means "last", not "never"

SortKey = tuple[float | int | str, ...]


# --------------------------------------------------------------------------------------------- shares


def water_fill(amount: float, weights: Sequence[float], caps: Sequence[float]) -> list[float]:
    """Weighted max-min split of ``amount``: shares grow in proportion to weight, each stops at its cap.

    Children of weight zero only get what is left once every weighted child is capped, split evenly.
    """
    out = [0.0] * len(caps)
    remaining = max(0.0, amount)
    weighted = [i for i, w in enumerate(weights) if w > 0]
    unweighted = [i for i, w in enumerate(weights) if w <= 0]
    for group, w in ((weighted, list(weights)), (unweighted, [1.0] * len(caps))):
        active = sorted((i for i in group if caps[i] > 0), key=lambda i: (caps[i] / w[i], i))
        wsum = sum(w[i] for i in active)
        for pos, i in enumerate(active):
            if remaining <= _EPS or wsum <= 0:
                break
            level = remaining / wsum
            if caps[i] / w[i] <= level:
                out[i] = caps[i]
                remaining -= caps[i]
                wsum -= w[i]
            else:
                for j in active[pos:]:
                    out[j] = level * w[j]
                remaining = 0.0
                break
    return out


def progressive_fill(
    demands: Sequence[Resources],
    weights: Sequence[float],
    cluster: Resources,
    caps: Mapping[str, float],
) -> list[dict[str, float]]:
    """DRF progressive filling over continuous amounts.

    User ``i`` receives ``s_i × demands[i] / dominant_share(demands[i])``; all ``s_i`` grow at rates
    ``weights[i]`` until ``s_i`` reaches the demand's dominant share or a resource of ``caps`` (absolute
    amounts) is used up, which stops every user needing it. A demand the cluster lacks a type for gets nothing.
    """
    n = len(demands)
    dirs: list[dict[str, float]] = []
    limits: list[float] = []
    w = [max(x, _MIN_WEIGHT) for x in weights]
    for d in demands:
        ds = d.dominant_share(cluster)
        if ds <= 0 or math.isinf(ds):
            dirs.append({})
            limits.append(0.0)
        else:
            dirs.append({r: v / ds for r, v in d.amounts.items()})
            limits.append(ds)
    share = [0.0] * n
    active = [limits[i] > 0 for i in range(n)]
    users_of: dict[str, list[int]] = {}
    rate: dict[str, float] = {}
    used: dict[str, float] = {}
    for i in range(n):
        if active[i]:
            for r, v in dirs[i].items():
                users_of.setdefault(r, []).append(i)
                rate[r] = rate.get(r, 0.0) + w[i] * v
    order = sorted((i for i in range(n) if active[i]), key=lambda i: (limits[i] / w[i], i))
    left = len(order)
    pos = 0
    lam = 0.0
    saturated: set[str] = set()

    def freeze(i: int) -> None:
        nonlocal left
        active[i] = False
        left -= 1
        share[i] = min(lam * w[i], limits[i])
        for r, v in dirs[i].items():
            used[r] = used.get(r, 0.0) + share[i] * v
            rate[r] -= w[i] * v

    while left:
        while not active[order[pos]]:
            pos += 1
        lam_done = limits[order[pos]] / w[order[pos]]
        lam_full, full = math.inf, ""
        for r in sorted(rate):
            if r in saturated or rate[r] <= _EPS:
                continue
            t = (caps.get(r, 0.0) - used.get(r, 0.0)) / rate[r]
            if t < lam_full:
                lam_full, full = t, r
        if full and lam_full < lam_done:
            lam = max(lam, lam_full)
            saturated.add(full)
            for i in users_of[full]:
                if active[i]:
                    freeze(i)
        else:
            lam = max(lam, lam_done)
            freeze(order[pos])
    return [{r: share[i] * v for r, v in dirs[i].items()} for i in range(n)]


def _floor(amounts: Mapping[str, float]) -> Resources:
    return Resources({r: math.floor(v + _ROUND_UP) for r, v in amounts.items()})


@dataclass(slots=True)
class _Tree:
    """The queue tree with each leaf's apps, as ``DrfShares`` needs it."""

    queues: Mapping[QueuePath, QueueView]
    tops: list[QueuePath]
    apps: dict[QueuePath, list[AppView]] = field(default_factory=dict)

    @staticmethod
    def of(snap: ClusterSnapshot) -> _Tree:
        tops = sorted(p for p, q in snap.queues.items() if q.parent is None or q.parent not in snap.queues)
        tree = _Tree(snap.queues, tops)
        for app in sorted(snap.apps.values(), key=app_tiebreak):
            q = snap.queues.get(app.queue)
            if q is not None and q.is_leaf:
                tree.apps.setdefault(q.path, []).append(app)
        return tree

    def children(self, path: QueuePath) -> list[QueuePath]:
        return [c for c in self.queues[path].children if c in self.queues]

    def leaves(self) -> Iterator[QueuePath]:
        return (p for p, q in self.queues.items() if q.is_leaf)


class DrfShares:
    """Fair-share vectors: capacity-proportional, work-conserving across queues, DRF inside each queue."""

    name: ClassVar[str] = "drf"

    def shares(self, snap: ClusterSnapshot) -> Mapping[AppId, Resources]:
        cluster = snap.capacity
        tree = _Tree.of(snap)
        out: dict[AppId, Resources] = {a.app_id: a.used for a in snap.apps.values()}
        # Apps without pending asks take part too (their usage is their demand), so what they hold is
        # not handed to the others twice; their reported share is simply their usage.
        active = {q: apps for q, apps in tree.apps.items() if any(not a.pending.is_zero() for a in apps)}
        demand = {q: {r: float(v) for r, v in _demand(apps).amounts.items()} for q, apps in active.items()}
        fills: dict[QueuePath, list[dict[str, float]]] = {}
        for _ in range(len(demand) * max(1, len(cluster.amounts)) + 1):
            portion = self._divide(tree, demand, cluster)
            shrunk = False
            for q, apps in active.items():
                fills[q] = progressive_fill(
                    [a.used + a.pending for a in apps], [a.weight for a in apps], cluster, portion[q]
                )
                took = _sum(fills[q])
                for r, want in demand[q].items():
                    got, given = took.get(r, 0.0), portion[q].get(r, 0.0)
                    tol = _ROUND_UP * max(1.0, cluster.get(r))
                    if given - got > tol and want - got > tol:
                        demand[q][r] = got
                        shrunk = True
            if not shrunk:
                break
        for q, apps in active.items():
            for app, fill in zip(apps, fills[q], strict=True):
                if not app.pending.is_zero():
                    out[app.app_id] = _floor(fill)
        return out

    @staticmethod
    def _divide(
        tree: _Tree, demand: Mapping[QueuePath, Mapping[str, float]], cluster: Resources
    ) -> dict[QueuePath, dict[str, float]]:
        """Split each resource type down the queue tree by capacity, capped by demand and max capacity."""
        capped: dict[QueuePath, dict[str, float]] = {}

        def cap_of(path: QueuePath) -> dict[str, float]:
            q = tree.queues[path]
            if q.is_leaf:
                want = dict(demand.get(path, {}))
            else:
                want = {}
                for c in tree.children(path):
                    for r, v in cap_of(c).items():
                        want[r] = want.get(r, 0.0) + v
            limit = {r: min(v, q.abs_max_capacity * cluster.get(r)) for r, v in want.items()}
            capped[path] = limit
            return limit

        for top in tree.tops:
            cap_of(top)
        portion: dict[QueuePath, dict[str, float]] = {p: {} for p in tree.leaves()}

        def split(paths: list[QueuePath], r: str, amount: float) -> None:
            weights = [tree.queues[p].capacity for p in paths]
            parts = water_fill(amount, weights, [capped[p].get(r, 0.0) for p in paths])
            for p, part in zip(paths, parts, strict=True):
                if tree.queues[p].is_leaf:
                    portion[p][r] = part
                elif part > 0:
                    split(tree.children(p), r, part)

        for r, total in cluster.amounts.items():
            split(tree.tops, r, float(total))
        return portion


def _demand(apps: Sequence[AppView]) -> Resources:
    out = Resources()
    for a in apps:
        out = out + a.used + a.pending
    return out


def _sum(vectors: Sequence[Mapping[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for v in vectors:
        for r, x in v.items():
            out[r] = out.get(r, 0.0) + x
    return out


# ------------------------------------------------------------------------------------------ app order


class DrfOrder:
    """Smallest weighted dominant share first, then higher app priority, then (submit_time, app_id)."""

    name: ClassVar[str] = "drf"

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

    def current(self, ctx: CycleContext) -> AskView | None:
        while self.pos < len(self.asks) and ctx.remaining(self.asks[self.pos]) <= 0:
            self.pos += 1
        return self.asks[self.pos] if self.pos < len(self.asks) else None


@dataclass(slots=True)
class _LeafQueue:
    view: QueueView
    lineage: list[QueuePath]  # the leaf and its ancestors
    apps: list[_AppCursor]
    heap: list[tuple[SortKey, AppId]] = field(default_factory=list)
    am_used: Resources = field(default_factory=Resources)


class DrfStage:
    """Assign containers queue by queue and app by app in DRF order, placing each with the scorer."""

    name: ClassVar[str] = "drf"

    def __init__(
        self, scorer: NodeScorer, ask_types: frozenset[str] = frozenset({"DEFAULT", "ALTRUISTIC"})
    ) -> None:
        self.scorer = scorer
        self.ask_types = ask_types
        self.order = DrfOrder()

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        _Run(self, snap, ctx).loop()


class _Run:
    """One ``DrfStage.run``: the queue heap, per-queue app heaps, and usage that grows with placements."""

    def __init__(self, stage: DrfStage, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        self.stage, self.snap, self.ctx = stage, snap, ctx
        self.capacity = snap.capacity
        self.nodes = sorted((n for n in snap.nodes.values() if n.schedulable), key=lambda n: n.node_id)
        self.free = FreeMemo()
        self.no_fit: dict[tuple[object, ...], tuple[str, dict[str, object]]] = {}
        self.usage: dict[QueuePath, Resources] = {}
        self.limits: dict[tuple[QueuePath, float], dict[str, float]] = {}
        self.leaves: dict[QueuePath, _LeafQueue] = {}
        for app in sorted(snap.apps.values(), key=app_tiebreak):
            view = snap.queues.get(app.queue)
            if view is None or not view.is_leaf:
                continue
            leaf = self.leaves.get(view.path)
            if leaf is None:
                leaf = self.leaves[view.path] = _LeafQueue(view, self._lineage(view), [])
            leaf.am_used = leaf.am_used + app.am_used + ctx.app_am_alloc.get(app.app_id, Resources())
            used = ctx.app_used(app.app_id)
            for path in leaf.lineage:
                self.usage[path] = self.usage.get(path, Resources()) + used
            asks = sorted(
                (a for a in app.asks if a.ask_type in stage.ask_types and ctx.remaining(a) > 0),
                key=ask_importance,
            )
            if asks:
                leaf.apps.append(_AppCursor(app, asks))
                heapq.heappush(leaf.heap, (stage.order.sort_key(app, ctx), app.app_id))
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

    def _capped(self, leaf: _LeafQueue) -> Iterator[QueuePath]:
        """The queues of the leaf's lineage whose max capacity is below the whole cluster."""
        return (p for p in leaf.lineage if self.snap.queues[p].abs_max_capacity < 1.0 - _EPS)

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
        ctx = self.ctx
        while self.heap:
            _, path = heapq.heappop(self.heap)
            leaf = self.leaves[path]
            full = self._full_ancestor(leaf)
            if full is not None:
                self._reject_queue(leaf, full)
                continue
            _, app_id = heapq.heappop(leaf.heap)
            cursor = self.cursors[app_id]
            ask = cursor.current(ctx)
            if ask is not None:
                node = self._try(leaf, ask)
                if node is None:
                    cursor.pos += 1
                else:
                    ctx.place(ask, node)
                    for p in leaf.lineage:
                        self.usage[p] = self.usage[p] + ask.capability
                    if ask.is_am:
                        leaf.am_used = leaf.am_used + ask.capability
                heapq.heappush(leaf.heap, (self.stage.order.sort_key(cursor.app, ctx), app_id))
            if leaf.heap:
                heapq.heappush(self.heap, (self._queue_key(leaf), path))

    def _full_ancestor(self, leaf: _LeafQueue) -> QueuePath | None:
        """The first queue of the leaf's lineage whose usage reached its max capacity in some resource."""
        for p in self._capped(leaf):
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
                    _reject(self.ctx, ask, QUEUE_AT_MAX, {"ask": ask.capability.to_dict(), **detail})
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
        for p in self._capped(leaf):
            after = self.usage[p] + ask.capability
            limit = self._limit(p, 1.0)
            if any(after.get(r) > limit.get(r, 0.0) + _EPS for r in ask.capability.amounts):
                detail = {"ask": ask.capability.to_dict(), **self._queue_detail(p)}
                _reject(ctx, ask, QUEUE_AT_MAX, detail)
                return None
        if ask.is_am and not leaf.am_used.is_zero():
            am_limit = self._limit(leaf.view.path, leaf.view.max_am_share)
            after = leaf.am_used + ask.capability
            if any(after.get(r) > am_limit.get(r, 0.0) + _EPS for r in ask.capability.amounts):
                detail = {
                    "queue": leaf.view.path,
                    "ask": ask.capability.to_dict(),
                    "am_used": _numbers(leaf.am_used, ask.capability),
                    "am_limit": {r: math.floor(v + _ROUND_UP) for r, v in am_limit.items()},
                }
                _reject(ctx, ask, AM_LIMIT, detail)
                return None
        key = (
            tuple(sorted(ask.capability.amounts.items())),
            ask.nodes,
            ask.racks,
            ask.relax_locality,
            self.cursors[ask.app_id].app.blacklist,
        )
        known = self.no_fit.get(key)
        if known is None:
            node = best_node(ask, self.nodes, ctx, self.stage.scorer, capacity=self.capacity, free=self.free)
            if node is not None:
                return node
            known = self.no_fit[key] = self._why_no_node(ask)
        _reject(ctx, ask, known[0], known[1])
        return None

    def _why_no_node(self, ask: AskView) -> tuple[str, dict[str, object]]:
        blacklist = self.cursors[ask.app_id].app.blacklist
        allowed = [n for n in self.nodes if n.node_id not in blacklist]
        demand = ask.capability
        ever = [n for n in allowed if demand.fits_in(n.capability)]
        if not ever:
            closest = _closest(demand, allowed, lambda n: n.capability)
            return NO_NODE_FITS, {
                "ask": demand.to_dict(),
                "largest_node": _numbers(closest.capability, demand) if closest else {},
                "node": closest.node_id if closest else "",
                "nodes": len(allowed),
            }
        local = [n for n in ever if locality_allows(ask, n)]
        if not local:
            return LOCALITY_WAIT, {
                "ask": demand.to_dict(),
                "nodes": list(ask.nodes),
                "racks": list(ask.racks),
                "local_nodes": sum(1 for n in allowed if locality_level(ask, n) > 0),
            }
        closest = _closest(demand, local, self.ctx.available)
        return NO_CAPACITY_NOW, {
            "ask": demand.to_dict(),
            "largest_free": _numbers(self.ctx.available(closest), demand) if closest else {},
            "node": closest.node_id if closest else "",
        }


def _numbers(amounts: Resources, like: Resources) -> dict[str, int]:
    """``amounts`` as a dict that also shows zeros for the types of ``like`` (readable rejection details)."""
    return {r: amounts.get(r) for r in sorted(set(amounts.amounts) | set(like.amounts))}


def _reject(ctx: CycleContext, ask: AskView, reason: str, detail: Mapping[str, object]) -> None:
    """``ctx.reject`` with a detail that may hold an "ask" entry (a keyword ``reject`` cannot take)."""
    if ask.key in ctx.plan.rejections:
        return
    ctx.reject(ask, reason)
    ctx.plan.rejections[ask.key].detail.update(detail)


def _closest(
    demand: Resources, nodes: Sequence[NodeView], free_of: Callable[[NodeView], Resources]
) -> NodeView | None:
    """The node that comes nearest to fitting ``demand``: largest worst-case free/demand ratio."""
    best: NodeView | None = None
    best_ratio = -1.0
    for n in nodes:
        free = free_of(n)
        ratio = min((free.get(r) / d for r, d in demand.amounts.items() if d > 0), default=math.inf)
        if ratio > best_ratio:
            best, best_ratio = n, ratio
    return best


_shares: type[ShareCalculator] = DrfShares
_order: type[AppOrder] = DrfOrder
_stage: type[Stage] = DrfStage
