"""Invariants of a scheduling cycle on random tiny clusters (hypothesis)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.ids import NodeId
from common.resources import Resources
from rm.core.harness import AskSpec, Harness, ask
from rm.core.model import AppView, ClusterSnapshot, NodeView
from rm.core.plan import AM_LIMIT, QUEUE_AT_MAX, Plan
from rm.core.policies.drf_shares import DrfShares
from rm.core.policies.tetris import locality_allows

GB = 1024
RACKS = ("/r0", "/r1")
NODE_NAMES = tuple(f"n{i}" for i in range(6))


@dataclass(frozen=True)
class NodeSpec:
    name: str
    vcores: int
    memory_mb: int
    gpu: int
    rack: str
    used_vcores: int
    used_memory_mb: int
    schedulable: bool


@dataclass(frozen=True)
class AppSpec:
    queue: str
    asks: tuple[AskSpec, ...]
    priority: int
    weight: float
    blacklist: tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    nodes: tuple[NodeSpec, ...]
    queues: tuple[tuple[str, float, float, float], ...]  # path, capacity, max capacity, max AM share
    apps: tuple[AppSpec, ...]

    def build(self) -> Harness:
        h = Harness()
        for q in self.queues:
            h.queue(q[0], q[1], q[2], max_am_share=q[3])
        for n in self.nodes:
            h.node(
                n.name,
                vcores=n.vcores,
                memory_mb=n.memory_mb,
                rack=n.rack,
                gpu=n.gpu,
                schedulable=n.schedulable,
                allocated=Resources.of(vcores=n.used_vcores, memory_mb=n.used_memory_mb),
            )
        for a in self.apps:
            h.app(a.queue, asks=a.asks, priority=a.priority, weight=a.weight, blacklist=a.blacklist)
        return h


@st.composite
def nodes(draw: st.DrawFn, name: str) -> NodeSpec:
    vcores = draw(st.integers(1, 16))
    memory = draw(st.integers(1, 32)) * 512
    return NodeSpec(
        name=name,
        vcores=vcores,
        memory_mb=memory,
        gpu=draw(st.sampled_from([0, 0, 2])),
        rack=draw(st.sampled_from(RACKS)),
        used_vcores=draw(st.integers(0, vcores)),
        used_memory_mb=draw(st.integers(0, memory // 512)) * 512,
        schedulable=draw(st.booleans() | st.just(True)),
    )


@st.composite
def asks(draw: st.DrawFn) -> AskSpec:
    strict = draw(st.booleans())
    return ask(
        vcores=draw(st.integers(0, 6)),
        memory_mb=draw(st.integers(1, 12)) * 512,
        num=draw(st.integers(1, 6)),
        priority=draw(st.integers(0, 3)),
        ask_type=draw(st.sampled_from(["DEFAULT", "ALTRUISTIC"])),
        nodes=tuple(draw(st.lists(st.sampled_from(NODE_NAMES), max_size=2))) if strict else (),
        racks=tuple(draw(st.lists(st.sampled_from(RACKS), max_size=1))) if strict else (),
        relax=not strict or draw(st.booleans()),
        gpu=draw(st.sampled_from([0, 0, 0, 1])),
    )


@st.composite
def app_asks(draw: st.DrawFn) -> tuple[AskSpec, ...]:
    """An app's asks: up to four, and one time in five its AM container first."""
    am = (ask(vcores=draw(st.integers(1, 2)), memory_mb=512, is_am=True),) if draw(st.integers(0, 4)) == 0 else ()
    return am + tuple(draw(st.lists(asks(), min_size=0, max_size=4)))


