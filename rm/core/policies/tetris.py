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

from common.ids import NodeId
from common.resources import Resources
from rm.core.model import AskView, ClusterSnapshot, NodeView
from rm.core.policies.api import LinearScorer, NodeScorer

if TYPE_CHECKING:
    from rm.core.context import CycleContext

NODE_LOCAL_BONUS = 1_000.0
RACK_LOCAL_BONUS = 100.0
SCORE_DIGITS = 9  # scores equal to this many decimals are ties (float noise must not decide placements)

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


def score_weights(demand: Resources, capacity: Resources) -> list[tuple[str, float]]:
    """demand/capacity² per type: the alignment of ``demand`` with a free vector is the sum of weight × free."""
    return [(r, d / capacity.get(r) ** 2) for r, d in demand.amounts.items() if capacity.get(r) > 0]


class TetrisPacker:
    """Alignment of demand with free resources, plus a locality bonus. A ``LinearScorer``: the alignment is
    the sum of ``score_weights`` × free amounts, which the node index evaluates over its matrices."""

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

    def weights(self, demand: Resources, capacity: Resources) -> list[tuple[str, float]]:
        return score_weights(demand, capacity)

    def locality_bonus(self, level: int) -> float:
        return self.node_local_bonus if level == NODE_LOCAL else self.rack_local_bonus if level == RACK_LOCAL \
            else 0.0

    def score(self, ask: AskView, node: NodeView, ctx: CycleContext) -> float:
        capacity = self._capacity.get(ctx.snap)
        if self._for is None or self._for[0] is not ask.capability or self._for[1] is not capacity:
            self._for = (ask.capability, capacity)
            self._weights = score_weights(ask.capability, capacity)
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
        key = (round(scorer.score(ask, node, ctx), SCORE_DIGITS), -round(waste, SCORE_DIGITS))
        if best is None or key > best_key or (key == best_key and node.node_id < best.node_id):
            best, best_key = node, key
    return best


_: type[NodeScorer] = TetrisPacker
_linear: type[LinearScorer] = TetrisPacker
