"""Run metrics: Jain's index, percentiles, improvement factors, utilization, and the summary shape."""

from __future__ import annotations

import math

import pytest

from common.ids import NodeId, QueuePath, app_id
from common.resources import Resources
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView
from rm.core.policies.drf_shares import DrfShares
from rm.core.queues import build_queues
from sim.metrics import JobRecord, Recorder, RunResult, compare, declared_need, jain_index, percentile
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


def _snapshot(apps: list[AppView]) -> ClusterSnapshot:
    node = NodeId("h0:8041")
    capacity = Resources.of(memory_mb=100, vcores=100)
    return ClusterSnapshot(version=1, nodes={node: NodeView(node, "h0", "/r0", capacity, Resources())},
                           apps={a.app_id: a for a in apps}, queues=build_queues())


class _Cluster:
    """What the recorder reads of the ledger: whether apps are active, and a snapshot."""

    def __init__(self, snap: ClusterSnapshot) -> None:
        self.active = dict(snap.apps)
        self.snap = snap

    def snapshot(self) -> ClusterSnapshot:
        return self.snap


def test_the_three_fairness_readings_of_one_yielding_job() -> None:
    # a holds its AM (10) and asks 40 ALTRUISTIC (it yields); b holds 70 and asks 20 DEFAULT; c holds only
    # its AM container (10) and waits for the cluster with 20 DEFAULT
    am = Resources.of(memory_mb=10, vcores=10)

    def app(n: int, used: int, ask: int, kind: str) -> AppView:
        aid = app_id(1, n)
        held = Resources.of(memory_mb=used, vcores=used)
        asks = (AskView(aid, 1, 1, Resources.of(memory_mb=ask, vcores=ask), 1, ask_type=kind),)
        return AppView(aid, QueuePath("root.default"), "u", 0, float(n), held, asks, am_used=am)

    a, b, c = app(1, 10, 40, "ALTRUISTIC"), app(2, 70, 20, "DEFAULT"), app(3, 10, 20, "DEFAULT")
    snap = _snapshot([a, b, c])
    declared = DrfShares().shares(declared_need(snap))
    assert declared[a.app_id] == a.used  # it declared no need beyond what it holds
    # over all demand: c's 30 is met, a and b split the other 70
    assert DrfShares().shares(snap)[a.app_id] == Resources.of(memory_mb=35, vcores=35)

    recorder = Recorder(snap.capacity, 5.0, DrfShares())
    recorder.before(55.0, _Cluster(snap))  # twelve samples, all in the first window
    all_jobs, running, by_need = recorder.jain()[0][1], recorder.jain("running")[0][1], recorder.jain("declared")[0][1]
    assert all_jobs == pytest.approx(jain_index([10 / 35, 70 / 35, 10 / 30]))
    assert running == 1.0  # b alone runs a task
    # by declared need a's share is the 10 it holds (x = 1); c's 30 is met and b gets the other 60
    assert by_need == pytest.approx(jain_index([1.0, 70 / 60, 10 / 30]))
    assert by_need > all_jobs  # a's yield is not counted against it; c's wait still is
    result = recorder.result("carbyne", [], 0, 0)
    assert [w for w, _ in result.jain_running] == [0.0]
    assert result.jain_declared[0][1] == by_need
