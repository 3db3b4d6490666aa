"""Carbyne's RM side: DEFAULT asks in DRF order, then the leftover to ALTRUISTIC asks by SRTF."""

from __future__ import annotations

from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from common.resources import Resources
from rm.core.harness import Harness, ask
from rm.core.plan import Place
from rm.core.policies.drf import DrfStage
from rm.core.policies.drf_shares import DrfShares
from rm.core.policies.leftover import LeftoverStage
from rm.core.policies.tetris import TetrisPacker


def carbyne(order: str = "srtf", cap: float | None = None) -> list[object]:
    """The carbyne pipeline's stages (uncapped unless ``cap``): DRF, holding yielding jobs to their shares,
    then the leftover."""
    scorer = TetrisPacker()
    return [DrfStage(scorer, frozenset({"DEFAULT"}), within_share=True),  # type: ignore[list-item]
            LeftoverStage(scorer, order, cap=cap)]


def figure_2() -> tuple[Harness, object, object]:
    """The asks the two AMs of the paper's Figure 2 make at time 0 (one resource, in hundredths)."""
    h = Harness()
    h.node("n1", vcores=100, memory_mb=100_000)
    j1 = h.app(asks=[
        ask(vcores=21, memory_mb=1, num=1, priority=0, stage="s1", remaining_work_s=5.1),
        ask(vcores=4, memory_mb=1, num=2, priority=0, ask_type="ALTRUISTIC", stage="s0", remaining_work_s=5.1),
        ask(vcores=21, memory_mb=1, num=2, priority=0, ask_type="ALTRUISTIC", stage="s1", remaining_work_s=5.1),
    ])
    j2 = h.app(asks=[
        ask(vcores=29, memory_mb=1, num=1, priority=0, stage="s0", remaining_work_s=2.0),
        ask(vcores=29, memory_mb=1, num=1, priority=0, ask_type="ALTRUISTIC", stage="s0", remaining_work_s=2.0),
    ], submit_time=0.5)
    return h, j1, j2


def test_figure_2_leftover_goes_to_the_job_closest_to_completion_then_packs() -> None:
    h, j1, j2 = figure_2()
    plan = h.cycle(pipeline=carbyne())  # type: ignore[arg-type]
    by = {(p.app_id, p.stage, p.from_leftover) for p in plan.placements}
    assert plan.count(Place.match(app_id=j2.id)) == 2  # type: ignore[attr-defined]
    assert plan.count(Place.match(app_id=j1.id, stage="s1")) == 2  # type: ignore[attr-defined]
    assert plan.count(Place.match(app_id=j1.id, stage="s0")) == 0  # type: ignore[attr-defined]
    assert (j2.id, "s0", True) in by  # type: ignore[attr-defined]
    assert plan.counters["placed_from_leftover"] == 2
    assert sum(p.resource.vcores for p in plan.placements) == 100  # nothing idles


def test_efficiency_first_order_packs_before_srtf() -> None:
    h, _, _ = figure_2()
    plan = h.cycle(pipeline=carbyne("pack"))  # type: ignore[arg-type]
    assert sum(p.resource.vcores for p in plan.placements) == 100


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_all_default_asks_reproduce_drf_decisions(data: st.DataObject) -> None:
    """P(altruism) = 0: every ask is DEFAULT, and the carbyne pipeline decides exactly as DRF does."""
    seed = data.draw(st.integers(0, 10_000))
    rng = Random(seed)
    plans = []
    for pipeline in (None, carbyne()):
        h = Harness()
        r = Random(seed)
        for i in range(r.randint(1, 4)):
            h.node(f"n{i}", vcores=r.choice([4, 8, 16]), memory_mb=r.choice([4096, 8192, 16384]))
        for j in range(r.randint(1, 5)):
            h.app(asks=[ask(vcores=r.randint(1, 4), memory_mb=r.choice([256, 512, 1024, 2048]),
                            num=r.randint(1, 12), priority=r.randint(0, 2), remaining_work_s=r.random() * 100)
                        for _ in range(r.randint(1, 3))], submit_time=float(j))
        plans.append(h.cycle(pipeline=pipeline, shares=DrfShares()))  # type: ignore[arg-type]
    assert rng is not None
    drf, carb = plans
    assert carb.shares  # the carbyne cycle had fair shares: nobody was held to one, since nobody yields
    assert [(p.app_id, p.allocation_request_id, p.node_id) for p in drf.placements] == \
        [(p.app_id, p.allocation_request_id, p.node_id) for p in carb.placements]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_leftover_is_work_conserving(seed: int) -> None:
    r = Random(seed)
    h = Harness()
    for i in range(r.randint(1, 4)):
        h.node(f"n{i}", vcores=r.choice([4, 8]), memory_mb=r.choice([4096, 8192]))
    for j in range(r.randint(1, 5)):
        h.app(asks=[ask(vcores=r.randint(1, 3), memory_mb=r.choice([256, 1024]), num=r.randint(1, 10),
                        ask_type=r.choice(["DEFAULT", "ALTRUISTIC"]), remaining_work_s=r.random() * 50)
                    for _ in range(2)], submit_time=float(j))
    plan = h.cycle(pipeline=carbyne())  # type: ignore[arg-type]
    h.apply(plan)
    snap = h.snapshot()
    for app in snap.apps.values():
        for a in app.asks:
            if a.num_containers > 0:
                assert not any(a.capability.fits_in(n.available) for n in snap.nodes.values())


