"""Tetris packing: alignment of demand with free resources, locality bonus, best-fit and id tiebreaks."""

from __future__ import annotations

from random import Random

import pytest

from common.ids import NodeId, app_id
from common.resources import Resources
from rm.core.context import CycleContext
from rm.core.harness import Harness, NodeHandle, ask
from rm.core.model import AskView, ClusterSnapshot, NodeView
from rm.core.plan import Place, Plan
from rm.core.policies.tetris import (
    NODE_LOCAL_BONUS,
    RACK_LOCAL_BONUS,
    TetrisPacker,
    alignment,
    best_node,
    feasible,
    locality_allows,
)

GB = 1024


@pytest.fixture
def harness() -> Harness:
    return Harness()


def context(h: Harness) -> tuple[ClusterSnapshot, CycleContext]:
    snap = h.snapshot()
    return snap, CycleContext(snap=snap, now=0.0, rng=Random(0), plan=Plan(based_on=snap.version))


def only_ask(snap: ClusterSnapshot) -> AskView:
    (app,) = snap.apps.values()
    return app.asks[0]


def pick(h: Harness) -> NodeId | None:
    snap, ctx = context(h)
    node = best_node(only_ask(snap), snap.nodes.values(), ctx, TetrisPacker())
    return node.node_id if node else None


def cpu_and_memory_nodes(h: Harness) -> tuple[NodeHandle, NodeHandle]:
    cpu = h.node("cpu", vcores=16, memory_mb=16 * GB, allocated=Resources.of(vcores=2, memory_mb=14 * GB))
    mem = h.node("mem", vcores=16, memory_mb=16 * GB, allocated=Resources.of(vcores=14, memory_mb=2 * GB))
    return cpu, mem


def test_memory_heavy_ask_goes_where_memory_is_free(harness: Harness) -> None:
    _, mem = cpu_and_memory_nodes(harness)
    harness.app(asks=[ask(vcores=1, memory_mb=2 * GB)])
    assert pick(harness) == mem.id


def test_cpu_heavy_ask_goes_where_cores_are_free(harness: Harness) -> None:
    cpu, _ = cpu_and_memory_nodes(harness)
    harness.app(asks=[ask(vcores=2, memory_mb=512)])
    assert pick(harness) == cpu.id


def test_score_is_the_normalized_dot_product(harness: Harness) -> None:
    cpu, _ = cpu_and_memory_nodes(harness)
    harness.app(asks=[ask(vcores=2, memory_mb=4 * GB)])
    snap, ctx = context(harness)
    a = only_ask(snap)
    # cluster: 32 vcores, 32 GB; node "cpu" has 14 vcores and 2 GB free
    expected = (2 / 32) * (14 / 32) + (4 / 32) * (2 / 32)
    assert TetrisPacker().score(a, snap.nodes[cpu.id], ctx) == pytest.approx(expected)
    assert alignment(a.capability, snap.nodes[cpu.id].available, snap.capacity) == pytest.approx(expected)


def test_placements_in_the_cycle_change_the_score(harness: Harness) -> None:
    n1 = harness.node("n1", vcores=8, memory_mb=8 * GB)
    n2 = harness.node("n2", vcores=8, memory_mb=8 * GB)
    harness.app(asks=[ask(vcores=4, memory_mb=4 * GB, num=2)])
    snap, ctx = context(harness)
    a, packer = only_ask(snap), TetrisPacker()
    first = best_node(a, snap.nodes.values(), ctx, packer)
    assert first is not None
    assert first.node_id == n1.id
    before = packer.score(a, snap.nodes[n1.id], ctx)
    ctx.place(a, first)
    assert packer.score(a, snap.nodes[n1.id], ctx) < before
    second = best_node(a, snap.nodes.values(), ctx, packer)
    assert second is not None
    assert second.node_id == n2.id


def test_node_locality_outranks_alignment(harness: Harness) -> None:
    harness.node("big", vcores=32, memory_mb=32 * GB)
    small = harness.node("small", vcores=2, memory_mb=2 * GB)
    harness.app(asks=[ask(nodes=("small",))])
    assert pick(harness) == small.id
    snap, ctx = context(harness)
    score = TetrisPacker().score(only_ask(snap), snap.nodes[small.id], ctx)
    assert score >= NODE_LOCAL_BONUS


