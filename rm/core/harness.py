"""A tiny in-memory cluster for tests and dry runs: build a snapshot, run a cycle, fold the plan back in.

``Harness`` keeps nodes, queues and apps as plain mutable records and turns them into a fresh
``ClusterSnapshot`` for every cycle. ``apply`` plays the applier's part — placed containers are added to node
and app usage and taken off the asks — so successive cycles see the cluster fill up. ``validate`` checks a plan
against the state it was made from: no node over capacity, every placement for an existing app and ask,
never more containers than asked, strict locality and blacklists respected. ``cycle`` validates every plan.

    h = Harness()
    h.node("n1", vcores=9, memory_mb=18_432)
    a = h.app(asks=[ask(vcores=1, memory_mb=4_096, num=8)])
    plan = h.cycle()
    h.apply(plan)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from random import Random

from common.ids import AppId, NodeId, QueuePath, app_id
from common.resources import Resources
from rm.core.cycle import run_cycle
from rm.core.model import AppView, AskType, AskView, ClusterSnapshot, NodeView, QueueView
from rm.core.plan import Plan
from rm.core.policies.api import Pipeline, ShareCalculator
from rm.core.policies.registry import default_pipeline
from rm.core.policies.tetris import locality_allows

ROOT = QueuePath("root")
DEFAULT_QUEUE = QueuePath("root.default")
DEFAULT_RACK = "/default-rack"
NM_PORT = 8041
CLUSTER_TS = 1


class PlanViolation(AssertionError):
    """A plan that would break the cluster's invariants."""


@dataclass(frozen=True, slots=True)
class AskSpec:
    """One ask as the test describes it; ``Harness.app`` gives it an app and a request id."""

    capability: Resources
    num: int = 1
    priority: int = 1
    ask_type: AskType = "DEFAULT"
    nodes: tuple[str, ...] = ()
    racks: tuple[str, ...] = ()
    relax: bool = True
    is_am: bool = False
    stage: str = ""
    remaining_work_s: float = 0.0


def ask(
    vcores: int = 1,
    memory_mb: int = 1024,
    num: int = 1,
    priority: int = 1,
    ask_type: AskType = "DEFAULT",
    nodes: Sequence[str] = (),
    relax: bool = True,
    is_am: bool = False,
    *,
    racks: Sequence[str] = (),
    stage: str = "",
    remaining_work_s: float = 0.0,
    **extra: int,
) -> AskSpec:
    """An ask for ``num`` containers of ``<vcores, memory_mb, **extra>`` (extra: other types, e.g. gpu=1)."""
    if num < 0:
        raise ValueError("num must be >= 0")
    return AskSpec(
        capability=Resources.of(memory_mb=memory_mb, vcores=vcores, **extra),
        num=num,
        priority=priority,
        ask_type=ask_type,
        nodes=tuple(nodes),
        racks=tuple(racks),
        relax=relax,
        is_am=is_am,
        stage=stage,
        remaining_work_s=remaining_work_s,
    )


@dataclass(frozen=True, slots=True)
class NodeHandle:
    id: NodeId
    host: str


@dataclass(frozen=True, slots=True)
class AppHandle:
    id: AppId


@dataclass(slots=True)
class _Node:
    host: str
    rack: str
    capability: Resources
    allocated: Resources
    schedulable: bool


@dataclass(slots=True)
class _Queue:
    capacity: float
    max_capacity: float
    max_am_share: float
    weight: float
    running: bool


@dataclass(slots=True)
class _App:
    queue: QueuePath
    user: str
    priority: int
    submit_time: float
    weight: float
    used: Resources
    am_used: Resources
    blacklist: frozenset[NodeId]
    asks: dict[int, AskView] = field(default_factory=dict)
    fair_share: Resources | None = None


