"""DRF: fair shares, app order and the assignment loop, on tiny hand-built clusters."""

from __future__ import annotations

from random import Random

import pytest

from common.ids import AppId
from common.resources import Resources
from rm.core.context import CycleContext
from rm.core.harness import Harness, ask
from rm.core.model import AskView
from rm.core.plan import (
    AM_LIMIT,
    LOCALITY_WAIT,
    NO_CAPACITY_NOW,
    NO_NODE_FITS,
    QUEUE_AT_MAX,
    Place,
    Plan,
)
from rm.core.policies.drf import DrfOrder, DrfStage, ask_importance
from rm.core.policies.drf_shares import DrfShares, progressive_fill
from rm.core.policies.registry import (
    SCORERS,
    STAGES,
    PipelineArgs,
    build_pipeline,
    default_pipeline,
    make_scorer,
    make_shares,
    make_stage,
)
from rm.core.policies.tetris import TetrisPacker
from rm.core.state_types import AM_ASK_ID

GB = 1024


@pytest.fixture
def harness() -> Harness:
    return Harness()


def paper_cluster(h: Harness) -> tuple[AppId, AppId]:
    """The DRF paper's example: 9 CPUs and 18 GB; A's tasks <1 CPU, 4 GB>, B's <3 CPU, 1 GB>."""
    h.node("n1", vcores=9, memory_mb=18 * GB)
    a = h.app(asks=[ask(vcores=1, memory_mb=4 * GB)] * 8)
    b = h.app(asks=[ask(vcores=3, memory_mb=1 * GB)] * 8)
    return a.id, b.id


def two_queue_cluster(h: Harness, *, b_busy: bool = True, a_max: float = 1.0) -> tuple[AppId, AppId | None]:
    for i in range(10):
        h.node(f"n{i:02d}", vcores=4, memory_mb=4 * GB)
    h.queue("root.a", 0.7, a_max)
    h.queue("root.b", 0.3)
    a = h.app("root.a", asks=[ask(vcores=1, memory_mb=GB, num=100)])
    b = h.app("root.b", asks=[ask(vcores=1, memory_mb=GB, num=100)]) if b_busy else None
    return a.id, (b.id if b else None)


# ------------------------------------------------------------------------------------- the paper


def test_drf_splits_by_dominant_share(harness: Harness) -> None:
    a, b = paper_cluster(harness)
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=a)) == 3
    assert plan.count(Place.match(app_id=b)) == 2
    cluster = harness.snapshot().capacity
    harness.apply(plan)
    used = {x.app_id: x.used for x in harness.snapshot().apps.values()}
    assert used[a] == Resources.of(vcores=3, memory_mb=12 * GB)
    assert used[b] == Resources.of(vcores=6, memory_mb=2 * GB)
    assert used[a].dominant_share(cluster) == pytest.approx(2 / 3)
    assert used[b].dominant_share(cluster) == pytest.approx(2 / 3)


def test_drf_shares_match_the_paper(harness: Harness) -> None:
    a, b = paper_cluster(harness)
    shares = DrfShares().shares(harness.snapshot())
    assert shares[a] == Resources.of(vcores=3, memory_mb=12 * GB)
    assert shares[b] == Resources.of(vcores=6, memory_mb=2 * GB)
    assert harness.cycle().shares == shares


def test_leftover_capacity_is_rejected_with_numbers(harness: Harness) -> None:
    a, _ = paper_cluster(harness)
    plan = harness.cycle()
    rej = plan.rejections[(a, 3)]
    assert rej.reason == NO_CAPACITY_NOW
    assert rej.detail["ask"] == {"memory-mb": 4 * GB, "vcores": 1}
    assert rej.detail["largest_free"] == {"memory-mb": 4 * GB, "vcores": 0}


def test_shares_weight_scales_dominant_share(harness: Harness) -> None:
    harness.node("n1", vcores=12, memory_mb=12 * GB)
    heavy = harness.app(asks=[ask(vcores=1, memory_mb=GB, num=20)], weight=2.0)
    light = harness.app(asks=[ask(vcores=1, memory_mb=GB, num=20)])
    shares = DrfShares().shares(harness.snapshot())
    assert shares[heavy.id] == Resources.of(vcores=8, memory_mb=8 * GB)
    assert shares[light.id] == Resources.of(vcores=4, memory_mb=4 * GB)
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=heavy.id)) == 8
    assert plan.count(Place.match(app_id=light.id)) == 4


