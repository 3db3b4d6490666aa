"""A scheduler name means one RM pipeline and one AM ask policy, live and simulated; policies declare what
they read, take typed settings, and take an app order."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import pytest

from am.dag import ask_policy_name
from am.jobspec import Job, parse_job
from rm.core.context import CycleContext
from rm.core.harness import Harness, ask
from rm.core.model import AppView
from rm.core.plan import Place
from rm.core.policies.api import NOTHING, SHARES, SIZES, WAKES, Input, pipeline_reads
from rm.core.policies.drf import DrfStage
from rm.core.policies.fifo import FifoOrder
from rm.core.policies.leftover import LeftoverArgs, LeftoverStage
from rm.core.policies.packing import PackingArgs, PackingStage
from rm.core.policies.registry import ARGS, SCHEDULERS, build_pipeline, named_pipeline, scheduler
from rm.core.policies.tetris import TetrisPacker
from rm.service.config import RMConfig
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.policies import make_policy

GB = 1024


def job(job_id: str, arrival: float, **extra: Any) -> Job:
    stages = [{"name": "map", "tasks": 12, "duration_s": 4.0, "memory_mb": GB, "vcores": 1},
              {"name": "side", "tasks": 6, "duration_s": 1.0, "memory_mb": GB, "vcores": 1},
              {"name": "reduce", "tasks": 2, "duration_s": 3.0, "memory_mb": GB, "vcores": 1,
               "parents": ["map", "side"]}]
    return parse_job({"id": job_id, "arrival_s": arrival, "stages": stages, **extra})


# ------------------------------------------------------------------------------------------ names


def test_each_scheduler_names_its_am_policy() -> None:
    policies = {name: args.ask_policy for name, args in SCHEDULERS.items()}
    assert policies == {"carbyne": "carbyne", "carbyne-pack": "carbyne", "carbyne:estimate": "carbyne",
                        "morpheus": "carbyne", "mrm": "carbyne",
                        "slearn": "carbyne", "jockey": "jockey",
                        "edf": "greedy",
                        "drf": "greedy", "fifo": "greedy", "tetris": "greedy", "sjf": "greedy",
                        "gs": "greedy", "gs:slearn": "greedy", "gs:history": "greedy", "gs:las": "greedy",
                        "gs:oracle": "greedy"}
    assert make_policy("carbyne:1.5").ask_policy == "carbyne"
    assert make_policy("tetris:0.25").ask_policy == "greedy"


def test_the_simulator_runs_each_schedulers_own_am_policy_unless_overridden() -> None:
    w = [job(f"j{i}", 2.0 * i) for i in range(4)]

    def decisions(policy: str, config: SimConfig, jobs: list[Job] = w) -> list[tuple[float, str, str, str]]:
        sim = Simulator(jobs, uniform_nodes(2, 4 * GB, 4), make_policy(policy), replace(config, record_decisions=True))
        sim.run()
        return sim.decisions

    own = decisions("carbyne", SimConfig(seed=1))
    altruistic = decisions("carbyne", SimConfig(seed=1, ask_policy="carbyne"))
    greedy = decisions("carbyne", SimConfig(seed=1, ask_policy="greedy"))
    assert own == altruistic  # carbyne's AMs yield without any flag
    assert own != greedy  # and that is not what greedy AMs get
    # a job's own am_policy wins over both the scheduler's and the override
    named = [j.model_copy(update={"am_policy": "greedy"}) for j in w]
    assert decisions("carbyne", SimConfig(seed=1), named) == greedy
    assert decisions("carbyne", SimConfig(seed=1, ask_policy="carbyne"), named) == greedy
    # the baselines keep greedy AMs: drf's decisions are those of an explicit greedy override
    assert decisions("drf", SimConfig(seed=1)) == decisions("drf", SimConfig(seed=1, ask_policy="greedy"))


def test_the_dag_am_takes_the_job_s_then_the_flag_s_then_the_rm_s_ask_policy() -> None:
    plain = job("j", 0.0)
    assert ask_policy_name(plain, None, {}) == "carbyne"
    assert ask_policy_name(plain, None, {"SHEPHERD_AM_POLICY": "greedy"}) == "greedy"
    assert ask_policy_name(plain, "carbyne", {"SHEPHERD_AM_POLICY": "greedy"}) == "carbyne"
    own = plain.model_copy(update={"am_policy": "greedy"})
    assert ask_policy_name(own, "carbyne", {"SHEPHERD_AM_POLICY": "carbyne"}) == "greedy"


# ------------------------------------------------------------------------------------------ reads


def reads(name: str) -> frozenset[Input]:
    stages, _ = build_pipeline(scheduler(name).pipeline)
    return pipeline_reads(stages)


def test_pipelines_declare_what_they_read() -> None:
    assert reads("sjf") == {SIZES}
    assert reads("drf") == reads("fifo") == reads("tetris") == NOTHING
    assert reads("carbyne") == reads("carbyne-pack") == {SHARES}
    assert reads("morpheus") == {SHARES, WAKES}
    assert reads("carbyne:none") == {SHARES}  # the DRF stage still holds yielding apps to their shares
    assert LeftoverStage(TetrisPacker()).reads == NOTHING  # uncapped, it reads no share
    assert LeftoverStage(TetrisPacker(), cap=2.0).reads == {SHARES}
    sims = {n: (p.needs_sizes, p.needs_shares) for n in SCHEDULERS for p in [make_policy(n)]}
    assert sims == {"sjf": (True, False), "drf": (False, False), "fifo": (False, False),
                    "tetris": (False, False), "carbyne": (False, True), "carbyne-pack": (False, True),
                    "carbyne:estimate": (False, True),
                    "morpheus": (False, True), "mrm": (False, True), "edf": (False, False), "slearn": (False, True),
                    "jockey": (False, True), "gs": (False, False), "gs:slearn": (False, False),
                    "gs:history": (False, False), "gs:las": (False, False), "gs:oracle": (True, False)}


class _ShortestFirst:
    """A size order plugged into a stage: what it reads becomes the stage's."""

    name: ClassVar[str] = "shortest"
    reads: frozenset[Input] = frozenset({SIZES})

    def sort_key(self, app: AppView, ctx: CycleContext) -> tuple[float | int | str, ...]:
        return (app.size_hint_s or 0.0, app.submit_time, app.app_id)


