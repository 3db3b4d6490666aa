"""First in, first out across jobs: apps in submit order, each takes all it can before the next one.

This is YARN's FIFO scheduler, the simplest baseline the papers compare with: the oldest app (higher app
priority first, then ``(submit_time, app_id)``) gets every container that fits for every one of its asks, in
ask importance order (AM first, then lower priority numbers, DEFAULT before ALTRUISTIC); the next app gets
what is left. A big job at the head therefore holds the whole cluster until its runnable tasks run out.

``GreedyFiller`` is the shared loop of the "strict order, take all you can" stages (this one and SJF): it
places one ask's containers on the nodes the scorer likes best and remembers, for the rest of the cycle,
demands that fit nowhere (the cluster only fills up during a cycle). AM containers stay within the leaf
queue's AM limit (``max_am_share`` of its maximum capacity) as in the DRF stage. Queue capacities are not
enforced here: these baselines run every job in one queue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from common.ids import QueuePath
from common.resources import Resources
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView
from rm.core.plan import AM_LIMIT, NO_CAPACITY_NOW, NO_NODE_FITS
from rm.core.policies.api import NOTHING, AppOrder, Input, NodeScorer, Stage, app_tiebreak
from rm.core.policies.drf import SortKey, ask_importance
from rm.core.policies.node_index import choose_node
from rm.core.policies.tetris import FreeMemo, best_node

if TYPE_CHECKING:
    from rm.core.context import CycleContext

_EPS = 1e-9

FitKey = tuple[object, ...]


def fit_key(ask: AskView, app: AppView) -> FitKey:
    """Asks with equal keys fit on exactly the same nodes."""
    return (tuple(sorted(ask.capability.amounts.items())), ask.nodes, ask.racks, ask.relax_locality, app.blacklist)


class GreedyFiller:
    """Per-cycle helper: place asks on the best node, honour AM limits, remember what fits nowhere."""

    def __init__(self, snap: ClusterSnapshot, ctx: CycleContext, scorer: NodeScorer) -> None:
        self.snap, self.ctx, self.scorer = snap, ctx, scorer
        self.capacity = snap.capacity
        self.nodes: list[NodeView] = sorted((n for n in snap.nodes.values() if n.schedulable),
                                            key=lambda n: n.node_id)
        self.free = FreeMemo()
        self.full: set[FitKey] = set()
        self._am_used: dict[QueuePath, Resources] | None = None  # summed when an AM ask first needs it
        # (queue, AM size) found over the queue's AM limit: it stays over it for the rest of the cycle, since the
        # queue's AM usage only grows within one, so a backlog of apps waiting for an AM is checked once per size
        self._am_blocked: set[tuple[QueuePath, Resources]] = set()
        self._fits_somewhere: dict[Resources, bool] = {}

    @property
    def am_used(self) -> dict[QueuePath, Resources]:
        """Per queue, what its AM containers hold (this cycle's placements included)."""
        if self._am_used is None:
            sums: dict[QueuePath, dict[str, int]] = {}
            for app in self.snap.apps.values():
                extra = self.ctx.app_am_alloc.get(app.app_id)
                for part in (app.am_used, extra) if extra is not None else (app.am_used,):
                    if part.amounts:
                        acc = sums.setdefault(app.queue, {})
                        for r, v in part.amounts.items():
                            acc[r] = acc.get(r, 0) + v
            self._am_used = {q: Resources(acc) for q, acc in sums.items()}
        return self._am_used

    def best(self, ask: AskView, nodes: Sequence[NodeView] | None = None) -> NodeView | None:
        """The node the scorer likes best for one container of ``ask`` now, or None."""
        app = self.snap.apps[ask.app_id]
        key = fit_key(ask, app)
        if nodes is None and key in self.full:
            return None
        node = choose_node(ask, self.ctx, self.scorer) if nodes is None else \
            best_node(ask, nodes, self.ctx, self.scorer, capacity=self.capacity, free=self.free)
        if node is None and nodes is None:
            self.full.add(key)
        return node

    def am_allowed(self, ask: AskView) -> bool:
        """An AM container may start while the queue's AM containers stay within its AM limit."""
        if not ask.is_am:
            return True
        app = self.snap.apps[ask.app_id]
        if (app.queue, ask.capability) in self._am_blocked:
            return False
        used = self.am_used.get(app.queue, Resources())
        if used.is_zero():
            return True  # the first AM of a queue always may start, as in the DRF stage
        view = self.snap.queues.get(app.queue)
        share = view.max_am_share * view.abs_max_capacity if view is not None else 0.5
        after = used + ask.capability
        if all(after.get(r) <= share * self.capacity.get(r) + _EPS for r in ask.capability.amounts):
            return True
        self._am_blocked.add((app.queue, ask.capability))
        return False

    def place(self, ask: AskView, node: NodeView) -> None:
        self.ctx.place(ask, node)
        if ask.is_am:
            q = self.snap.apps[ask.app_id].queue
            self.am_used[q] = self.am_used.get(q, Resources()) + ask.capability

    def reject(self, ask: AskView) -> None:
        """Record why ``ask`` keeps waiting: its AM limit, no node big enough, or no room right now."""
        if not self.am_allowed(ask):
            self.ctx.reject(ask, AM_LIMIT, queue=self.snap.apps[ask.app_id].queue)
        elif not self._fits_anywhere(ask.capability):
            self.ctx.reject(ask, NO_NODE_FITS, nodes=len(self.nodes))
        else:
            self.ctx.reject(ask, NO_CAPACITY_NOW)

    def _fits_anywhere(self, demand: Resources) -> bool:
        """Some schedulable node is big enough for ``demand`` when empty."""
        got = self._fits_somewhere.get(demand)
        if got is None:
            got = self._fits_somewhere[demand] = any(demand.fits_in(n.capability) for n in self.nodes)
        return got

    def take_all(self, app: AppView) -> None:
        """Every container that fits for each of the app's asks, most important ask first."""
        for ask in sorted(app.asks, key=ask_importance):
            while self.ctx.remaining(ask) > 0:
                node = self.best(ask) if self.am_allowed(ask) else None
                if node is None:
                    self.reject(ask)
                    break
                self.place(ask, node)


class OrderedStage:
    """Apps in the order's sort order, each taking all it can (FIFO, SJF)."""

    name: ClassVar[str] = "ordered"

    def __init__(self, scorer: NodeScorer, order: AppOrder) -> None:
        self.scorer = scorer
        self.order = order

    @property
    def reads(self) -> frozenset[Input]:
        return self.order.reads

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        filler = GreedyFiller(snap, ctx, self.scorer)
        key: Callable[[AppView], SortKey] = lambda app: self.order.sort_key(app, ctx)
        for app in sorted((a for a in snap.apps.values() if a.asks), key=key):
            filler.take_all(app)


class FifoOrder:
    """Higher app priority first, then the oldest app."""

    name: ClassVar[str] = "fifo"
    reads: frozenset[Input] = NOTHING

    def sort_key(self, app: AppView, ctx: CycleContext) -> SortKey:
        return (-app.priority, *app_tiebreak(app))


class FifoStage(OrderedStage):
    """YARN's FIFO scheduler: the oldest app takes all it can, then the next."""

    name: ClassVar[str] = "fifo"

    def __init__(self, scorer: NodeScorer, order: AppOrder | None = None) -> None:
        super().__init__(scorer, FifoOrder() if order is None else order)


_order: type[AppOrder] = FifoOrder
_stage: type[Stage] = FifoStage
