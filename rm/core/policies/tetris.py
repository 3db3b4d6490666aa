"""Tetris-style packing: where to put one container.

The packer scores every node that can take the container and the best score wins. The score is the
*alignment* of the ask's demand with the node's free resources (Grandl et al., SIGCOMM 2014, the packer
Carbyne uses for its DEFAULT asks): the dot product of the two vectors after dividing each resource type by
the cluster's total of that type, so that a memory-heavy container goes where a lot of memory is free and a
CPU-heavy one where cores are free. Free resources are read through the cycle's overlay, so placements made
earlier in the same cycle count.

Locality preferences are a bonus on top: a node the ask names (by node id or hostname) outranks every other
node, a node in a named rack outranks nodes elsewhere. Both bonuses dwarf any alignment, which is at most the
number of resource types.

Ties are broken by best fit — the node left with the least free capacity after the container lands, which
keeps large holes open for large asks — and then by node id, so a placement always replays.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from rm.core.ids import NodeId
from rm.core.model import AskView, ClusterSnapshot, NodeView
from rm.core.policies.api import NodeScorer
from rm.core.resources import Resources

if TYPE_CHECKING:
    from rm.core.cycle import CycleContext

NODE_LOCAL_BONUS = 1_000.0
RACK_LOCAL_BONUS = 100.0
_SCORE_DIGITS = 9  # scores equal to this many decimals are ties (float noise must not decide placements)

NODE_LOCAL = 2
RACK_LOCAL = 1
OFF_SWITCH = 0


class CapacityMemo:
    """The cluster capacity of the last snapshot seen (``ClusterSnapshot.capacity`` sums every node)."""

    __slots__ = ("_capacity", "_snap")

    def __init__(self) -> None:
        self._snap: ClusterSnapshot | None = None
        self._capacity = Resources()

    def get(self, snap: ClusterSnapshot) -> Resources:
        if self._snap is not snap:
            self._snap = snap
            self._capacity = snap.capacity
        return self._capacity


class FreeMemo:
    """``ctx.available(node)`` remembered per node until a placement in the cycle changes that node.

    The overlay stores a new (immutable) vector per node on every placement, so an entry is stale exactly
    when the overlay's object for the node is no longer the one it was computed from.
    """

    __slots__ = ("_ctx", "_memo")

    def __init__(self) -> None:
        self._ctx: CycleContext | None = None
        self._memo: dict[NodeId, tuple[Resources | None, Resources]] = {}

    def get(self, ctx: CycleContext, node: NodeView) -> Resources:
        if ctx is not self._ctx:
            self._ctx = ctx
            self._memo = {}
        extra = ctx.node_alloc.get(node.node_id)
        hit = self._memo.get(node.node_id)
        if hit is not None and hit[0] is extra:
            return hit[1]
        free = ctx.available(node)
        self._memo[node.node_id] = (extra, free)
        return free


def locality_level(ask: AskView, node: NodeView) -> int:
    """NODE_LOCAL when the ask names this node, RACK_LOCAL when it names its rack, else OFF_SWITCH."""
    if ask.nodes and (node.node_id in ask.nodes or node.host in ask.nodes):
        return NODE_LOCAL
    if ask.racks and node.rack in ask.racks:
        return RACK_LOCAL
    return OFF_SWITCH


def locality_allows(ask: AskView, node: NodeView) -> bool:
    """Strict locality (relax_locality False with nodes or racks named) admits only the named places."""
    if ask.relax_locality or not (ask.nodes or ask.racks):
        return True
    return locality_level(ask, node) > OFF_SWITCH


def alignment(demand: Resources, free: Resources, capacity: Resources) -> float:
    """Sum over resource types of demand/capacity × free/capacity."""
    out = 0.0
    for r, d in demand.amounts.items():
        c = capacity.get(r)
        if c > 0:
            out += (d / c) * (free.get(r) / c)
    return out


class TetrisPacker:
    """Alignment of demand with free resources, plus a locality bonus."""

    name: ClassVar[str] = "tetris"

    def __init__(
        self, *, node_local_bonus: float = NODE_LOCAL_BONUS, rack_local_bonus: float = RACK_LOCAL_BONUS
    ) -> None:
        if not node_local_bonus >= rack_local_bonus >= 0:
            raise ValueError("locality bonuses must satisfy node_local_bonus >= rack_local_bonus >= 0")
        self.node_local_bonus = node_local_bonus
        self.rack_local_bonus = rack_local_bonus
        self._capacity = CapacityMemo()
        self._free = FreeMemo()
        # demand/capacity² per type for the last demand scored (a scan scores one ask on every node)
        self._for: tuple[Resources, Resources] | None = None
        self._weights: list[tuple[str, float]] = []

    def score(self, ask: AskView, node: NodeView, ctx: CycleContext) -> float:
        capacity = self._capacity.get(ctx.snap)
        if self._for is None or self._for[0] is not ask.capability or self._for[1] is not capacity:
            self._for = (ask.capability, capacity)
            self._weights = [
                (r, d / capacity.get(r) ** 2)
                for r, d in ask.capability.amounts.items()
                if capacity.get(r) > 0
            ]
        free = self._free.get(ctx, node).amounts
        value = 0.0
        for r, w in self._weights:
            value += w * free.get(r, 0)
        if ask.nodes or ask.racks:
            level = locality_level(ask, node)
            if level == NODE_LOCAL:
                value += self.node_local_bonus
            elif level == RACK_LOCAL:
                value += self.rack_local_bonus
        return value


def feasible(ask: AskView, node: NodeView, ctx: CycleContext) -> bool:
    """The node can take one container of the ask now: schedulable, allowed, and enough free."""
    app = ctx.snap.apps.get(ask.app_id)
    return (
        node.schedulable
        and (app is None or node.node_id not in app.blacklist)
        and locality_allows(ask, node)
        and ask.capability.fits_in(ctx.available(node))
    )


def best_node(
    ask: AskView,
    nodes: Iterable[NodeView],
    ctx: CycleContext,
    scorer: NodeScorer,
    *,
    capacity: Resources | None = None,
    free: FreeMemo | None = None,
) -> NodeView | None:
    """The feasible node with the highest score; ties go to the best fit, then the smallest node id.

    Only nodes ``feasible`` admits are scored. Best fit: the least free capacity left on the node after the
    container lands, normalized per type by the cluster's capacity and summed. ``capacity`` (the
    cluster's) and ``free`` (a memo of free vectors kept across calls in one cycle) only save work.
    """
    cap = ctx.snap.capacity if capacity is None else capacity
    memo = FreeMemo() if free is None else free
    app = ctx.snap.apps.get(ask.app_id)
    blacklist = app.blacklist if app is not None else frozenset()
    strict = not ask.relax_locality and bool(ask.nodes or ask.racks)
    need = list(ask.capability.amounts.items())
    inverse = {r: 1.0 / c for r, c in cap.amounts.items() if c > 0}
    best: NodeView | None = None
    best_key = (0.0, 0.0)
    for node in nodes:
        if not node.schedulable or node.node_id in blacklist:
            continue
        if strict and locality_level(ask, node) == OFF_SWITCH:
            continue
        avail = memo.get(ctx, node).amounts
        if any(avail.get(r, 0) < d for r, d in need):
            continue
        waste = 0.0
        for r, f in avail.items():
            waste += max(0, f - ask.capability.amounts.get(r, 0)) * inverse.get(r, 0.0)
        key = (round(scorer.score(ask, node, ctx), _SCORE_DIGITS), -round(waste, _SCORE_DIGITS))
        if best is None or key > best_key or (key == best_key and node.node_id < best.node_id):
            best, best_key = node, key
    return best


DEFAULT_CANDIDATE_LIMIT = 32


class NodeIndex:
    """The schedulable nodes of one cycle, for placing containers on large clusters quickly.

    On a cluster of at most ``limit`` nodes every node is a candidate, so placements are exactly those
    of a full scan. On a larger one the candidates for an ask are the nodes it names (its node and
    rack preferences), plus the next ``limit`` nodes that can take it, scanning round the ring from a
    cursor that starts at a seeded random position and moves on with every scan — the score then picks
    the best of those, as Nomad limits its ranking to a few feasible nodes.
    """

    def __init__(self, ctx: CycleContext, limit: int = DEFAULT_CANDIDATE_LIMIT) -> None:
        self.ctx = ctx
        self.limit = limit
        self.nodes = sorted((n for n in ctx.snap.nodes.values() if n.schedulable), key=lambda n: n.node_id)
        self.free = FreeMemo()
        self.capacity = ctx.snap.capacity
        self.by_name: dict[str, list[NodeView]] = {}
        self.by_rack: dict[str, list[NodeView]] = {}
        for n in self.nodes:
            self.by_name.setdefault(n.node_id, []).append(n)
            if n.host != n.node_id:
                self.by_name.setdefault(n.host, []).append(n)
            self.by_rack.setdefault(n.rack, []).append(n)
        self.cursor = ctx.rng.randrange(len(self.nodes)) if len(self.nodes) > limit else 0
        # the smallest amount of each type any pending ask wants: a node with less of some type than that
        # can take nothing more this cycle, and leaves the ring
        smallest: dict[str, int] | None = None
        for app in ctx.snap.apps.values():
            for a in app.asks:
                if a.num_containers <= 0:
                    continue
                if smallest is None:
                    smallest = dict(a.capability.amounts)
                else:
                    smallest = {r: min(v, a.capability.get(r)) for r, v in smallest.items()}
        smallest = smallest or {}
        self.smallest = [(r, v) for r, v in smallest.items() if v > 0]

    def candidates(self, ask: AskView) -> list[NodeView]:
        if len(self.nodes) <= self.limit:
            return self.nodes
        named: dict[NodeId, NodeView] = {}
        for name in ask.nodes:
            for n in self.by_name.get(name, ()):
                named[n.node_id] = n
        for rack in ask.racks:
            for n in self.by_rack.get(rack, ()):
                named[n.node_id] = n
        if not ask.relax_locality and (ask.nodes or ask.racks):
            return list(named.values())
        app = self.ctx.snap.apps.get(ask.app_id)
        blacklist = app.blacklist if app is not None else frozenset()
        need = list(ask.capability.amounts.items())
        out = list(named.values())
        total = len(self.nodes)
        i, found = self.cursor, 0
        spent: list[int] = []
        for _ in range(total):
            node = self.nodes[i]
            at = i
            i = i + 1 if i + 1 < total else 0
            if node.node_id in blacklist or node.node_id in named:
                continue
            avail = self.free.get(self.ctx, node).amounts
            if all(avail.get(r, 0) >= d for r, d in need):
                out.append(node)
                found += 1
                if found >= self.limit:
                    break
            elif any(avail.get(r, 0) < d for r, d in self.smallest):
                spent.append(at)
        self.cursor = i
        if spent and len(self.nodes) - len(spent) > self.limit:
            gone = set(spent)
            kept = [n for k, n in enumerate(self.nodes) if k not in gone]
            self.cursor = sum(1 for k in range(self.cursor) if k not in gone) % len(kept)
            self.nodes = kept
        return out


def node_index(ctx: CycleContext) -> NodeIndex:
    """The cycle's node index, built on first use."""
    if ctx.node_index is None:
        ctx.node_index = NodeIndex(ctx)
    return ctx.node_index


def choose_node(ask: AskView, ctx: CycleContext, scorer: NodeScorer) -> NodeView | None:
    """The best node for one container of ``ask`` among the cycle's candidates for it."""
    index = node_index(ctx)
    return best_node(ask, index.candidates(ask), ctx, scorer, capacity=index.capacity, free=index.free)


_: type[NodeScorer] = TetrisPacker
