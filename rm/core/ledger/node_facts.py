"""What every allocate answer and every ask check reads of the node set, kept up to date as nodes change
rather than recomputed over all of them: the free room and total capability of the schedulable nodes, how many
there are, the resource types the nodes offer and, per type, the largest amount a node offers, and the capacity
the reservation and deadline plans are cut from (every node not gone, schedulable or not).

An allocate call used to walk every node for these whenever any node had changed since the last call (a
registration, a health flip, a node lost), which at 10,000 nodes cost tens of milliseconds per call. Here a
node's change costs O(its resource types): what the node counted for before is taken out and what it counts
for now is put in. ``LedgerBase.check_views`` compares all of it with a fresh computation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from common.ids import NodeId
from common.resources import MEMORY, VCORES, Resources
from rm.core.entities import GONE_NODE_STATES, Node

OFFERING = ("RUNNING", "NEW", "UNHEALTHY")  # the states whose nodes bound the maximum allocation


@dataclass(frozen=True, slots=True)
class _Counted:
    """What a node counted for when last seen: its capability, whether it bounds the maximum allocation and
    whether it was schedulable (its free room and capability in the totals)."""

    capability: Resources
    offering: bool
    schedulable: bool
    planned: bool  # not gone: in the capacity the plans are cut from


class NodeFacts:
    """The node set's totals and bounds; ``node_changed`` after any change of a node's state or capability,
    ``allocated``/``freed`` after any change of a schedulable node's allocation."""

    def __init__(self, nodes: Iterable[Node]) -> None:
        self._counted: dict[NodeId, _Counted] = {}
        self._free: dict[str, int] = {}
        self._capacity: dict[str, int] = {}
        self._planned: dict[str, int] = {}
        self.schedulable = 0
        self._types: Counter[str] = Counter()  # nodes (in any state) offering each type
        self._offering = 0  # nodes bounding the maximum allocation
        self._amounts: dict[str, Counter[int]] = {}  # per type, the amounts offering nodes offer, and how many
        self._resource_types: frozenset[str] | None = None
        self._max: Resources | None = None
        self._max_known = False
        for node in nodes:
            self._add(node)

    # ------------------------------------------------------------------ reads

    def free(self) -> Resources:
        return Resources(self._free)

    def capacity(self) -> Resources:
        return Resources(self._capacity)

    def planned(self) -> Resources:
        """The capability of every node that is not gone (nodes that must re-register after an RM restart,
        unhealthy and new ones count; lost, shut-down and decommissioned ones do not): what the reservation and
        deadline plans are cut from."""
        return Resources(self._planned)

    def resource_types(self) -> frozenset[str]:
        """memory-mb, vcores and every type some node offers."""
        if self._resource_types is None:
            self._resource_types = frozenset({MEMORY, VCORES, *self._types})
        return self._resource_types

    def max_allocation(self) -> Resources | None:
        """Per type, the largest amount a running, new or unhealthy node offers; None without such a node."""
        if not self._max_known:
            self._max = Resources({t: max(c) for t, c in self._amounts.items()}) if self._offering else None
            self._max_known = True
        return self._max

    def differences(self, fresh: NodeFacts) -> list[str]:
        """Where these kept facts differ from ``fresh`` ones, built from the same nodes (empty: they agree)."""
        out = []
        for what, kept, new in (("free room", self.free(), fresh.free()),
                                ("capacity", self.capacity(), fresh.capacity()),
                                ("planned capacity", self.planned(), fresh.planned()),
                                ("schedulable nodes", self.schedulable, fresh.schedulable),
                                ("resource types", self.resource_types(), fresh.resource_types()),
                                ("maximum allocation", self.max_allocation(), fresh.max_allocation())):
            if kept != new:
                out.append(f"node facts: {what} kept {kept} != fresh {new}")
        return out

    # ------------------------------------------------------------------ changes

    def node_changed(self, node: Node) -> None:
        """``node`` registered, changed state or capability (its allocation is what it was when last counted)."""
        old = self._counted.get(node.node_id)
        if old is not None:
            self._remove(node, old)
        self._add(node)

    def allocated(self, node: Node, before: Resources, r: Resources) -> None:
        """``r`` was allocated on the schedulable ``node``, which held ``before``."""
        if node.allocated.fits_in(node.capability):
            _subtract(self._free, r)
        else:  # over its capability (it came back smaller, or recovered holding more): count what is free
            self._replace_free(node.capability, before, node.allocated)

    def freed(self, node: Node, before: Resources, r: Resources) -> None:
        """``r`` was freed on the schedulable ``node``, which held ``before``."""
        if before.fits_in(node.capability):
            _add(self._free, r)
        else:
            self._replace_free(node.capability, before, node.allocated)

    def _replace_free(self, capability: Resources, before: Resources, after: Resources) -> None:
        _subtract(self._free, (capability - before).clamp_min_zero())
        _add(self._free, (capability - after).clamp_min_zero())

    def _add(self, node: Node) -> None:
        cap = node.capability
        counted = _Counted(cap, node.state in OFFERING, node.schedulable, node.state not in GONE_NODE_STATES)
        self._counted[node.node_id] = counted
        if counted.planned:
            _add(self._planned, cap)
        self._count_types(cap, 1)
        if counted.offering:
            self._count_amounts(cap, 1)
        if counted.schedulable:
            self.schedulable += 1
            _add(self._capacity, cap)
            _add(self._free, (cap - node.allocated).clamp_min_zero())

    def _remove(self, node: Node, old: _Counted) -> None:
        cap = old.capability
        if old.planned:
            _subtract(self._planned, cap)
        self._count_types(cap, -1)
        if old.offering:
            self._count_amounts(cap, -1)
        if old.schedulable:
            self.schedulable -= 1
            _subtract(self._capacity, cap)
            _subtract(self._free, (cap - node.allocated).clamp_min_zero())

    def _count_types(self, cap: Resources, step: int) -> None:
        for t in cap.amounts:
            n = self._types[t] + step
            if n:
                self._types[t] = n
            else:
                del self._types[t]
            if n == 0 or (n == 1 and step == 1):  # a type gone, or new
                self._resource_types = None

    def _count_amounts(self, cap: Resources, step: int) -> None:
        self._max_known = False
        self._offering += step
        for t, v in cap.amounts.items():
            amounts = self._amounts.setdefault(t, Counter())
            n = amounts[v] + step
            if n:
                amounts[v] = n
            else:
                del amounts[v]
                if not amounts:
                    del self._amounts[t]


def _add(into: dict[str, int], r: Resources) -> None:
    for k, v in r.amounts.items():
        into[k] = into.get(k, 0) + v


def _subtract(into: dict[str, int], r: Resources) -> None:
    for k, v in r.amounts.items():
        into[k] = into.get(k, 0) - v
