"""The per-cycle scratch every policy of one cycle shares: the placements made so far, overlaid on the snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from random import Random
from typing import Protocol

from common.ids import AppId, NodeId, QueuePath
from common.resources import Resources
from rm.core.model import AskKey, AskView, ClusterSnapshot, NodeView
from rm.core.plan import Place, Plan, Rejection


class PlacementIndex(Protocol):
    """A per-cycle index over the nodes (the packer's ``NodeIndex``) that follows this cycle's placements."""

    def placed(self, node_id: NodeId, r: Resources) -> None: ...


_ZERO = Resources()


@dataclass(slots=True)
class CycleContext:
    """Per-cycle scratch: the placements made so far overlaid on the snapshot."""

    snap: ClusterSnapshot
    now: float
    rng: Random
    plan: Plan
    node_alloc: dict[NodeId, Resources] = field(default_factory=dict)  # proposed extra per node
    app_alloc: dict[AppId, Resources] = field(default_factory=dict)  # proposed extra per app
    app_am_alloc: dict[AppId, Resources] = field(default_factory=dict)
    queue_alloc: dict[QueuePath, Resources] = field(default_factory=dict)  # proposed extra per queue
    placed: dict[AskKey, int] = field(default_factory=dict)  # containers placed per ask this cycle
    node_index: PlacementIndex | None = None  # built by the packer on first use

    def available(self, node: NodeView) -> Resources:
        extra = self.node_alloc.get(node.node_id)
        avail = node.available
        return avail if extra is None else (avail - extra).clamp_min_zero()

    def app_used(self, app_id: AppId) -> Resources:
        base = self.snap.apps[app_id].used
        extra = self.app_alloc.get(app_id)
        return base if extra is None else base + extra

    def fair_share(self, app_id: AppId) -> Resources | None:
        """The app's fair share: this cycle's when it computed the shares, else the last one known."""
        share = self.plan.shares.get(app_id)
        return share if share is not None else self.snap.apps[app_id].fair_share

    def remaining(self, ask: AskView) -> int:
        return ask.num_containers - self.placed.get((ask.app_id, ask.allocation_request_id), 0)

    def place(self, ask: AskView, node: NodeView, *, from_leftover: bool = False) -> Place:
        p = Place(
            app_id=ask.app_id,
            allocation_request_id=ask.allocation_request_id,
            node_id=node.node_id,
            resource=ask.capability,
            priority=ask.priority,
            ask_type=ask.ask_type,
            from_leftover=from_leftover,
            is_am=ask.is_am,
            stage=ask.stage,
        )
        r = ask.capability
        node_id, app_id, key = node.node_id, ask.app_id, (ask.app_id, ask.allocation_request_id)
        self.node_alloc[node_id] = self.node_alloc.get(node_id, _ZERO) + r
        if self.node_index is not None:
            self.node_index.placed(node_id, r)
        self.app_alloc[app_id] = self.app_alloc.get(app_id, _ZERO) + r
        if ask.is_am:
            self.app_am_alloc[app_id] = self.app_am_alloc.get(app_id, _ZERO) + r
        q = self.snap.apps[app_id].queue
        self.queue_alloc[q] = self.queue_alloc.get(q, _ZERO) + r
        self.placed[key] = self.placed.get(key, 0) + 1
        plan = self.plan
        plan.placements.append(p)
        plan.rejections.pop(key, None)
        plan.counters["placed"] += 1
        if from_leftover:
            plan.counters["placed_from_leftover"] += 1
        return p

    def reject(self, ask: AskView, reason: str, /, **detail: object) -> None:
        self.reject_with(ask, reason, detail)

    def reject_with(self, ask: AskView, reason: str, detail: Mapping[str, object]) -> None:
        """``reject`` with the detail as a mapping, which may hold any key ("ask" too) and is copied: asks that
        fail alike may share one (on a full cluster most asks of a cycle are rejected, so this stays lean)."""
        rejections = self.plan.rejections
        key = (ask.app_id, ask.allocation_request_id)
        if key not in rejections:
            rejections[key] = Rejection(ask.app_id, ask.allocation_request_id, reason, dict(detail))
