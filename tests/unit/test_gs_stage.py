"""SLearn's generic scheduler (GS): queues by estimated size, FIFO inside, weighted sharing across, the thin
bypass and the sampling queue; the scheduler names that pick an estimator, live and simulated."""

from __future__ import annotations

import pytest

from am.jobspec import Job, parse_job
from common.ids import AppId, QueuePath
from common.resources import Resources
from common.terms import AppTerms, SizeEstimate, SizeSource
from rm.core.harness import Harness, ask
from rm.core.model import AppView, AskView
from rm.core.plan import Place
from rm.core.policies.api import SIZES
from rm.core.policies.gs import GsArgs, GsStage, queue_of, size_setup
from rm.core.policies.registry import build_pipeline, scheduler
from rm.core.policies.tetris import TetrisPacker
from rm.core.sizes.gs import GsConfig
from rm.service.config import RMConfig
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.policies import make_policy
from sim.sizes import history_key


def sized(source: SizeSource, total: float) -> SizeEstimate:
    return SizeEstimate(total, source, total)


def view(*, size: SizeEstimate | None = None, held: bool = False) -> AppView:
    task = AskView(app_id=AppId("a"), allocation_request_id=0, priority=1,
                   capability=Resources.of(memory_mb=1024, vcores=1), num_containers=3)
    return AppView(app_id=AppId("a"), queue=QueuePath("root.default"), user="u", priority=0, submit_time=0.0,
                   used=Resources(), asks=(task,), terms=AppTerms(size=size), held=(task,) if held else ())


CFG = GsConfig(q0_s=100.0)  # queue 0 below 100 task-seconds, 1 sampling, 2 below 1,000, 3 below 10,000, ...


def test_an_app_s_queue_follows_its_estimate_and_the_estimator() -> None:
    assert queue_of(view(size=sized("slearn", 50.0)), "slearn", CFG) == 0
    assert queue_of(view(size=sized("slearn", 100.0)), "slearn", CFG) == 2  # bounds belong to the next queue
    assert queue_of(view(size=sized("slearn", 5_000.0)), "slearn", CFG) == 3
    assert queue_of(view(size=sized("oracle", 5e12)), "oracle", CFG) == 9  # the last queue is unbounded
    # gated to its pilots: the sampling queue, whatever it is estimated at
    assert queue_of(view(size=sized("slearn", 5_000.0), held=True), "slearn", CFG) == 1
    # no estimate and no gate under slearn is a thin app (wide ones are gated): the top queue
    assert queue_of(view(), "slearn", CFG) == 0
    # an estimate of another source is not this estimator's: none yet
    assert queue_of(view(size=sized("declared", 5_000.0)), "slearn", CFG) == 0
    # the baselines wait for an estimate in the sampling queue's place
    assert queue_of(view(), "history", CFG) == 1
    assert queue_of(view(size=sized("history", 20.0)), "history", CFG) == 0
    assert queue_of(view(size=sized("las", 0.0)), "las", CFG) == 0


def cluster(slots: int) -> Harness:
    h = Harness()
    for i in range(slots):
        h.node(f"n{i}", vcores=1, memory_mb=1024)
    return h


def sized_app(h: Harness, source: SizeSource, total: float | None, tasks: int, at: float) -> AppId:
    app = h.app(asks=[ask(num=tasks)], submit_time=at).id
    if total is not None:
        h.ledger.report_size(app, sized(source, total))
    return app


def placed(plan: object, app: AppId) -> int:
    return plan.count(Place.match(app_id=app))  # type: ignore[attr-defined, no-any-return]


def gs(**kw: object) -> list[GsStage]:
    return [GsStage(TetrisPacker(), GsArgs(**kw))]  # type: ignore[arg-type]


