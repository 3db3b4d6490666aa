"""Run metrics: Jain's index, percentiles, improvement factors, utilization, and the summary shape."""

from __future__ import annotations

import math

import pytest

from rm.core.resources import Resources
from sim.metrics import JobRecord, RunResult, compare, jain_index, percentile
from sim.report import summarize


def result(name: str, jcts: dict[str, float], jain: list[float] | None = None) -> RunResult:
    jobs = [JobRecord(j, 0.0, 1, finish=t, status="SUCCEEDED", first_task_start=1.0) for j, t in jcts.items()]
    return RunResult(name, jobs, Resources.of(memory_mb=100, vcores=10), [0.0, 5.0],
                     [Resources.of(memory_mb=50, vcores=10), Resources()], [(0.0, x) for x in jain or [1.0]], 3, 3)


def test_jain_index() -> None:
    assert jain_index([1.0, 1.0, 1.0]) == 1.0
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert jain_index([]) == 1.0


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10], 95) == 10
    assert percentile(list(range(101)), 95) == 95
    assert math.isnan(percentile([], 50))


def test_improvement_factors_are_baseline_over_policy() -> None:
    base = result("drf", {"a": 10.0, "b": 20.0, "c": 30.0})
    mine = result("sjf", {"a": 5.0, "b": 20.0, "c": 40.0})
    cmp = compare(mine, base)
    assert cmp.factors == {"a": 2.0, "b": 1.0, "c": 0.75}
    assert cmp.improvement_avg == pytest.approx(20.0 / (65.0 / 3))
    assert cmp.slowed_below_0_8 == pytest.approx(1 / 3)


def test_utilization_is_time_weighted_over_the_run() -> None:
    r = result("drf", {"a": 10.0})  # runs 0..10; half memory and all cores for 5 s, then nothing
    assert r.util_avg() == {"memory-mb": pytest.approx(0.25), "vcores": pytest.approx(0.5)}
    xs, series = r.util_series(5.0)
    assert xs == [2.5, 7.5]
    assert series["vcores"] == [pytest.approx(1.0), pytest.approx(0.0)]


def test_summary_has_the_documented_fields() -> None:
    s = summarize({"drf": result("drf", {"a": 10.0}, [0.9, 0.7]), "sjf": result("sjf", {"a": 5.0}, [0.5])}, "drf")
    assert s["baseline"] == "drf"
    drf, sjf = s["policies"]["drf"], s["policies"]["sjf"]
    for key in ("jobs", "avg_jct_s", "p50_jct_s", "p95_jct_s", "makespan_s", "jain_avg", "jain_min", "util_avg",
                "improvement_avg", "improvement_p95", "slowed_below_0_8"):
        assert key in drf
    assert (drf["jain_avg"], drf["jain_min"], drf["improvement_avg"]) == (0.8, 0.7, 1.0)
    assert sjf["improvement_avg"] == 2.0
    assert sjf["slowed_below_0_8"] == 0.0
    with pytest.raises(ValueError, match="baseline"):
        summarize({"drf": result("drf", {})}, "fifo")
