"""The time packer sees a share only through sums of whole tasks' demands, so shares that agree once
rounded down to the grain of the job's task sizes pack alike (``same_packing``), and running tasks that end
together pack as one group. Random DAGs check both against the packers themselves."""

from __future__ import annotations

import math
from random import Random

from am.policies.altruism import same_packing, stretch_factor
from am.policies.timepack import StagePlan, pack_forward, pack_reverse
from common.resources import Resources


def random_plans(rng: Random) -> list[StagePlan]:
    plans: list[StagePlan] = []
    for i in range(rng.randint(1, 6)):
        parents = tuple(p.name for p in plans if rng.random() < 0.4)
        running = tuple(rng.choice((0.5, 1.0, 1.0, 2.5)) for _ in range(rng.randint(0, 4)))
        plans.append(StagePlan(
            name=f"s{i}", demand=Resources.of(memory_mb=rng.choice((1024, 2048, 3072, 4096)),
                                               vcores=rng.choice((1, 2, 4))),
            duration_s=rng.choice((1.0, 2.0, 3.5)), pending=rng.randint(0, 12), running_remaining_s=running,
            parents=parents, priority=len(parents)))
    return plans


def grain(plans: list[StagePlan]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in plans:
        for r, v in p.demand.amounts.items():
            out[r] = math.gcd(out.get(r, 0), v)
    return out


def test_shares_equal_to_the_grain_pack_alike_and_others_are_told_apart() -> None:
    rng = Random(7)
    alike = differ = 0
    for _ in range(400):
        plans = random_plans(rng)
        g = grain(plans)
        base = Resources.of(memory_mb=rng.randrange(4096, 40000), vcores=rng.randrange(4, 24))
        # a share within the same grain cell, and one moved by a random amount
        cell = Resources({r: base.get(r) // g[r] * g[r] + rng.randrange(g[r]) for r in g})
        moved = Resources({r: max(1, base.get(r) + rng.randrange(-2 * g[r], 2 * g[r] + 1)) for r in g})
        assert same_packing(plans, base, cell) == (stretch_factor(plans, base) == 1.0 == stretch_factor(plans, cell))
        for other in (cell, moved):
            if not same_packing(plans, base, other):
                differ += 1
                continue
            alike += 1
            a, b = pack_forward(plans, base), pack_forward(plans, other)
            assert a.makespan == b.makespan
            assert a.starts == b.starts
            assert pack_reverse(plans, base, a.makespan + 1.0) == pack_reverse(plans, other, a.makespan + 1.0)
    assert alike > 100
    assert differ > 20


def test_a_share_off_by_a_grain_is_not_the_same_packing() -> None:
    plans = [StagePlan("a", Resources.of(memory_mb=2048, vcores=1), 1.0, pending=8)]
    share = Resources.of(memory_mb=8192, vcores=8)
    assert same_packing(plans, share, Resources.of(memory_mb=9000, vcores=8))
    assert not same_packing(plans, share, Resources.of(memory_mb=6144, vcores=8))
    assert pack_forward(plans, share).makespan != pack_forward(plans, Resources.of(memory_mb=6144, vcores=8)).makespan
    # a share too small for a task is stretched, and stretching sees the raw share: never "the same"
    tiny = [StagePlan("a", Resources.of(memory_mb=2048, vcores=1), 1.0, pending=1)]
    assert not same_packing(tiny, Resources.of(memory_mb=1024, vcores=1), Resources.of(memory_mb=1500, vcores=1))


def test_running_tasks_that_end_together_pack_as_single_tasks_do() -> None:
    # the packers group running tasks by their remaining time; the same tasks spread over stages that are
    # alike but distinct cannot be grouped, and must give the same schedule
    rng = Random(3)
    for _ in range(200):
        demand = Resources.of(memory_mb=1024, vcores=1)
        times = tuple(rng.choice((0.5, 1.0, 2.0)) for _ in range(rng.randint(1, 6)))
        grouped = [StagePlan("r", demand, 1.0, pending=0, running_remaining_s=times),
                   StagePlan("n", demand, 1.5, pending=rng.randint(1, 9), parents=("r",))]
        split = [StagePlan(f"r{i}", demand, 1.0, pending=0, running_remaining_s=(t,)) for i, t in enumerate(times)]
        split.append(StagePlan("n", demand, 1.5, pending=grouped[1].pending, parents=tuple(p.name for p in split)))
        cap = Resources.of(memory_mb=1024 * rng.randint(1, 5), vcores=8)
        a, b = pack_forward(grouped, cap), pack_forward(split, cap)
        assert a.makespan == b.makespan
        assert a.starts["n"] == b.starts["n"]
        horizon = a.makespan + rng.choice((0.0, 1.0))
        assert pack_reverse(grouped, cap, horizon)["n"] == pack_reverse(split, cap, horizon)["n"]


def test_a_packing_out_of_passes_errs_on_the_side_of_yielding_less() -> None:
    # 3,000 tasks on a share of 7 slots whose running tasks end at staggered times: about 3,000 passes
    # forward (the waves stay staggered), about 430 backward (they start together from the end)
    demand = Resources.of(memory_mb=1024, vcores=1)
    plans = [StagePlan("a", demand, 5.0, pending=3000, running_remaining_s=(0.3, 0.9, 1.4, 2.2, 3.1, 3.7, 4.6)),
             StagePlan("b", demand, 2.0, pending=40, parents=("a",))]
    cap = Resources.of(memory_mb=7 * 1024, vcores=7)
    exact = pack_forward(plans, cap, passes=10**6)
    assert not exact.truncated
    cut = pack_forward(plans, cap, passes=500)
    assert cut.truncated
    assert 0.8 * exact.makespan <= cut.makespan <= exact.makespan  # a lower bound, not a wild one
    latest = pack_reverse(plans, cap, exact.makespan, passes=10**6)
    short = pack_reverse(plans, cap, exact.makespan, passes=100)
    for name in ("a", "b"):  # every latest start is as early or earlier: nothing is put off further
        assert len(short[name]) == len(latest[name])
        assert all(s <= x for s, x in zip(short[name], latest[name], strict=True))
    assert sum(1 for t in short["a"] if t == 0.0) > sum(1 for t in latest["a"] if t == 0.0)