def test_queues_share_capacity_by_weight() -> None:
    # queues 0 and 2 (the sampling queue between them), weights 1 and 0.25: queue 0 gets 3 times what queue 2
    # gets while both wait
    h = cluster(12)
    small = sized_app(h, "oracle", 50.0, tasks=20, at=1.0)
    big = sized_app(h, "oracle", 500.0, tasks=20, at=0.0)
    plan = h.cycle(pipeline=gs(estimator="oracle", q0_s=100.0, weight_decay=2.0))
    assert (placed(plan, small), placed(plan, big)) == (9, 3)


def test_a_small_job_overtakes_an_older_big_one_but_the_big_one_is_not_starved() -> None:
    h = cluster(12)
    big = sized_app(h, "oracle", 50_000.0, tasks=20, at=0.0)  # queue 4, weight 1/10,000
    small = sized_app(h, "oracle", 50.0, tasks=20, at=1.0)
    plan = h.cycle(pipeline=gs(estimator="oracle", q0_s=100.0))
    assert (placed(plan, small), placed(plan, big)) == (11, 1)


def test_fifo_inside_a_queue_whatever_the_sizes() -> None:
    h = cluster(12)
    old = sized_app(h, "oracle", 90.0, tasks=10, at=0.0)
    new = sized_app(h, "oracle", 10.0, tasks=10, at=1.0)  # smaller, but in the same queue
    plan = h.cycle(pipeline=gs(estimator="oracle", q0_s=100.0))
    assert (placed(plan, old), placed(plan, new)) == (10, 2)


def test_work_conserving_a_lone_low_queue_takes_everything() -> None:
    h = cluster(6)
    big = sized_app(h, "oracle", 1e9, tasks=20, at=0.0)
    plan = h.cycle(pipeline=gs(estimator="oracle", q0_s=100.0))
    assert placed(plan, big) == 6


def test_capacity_a_queue_holds_counts_against_it() -> None:
    # the big job holds half the cluster (the harness's ``used`` is bookkeeping only: all 8 slots are free):
    # with weights 1 : 0.25 the small one's queue is behind until it holds 4 times as much: it takes all 8
    h = cluster(8)
    big = h.app(asks=[ask(num=20)], submit_time=0.0, used=Resources.of(memory_mb=4096, vcores=4)).id
    h.ledger.report_size(big, sized("oracle", 500.0))
    small = sized_app(h, "oracle", 50.0, tasks=20, at=1.0)
    plan = h.cycle(pipeline=gs(estimator="oracle", q0_s=100.0, weight_decay=2.0))
    assert (placed(plan, small), placed(plan, big)) == (8, 0)


def test_thin_apps_bypass_to_the_top_under_slearn() -> None:
    h = cluster(4)
    estimated = sized_app(h, "slearn", 500.0, tasks=10, at=0.0)  # queue 2
    thin = sized_app(h, "slearn", None, tasks=2, at=1.0)  # no estimate, not gated: thin
    plan = h.cycle(pipeline=gs(estimator="slearn", q0_s=100.0))
    assert placed(plan, thin) == 2
    assert placed(plan, estimated) == 2


# ------------------------------------------------------------------------------------------ names


def test_scheduler_names_pick_the_estimator_and_the_tracker_s_mode() -> None:
    for name, estimator, sampling in (("gs", "slearn", True), ("gs:slearn", "slearn", True),
                                      ("gs:history", "history", False), ("gs:las", "las", False),
                                      ("gs:oracle", "oracle", False)):
        args = scheduler(name).pipeline
        pipeline, _ = build_pipeline(args)
        stage = pipeline[0]
        assert isinstance(stage, GsStage)
        assert stage.estimator == estimator
        assert size_setup(pipeline) == (sampling, estimator if estimator in ("history", "las") else "slearn")
        assert make_policy(name).estimator == estimator
    assert size_setup(build_pipeline(scheduler("slearn").pipeline)[0]) == (True, "slearn")
    assert size_setup(build_pipeline(scheduler("carbyne").pipeline)[0]) == (False, "slearn")
    got = scheduler("gs:history:250").pipeline.settings
    assert got == (GsArgs("history", 250.0),)
    assert SIZES in build_pipeline(scheduler("gs:oracle").pipeline)[0][0].reads
    for bad, why in (("gs:history:x", "q0_s"), ("gs:las:-1", "q0_s"), ("gsx", "unknown scheduler")):
        with pytest.raises(ValueError, match=why):
            scheduler(bad)
    with pytest.raises(ValueError, match="estimator"):
        GsArgs("median").validate()
    RMConfig(scheduler="gs:las").validate()