def test_node_id_names_a_node_too(harness: Harness) -> None:
    harness.node("big", vcores=32, memory_mb=32 * GB)
    small = harness.node("small", vcores=2, memory_mb=2 * GB)
    harness.app(asks=[ask(nodes=(small.id,))])
    assert pick(harness) == small.id


def test_rack_locality_outranks_alignment_but_not_node_locality(harness: Harness) -> None:
    harness.node("big", vcores=32, memory_mb=32 * GB, rack="/r1")
    near = harness.node("near", vcores=2, memory_mb=2 * GB, rack="/r2")
    harness.app(asks=[ask(racks=("/r2",))])
    assert pick(harness) == near.id
    assert NODE_LOCAL_BONUS > RACK_LOCAL_BONUS


def test_best_fit_breaks_alignment_ties(harness: Harness) -> None:
    harness.node("roomy", vcores=16, memory_mb=4 * GB)
    tight = harness.node("tight", vcores=2, memory_mb=4 * GB)
    harness.app(asks=[ask(vcores=0, memory_mb=GB)])  # only memory counts for alignment
    assert pick(harness) == tight.id


def test_infeasible_nodes_are_never_chosen(harness: Harness) -> None:
    harness.node("down", vcores=64, memory_mb=64 * GB, schedulable=False)
    harness.node("banned", vcores=64, memory_mb=64 * GB)
    harness.node("full", vcores=64, memory_mb=64 * GB, allocated=Resources.of(vcores=64))
    ok = harness.node("ok", vcores=1, memory_mb=GB)
    harness.app(asks=[ask()], blacklist=["banned"])
    assert pick(harness) == ok.id


def test_nothing_feasible_gives_none(harness: Harness) -> None:
    harness.node("n1", vcores=1, memory_mb=GB)
    harness.app(asks=[ask(vcores=2)])
    assert pick(harness) is None


def test_strict_locality_filter() -> None:
    node = NodeView(NodeId("n1:8041"), "n1", "/r1", Resources.of(vcores=1), Resources())
    app = app_id(1, 1)
    assert locality_allows(AskView(app, 0, 1, Resources.of(vcores=1), 1), node)
    assert locality_allows(AskView(app, 0, 1, Resources(), 1, nodes=("x",)), node)
    assert not locality_allows(AskView(app, 0, 1, Resources(), 1, nodes=("x",), relax_locality=False), node)
    assert locality_allows(AskView(app, 0, 1, Resources(), 1, racks=("/r1",), relax_locality=False), node)


def test_cycle_packs_complementary_asks(harness: Harness) -> None:
    """Two half-full nodes, each with room in one resource; each ask lands where it fits."""
    cpu, mem = cpu_and_memory_nodes(harness)
    cpu_app = harness.app(asks=[ask(vcores=6, memory_mb=GB)])
    mem_app = harness.app(asks=[ask(vcores=1, memory_mb=6 * GB)])
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=cpu_app.id, node_id=cpu.id)) == 1
    assert plan.count(Place.match(app_id=mem_app.id, node_id=mem.id)) == 1


def test_bonuses_are_validated() -> None:
    with pytest.raises(ValueError, match="locality bonuses"):
        TetrisPacker(node_local_bonus=1.0, rack_local_bonus=2.0)


def test_feasible_agrees_with_best_node(harness: Harness) -> None:
    harness.node("down", vcores=8, memory_mb=8 * GB, schedulable=False)
    harness.node("banned", vcores=8, memory_mb=8 * GB)
    harness.node("small", vcores=1, memory_mb=GB)
    ok = harness.node("ok", vcores=4, memory_mb=4 * GB)
    harness.app(asks=[ask(vcores=2, memory_mb=GB)], blacklist=["banned"])
    snap, ctx = context(harness)
    a = only_ask(snap)
    assert [n.node_id for n in snap.nodes.values() if feasible(a, n, ctx)] == [ok.id]