def test_a_leftover_cap_spreads_the_leftover_over_the_next_jobs_and_still_idles_nothing() -> None:
    def run(cap: float | None, wants: tuple[int, int, int]) -> dict[object, int]:
        h = Harness()
        h.node("n1", vcores=100, memory_mb=100_000)
        apps = [h.app(asks=[ask(vcores=10, memory_mb=1, num=n, ask_type="ALTRUISTIC", remaining_work_s=w)],
                      submit_time=float(w))
                for n, w in zip(wants, (1.0, 2.0, 3.0), strict=True)]
        scorer = TetrisPacker()
        pipeline = [DrfStage(scorer, frozenset({"DEFAULT"})), LeftoverStage(scorer, cap=cap)]
        plan = h.cycle(pipeline=pipeline, shares=DrfShares())  # type: ignore[arg-type]
        assert sum(p.resource.vcores for p in plan.placements) == 100  # nothing idles
        return {a.id: plan.count(Place.match(app_id=a.id)) for a in apps}  # type: ignore[attr-defined]

    a, b, c = (list(run(None, (10, 10, 10)).values()))
    assert (a, b, c) == (10, 0, 0)  # plain SRTF: the shortest job takes it all
    # each up to 1.5 x its fair share of 33 vcores (49.5): 4 containers, and the third job gets the rest
    assert list(run(1.5, (10, 10, 10)).values()) == [4, 4, 2]
    assert list(run(1.5, (2, 2, 10)).values()) == [2, 2, 6]  # the uncapped pass fills what the cap left


def test_a_leftover_cap_below_the_fair_share_is_refused() -> None:
    import pytest

    with pytest.raises(ValueError, match="at least 1"):
        LeftoverStage(TetrisPacker(), cap=0.5)


def test_a_yielding_job_past_its_share_waits_for_the_leftover_order() -> None:
    """On 120 vcores (in containers of 10): a greedy job wants 2, a long yielding job 6 DEFAULT and 1
    ALTRUISTIC, a short one 2 DEFAULT and 3 ALTRUISTIC. The fair shares are 2, 5 and 5. DRF's work
    conservation would give the long job all 6 DEFAULT and the short job 2 of its 3 ALTRUISTIC; here the
    long job stops at its share and what is left goes to the job closest to completion."""
    h = Harness()
    h.node("n1", vcores=120, memory_mb=120_000)
    greedy = h.app(asks=[ask(vcores=10, memory_mb=1, num=2, remaining_work_s=10.0)])
    long = h.app(asks=[ask(vcores=10, memory_mb=1, num=6, remaining_work_s=500.0),
                       ask(vcores=10, memory_mb=1, num=1, ask_type="ALTRUISTIC", remaining_work_s=500.0)])
    short = h.app(asks=[ask(vcores=10, memory_mb=1, num=2, remaining_work_s=50.0),
                        ask(vcores=10, memory_mb=1, num=3, ask_type="ALTRUISTIC", remaining_work_s=50.0)])

    def run(pipeline: list[object]) -> list[int]:
        plan = h.cycle(pipeline=pipeline, shares=DrfShares())  # type: ignore[arg-type]
        assert sum(p.resource.vcores for p in plan.placements) == 120  # nothing idles either way
        return [plan.count(Place.match(app_id=a.id)) for a in (greedy, long, short)]  # type: ignore[attr-defined]

    scorer = TetrisPacker()
    assert run([DrfStage(scorer, frozenset({"DEFAULT"})), LeftoverStage(scorer)]) == [2, 6, 4]
    assert run(carbyne()) == [2, 5, 5]


def test_a_cycle_without_fresh_shares_holds_yielding_jobs_to_the_last_ones() -> None:
    """The live RM recomputes the shares once a second; the cycles between read the last ones."""
    def first_stage_count(fair: Resources | None) -> int:
        h = Harness()
        h.node("n1", vcores=100, memory_mb=100_000)
        job = h.app(asks=[ask(vcores=10, memory_mb=1, num=8, remaining_work_s=80.0),
                          ask(vcores=10, memory_mb=1, num=2, ask_type="ALTRUISTIC", remaining_work_s=80.0)],
                    fair_share=fair)
        plan = h.cycle(pipeline=carbyne()[:1])  # type: ignore[arg-type]
        return plan.count(Place.match(app_id=job.id))  # type: ignore[attr-defined]

    assert first_stage_count(None) == 8  # no share known yet: DRF, work-conserving
    assert first_stage_count(Resources.of(vcores=30, memory_mb=3)) == 3
