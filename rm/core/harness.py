"""A tiny cluster for tests and dry runs: build it, run a cycle, fold the plan back in.

``Harness`` is a set of builders over the one ledger (``rm.core.ledger``): ``node``, ``queue`` and ``app``
seed its state directly (``Ledger.seed_node`` / ``seed_app``), and every cycle runs on the ledger's own
snapshot. ``apply`` hands the plan to the ledger, which turns placements into containers and takes them off
the asks, so successive cycles see the cluster fill up. ``validate`` checks a plan against the state it was
made from: no node over capacity, every placement for an existing app and ask, never more containers than
asked, strict locality and blacklists respected. ``cycle`` validates every plan. An ask marked ``is_am`` is
the app's AM container (the ledger asks for it under ``AM_ASK_ID``, ahead of the app's other asks).

    h = Harness()
    h.node("n1", vcores=9, memory_mb=18_432)
    a = h.app(asks=[ask(vcores=1, memory_mb=4_096, num=8)])
    plan = h.cycle()
    h.apply(plan)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from random import Random

from common.ids import AppId, NodeId, QueuePath, parse_app_id
from common.resources import Resources
from common.terms import NO_TERMS, AppTerms
from rm.core.admission import Admission
from rm.core.cycle import run_cycle
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.model import AskType, ClusterSnapshot, QueueView
from rm.core.plan import Plan
from rm.core.policies.api import Pipeline, ShareCalculator
from rm.core.policies.registry import default_pipeline
from rm.core.policies.tetris import locality_allows
from rm.core.state_types import CoreConfig, SubmitSpec

ROOT = QueuePath("root")
DEFAULT_QUEUE = QueuePath("root.default")
DEFAULT_RACK = "/default-rack"
NM_PORT = 8041
CLUSTER_TS = 1
HARNESS_CORE = CoreConfig(durable=False)


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
class _Queue:
    capacity: float
    max_capacity: float
    max_am_share: float
    weight: float
    running: bool


class Harness:
    """Builder for a tiny cluster plus the real scheduling core; see the module docstring."""

    def __init__(self, *, admission: Admission | None = None) -> None:
        self.plans: list[Plan] = []
        self.ledger = Ledger(Ledger.fresh_meta(CLUSTER_TS), {}, HARNESS_CORE, admission=admission)
        self._queues: dict[QueuePath, _Queue] = {
            ROOT: _Queue(1.0, 1.0, 0.5, 1.0, True),
            DEFAULT_QUEUE: _Queue(1.0, 1.0, 0.5, 1.0, True),
        }
        self._implicit_default = True
        self.ledger.set_queues(self._queue_views())

    @property
    def version(self) -> int:
        return self.ledger.version

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
        if node_id in self.ledger.nodes:
            raise ValueError(f"node {name} already exists")
        self.ledger.seed_node(node_id, host=name, rack=rack,
                              capability=Resources.of(memory_mb=memory_mb, vcores=vcores, **extra),
                              held=allocated, schedulable=schedulable)
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
        self.ledger.set_queues(self._queue_views())
        return qp

    def submit(
        self,
        name: str,
        *,
        user: str = "alice",
        queue: str = DEFAULT_QUEUE,
        am: Resources | None = None,
        at: float = 0.0,
        terms: AppTerms = NO_TERMS,
    ) -> AppHandle:
        """An app submitted as a client submits one (through the ledger's admission rule), waiting for its
        AM container of ``am`` (default 1 vcore, 1 GB). A refusal raises as live: ``AdmissionRefused``."""
        aid = self.ledger.new_application(at)
        self.ledger.submit(SubmitSpec(app_id=aid, name=name, user=user, queue=queue, am_launch={"commands": ["am"]},
                                      am_resource=am or Resources.of(memory_mb=1024, vcores=1), terms=terms), at)
        return AppHandle(aid)

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
        aid = self.ledger.new_application(0.0)
        seq = parse_app_id(aid)[1]
        if QueuePath(queue) not in self.ledger.queues or not self.ledger.queues[QueuePath(queue)].is_leaf:
            raise ValueError(f"app queue {queue} is not a leaf queue")
        am = [spec for spec in asks if spec.is_am]
        if len(am) > 1:
            raise ValueError("an app has one AM container to ask for")
        self.ledger.seed_app(
            aid, queue=QueuePath(queue), user=user, priority=priority,
            submit_time=float(seq) if submit_time is None else submit_time, weight=weight,
            asks=[Ask(allocation_request_id=i, priority=spec.priority, capability=spec.capability,
                      num_containers=spec.num, nodes=spec.nodes, racks=spec.racks, relax_locality=spec.relax,
                      ask_type=spec.ask_type, remaining_work_s=spec.remaining_work_s, stage=spec.stage)
                  for i, spec in enumerate(asks) if not spec.is_am],
            am_ask=am[0].capability if am and am[0].num > 0 else None,
            held=used, am_held=am_used,
            blacklist=[NodeId(b if ":" in b else f"{b}:{NM_PORT}") for b in blacklist], fair_share=fair_share,
        )
        return AppHandle(aid)

    # ------------------------------------------------------------------------------------- snapshot

    def snapshot(self) -> ClusterSnapshot:
        return self.ledger.snapshot()

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
        for a in self.ledger.active.values():
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

    def apply(self, plan: Plan, now: float = 0.0) -> None:
        """Fold a plan into the ledger: its placements become containers, taken off their asks."""
        self.validate(plan)
        self.ledger.apply_plan(plan, now)
        self.ledger.drain_launches()

    def validate(self, plan: Plan) -> None:
        """Raise PlanViolation unless the plan is safe to apply to the current state."""
        problems: list[str] = []
        if plan.based_on != self.version:
            problems.append(f"plan is based on version {plan.based_on}, the harness is at {self.version}")
        snap = self.ledger.snapshot()
        extra: dict[NodeId, Resources] = {}
        per_ask: Counter[tuple[AppId, int]] = Counter()
        for p in plan.placements:
            node = snap.nodes.get(p.node_id)
            app = snap.apps.get(p.app_id)
            a = next((k for k in app.asks if k.allocation_request_id == p.allocation_request_id), None) \
                if app is not None else None
            if node is None or app is None or a is None:
                problems.append(f"placement for unknown node, app or ask: {p}")
                continue
            if not node.schedulable:
                problems.append(f"placement on unschedulable node {p.node_id}")
            if p.resource != a.capability:
                problems.append(f"placement of {p.resource} for an ask of {a.capability}")
            if p.node_id in app.blacklist:
                problems.append(f"placement on {p.node_id}, blacklisted by {p.app_id}")
            if not locality_allows(a, node):
                problems.append(f"placement on {p.node_id} breaks strict locality of ask {a.key}")
            extra[p.node_id] = extra.get(p.node_id, Resources()) + p.resource
            per_ask[(p.app_id, p.allocation_request_id)] += 1
        for nid, more in extra.items():
            node = snap.nodes[nid]
            if not (node.allocated + more).fits_in(node.capability):
                problems.append(f"node {nid} over capacity: {node.allocated} + {more} > {node.capability}")
        for (aid, rid), n in per_ask.items():
            wanted = next(k.num_containers for k in snap.apps[aid].asks if k.allocation_request_id == rid)
            if n > wanted:
                problems.append(f"{n} containers placed for ask {(aid, rid)} which wants {wanted}")
        if problems:
            raise PlanViolation("; ".join(problems))