QUEUE_LAYOUTS: tuple[tuple[tuple[str, float, float, float], ...], ...] = (
    (("root.default", 1.0, 1.0, 0.5),),
    (("root.a", 0.7, 1.0, 0.5), ("root.b", 0.3, 0.5, 0.2)),
    (
        ("root.a", 0.5, 0.6, 0.1),
        ("root.p", 0.5, 0.8, 0.5),
        ("root.p.x", 0.6, 1.0, 0.5),
        ("root.p.y", 0.4, 0.5, 1.0),
    ),
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    node_specs = tuple(draw(nodes(name)) for name in NODE_NAMES[: draw(st.integers(1, len(NODE_NAMES)))])
    layout = draw(st.sampled_from(QUEUE_LAYOUTS))
    leaves = [q[0] for q in layout if not any(o[0].startswith(q[0] + ".") for o in layout)]
    apps = tuple(
        AppSpec(
            queue=draw(st.sampled_from(leaves)),
            asks=draw(app_asks()),
            priority=draw(st.integers(0, 2)),
            weight=draw(st.sampled_from([0.5, 1.0, 1.0, 2.0])),
            blacklist=tuple(draw(st.lists(st.sampled_from(NODE_NAMES), max_size=1))),
        )
        for _ in range(draw(st.integers(1, 6)))
    )
    return Scenario(node_specs, layout, apps)


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def free_after(snap: ClusterSnapshot, plan: Plan) -> dict[NodeId, Resources]:
    free = {nid: n.available for nid, n in snap.nodes.items()}
    for p in plan.placements:
        free[p.node_id] = free[p.node_id] - p.resource
    return free


def could_take(node: NodeView, free: Resources, ask_: Any, blacklist: frozenset[str]) -> bool:
    return (
        node.schedulable
        and node.node_id not in blacklist
        and locality_allows(ask_, node)
        and ask_.capability.fits_in(free)
    )


@PROPERTY
@given(scenarios())
def test_capacity_is_never_exceeded(scenario: Scenario) -> None:
    h = scenario.build()
    for _ in range(3):
        plan = h.cycle()  # validates the plan against the state it was made from
        h.apply(plan)
        for node in h.snapshot().nodes.values():
            assert node.allocated.fits_in(node.capability), node


@PROPERTY
@given(scenarios())
def test_never_more_containers_than_asked(scenario: Scenario) -> None:
    h = scenario.build()
    snap = h.snapshot()
    plan = h.cycle()
    placed = Counter((p.app_id, p.allocation_request_id) for p in plan.placements)
    wanted = {a.key: a.num_containers for app in snap.apps.values() for a in app.asks}
    for key, n in placed.items():
        assert n <= wanted[key]
    for p in plan.placements:
        app = snap.apps[p.app_id]
        (a,) = [x for x in app.asks if x.allocation_request_id == p.allocation_request_id]
        assert p.resource == a.capability
        assert p.is_am == a.is_am
        assert p.ask_type == a.ask_type


@PROPERTY
@given(scenarios())
def test_work_conservation(scenario: Scenario) -> None:
    """After a cycle no waiting ask fits anywhere it may go, unless its queue max or AM limit holds it."""
    h = scenario.build()
    snap = h.snapshot()
    plan = h.cycle()
    free = free_after(snap, plan)
    placed = Counter((p.app_id, p.allocation_request_id) for p in plan.placements)
    for app in snap.apps.values():
        for a in app.asks:
            if a.num_containers - placed[a.key] <= 0:
                assert a.key not in plan.rejections
                continue
            rej = plan.rejections.get(a.key)
            assert rej is not None, f"ask {a.key} waits without a reason"
            fits = any(could_take(n, free[nid], a, app.blacklist) for nid, n in snap.nodes.items())
            if fits:
                assert rej.reason in (QUEUE_AT_MAX, AM_LIMIT), (a, rej)


@PROPERTY
@given(scenarios(), st.integers(0, 2**32 - 1))
def test_same_seed_same_plan(scenario: Scenario, seed: int) -> None:
    first = scenario.build().cycle(seed=seed)
    second = scenario.build().cycle(seed=seed)
    assert first.placements == second.placements
    assert first.rejections == second.rejections
    assert first.shares == second.shares


@PROPERTY
@given(scenarios())
def test_fair_shares_fit_the_cluster_and_the_demand(scenario: Scenario) -> None:
    snap = scenario.build().snapshot()
    shares = DrfShares().shares(snap)
    assert set(shares) == set(snap.apps)
    busy = [a for a in snap.apps.values() if not a.pending.is_zero()]
    total = Resources()
    for app in busy:
        share = shares[app.app_id]
        assert not share.any_negative()
        assert share.fits_in(app.used + app.pending)
        total = total + share
    assert total.fits_in(snap.capacity)


@PROPERTY
@given(scenarios())
def test_fair_shares_leave_nobody_short_without_a_bottleneck(scenario: Scenario) -> None:
    """An app short of its demand needs a resource that is used up, in the cluster or under a queue max."""
    snap = scenario.build().snapshot()
    shares = DrfShares().shares(snap)
    cluster = snap.capacity
    slack = len(snap.apps) + 1  # shares are rounded down to integers
    busy = [a for a in snap.apps.values() if not a.pending.is_zero()]

    def used_up(r: str, apps: list[AppView], limit: float) -> bool:
        return sum(shares[a.app_id].get(r) for a in apps) >= limit - slack

    for app in busy:
        demand = Resources({r: v for r, v in (app.used + app.pending).amounts.items() if cluster.get(r) > 0})
        if all(v - shares[app.app_id].get(r) <= 1 for r, v in demand.amounts.items()):
            continue  # demand met (but for rounding)
        bottleneck = False
        for r in demand.types():
            if used_up(r, list(snap.apps.values()), cluster.get(r)):
                bottleneck = True
            q = snap.queues[app.queue]
            while q is not None and not bottleneck:
                under = [
                    a for a in snap.apps.values() if a.queue == q.path or a.queue.startswith(q.path + ".")
                ]
                if q.abs_max_capacity < 1 and used_up(r, under, q.abs_max_capacity * cluster.get(r)):
                    bottleneck = True
                q = snap.queues[q.parent] if q.parent else None
        assert bottleneck, (app.app_id, shares[app.app_id], demand)
