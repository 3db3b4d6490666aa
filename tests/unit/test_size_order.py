"""The leftover order by the RM's own size estimate (``carbyne:estimate``), and what the simulator tells AMs."""

from __future__ import annotations

import math
from typing import Any

import pytest

from am.jobspec import parse_job
from common.ids import AppId, QueuePath
from common.resources import Resources
from common.terms import AppTerms, SizeEstimate
from rm.core.harness import Harness, ask
from rm.core.model import AppView, AskView
from rm.core.plan import Place
from rm.core.policies.api import ESTIMATES
from rm.core.policies.leftover import LeftoverArgs
from rm.core.policies.registry import named_pipeline, reads, scheduler
from rm.core.policies.size_order import EstimateOrder, remaining_estimate, size_bucket
from sim.am import SimAM, declared_only
from sim.gen.stale import declare
from sim.policies import make_policy


def view(app: str, submit: float, *, size: SizeEstimate | None = None, reported: float = 0.0) -> AppView:
    asks = (AskView(app_id=AppId(app), allocation_request_id=0, priority=1, capability=Resources.of(vcores=1),
                    num_containers=1, remaining_work_s=reported),)
    return AppView(app_id=AppId(app), queue=QueuePath("root.default"), user="u", priority=0, submit_time=submit,
                   used=Resources(), asks=asks, terms=AppTerms(size=size))


def test_buckets_double() -> None:
    assert size_bucket(0.5) == 0
    assert size_bucket(1.0) == size_bucket(1.9) == 1
    assert size_bucket(2.0) == size_bucket(3.9) == 2
    assert size_bucket(1000.0) == 10  # 2^9 = 512 <= 1000 < 1024
    assert size_bucket(99.0, multiplier=10) == 2
    with pytest.raises(ValueError, match="multiplier"):
        size_bucket(5.0, multiplier=1.0)


def test_the_rms_estimate_beats_what_the_am_reports_and_unknown_goes_last() -> None:
    measured = view("a", 0.0, size=SizeEstimate(300.0, "slearn"), reported=10.0)
    reported = view("b", 1.0, reported=40.0)
    unknown = view("c", 2.0)
    assert remaining_estimate(measured) == (300.0, "slearn")
    assert remaining_estimate(reported) == (40.0, "declared")
    assert remaining_estimate(unknown) is None
    order = EstimateOrder()
    ranked = sorted([unknown, measured, reported], key=lambda v: order.sort_key(v, None))  # type: ignore[arg-type]
    assert [v.app_id for v in ranked] == ["b", "a", "c"]
    assert order.sort_key(unknown, None)[0] == math.inf  # type: ignore[arg-type]
    # a stock app's measure is only the work done so far: nothing "left" means the RM does not know
    exhausted = view("d", 3.0, size=SizeEstimate(0.0, "slearn", total_s=120.0))
    assert remaining_estimate(exhausted) is None


def test_first_come_first_served_inside_a_bucket_smaller_bucket_first() -> None:
    order = EstimateOrder()
    early_bigger = view("a", 0.0, size=SizeEstimate(120.0, "slearn"))  # bucket 7: [64, 128)
    late_smaller = view("b", 5.0, size=SizeEstimate(70.0, "slearn"))  # also bucket 7
    small = view("c", 9.0, size=SizeEstimate(20.0, "slearn"))  # bucket 5
    ranked = sorted([late_smaller, early_bigger, small], key=lambda v: order.sort_key(v, None))  # type: ignore[arg-type]
    assert [v.app_id for v in ranked] == ["c", "a", "b"]


def two_jobs(h: Harness) -> tuple[Any, Any]:
    """Two yielding jobs on one 4-vcore node; each AM reports the other's remaining work as its own."""
    h.node("n1", vcores=4, memory_mb=4096)
    big = h.app(asks=[ask(vcores=1, memory_mb=1, num=4, ask_type="ALTRUISTIC", remaining_work_s=5.0)])
    small = h.app(asks=[ask(vcores=1, memory_mb=1, num=4, ask_type="ALTRUISTIC", remaining_work_s=500.0)],
                  submit_time=5.0)
    return big, small


def test_the_leftover_goes_to_the_job_the_rm_measures_closest_to_completion() -> None:
    h = Harness()
    big, small = two_jobs(h)
    plan = h.cycle(pipeline=named_pipeline("carbyne")[0])
    assert plan.count(Place.match(app_id=big.id)) == 4  # the AMs' own figures: "big" says 5 s
    h = Harness()
    big, small = two_jobs(h)
    h.ledger.report_size(big.id, SizeEstimate(2000.0, "slearn"))
    h.ledger.report_size(small.id, SizeEstimate(30.0, "slearn"))
    plan = h.cycle(pipeline=named_pipeline("carbyne:estimate")[0])
    assert plan.count(Place.match(app_id=small.id)) == 4
    assert plan.count(Place.match(app_id=big.id)) == 0