def test_an_order_s_reads_become_its_stage_s() -> None:
    scorer = TetrisPacker()
    assert DrfStage(scorer, order=_ShortestFirst()).reads == {SIZES}
    assert DrfStage(scorer, within_share=True, order=_ShortestFirst()).reads == {SHARES, SIZES}
    assert LeftoverStage(scorer, order=_ShortestFirst()).reads == {SIZES}


# ------------------------------------------------------------------------------------------ settings


def test_knobs_are_the_policies_typed_settings() -> None:
    assert set(ARGS) == {"leftover", "packing", "gs"}
    assert scheduler("carbyne").pipeline.settings == (LeftoverArgs(3.0),)
    assert scheduler("carbyne:1.5").pipeline.settings == (LeftoverArgs(1.5),)
    assert scheduler("tetris:0.25").pipeline.settings == (PackingArgs(0.25),)
    (packing,) = build_pipeline(scheduler("tetris:0.25").pipeline)[0]
    assert isinstance(packing, PackingStage)
    assert packing.fairness == 0.25
    caps = [s.cap for s in build_pipeline(scheduler("morpheus:2").pipeline)[0] if isinstance(s, LeftoverStage)]
    assert caps == [2.0]
    assert [s.cap for s in named_pipeline("carbyne", 1.5)[0] if isinstance(s, LeftoverStage)] == [1.5]
    for bad, why in (("carbyne:0.5", "at least 1"), ("carbyne:lots", "cap"), ("tetris:1", "fairness"),
                     ("tetris:x", "fairness"), ("drf:2", "no parameter"), ("nope", "unknown scheduler")):
        with pytest.raises(ValueError, match=why):
            scheduler(bad)
    with pytest.raises(ValueError, match="at least 1"):
        LeftoverArgs(0.9).validate()


def test_the_live_rm_refuses_sjf_and_says_why() -> None:
    with pytest.raises(ValueError, match=r"'sjf'.*size"):
        RMConfig(scheduler="sjf").validate()
    for name in ("carbyne", "carbyne-pack", "morpheus", "drf", "fifo", "tetris", "gs:slearn", "gs:history",
                 "gs:las"):
        RMConfig(scheduler=name).validate()
    with pytest.raises(ValueError, match=r"'gs:oracle'.*size"):
        RMConfig(scheduler="gs:oracle").validate()
    with pytest.raises(ValueError, match="at least 1"):
        RMConfig(leftover_cap=0.5).validate()
    with pytest.raises(ValueError, match="unknown scheduler"):
        RMConfig(scheduler="lottery").validate()


# ------------------------------------------------------------------------------------------ app order


def test_the_drf_stage_takes_an_app_order() -> None:
    h = Harness()
    h.node("n1", vcores=4, memory_mb=16 * GB)
    old = h.app(asks=[ask(num=4)], submit_time=1.0)
    new = h.app(asks=[ask(num=4)], submit_time=2.0)
    drf = h.cycle([DrfStage(TetrisPacker())])
    assert drf.count(Place.match(app_id=old.id)) == drf.count(Place.match(app_id=new.id)) == 2
    fifo = h.cycle([DrfStage(TetrisPacker(), order=FifoOrder())])
    assert fifo.count(Place.match(app_id=old.id)) == 4


def test_the_leftover_stage_takes_an_app_order_and_sees_only_its_asks() -> None:
    seen: list[tuple[str, tuple[str, ...]]] = []

    class Newest:
        name: ClassVar[str] = "newest"
        reads: frozenset[Input] = NOTHING

        def sort_key(self, app: AppView, ctx: CycleContext) -> tuple[float | int | str, ...]:
            seen.append((app.app_id, tuple(a.ask_type for a in app.asks)))
            return (-app.submit_time,)

    def run(order: Newest | None) -> tuple[int, int]:
        h = Harness()
        h.node("n1", vcores=4, memory_mb=16 * GB)
        near = h.app(asks=[ask(num=4, ask_type="ALTRUISTIC", remaining_work_s=10.0)], submit_time=1.0)
        far = h.app(asks=[ask(num=4, ask_type="ALTRUISTIC", remaining_work_s=100.0),
                          ask(num=1, is_am=True, priority=0)], submit_time=2.0)
        plan = h.cycle([LeftoverStage(TetrisPacker(), order=order)])
        far_tasks = sum(1 for p in plan.placements if p.app_id == far.id and not p.is_am)
        return plan.count(Place.match(app_id=near.id)), far_tasks

    assert run(None) == (4, 0)  # closest to completion first
    assert run(Newest()) == (0, 4)
    assert all(types == ("ALTRUISTIC",) for _, types in seen)  # the AM ask is not the leftover's

