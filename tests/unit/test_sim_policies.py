"""The baseline stages the simulator compares: FIFO, SJF and cross-job packing (Tetris), on tiny clusters."""

from __future__ import annotations

from dataclasses import replace
from random import Random

import pytest

from rm.core.context import CycleContext
from rm.core.cycle import run_cycle
from rm.core.harness import Harness, ask
from rm.core.model import ClusterSnapshot
from rm.core.plan import AM_LIMIT, NO_CAPACITY_NOW, NO_NODE_FITS, Place, Plan
from rm.core.policies.api import Stage
from rm.core.policies.fifo import FifoStage
from rm.core.policies.packing import PackingStage
from rm.core.policies.registry import SCHEDULERS, named_pipeline
from rm.core.policies.sjf import SjfStage
from rm.core.policies.tetris import TetrisPacker
from rm.core.state_types import AM_ASK_ID

GB = 1024


@pytest.fixture
def harness() -> Harness:
    return Harness()


def run(stage: Stage, snap: ClusterSnapshot) -> Plan:
    plan = Plan(based_on=snap.version)
    stage.run(snap, CycleContext(snap=snap, now=0.0, rng=Random(0), plan=plan))
    return plan


def with_sizes(snap: ClusterSnapshot, sizes: dict[str, float | None]) -> ClusterSnapshot:
    apps = {aid: replace(app, size_hint_s=sizes.get(aid)) for aid, app in snap.apps.items()}
    return replace(snap, apps=apps)


def test_baselines_are_registered_pipelines() -> None:
    for name in ("fifo", "drf", "tetris", "sjf"):
        assert name in SCHEDULERS
        stages, _ = named_pipeline(name)
        assert stages


def test_fifo_gives_the_oldest_app_everything_it_asks_for(harness: Harness) -> None:
    harness.node("n1", vcores=8, memory_mb=16 * GB)
    old = harness.app(asks=[ask(vcores=1, memory_mb=GB, num=8)], submit_time=1.0)
    new = harness.app(asks=[ask(vcores=1, memory_mb=GB, num=8)], submit_time=2.0)
    plan = harness.cycle([FifoStage(TetrisPacker())])
    assert plan.count(Place.match(app_id=old.id)) == 8
    assert plan.count(Place.match(app_id=new.id)) == 0
    assert plan.rejections[(new.id, 0)].reason == NO_CAPACITY_NOW


def test_fifo_lets_a_later_app_use_what_the_head_cannot(harness: Harness) -> None:
    harness.node("n1", vcores=4, memory_mb=8 * GB)
    big = harness.app(asks=[ask(vcores=1, memory_mb=16 * GB)], submit_time=1.0)
    small = harness.app(asks=[ask(vcores=1, memory_mb=GB, num=2)], submit_time=2.0)
    plan = harness.cycle([FifoStage(TetrisPacker())])
    assert plan.rejections[(big.id, 0)].reason == NO_NODE_FITS
    assert plan.count(Place.match(app_id=small.id)) == 2


def test_fifo_and_sjf_keep_am_containers_within_the_queue_am_limit(harness: Harness) -> None:
    harness.queue("root.q", 1.0, max_am_share=0.25)
    harness.node("n1", vcores=8, memory_mb=8 * GB)
    apps = [harness.app("root.q", asks=[ask(vcores=1, memory_mb=GB, is_am=True)]) for _ in range(4)]
    plan = harness.cycle([FifoStage(TetrisPacker())])
    assert plan.count(Place.match(is_am=True)) == 2  # 25% of 8 vcores: the first AM, then one more
    assert plan.rejections[(apps[3].id, AM_ASK_ID)].reason == AM_LIMIT


def test_an_am_over_the_limit_does_not_block_a_smaller_one_behind_it(harness: Harness) -> None:
    harness.queue("root.q", 1.0, max_am_share=0.25)  # AMs may hold 2 GB and 2 vcores of the node
    harness.node("n1", vcores=8, memory_mb=8 * GB)
    big = [harness.app("root.q", asks=[ask(vcores=1, memory_mb=1536, is_am=True)], submit_time=float(t))
           for t in range(3)]
    small = harness.app("root.q", asks=[ask(vcores=1, memory_mb=512, is_am=True)], submit_time=9.0)
    plan = harness.cycle([FifoStage(TetrisPacker())])
    assert plan.count(Place.match(app_id=big[0].id)) == 1  # a queue's first AM always starts
    for app in big[1:]:  # 1.5 + 1.5 GB is over the limit, for every AM of that size
        assert plan.rejections[(app.id, AM_ASK_ID)].reason == AM_LIMIT
    assert plan.count(Place.match(app_id=small.id)) == 1  # 1.5 + 0.5 GB is within it


