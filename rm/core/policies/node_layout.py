"""What a cycle's node index derives from the schedulable nodes alone — their order, where each name and
rack is, the resource types, the capability matrix, the waste order — kept in the snapshot's
``LayoutMemo`` so that cycles reuse it until a node registers, changes state or goes away; and, when the
snapshot's builder logs which nodes changed, the nodes' views and allocations, brought up to date from that
log."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from common.ids import NodeId
from common.resources import Resources
from rm.core.model import ClusterSnapshot, NodeView


@dataclass(frozen=True, slots=True)
class NodeLayout:
    ids: tuple[NodeId, ...]  # the schedulable nodes, by id
    position: dict[NodeId, int]
    by_name: dict[str, list[int]]  # node id and host name -> positions
    by_rack: dict[str, list[int]]
    col: dict[str, int]  # resource type -> row of the matrices
    capability_matrix: npt.NDArray[np.int64]  # type x node
    inverse: list[float]  # 1 / the cluster's capacity of each type (0 where it has none)
    # the order best_node sums a node's waste in, when one order serves every node (else None: node by node)
    waste_order: list[int] | None


def node_layout(snap: ClusterSnapshot) -> NodeLayout:
    """The layout of the snapshot's nodes: from its memo when an earlier cycle made it, else made now."""
    memo = snap.layout
    if memo is not None and isinstance(memo.layout, NodeLayout):
        return memo.layout
    layout = _build(snap)
    if memo is not None:
        memo.layout = layout
    return layout


def _build(snap: ClusterSnapshot) -> NodeLayout:
    nodes = sorted((n for n in snap.nodes.values() if n.schedulable), key=lambda n: n.node_id)
    by_name: dict[str, list[int]] = {}
    by_rack: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        by_name.setdefault(n.node_id, []).append(i)
        if n.host != n.node_id:
            by_name.setdefault(n.host, []).append(i)
        by_rack.setdefault(n.rack, []).append(i)
    col: dict[str, int] = {}
    for n in nodes:
        for r in n.capability.amounts:
            col.setdefault(r, len(col))
    types = list(col)
    capability = _matrix([n.capability for n in nodes], types)  # shared by every cycle until the nodes change
    inverse = [1.0 / c if (c := snap.capacity.get(r)) > 0 else 0.0 for r in types]
    # best_node sums a node's waste over its free vector, which keeps its capability's type order. Summing the
    # matrix rows in one order gives the same floats when there are at most two types (addition commutes) or
    # every node's order is a subsequence of one full order (a type a node lacks, or has none of free, adds
    # +0.0, which changes no sum). Otherwise waste is summed node by node.
    waste_order: list[int] | None = None
    if len(types) <= 2:
        waste_order = list(range(len(types)))
    else:
        orders = {tuple(n.capability.amounts) for n in nodes}
        full = [o for o in orders if len(o) == len(types)]
        if len(full) == 1 and all(_subsequence(o, full[0]) for o in orders):
            waste_order = [col[r] for r in full[0]]
    return NodeLayout(ids=tuple(n.node_id for n in nodes), position={n.node_id: i for i, n in enumerate(nodes)},
                      by_name=by_name, by_rack=by_rack, col=col, capability_matrix=capability, inverse=inverse,
                      waste_order=waste_order)


def _subsequence(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    rest = iter(long)
    return all(r in rest for r in short)


class _Allocation:
    """The layout's node views and their allocated amounts (type x node) as of a snapshot's mark."""

    __slots__ = ("allocated", "mark", "views")

    def __init__(self, views: list[NodeView], allocated: npt.NDArray[np.int64], mark: int) -> None:
        self.views = views
        self.allocated = allocated
        self.mark = mark


def node_allocation(snap: ClusterSnapshot, layout: NodeLayout) -> tuple[list[NodeView], npt.NDArray[np.int64]]:
    """The snapshot's views of the layout's nodes, in its order, and their allocated amounts (type x node); the
    caller may change neither. For the newest snapshot of a builder that logs its changes, from the memo, brought
    up to date from the nodes logged since; for any other, read from every node."""
    memo = snap.layout
    if memo is None or snap.nodes is not memo.nodes:
        return _read(snap, layout)
    kept = memo.allocation
    if not isinstance(kept, _Allocation):
        views, allocated = _read(snap, layout)
        memo.allocation = kept = _Allocation(views, allocated, memo.mark)
    elif changed := memo.changes(kept.mark):
        views, allocated = list(kept.views), kept.allocated.copy()  # earlier cycles may still hold the old ones
        col, position, nodes = layout.col, layout.position, snap.nodes
        for node_id in set(changed):
            at = position.get(node_id)
            if at is None:
                continue
            view = views[at] = nodes[node_id]
            amounts = view.allocated.amounts
            for r, k in col.items():
                allocated[k, at] = amounts.get(r, 0)
        allocated.setflags(write=False)
        memo.allocation = kept = _Allocation(views, allocated, memo.mark)
    memo.drop()
    return kept.views, kept.allocated


def _read(snap: ClusterSnapshot, layout: NodeLayout) -> tuple[list[NodeView], npt.NDArray[np.int64]]:
    views = [snap.nodes[nid] for nid in layout.ids]
    return views, _matrix([n.allocated for n in views], list(layout.col))


def _matrix(amounts: list[Resources], types: list[str]) -> npt.NDArray[np.int64]:
    """Type x node, read-only: each type's amount in each node's resources (0 where it has none)."""
    out = np.array([[a.amounts.get(r, 0) for a in amounts] for r in types],
                   dtype=np.int64).reshape((len(types), len(amounts)))
    out.setflags(write=False)
    return out