def test_app_without_demand_gets_its_usage(harness: Harness) -> None:
    harness.node("n1", vcores=8, memory_mb=8 * GB, allocated=Resources.of(vcores=2, memory_mb=2 * GB))
    idle = harness.app(used=Resources.of(vcores=2, memory_mb=2 * GB))
    busy = harness.app(asks=[ask(num=20)])
    shares = DrfShares().shares(harness.snapshot())
    assert shares[idle.id] == Resources.of(vcores=2, memory_mb=2 * GB)
    assert shares[busy.id] == Resources.of(vcores=6, memory_mb=6 * GB)


def test_small_demand_is_met_and_the_rest_goes_to_others(harness: Harness) -> None:
    harness.node("n1", vcores=10, memory_mb=10 * GB)
    small = harness.app(asks=[ask(num=2)])
    big = harness.app(asks=[ask(num=50)])
    shares = DrfShares().shares(harness.snapshot())
    assert shares[small.id] == Resources.of(vcores=2, memory_mb=2 * GB)
    assert shares[big.id] == Resources.of(vcores=8, memory_mb=8 * GB)


# ----------------------------------------------------------------------------------------- queues


def test_two_backlogged_queues_split_by_capacity(harness: Harness) -> None:
    a, b = two_queue_cluster(harness)
    assert b is not None
    shares = DrfShares().shares(harness.snapshot())
    assert shares[a] == Resources.of(vcores=28, memory_mb=28 * GB)
    assert shares[b] == Resources.of(vcores=12, memory_mb=12 * GB)
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=a)) == 28
    assert plan.count(Place.match(app_id=b)) == 12


def test_idle_queue_capacity_goes_to_the_busy_one(harness: Harness) -> None:
    a, _ = two_queue_cluster(harness, b_busy=False)
    assert DrfShares().shares(harness.snapshot())[a] == Resources.of(vcores=40, memory_mb=40 * GB)
    assert harness.cycle().count(Place.match(app_id=a)) == 40


def test_work_conservation_stops_at_max_capacity(harness: Harness) -> None:
    a, _ = two_queue_cluster(harness, b_busy=False, a_max=0.8)
    assert DrfShares().shares(harness.snapshot())[a] == Resources.of(vcores=32, memory_mb=32 * GB)
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=a)) == 32
    rej = plan.rejections[(a, 0)]
    assert rej.reason == QUEUE_AT_MAX
    assert rej.detail["queue"] == "root.a"
    assert rej.detail["used"] == {"memory-mb": 32 * GB, "vcores": 32}
    assert rej.detail["max"] == {"memory-mb": 32 * GB, "vcores": 32}


def test_light_queue_keeps_its_demand_and_the_rest_goes_to_the_other(harness: Harness) -> None:
    for i in range(10):
        harness.node(f"n{i:02d}", vcores=4, memory_mb=4 * GB)
    harness.queue("root.a", 0.5)
    harness.queue("root.b", 0.5)
    a = harness.app("root.a", asks=[ask(num=100)])
    b = harness.app("root.b", asks=[ask(num=5)])
    shares = DrfShares().shares(harness.snapshot())
    assert shares[a.id].vcores == 35
    assert shares[b.id].vcores == 5
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=a.id)) == 35
    assert plan.count(Place.match(app_id=b.id)) == 5


def test_zero_capacity_queue_waits_while_others_are_backlogged(harness: Harness) -> None:
    a, b = two_queue_cluster(harness)
    assert b is not None
    harness.app("root.b", asks=[])  # an app with nothing pending changes nothing
    harness.queue("root.c", 0.0)
    c = harness.app("root.c", asks=[ask(num=100)])
    shares = DrfShares().shares(harness.snapshot())
    assert shares[a].vcores == 28
    assert shares[b].vcores == 12
    assert shares[c.id].vcores == 0