class Harness:
    """Builder for a tiny cluster plus the real scheduling core; see the module docstring."""

    def __init__(self) -> None:
        self.version = 0
        self.plans: list[Plan] = []
        self._nodes: dict[NodeId, _Node] = {}
        self._apps: dict[AppId, _App] = {}
        self._queues: dict[QueuePath, _Queue] = {
            ROOT: _Queue(1.0, 1.0, 0.5, 1.0, True),
            DEFAULT_QUEUE: _Queue(1.0, 1.0, 0.5, 1.0, True),
        }
        self._implicit_default = True

    # ------------------------------------------------------------------------------------- building

    def node(
        self,
        name: str,
        vcores: int = 8,
        memory_mb: int = 8192,
        rack: str = DEFAULT_RACK,
        *,
        allocated: Resources | None = None,
        schedulable: bool = True,
        **extra: int,
    ) -> NodeHandle:
        """A node ``name`` (its host; the node id is ``name:8041``); extra resource types as keywords."""
        node_id = NodeId(f"{name}:{NM_PORT}")
        if node_id in self._nodes:
            raise ValueError(f"node {name} already exists")
        self._nodes[node_id] = _Node(
            host=name,
            rack=rack,
            capability=Resources.of(memory_mb=memory_mb, vcores=vcores, **extra),
            allocated=allocated or Resources(),
            schedulable=schedulable,
        )
        self.version += 1
        return NodeHandle(node_id, name)

    def queue(
        self,
        path: str,
        capacity: float,
        max_capacity: float = 1.0,
        *,
        max_am_share: float = 0.5,
        weight: float = 1.0,
        running: bool = True,
    ) -> QueuePath:
        """A queue; capacities are fractions of the parent's. Missing parents are made at 1.0/1.0.

        The implicit ``root.default`` disappears once any other queue is declared (declare it to keep it).
        """
        qp = QueuePath(path)
        if not path.startswith("root.") or path.endswith("."):
            raise ValueError(f"queue paths look like root.a.b, not {path!r}")
        if not (0.0 <= capacity <= max_capacity <= 1.0):
            raise ValueError("need 0 <= capacity <= max_capacity <= 1")
        if self._implicit_default:
            self._implicit_default = False
            if qp != DEFAULT_QUEUE:
                del self._queues[DEFAULT_QUEUE]
        parts = path.split(".")
        for i in range(2, len(parts)):
            self._queues.setdefault(QueuePath(".".join(parts[:i])), _Queue(1.0, 1.0, 0.5, 1.0, True))
        self._queues[qp] = _Queue(capacity, max_capacity, max_am_share, weight, running)
        self.version += 1
        return qp

    def app(
        self,
        queue: str = DEFAULT_QUEUE,
        asks: Sequence[AskSpec] = (),
        user: str = "alice",
        priority: int = 0,
        submit_time: float | None = None,
        weight: float = 1.0,
        *,
        used: Resources | None = None,
        am_used: Resources | None = None,
        blacklist: Sequence[str] = (),
        fair_share: Resources | None = None,
    ) -> AppHandle:
        """An app; ask ``i`` of ``asks`` gets allocation_request_id ``i``. submit_time defaults to its seq.
        ``fair_share`` is the share last computed for it, which cycles that compute none read."""
        seq = len(self._apps) + 1
        aid = app_id(CLUSTER_TS, seq)
        state = _App(
            queue=QueuePath(queue),
            user=user,
            priority=priority,
            submit_time=float(seq) if submit_time is None else submit_time,
            weight=weight,
            used=used or Resources(),
            am_used=am_used or Resources(),
            blacklist=frozenset(NodeId(b if ":" in b else f"{b}:{NM_PORT}") for b in blacklist),
            fair_share=fair_share,
        )
        for i, spec in enumerate(asks):
            state.asks[i] = AskView(
                app_id=aid,
                allocation_request_id=i,
                priority=spec.priority,
                capability=spec.capability,
                num_containers=spec.num,
                nodes=spec.nodes,
                racks=spec.racks,
                relax_locality=spec.relax,
                ask_type=spec.ask_type,
                remaining_work_s=spec.remaining_work_s,
                is_am=spec.is_am,
                stage=spec.stage,
            )
        self._apps[aid] = state
        self.version += 1
        return AppHandle(aid)

    # ------------------------------------------------------------------------------------- snapshot

    def snapshot(self) -> ClusterSnapshot:
        nodes = {
            nid: NodeView(nid, n.host, n.rack, n.capability, n.allocated, n.schedulable)
            for nid, n in self._nodes.items()
        }
        apps = {
            aid: AppView(
                app_id=aid,
                queue=a.queue,
                user=a.user,
                priority=a.priority,
                submit_time=a.submit_time,
                used=a.used,
                asks=tuple(v for v in a.asks.values() if v.num_containers > 0),
                weight=a.weight,
                am_used=a.am_used,
                blacklist=a.blacklist,
                fair_share=a.fair_share,
            )
            for aid, a in self._apps.items()
        }
        return ClusterSnapshot(self.version, nodes, apps, self._queue_views())

    def _queue_views(self) -> dict[QueuePath, QueueView]:
        children: dict[QueuePath, list[QueuePath]] = {p: [] for p in self._queues}
        for p in sorted(self._queues):
            if p != ROOT:
                children[QueuePath(p.rsplit(".", 1)[0])].append(p)
        views: dict[QueuePath, QueueView] = {}

        def build(path: QueuePath, parent: QueueView | None) -> None:
            q = self._queues[path]
            kids = tuple(children[path])
            if sum(self._queues[k].capacity for k in kids) > 1.0 + 1e-9:
                raise ValueError(f"children of {path} have capacities summing above 1")
            view = QueueView(
                path=path,
                parent=parent.path if parent else None,
                children=kids,
                capacity=q.capacity,
                max_capacity=q.max_capacity,
                abs_capacity=(parent.abs_capacity if parent else 1.0) * q.capacity,
                abs_max_capacity=(parent.abs_max_capacity if parent else 1.0) * q.max_capacity,
                weight=q.weight,
                max_am_share=q.max_am_share,
                running=q.running,
            )
            views[path] = view
            for k in kids:
                build(k, view)

        build(ROOT, None)
        for a in self._apps.values():
            if a.queue not in views or not views[a.queue].is_leaf:
                raise ValueError(f"app queue {a.queue} is not a leaf queue")
        return views

    # ---------------------------------------------------------------------------------------- cycles

    def cycle(
        self,
        pipeline: Pipeline | None = None,
        now: float = 0.0,
        seed: int = 0,
        *,
        shares: ShareCalculator | None = None,
    ) -> Plan:
        """Run one cycle (default: the registry's default pipeline and shares) and validate its plan."""
        if pipeline is None:
            pipeline, default_shares = default_pipeline()
            shares = shares or default_shares
        plan = run_cycle(self.snapshot(), pipeline, shares=shares, now=now, rng=Random(seed))
        self.validate(plan)
        self.plans.append(plan)
        return plan

    def apply(self, plan: Plan) -> None:
        """Fold a plan's placements into node and app usage and take them off the asks."""
        self.validate(plan)
        for p in plan.placements:
            node = self._nodes[p.node_id]
            node.allocated = node.allocated + p.resource
            app = self._apps[p.app_id]
            app.used = app.used + p.resource
            if p.is_am:
                app.am_used = app.am_used + p.resource
            a = app.asks[p.allocation_request_id]
            app.asks[p.allocation_request_id] = replace(a, num_containers=a.num_containers - 1)
        self.version += 1

    def validate(self, plan: Plan) -> None:
        """Raise PlanViolation unless the plan is safe to apply to the current state."""
        problems: list[str] = []
        if plan.based_on != self.version:
            problems.append(f"plan is based on version {plan.based_on}, the harness is at {self.version}")
        extra: dict[NodeId, Resources] = {}
        per_ask: Counter[tuple[AppId, int]] = Counter()
        for p in plan.placements:
            node = self._nodes.get(p.node_id)
            app = self._apps.get(p.app_id)
            a = app.asks.get(p.allocation_request_id) if app else None
            if node is None or app is None or a is None:
                problems.append(f"placement for unknown node, app or ask: {p}")
                continue
            if not node.schedulable:
                problems.append(f"placement on unschedulable node {p.node_id}")
            if p.resource != a.capability:
                problems.append(f"placement of {p.resource} for an ask of {a.capability}")
            if p.node_id in app.blacklist:
                problems.append(f"placement on {p.node_id}, blacklisted by {p.app_id}")
            view = NodeView(p.node_id, node.host, node.rack, node.capability, node.allocated)
            if not locality_allows(a, view):
                problems.append(f"placement on {p.node_id} breaks strict locality of ask {a.key}")
            extra[p.node_id] = extra.get(p.node_id, Resources()) + p.resource
            per_ask[(p.app_id, p.allocation_request_id)] += 1
        for nid, more in extra.items():
            node = self._nodes[nid]
            if not (node.allocated + more).fits_in(node.capability):
                problems.append(f"node {nid} over capacity: {node.allocated} + {more} > {node.capability}")
        for (aid, rid), n in per_ask.items():
            wanted = self._apps[aid].asks[rid].num_containers
            if n > wanted:
                problems.append(f"{n} containers placed for ask {(aid, rid)} which wants {wanted}")
        if problems:
            raise PlanViolation("; ".join(problems))