# ------------------------------------------------------------------------------------------ simulated


def job(job_id: str, name: str, arrival: float, tasks: int, task_s: float) -> Job:
    """One task per node (6 of its 8 GB), room beside it for AM containers."""
    return parse_job({"id": job_id, "name": name, "arrival_s": arrival,
                      "stages": [{"name": "s", "tasks": tasks, "duration_s": task_s, "memory_mb": 6144}]})


def workload() -> list[Job]:
    """A long job first, then short ones that FIFO leaves behind it."""
    jobs = [job("long", "long", 0.0, 40, 30.0)]
    jobs += [job(f"short{i}", "short", 2.0 + i, 6, 2.0) for i in range(6)]
    return jobs


def avg_jct(policy: str, config: SimConfig) -> float:
    result = Simulator(workload(), uniform_nodes(4, 8192, 8), make_policy(policy), config).run()
    assert all(r.status == "SUCCEEDED" for r in result.jobs)
    return sum(r.finish - r.arrival for r in result.jobs if r.finish is not None) / len(result.jobs)


def test_every_estimator_runs_in_the_simulator_and_knowing_sizes_beats_fifo() -> None:
    # three earlier runs of each family: the job name's estimates are graded, and err least
    history = [(history_key(job("h", name, 0.0, 1, 1.0)), size)
               for _ in range(3) for name, size in (("long", 1200.0), ("short", 12.0))]
    config = SimConfig(seed=1, size_history=history)
    fifo = avg_jct("fifo", config)
    jct = {p: avg_jct(f"{p}:100", config) for p in ("gs:oracle", "gs:history", "gs:slearn", "gs:las")}
    assert jct["gs:oracle"] < 0.6 * fifo
    assert jct["gs:history"] < 0.6 * fifo  # the history knows both families
    assert jct["gs:slearn"] < 0.6 * fifo  # the long job's pilots tell it apart
    assert jct["gs:las"] < 0.6 * fifo


class _Firsts:
    """Records the first estimate of each source the RM's size tracker gave each finished job."""

    def __init__(self) -> None:
        self.firsts: list[dict[str, float]] = []

    def gate_opened(self, why: str, waited_s: float) -> None:
        pass

    def app_sized(self, errors: object) -> None:
        pass

    def job_sized(self, app_id: AppId, tasks: int, first: dict[str, float], actual: float,
                  sampled: bool = False) -> None:
        self.firsts.append(first)


def test_the_tracker_reports_what_the_estimator_reads() -> None:
    history = [(history_key(job("h", name, 0.0, 1, 1.0)), size)
               for _ in range(3) for name, size in (("long", 1200.0), ("short", 12.0))]
    seen: dict[str, list[dict[str, float]]] = {}
    for policy in ("gs:history:100", "gs:las:100", "gs:slearn:100"):
        sim = Simulator(workload(), uniform_nodes(4, 8192, 8), make_policy(policy),
                        SimConfig(seed=1, size_history=history))
        log = _Firsts()
        sim.ledger.sizes.watchers.append(log)
        sim.run()
        seen[policy.split(":")[1]] = log.firsts
    # the history's estimate, never replaced by what the tasks measure
    assert all("history" in f and "slearn" not in f for f in seen["history"])
    assert sorted(round(f["history"]) for f in seen["history"]) == [12] * 6 + [1200]
    # least attained service: nothing at the start
    assert all(f.get("las") == 0.0 and "slearn" not in f for f in seen["las"])
    # the pilots' measurement (after the job file's declared sizes)
    assert all("slearn" in f for f in seen["slearn"])