def test_zero_capacity_queue_gets_what_others_leave(harness: Harness) -> None:
    harness.node("n1", vcores=10, memory_mb=10 * GB)
    harness.queue("root.a", 1.0)
    harness.queue("root.spare", 0.0)
    a = harness.app("root.a", asks=[ask(num=4)])
    spare = harness.app("root.spare", asks=[ask(num=100)])
    shares = DrfShares().shares(harness.snapshot())
    assert shares[a.id].vcores == 4
    assert shares[spare.id].vcores == 6
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=a.id)) == 4
    assert plan.count(Place.match(app_id=spare.id)) == 6


def test_parent_max_capacity_caps_its_children(harness: Harness) -> None:
    for i in range(20):
        harness.node(f"n{i}", vcores=1, memory_mb=GB)
    harness.queue("root.p", 0.5, 0.5)
    harness.queue("root.p.x", 0.5)
    harness.queue("root.p.y", 0.5)
    harness.queue("root.q", 0.5, 0.6)
    x = harness.app("root.p.x", asks=[ask(num=10)])
    y = harness.app("root.p.y", asks=[ask(num=10)])
    shares = DrfShares().shares(harness.snapshot())
    assert shares[x.id].vcores == shares[y.id].vcores == 5
    plan = harness.cycle()
    assert plan.count() == 10
    assert plan.rejections[(x.id, 0)].reason == QUEUE_AT_MAX
    assert plan.rejections[(x.id, 0)].detail["queue"] == "root.p"


def test_queue_furthest_below_guarantee_goes_first(harness: Harness) -> None:
    harness.node("n1", vcores=10, memory_mb=10 * GB, allocated=Resources.of(vcores=6, memory_mb=6 * GB))
    harness.queue("root.a", 0.5)
    harness.queue("root.b", 0.5)
    a = harness.app("root.a", asks=[ask(num=10)], used=Resources.of(vcores=6, memory_mb=6 * GB))
    b = harness.app("root.b", asks=[ask(num=10)])
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=b.id)) == 4
    assert plan.count(Place.match(app_id=a.id)) == 0


# ------------------------------------------------------------------------------------- rejections


def test_ask_bigger_than_every_node(harness: Harness) -> None:
    harness.node("n1", vcores=4, memory_mb=8 * GB)
    harness.node("n2", vcores=8, memory_mb=4 * GB)
    app = harness.app(asks=[ask(vcores=6, memory_mb=6 * GB), ask(vcores=1, memory_mb=GB)])
    plan = harness.cycle()
    rej = plan.rejections[(app.id, 0)]
    assert rej.reason == NO_NODE_FITS
    assert rej.detail["ask"] == {"memory-mb": 6 * GB, "vcores": 6}
    assert rej.detail["nodes"] == 2
    assert rej.detail["largest_node"] in (
        {"memory-mb": 8 * GB, "vcores": 4},
        {"memory-mb": 4 * GB, "vcores": 8},
    )
    assert plan.count(Place.match(app_id=app.id, allocation_request_id=1)) == 1


def test_am_limit_holds_back_extra_ams(harness: Harness) -> None:
    for i in range(10):
        harness.node(f"n{i}", vcores=4, memory_mb=4 * GB)
    harness.queue("root.default", 1.0, max_am_share=0.1)
    apps = [harness.app(asks=[ask(num=1, is_am=True, priority=0)]) for _ in range(6)]
    plan = harness.cycle()
    assert plan.count(Place.match(is_am=True)) == 4
    rej = plan.rejections[(apps[4].id, AM_ASK_ID)]
    assert rej.reason == AM_LIMIT
    assert rej.detail["am_used"] == {"memory-mb": 4 * GB, "vcores": 4}
    assert rej.detail["am_limit"] == {"memory-mb": 4 * GB, "vcores": 4}