def test_carbyne_estimate_is_carbyne_with_the_estimate_order_and_keeps_it_under_a_cap() -> None:
    args = scheduler("carbyne:estimate").pipeline
    assert args.stages == scheduler("carbyne").pipeline.stages
    assert ESTIMATES in reads(args)
    assert ESTIMATES not in reads(scheduler("carbyne").pipeline)
    capped = scheduler("carbyne:estimate:1.5").pipeline.settings
    assert capped == (LeftoverArgs(1.5, order="estimate"),)
    stages, _ = named_pipeline("carbyne:estimate", 2.0)
    leftover = stages[-1]
    assert isinstance(leftover.order, EstimateOrder)
    assert leftover.cap == 2.0
    with pytest.raises(ValueError, match="unknown leftover order"):
        LeftoverArgs(order="biggest").validate()
    # the simulator measures sizes as live for it, and hands the RM exact sizes otherwise
    assert make_policy("carbyne:estimate").estimator == "slearn"
    assert make_policy("carbyne").estimator is None


JOB = {"id": "j", "stages": [
    {"name": "a", "tasks": 2, "memory_mb": 1, "duration_s": 10.0, "durations_s": [30.0, 50.0]},
    {"name": "b", "tasks": 1, "memory_mb": 1, "durations_s": [7.0], "parents": ["a"]},
]}


def test_declared_only_keeps_what_the_job_file_declares() -> None:
    job = parse_job(JOB)
    known = declared_only(job)
    assert [s.durations_s for s in known.stages] == [None, None]
    assert [s.duration_s for s in known.stages] == [10.0, 7.0]  # declared; else the tasks' mean
    assert SimAM(known, _greedy()).dag.remaining_work_s(0.0) == 27.0
    assert SimAM(job, _greedy()).dag.remaining_work_s(0.0) == 87.0  # the default: each task's own


def _greedy() -> Any:
    from am.policies import make_ask_policy
    return make_ask_policy("greedy")


def test_declare_sets_exact_means_or_drifts_them_deterministically() -> None:
    job = parse_job(JOB)
    exact = declare([job])[0]
    assert [s.duration_s for s in exact.stages] == [40.0, 7.0]
    assert [s.durations_s for s in exact.stages] == [(30.0, 50.0), (7.0,)]
    stale = declare([job], sigma_job=0.8, sigma_stage=0.3, seed=4)[0]
    assert stale == declare([job], sigma_job=0.8, sigma_stage=0.3, seed=4)[0]
    assert [s.durations_s for s in stale.stages] == [(30.0, 50.0), (7.0,)]  # what the tasks take stays
    assert [s.duration_s for s in stale.stages] != [40.0, 7.0]
    with pytest.raises(ValueError, match="sigmas"):
        declare([job], sigma_job=-1.0)


def test_the_live_rm_takes_carbyne_estimate_and_a_cap_keeps_its_order() -> None:
    from rm.service.config import RMConfig

    cfg = RMConfig(scheduler="carbyne:estimate", leftover_cap=2.0)
    cfg.validate()  # the live RM measures sizes itself: an order reading them is allowed
    assert cfg.policy_settings() == (LeftoverArgs(2.0, order="estimate"),)
    assert RMConfig(scheduler="carbyne", leftover_cap=2.0).policy_settings() == (LeftoverArgs(2.0),)


class FirstEstimates:
    """A size watcher that keeps the first estimate of each source the RM gave each job."""

    def __init__(self) -> None:
        self.first: dict[str, dict[str, float]] = {}

    def app_sized(self, errors: dict[str, float]) -> None:
        pass

    def job_sized(self, app_id: str, tasks: int, first: dict[str, float], actual: float,
                  sampled: bool = False) -> None:
        self.first[app_id] = first


def run_declared(policy: str, declared: bool) -> tuple[float, dict[str, dict[str, float]]]:
    from sim.config import SimConfig, uniform_nodes
    from sim.engine import Simulator

    job = parse_job({**JOB, "am_policy": "carbyne"})
    sim = Simulator([job], uniform_nodes(1, 8192, 4), make_policy(policy),
                    SimConfig(seed=1, declared_durations=declared))
    seen = FirstEstimates()
    sim.ledger.sizes.watchers.append(seen)
    result = sim.run()
    return result.jcts()["j"], seen.first


def test_declared_durations_change_what_is_known_not_what_tasks_take() -> None:
    told, _ = run_declared("drf", True)
    known, _ = run_declared("drf", False)
    assert told == known  # greedy asks do not depend on estimates: the same run
    assert told > 50.0 + 7.0  # the tasks took their own 30-50 s and 7 s, not the declared 10 s
    _, first = run_declared("carbyne:estimate", True)
    (sources,) = first.values()
    assert sources["declared"] == 27.0  # the RM read the job file's declarations: 2 x 10 s + 7 s
    assert sources["slearn"] > 27.0  # then measured the tasks that finished
    assert "oracle" not in sources  # and was never handed the simulator's exact sizes