def test_sjf_serves_the_smallest_remaining_size_first_and_unknown_sizes_last(harness: Harness) -> None:
    harness.node("n1", vcores=4, memory_mb=8 * GB)
    unknown = harness.app(asks=[ask(num=4)], submit_time=1.0)
    large = harness.app(asks=[ask(num=4)], submit_time=2.0)
    small = harness.app(asks=[ask(num=4)], submit_time=3.0)
    snap = with_sizes(harness.snapshot(), {large.id: 500.0, small.id: 20.0})
    plan = run(SjfStage(TetrisPacker()), snap)
    assert plan.count(Place.match(app_id=small.id)) == 4
    assert plan.count(Place.match(app_id=large.id)) == 0
    assert plan.count(Place.match(app_id=unknown.id)) == 0


def test_sjf_without_sizes_is_fifo(harness: Harness) -> None:
    harness.node("n1", vcores=2, memory_mb=8 * GB)
    first = harness.app(asks=[ask(num=2)], submit_time=5.0)
    harness.app(asks=[ask(num=2)], submit_time=6.0)
    plan = harness.cycle([SjfStage(TetrisPacker())])
    assert plan.count(Place.match(app_id=first.id)) == 2


def test_packing_places_the_best_aligned_task_first_across_jobs(harness: Harness) -> None:
    # One node with 4 cores and 20 GB: the memory-heavy tasks align with the free vector better than the
    # core-heavy ones of the older job (0.65 vs 0.55, then 0.43 vs 0.41), so they go first; then one fits.
    harness.node("n1", vcores=4, memory_mb=20 * GB)
    cpu = harness.app(asks=[ask(vcores=2, memory_mb=1 * GB, num=2)], submit_time=1.0)
    mem = harness.app(asks=[ask(vcores=1, memory_mb=8 * GB, num=2)], submit_time=2.0)
    plan = harness.cycle([PackingStage(TetrisPacker())])
    assert plan.placements[0].app_id == mem.id
    assert plan.count(Place.match(app_id=mem.id)) == 2
    assert plan.count(Place.match(app_id=cpu.id)) == 1


def test_packing_is_breadth_first_inside_a_job(harness: Harness) -> None:
    harness.node("n1", vcores=8, memory_mb=32 * GB)
    app = harness.app(asks=[ask(vcores=1, memory_mb=GB, num=2, priority=0),
                            ask(vcores=4, memory_mb=16 * GB, num=1, priority=1)])
    plan = harness.cycle([PackingStage(TetrisPacker())])
    stages = [p.allocation_request_id for p in plan.placements if p.app_id == app.id]
    assert stages == [0, 0, 1]  # the shallow stage first even though the deep one packs better


def test_packing_places_am_containers_first(harness: Harness) -> None:
    harness.node("n1", vcores=4, memory_mb=8 * GB)
    running = harness.app(asks=[ask(vcores=1, memory_mb=2 * GB, num=4)], submit_time=1.0)
    new = harness.app(asks=[ask(vcores=1, memory_mb=256, is_am=True)], submit_time=2.0)
    plan = harness.cycle([PackingStage(TetrisPacker())])
    assert plan.placements[0].app_id == new.id
    assert plan.placements[0].is_am
    assert plan.count(Place.match(app_id=running.id)) == 3


def test_packing_fairness_knob_limits_picks_to_jobs_furthest_below_their_share(harness: Harness) -> None:
    harness.node("n1", vcores=16, memory_mb=64 * GB)
    rich = harness.app(asks=[ask(vcores=4, memory_mb=16 * GB, num=2)], submit_time=1.0,
                       used=ask(vcores=8, memory_mb=8 * GB).capability)
    poor = harness.app(asks=[ask(vcores=1, memory_mb=GB, num=1)], submit_time=2.0)
    snap = harness.snapshot()
    packed = run(PackingStage(TetrisPacker(), fairness=0.0), snap)
    assert packed.placements[0].app_id == rich.id  # pure packing: the big task aligns best
    fair = run(PackingStage(TetrisPacker(), fairness=0.5), snap)
    assert fair.placements[0].app_id == poor.id  # ceil(0.5 x 2) = 1 job eligible: the one below its share


def test_packing_rejects_a_fairness_knob_outside_0_1() -> None:
    with pytest.raises(ValueError, match="fairness"):
        PackingStage(TetrisPacker(), fairness=1.0)


@pytest.mark.parametrize("name", ["fifo", "sjf", "tetris"])
def test_baselines_never_overcommit_a_node(harness: Harness, name: str) -> None:
    for i in range(3):
        harness.node(f"n{i}", vcores=4, memory_mb=6 * GB)
    for k in range(5):
        harness.app(asks=[ask(vcores=1 + k % 3, memory_mb=(1 + k) * GB, num=6), ask(is_am=True, memory_mb=256)])
    stages, _ = named_pipeline(name)
    plan = run_cycle(harness.snapshot(), stages, now=0.0, rng=Random(0))
    harness.validate(plan)  # raises on any overcommitted node or over-placed ask
    assert plan.placements