def test_first_am_runs_even_above_the_am_limit(harness: Harness) -> None:
    harness.node("n1", vcores=2, memory_mb=2 * GB)
    harness.queue("root.default", 1.0, max_am_share=0.1)
    first = harness.app(asks=[ask(is_am=True, priority=0)])
    second = harness.app(asks=[ask(is_am=True, priority=0)])
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=first.id, is_am=True)) == 1
    assert plan.rejections[(second.id, AM_ASK_ID)].reason == AM_LIMIT
    harness.apply(plan)
    again = harness.cycle()
    assert again.count() == 0
    assert again.rejections[(second.id, AM_ASK_ID)].reason == AM_LIMIT


# --------------------------------------------------------------------------------------- locality


def test_strict_locality_pins_to_the_named_node(harness: Harness) -> None:
    harness.node("n1", vcores=16, memory_mb=16 * GB)
    n2 = harness.node("n2", vcores=2, memory_mb=2 * GB)
    app = harness.app(asks=[ask(num=3, nodes=("n2",), relax=False)])
    plan = harness.cycle()
    assert plan.count() == 2
    assert plan.count(Place.match(node_id=n2.id)) == 2
    assert plan.rejections[(app.id, 0)].reason == NO_CAPACITY_NOW


def test_relaxed_locality_prefers_then_spills(harness: Harness) -> None:
    harness.node("n1", vcores=16, memory_mb=16 * GB)
    n2 = harness.node("n2", vcores=2, memory_mb=2 * GB)
    harness.app(asks=[ask(num=3, nodes=("n2",))])
    plan = harness.cycle()
    assert plan.count() == 3
    assert plan.count(Place.match(node_id=n2.id)) == 2


def test_strict_locality_on_a_missing_node_waits(harness: Harness) -> None:
    harness.node("n1")
    app = harness.app(asks=[ask(nodes=("elsewhere",), relax=False)])
    plan = harness.cycle()
    assert plan.count() == 0
    assert plan.rejections[(app.id, 0)].reason == LOCALITY_WAIT


def test_blacklisted_nodes_are_skipped(harness: Harness) -> None:
    n1 = harness.node("n1", vcores=16, memory_mb=16 * GB)
    harness.node("n2", vcores=2, memory_mb=2 * GB)
    harness.app(asks=[ask(num=4)], blacklist=["n1"])
    plan = harness.cycle()
    assert plan.count() == 2
    assert plan.count(Place.match(node_id=n1.id)) == 0


# ----------------------------------------------------------------------------------- ask ordering


def test_asks_go_by_priority_then_am_then_type(harness: Harness) -> None:
    harness.node("n1", vcores=3, memory_mb=3 * GB)
    app = harness.app(
        asks=[
            ask(priority=2, ask_type="ALTRUISTIC"),
            ask(priority=2),
            ask(priority=1),
            ask(is_am=True),
        ]
    )
    plan = harness.cycle()
    assert [p.allocation_request_id for p in plan.placements] == [AM_ASK_ID, 2, 1]
    snap = harness.snapshot()
    ordered = sorted(snap.apps[app.id].asks, key=ask_importance)
    assert [a.allocation_request_id for a in ordered] == [AM_ASK_ID, 2, 1, 0]
    # at the same priority an AM ask goes first, whatever its request id
    one = Resources.of(vcores=1, memory_mb=GB)
    am = AskView(app.id, 7, 2, one, 1, is_am=True)
    task = AskView(app.id, 3, 2, one, 1)
    assert sorted([task, am], key=ask_importance) == [am, task]


def test_default_only_stage_leaves_altruistic_asks(harness: Harness) -> None:
    harness.node("n1", vcores=8, memory_mb=8 * GB)
    app = harness.app(asks=[ask(num=2), ask(num=2, ask_type="ALTRUISTIC")])
    stage = DrfStage(TetrisPacker(), frozenset({"DEFAULT"}))
    plan = harness.cycle([stage])
    assert plan.count() == 2
    assert plan.count(Place.match(ask_type="DEFAULT")) == 2
    leftover = DrfStage(TetrisPacker(), frozenset({"ALTRUISTIC"}))
    plan = harness.cycle([stage, leftover])
    assert plan.count(Place.match(app_id=app.id, ask_type="ALTRUISTIC")) == 2


