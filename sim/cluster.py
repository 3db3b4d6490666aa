"""The simulator's light cluster state: nodes, apps as the RM sees them, containers; snapshots for the core.

It plays the part of ``rm.core.state.Ledger`` for the simulator, with the same semantics where they
matter to scheduling: an app's first ask is its AM container; an AM's ask changes replace its entries,
minus containers allocated but not yet delivered (``am_allocate``); a placement takes one container off its
ask; a finished app frees everything it holds. Views are rebuilt only for the nodes and apps that changed
since the last snapshot, so building one costs about O(changes), not O(cluster).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from am.policies import AskDecision
from common.ids import AppId, NodeId, QueuePath
from common.resources import Resources
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView, QueueView
from rm.core.plan import Place
from rm.core.preemption import choose_victims
from rm.core.reservation.view import EMPTY_VIEW, ReservationView

AM_ASK_ID = -1  # the allocation request id of the AM container's ask, as in the RM


@dataclass(frozen=True, slots=True)
class SimNodeView(NodeView):
    """A NodeView whose free vector is computed once, not on every read (policies read it per node scan)."""

    free: Resources = field(default_factory=Resources)

    @property
    def available(self) -> Resources:
        return self.free


@dataclass(slots=True)
class SimNode:
    node_id: NodeId
    host: str
    rack: str
    capability: Resources
    phase: float  # its NodeManager heartbeats at phase + k × interval
    allocated: Resources = field(default_factory=Resources)


@dataclass(slots=True)
class SimContainer:
    cid: int
    app: int
    node: NodeId
    resource: Resources
    rid: int
    is_am: bool
    allocated_at: float
    stage: str = ""
    task: int = -1
    start: float = 0.0
    end: float = 0.0
    exit_status: int = 0
    live: bool = True


@dataclass(slots=True)
class SimApp:
    index: int
    app_id: AppId
    queue: QueuePath
    user: str
    priority: int
    submit_time: float
    am_resource: Resources
    am_pending: bool = True
    asks: dict[int, AskView] = field(default_factory=dict)
    used: Resources = field(default_factory=Resources)
    am_used: Resources = field(default_factory=Resources)
    containers: set[int] = field(default_factory=set)
    undelivered: list[int] = field(default_factory=list)
    completed: list[int] = field(default_factory=list)
    fair_share: Resources = field(default_factory=Resources)
    size_hint_s: float | None = None
    finished: bool = False
    reservation_id: str | None = None
    usage: list[tuple[float, float, Resources]] | None = None  # (allocated, released, resource) when tracked


class SimCluster:
    """Nodes, live apps and containers, with incremental ``ClusterSnapshot`` building."""

    def __init__(self, nodes: list[SimNode], queues: dict[QueuePath, QueueView]) -> None:
        self.nodes = {n.node_id: n for n in nodes}
        self.queues = queues
        self.capacity = Resources()
        for n in nodes:
            self.capacity = self.capacity + n.capability
        self.apps: dict[int, SimApp] = {}
        self.by_id: dict[AppId, SimApp] = {}
        self.containers: dict[int, SimContainer] = {}
        self.allocated = Resources()
        self.version = 0
        self.freed = True  # capacity came free since the last cycle
        self.asked = False  # asks grew since the last cycle
        self._node_views: dict[NodeId, NodeView] = {}
        self._app_views: dict[AppId, AppView] = {}
        self._dirty_nodes: set[NodeId] = set(self.nodes)
        self._dirty_apps: set[int] = set()
        self._next_cid = 1

    # ------------------------------------------------------------------------------ apps and asks

    def add_app(self, app: SimApp) -> None:
        self.apps[app.index] = app
        self.by_id[app.app_id] = app
        self._touch(app)
        self.asked = True

    def update_asks(self, app: SimApp, changes: list[AskDecision]) -> None:
        """An AM's allocate: each entry replaces the RM's, less containers allocated but not delivered."""
        for d in changes:
            undelivered = sum(1 for c in app.undelivered if self.containers[c].rid == d.allocation_request_id)
            num = max(0, d.num_containers - undelivered)
            old = app.asks.get(d.allocation_request_id)
            if num == 0:
                if old is not None:
                    del app.asks[d.allocation_request_id]
                    self._touch(app)
                continue
            if old is None or num > old.num_containers:
                self.asked = True
            app.asks[d.allocation_request_id] = AskView(
                app_id=app.app_id, allocation_request_id=d.allocation_request_id, priority=d.priority,
                capability=d.capability, num_containers=num, ask_type=d.ask_type,
                remaining_work_s=d.remaining_work_s, stage=d.stage,
            )
            self._touch(app)

    def has_pending(self) -> bool:
        return any(a.am_pending or a.asks for a in self.apps.values())

    def touch(self, app: SimApp) -> None:
        """The app's view must be rebuilt (e.g. its size hint changed)."""
        self._touch(app)

    def _touch(self, app: SimApp) -> None:
        self._dirty_apps.add(app.index)

    # ------------------------------------------------------------------------------ containers

    def allocate(self, p: Place, now: float) -> SimContainer | None:
        """Apply one placement of a plan; None when it no longer applies (as the RM's applier skips it)."""
        app = self.by_id.get(p.app_id)
        node = self.nodes.get(p.node_id)
        if app is None or app.finished or node is None:
            return None
        if not (node.allocated + p.resource).fits_in(node.capability):
            return None
        if p.is_am:
            if not app.am_pending:
                return None
            app.am_pending = False
        else:
            ask = app.asks.get(p.allocation_request_id)
            if ask is None or ask.num_containers <= 0:
                return None
            if ask.num_containers == 1:
                del app.asks[p.allocation_request_id]
            else:
                app.asks[p.allocation_request_id] = _with_count(ask, ask.num_containers - 1)
        c = SimContainer(self._next_cid, app.index, node.node_id, p.resource, p.allocation_request_id,
                         p.is_am, now, stage=p.stage)
        self._next_cid += 1
        self.containers[c.cid] = c
        node.allocated = node.allocated + p.resource
        self.allocated = self.allocated + p.resource
        app.used = app.used + p.resource
        if p.is_am:
            app.am_used = app.am_used + p.resource
        else:
            app.undelivered.append(c.cid)
        app.containers.add(c.cid)
        self._dirty_nodes.add(node.node_id)
        self._touch(app)
        return c

    def free(self, c: SimContainer, now: float) -> None:
        """The container ended: its node and app get its resources back."""
        if not c.live:
            return
        c.live = False
        node = self.nodes[c.node]
        node.allocated = node.allocated - c.resource
        self.allocated = self.allocated - c.resource
        self._dirty_nodes.add(node.node_id)
        app = self.apps.get(c.app)
        if app is not None:
            app.used = app.used - c.resource
            if c.is_am:
                app.am_used = app.am_used - c.resource
            app.containers.discard(c.cid)
            if app.usage is not None:
                app.usage.append((c.allocated_at, now, c.resource))
            self._touch(app)
        self.freed = True

    def victims(self, app: SimApp, amount: Resources) -> list[SimContainer]:
        """What to preempt to take ``amount`` back from ``app``, as the RM's ``apply_preemptions`` chooses:
        its newest containers running a task (not the AM), preferring the fewest on one node whose free room
        plus them covers the amount, so the blocked ask fits there next cycle. Containers not handed to the
        AM yet (or handed back) are left alone."""
        live = [c for cid in app.containers if (c := self.containers[cid]).live and not c.is_am and c.task >= 0]
        newest = sorted(live, key=lambda c: (c.allocated_at, c.cid), reverse=True)

        def free_room(node_id: NodeId) -> Resources:
            node = self.nodes[node_id]
            return (node.capability - node.allocated).clamp_min_zero()

        return choose_victims(newest, amount, node_of=lambda c: c.node, resource_of=lambda c: c.resource,
                              free_room=free_room)

    def finish_app(self, app: SimApp, now: float) -> None:
        """The AM unregistered: every container of the app is released and the app leaves the snapshot."""
        app.finished = True
        held = sorted(app.containers)
        for cid in held:
            self.free(self.containers[cid], now)
        for cid in held + app.undelivered + app.completed:
            self.containers.pop(cid, None)
        app.asks.clear()
        app.undelivered.clear()
        app.completed.clear()
        del self.apps[app.index]
        del self.by_id[app.app_id]
        self._app_views.pop(app.app_id, None)
        self._dirty_apps.discard(app.index)
        self.freed = True

    # ------------------------------------------------------------------------------ snapshots

    def snapshot(self, reservations: ReservationView = EMPTY_VIEW) -> ClusterSnapshot:
        for nid in self._dirty_nodes:
            n = self.nodes[nid]
            self._node_views[nid] = SimNodeView(node_id=nid, host=n.host, rack=n.rack, capability=n.capability,
                                                allocated=n.allocated,
                                                free=(n.capability - n.allocated).clamp_min_zero())
        self._dirty_nodes.clear()
        for index in self._dirty_apps:
            app = self.apps.get(index)
            if app is None:
                continue
            asks = list(app.asks.values())
            if app.am_pending:
                asks.insert(0, AskView(app_id=app.app_id, allocation_request_id=AM_ASK_ID, priority=-1,
                                       capability=app.am_resource, num_containers=1, is_am=True, stage="am"))
            if not asks and app.used.is_zero():
                self._app_views.pop(app.app_id, None)
                continue
            self._app_views[app.app_id] = AppView(
                app_id=app.app_id, queue=app.queue, user=app.user, priority=app.priority,
                submit_time=app.submit_time, used=app.used, asks=tuple(asks), am_used=app.am_used,
                size_hint_s=app.size_hint_s, reservation_id=app.reservation_id,
            )
        self._dirty_apps.clear()
        self.version += 1
        return ClusterSnapshot(version=self.version, nodes=self._node_views, apps=self._app_views,
                               queues=self.queues, reservations=reservations)


def _with_count(ask: AskView, num: int) -> AskView:
    return AskView(
        app_id=ask.app_id, allocation_request_id=ask.allocation_request_id, priority=ask.priority,
        capability=ask.capability, num_containers=num, nodes=ask.nodes, racks=ask.racks,
        relax_locality=ask.relax_locality, ask_type=ask.ask_type, remaining_work_s=ask.remaining_work_s,
        is_am=ask.is_am, stage=ask.stage,
    )