def test_higher_app_priority_breaks_equal_shares(harness: Harness) -> None:
    harness.node("n1", vcores=1, memory_mb=GB)
    harness.app(asks=[ask()])
    urgent = harness.app(asks=[ask()], priority=5)
    plan = harness.cycle()
    assert [p.app_id for p in plan.placements] == [urgent.id]


def test_drf_order_key(harness: Harness) -> None:
    harness.node("n1", vcores=10, memory_mb=10 * GB)
    a = harness.app(used=Resources.of(vcores=4, memory_mb=GB), weight=2.0, priority=3, submit_time=7.0)
    snap = harness.snapshot()
    ctx = CycleContext(snap=snap, now=0.0, rng=Random(0), plan=Plan(based_on=snap.version))
    assert DrfOrder().sort_key(snap.apps[a.id], ctx) == (0.2, -3, 7.0, a.id)


def test_successive_cycles_fill_the_cluster(harness: Harness) -> None:
    harness.node("n1", vcores=4, memory_mb=4 * GB)
    harness.node("n2", vcores=4, memory_mb=4 * GB)
    app = harness.app(asks=[ask(num=5)])
    harness.apply(harness.cycle())
    harness.app(asks=[ask(num=5)])
    second = harness.cycle()
    assert second.count() == 3
    harness.apply(second)
    assert harness.snapshot().apps[app.id].asks == ()


# ---------------------------------------------------------------------------------------- helpers


def test_queues_with_complementary_demands_share_by_dominant_share(harness: Harness) -> None:
    """A CPU-heavy and a memory-heavy queue: DRF across queues fills both resources."""
    harness.node("n1", vcores=30, memory_mb=30 * GB)
    harness.queue("root.cpu", 0.5)
    harness.queue("root.mem", 0.5)
    cpu = harness.app("root.cpu", asks=[ask(vcores=2, memory_mb=GB, num=100)])
    mem = harness.app("root.mem", asks=[ask(vcores=1, memory_mb=2 * GB, num=100)])
    shares = DrfShares().shares(harness.snapshot())
    assert shares[cpu.id] == Resources.of(vcores=20, memory_mb=10 * GB)
    assert shares[mem.id] == Resources.of(vcores=10, memory_mb=20 * GB)
    plan = harness.cycle()
    assert plan.count(Place.match(app_id=cpu.id)) == 10
    assert plan.count(Place.match(app_id=mem.id)) == 10


def test_progressive_fill_stops_users_of_a_saturated_resource() -> None:
    cluster = Resources.of(vcores=10, memory_mb=10)
    both, cpu, mem = (
        Resources.of(vcores=100, memory_mb=1),
        Resources.of(vcores=100),
        Resources.of(memory_mb=100),
    )
    caps = {"vcores": 10.0, "memory-mb": 10.0}
    # Memory runs out at dominant share 10/10.1 and stops both users, although only one needs it much.
    fills = progressive_fill([both, mem], [1.0, 1.0], cluster, caps)
    assert fills[0]["vcores"] == pytest.approx(fills[1]["memory-mb"]) == pytest.approx(10 / 1.01)
    # Cores run out first and stop only their user; the memory user goes on to the whole memory.
    fills = progressive_fill([cpu, mem], [1.0, 1.0], cluster, {"vcores": 5.0, "memory-mb": 10.0})
    assert fills[0] == pytest.approx({"vcores": 5.0})
    assert fills[1] == pytest.approx({"memory-mb": 10.0})


def test_registry() -> None:
    stages, shares = default_pipeline()
    assert [type(s) for s in stages] == [DrfStage]
    assert isinstance(shares, DrfShares)
    assert isinstance(make_scorer("tetris"), TetrisPacker)
    assert isinstance(make_shares("drf"), DrfShares)
    assert isinstance(make_stage("drf", TetrisPacker()), DrfStage)
    assert "tetris" in SCORERS
    assert "drf" in STAGES
    with pytest.raises(ValueError, match=r"known: .*tetris"):
        make_scorer("best")
    with pytest.raises(ValueError, match=r"unknown stage 'no-such-stage'; known: .*drf"):
        build_pipeline(PipelineArgs(stages=("drf", "no-such-stage")))
