"""SLearn's choices beyond the pilots: a fixed or adaptive ratio, skipping sampling where the run history has
been as accurate as pilots (§7), and the DAG hybrid over per-stage histories (§6, SLearn-DAG)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from common.ids import AppId
from common.resources import Resources
from common.terms import AppTerms, SizeEstimate
from rm.core.entities import App, Container
from rm.core.events import AppFinished, AppStarted, ContainerCompleted, Journal
from rm.core.model import AppView
from rm.core.policies.gs import queue_of
from rm.core.sizes.gs import SAMPLING_QUEUE, THIN_QUEUE, GsConfig
from rm.core.sizes.history import JobKey
from rm.core.sizes.sampling import AdaptiveRatio, FixedRatio
from rm.core.sizes_glue import SAMPLING, SizeTracker
from rm.core.sizes_learn import job_key, summary
from rm.core.state_types import SamplingConfig

APP = AppId("application_1_0001")


def _app(job: dict[str, object], name: str = "etl") -> App:
    return App(app_id=APP, name=name, queue="root.default", user="u",  # type: ignore[arg-type]
               app_type="SHEPHERD", priority=0, am_resource=Resources.of(memory_mb=1024, vcores=1), am_launch={},
               max_attempts=1, tags=(), unmanaged=False, job_spec_json=json.dumps(job), submit_time=0.0,
               state="RUNNING", final_status="SUCCEEDED")


def _done(priority: int, start: float, end: float, cid: str = "c") -> ContainerCompleted:
    c = Container(container_id=cid, app_id=APP, attempt_id="a", node_id="n",  # type: ignore[arg-type]
                  resource=Resources.of(memory_mb=1024, vcores=1), priority=priority, allocation_request_id=1,
                  ask_type="DEFAULT", is_am=False, state="COMPLETED", allocate_time=start, start_time=start,
                  finish_time=end)
    return ContainerCompleted(c, end)


WIDE = {"id": "etl", "stages": [{"name": "map", "tasks": 100, "memory_mb": 1024}]}
DAG = {"id": "etl", "stages": [{"name": "s0", "tasks": 50, "memory_mb": 1024},
                               {"name": "s1", "tasks": 20, "memory_mb": 1024, "parents": ["s0"]},
                               {"name": "s2", "tasks": 10, "memory_mb": 1024, "parents": ["s1"]}]}


def test_a_fixed_ratio_is_used_for_every_job_and_the_setting_reaches_the_tracker(tmp_path: Path) -> None:
    fixed = FixedRatio(0.05)
    for _ in range(300):
        fixed.observe(0.05, 10.0, 1.0)
    assert fixed.ratio == 0.05
    assert fixed.counts() == {0.05: 100}
    assert fixed.scores() == {0.05: 10.0}
    with pytest.raises(ValueError, match="ratio"):
        FixedRatio(0.0)
    tracker = SizeTracker(lambda *_: None, config=SamplingConfig(ratio=0.1, gate_timeout_s=30.0))
    tracker.sampling = True
    tracker.on_event(AppStarted(_app(WIDE), 0.0), Journal())
    gate = tracker.apps[APP].gate
    assert gate is not None
    assert (gate.ratio, gate.pilots) == (0.1, 10)
    assert tracker.gate_timeout_s == 30.0
    assert isinstance(SizeTracker(lambda *_: None).ratio, AdaptiveRatio)

    from rm.service.settings import SettingsError, load_rm_settings

    site = tmp_path / "yarn-site.xml"

    def settings(ratio: str) -> SamplingConfig:
        site.write_text("<configuration><property><name>shepherd.resourcemanager.slearn.sampling-ratio</name>"
                        f"<value>{ratio}</value></property></configuration>")
        return load_rm_settings(env={}, conf_dir=tmp_path).config.sampling

    assert settings("0.02") == SamplingConfig(ratio=0.02)
    assert settings("adaptive") == SamplingConfig()
    for bad in ("2", "some"):
        with pytest.raises(SettingsError, match="sampling-ratio"):
            settings(bad)


def _history_tracker(errors_of_pilots: float | None, trust: bool = True) -> SizeTracker:
    """A tracker whose history knows the family ``etl`` (sizes 1000 and 1100: about 10 % off), and whose
    sampled runs of it erred ``errors_of_pilots`` (three of them), if given."""
    tracker = SizeTracker(lambda *_: None, history=True, config=SamplingConfig(trust_history=trust))
    tracker.sampling = True
    key = job_key(_app(WIDE))
    for total in (1000.0, 1100.0):
        tracker.observe(key, total, {})
    if errors_of_pilots is not None:
        for _ in range(3):
            tracker.pilot_errors.add("etl", errors_of_pilots)
    return tracker


def test_a_job_its_history_estimated_better_than_pilots_did_is_not_sampled() -> None:
    trusted = _history_tracker(errors_of_pilots=0.5)
    trusted.on_event(AppStarted(_app(WIDE), 0.0), Journal())
    assert trusted.apps[APP].gate is None
    assert trusted.apps[APP].estimate is not None
    assert trusted.apps[APP].estimate.source == "history"
    assert trusted.counters["apps_history_trusted"] == 1

    for tracker in (_history_tracker(errors_of_pilots=0.01),  # pilots were the better estimate
                    _history_tracker(errors_of_pilots=None),  # pilots never measured: sample
                    _history_tracker(errors_of_pilots=0.5, trust=False)):  # the paper's SLearn: always sample
        tracker.on_event(AppStarted(_app(WIDE), 0.0), Journal())
        assert tracker.describe(APP)["state"] == SAMPLING


def test_pilot_errors_are_learnt_from_sampled_runs_and_from_stored_runs() -> None:
    tracker = SizeTracker(lambda *_: None, history=True)
    tracker.sampling = True
    tracker.on_event(AppStarted(_app(WIDE), 0.0), Journal())
    tracker.placed(APP, "p1")
    tracker.placed(APP, "p2")
    tracker.placed(APP, "p3")
    for i, s in enumerate((10.0, 10.0, 10.0)):  # the pilots say 1000 task-seconds
        tracker.on_event(_done(0, 1.0, 1.0 + s, f"p{i + 1}"), Journal())
    for _ in range(97):  # the job's other tasks took twice as long: 30 + 97 * 20 = 1970 task-seconds
        tracker.on_event(_done(0, 20.0, 40.0), Journal())
    tracker.on_event(AppFinished(_app(WIDE), 100.0), Journal())
    assert list(tracker.pilot_errors.by_name["etl"]) == [pytest.approx(970.0 / 1970.0)]
    assert list(tracker.pilot_errors.all) == list(tracker.pilot_errors.by_name["etl"])
    assert list(tracker.task_cov.by_name["etl"]) == [pytest.approx(statistics.pstdev([10.0] * 3 + [20.0] * 97) / 19.7)]

    restarted = SizeTracker(lambda *_: None, history=True)
    stored = summary(job_key(_app(WIDE)), {0: 100}, {0: [10.0] * 100}, {"slearn": 500.0},
                     tracker_gate(), 100.0, 50.0)
    assert restarted.learn([stored]) == 1
    assert list(restarted.pilot_errors.by_name["etl"]) == [pytest.approx(0.5)]
    assert list(restarted.task_cov.by_name["etl"]) == [0.0]  # its 100 tasks took 10 s each


def tracker_gate() -> object:
    from rm.core.sizes_learn import Gate

    return Gate(0.03, 0.0, pilots=3, open=True)


def test_a_dag_samples_its_first_stage_and_scales_the_history_of_the_others() -> None:
    reports: list[SizeEstimate | None] = []
    tracker = SizeTracker(lambda _, s: reports.append(s), history=True, config=SamplingConfig(ratio=0.04))
    tracker.sampling = True
    key = job_key(_app(DAG))
    for stages in ({0: 500.0, 1: 400.0, 2: 100.0}, {0: 500.0, 1: 400.0, 2: 100.0}):
        tracker.observe(key, sum(stages.values()), stages)
    tracker.on_event(AppStarted(_app(DAG), 0.0), Journal())
    sizing = tracker.apps[APP]
    assert sizing.stage_prior == {0: pytest.approx(500.0), 1: pytest.approx(400.0), 2: pytest.approx(100.0)}
    first = reports[-1]
    assert first is not None
    assert (first.source, first.total_s) == ("history", pytest.approx(1000.0))  # 3Sigma-DAG: the stages' sum
    assert sizing.gate is not None
    assert sizing.gate.pilots == 2  # 4 % of the first stage's 50 tasks, not of all 80
    for cid in ("p1", "p2"):
        tracker.placed(APP, cid)
    for cid in ("p1", "p2"):  # the first stage's pilots: 20 s a task, twice what its history says (500 / 50)
        tracker.on_event(_done(0, 1.0, 21.0, cid), Journal())
    est = reports[-1]
    assert est is not None
    assert est.source == "slearn"
    assert est.total_s == pytest.approx(50 * 20.0 + 2.0 * (400.0 + 100.0))  # d_s, then the rest times d_s/d_h
    assert tracker.apps[APP].gate.open  # type: ignore[union-attr]

    tracker.on_event(AppFinished(_app(DAG), 100.0), Journal())  # its stages are learnt, each in its own history
    assert tracker.stage_history[0].predict(key) is not None
    assert set(tracker.stage_history) == {0, 1, 2}


def test_a_restarted_rm_learns_each_stage_of_a_stored_dag_run() -> None:
    tracker = SizeTracker(lambda *_: None, history=True)
    key: JobKey = job_key(_app(DAG))
    stored = summary(key, {0: 50, 1: 20, 2: 10}, {0: [10.0] * 50, 1: [20.0] * 20, 2: [10.0] * 10}, {}, None,
                     100.0, 80.0)
    assert tracker.learn([stored]) == 1
    assert tracker.stage_history[1].predict(key) == (pytest.approx(400.0), "name")
    assert tracker.history is not None
    assert tracker.history.predict(key) == (pytest.approx(1000.0), "name")


def test_under_slearn_an_app_its_history_estimates_is_placed_by_that_estimate() -> None:
    cfg = GsConfig(100.0)

    def view(size: SizeEstimate | None) -> AppView:
        return AppView(app_id=APP, queue="root.default", user="u", priority=0, submit_time=0.0,  # type: ignore[arg-type]
                       used=Resources.ZERO, asks=(), terms=AppTerms(size=size))

    assert queue_of(view(None), "slearn", cfg) == THIN_QUEUE
    assert queue_of(view(SizeEstimate(5000.0, "history", 5000.0, 0.5)), "slearn", cfg) > SAMPLING_QUEUE
    assert queue_of(view(SizeEstimate(5000.0, "declared", 5000.0, 0.0)), "slearn", cfg) == THIN_QUEUE
    assert queue_of(view(SizeEstimate(5000.0, "slearn", 5000.0, 1.0)), "history", cfg) == SAMPLING_QUEUE


def test_the_dag_workload_chains_stages_that_drift_together_and_one_stage_workloads_are_unchanged() -> None:
    import statistics

    from sim.am import undeclared
    from sim.gen.slearn import SlearnOptions, generate, work_s
    from sim.sizes import stage_sizes

    _, test = generate(SlearnOptions(profile="google2019", seed=3, history_jobs=300, test_jobs=200,
                                     stages=(2, 5), shared_drift=1.0))
    assert {len(j.stages) for j in test} <= {2, 3, 4, 5}
    assert len({len(j.stages) for j in test}) > 1
    for j in test[:20]:
        assert [s.parents for s in j.stages] == [(), *((f"s{k}",) for k in range(len(j.stages) - 1))]
        assert sum(stage_sizes(j).values()) == pytest.approx(work_s(j))
        assert all(s.duration_s is None and s.durations_s is None for s in undeclared(j).stages)
    # with all of the drift shared, a run's stages move together: their mean task times over their
    # family's rise and fall as one (correlated across stages), which a shared share of 0 does not give
    def stage_corr(shared: float) -> float:
        h, t = generate(SlearnOptions(profile="google2019", seed=3, history_jobs=300, test_jobs=300,
                                      stages=(2, 2), shared_drift=shared))
        runs: dict[str, list[tuple[float, float]]] = {}
        for j in (*h, *t):
            a, b = (statistics.fmean(s.durations_s or ()) for s in j.stages)
            runs.setdefault(j.name or j.id, []).append((a, b))
        xs, ys = [], []
        for pairs in runs.values():
            if len(pairs) >= 5:
                ma, mb = statistics.fmean(p[0] for p in pairs), statistics.fmean(p[1] for p in pairs)
                xs += [p[0] / ma for p in pairs]
                ys += [p[1] / mb for p in pairs]
        return statistics.correlation(xs, ys)

    assert stage_corr(1.0) > stage_corr(0.0) + 0.3
    one_h, one_t = generate(SlearnOptions(profile="2sigma", seed=0, history_jobs=50, test_jobs=50))
    assert all(len(j.stages) == 1 and j.stages[0].name == "tasks" for j in (*one_h, *one_t))


def test_the_tasks_spread_past_runs_measured_weighs_a_single_pilot_against_the_history() -> None:
    from rm.core.sizes_learn import combine

    # history: runs of 1000 task-seconds over 100 tasks (a mean task of 10 s), varying by a log-variance of
    # ln(1.04) (a CoV of 20 %); one pilot of 20 s
    prior = (math.log(1000.0), math.log1p(0.2**2))
    unknown = combine(prior, 100, [20.0])  # a task CoV of 1 assumed: the prior weighs far more
    s = math.log(2.0)  # ln(1 + 1²)
    expected = math.exp((math.log(10.0) / prior[1] + (math.log(20.0) + s / 2) / s) / (1 / prior[1] + 1 / s))
    assert unknown == pytest.approx(expected)
    assert unknown < 11.0
    # tasks known to vary 20 % as well: the pilot weighs as much as the history, halfway between in logs
    measured = combine(prior, 100, [20.0], task_cov=0.2)
    assert measured == pytest.approx(math.exp((math.log(10.0) + math.log(20.0) + prior[1] / 2) / 2))
    assert 14.0 < measured < 15.0
    assert combine(prior, 100, [20.0], task_cov=0.0) == pytest.approx(20.0)  # tasks that never vary


def test_a_thin_app_keeps_the_top_queue_whatever_its_history_says() -> None:
    cfg = GsConfig(100.0)
    size = SizeEstimate(5000.0, "history", 5000.0, 0.5)
    wide = AppView(app_id=APP, queue="root.default", user="u", priority=0, submit_time=0.0,  # type: ignore[arg-type]
                   used=Resources.ZERO, terms=AppTerms(size=size))
    thin = AppView(app_id=APP, queue="root.default", user="u", priority=0, submit_time=0.0,  # type: ignore[arg-type]
                   used=Resources.ZERO, terms=AppTerms(size=size), thin=True)
    assert queue_of(wide, "slearn", cfg) > SAMPLING_QUEUE
    assert queue_of(thin, "slearn", cfg) == THIN_QUEUE
    tracker = SizeTracker(lambda *_: None)
    tracker.on_event(AppStarted(_app({"id": "t", "stages": [{"name": "s", "tasks": 2, "memory_mb": 1024}]}), 0.0),
                     Journal())
    assert tracker.thin(APP)


def test_the_prior_is_the_historys_sizes_as_a_distribution_and_errors_are_compared_at_their_medians() -> None:
    from rm.core.sizes.history import HistoryPredictor, inverse_square
    from rm.core.sizes.recent import RecentByName

    p = HistoryPredictor()
    key = job_key(_app(WIDE))
    assert p.log_moments(key) is None
    p.observe(key, 800.0)
    assert p.log_moments(key) == (pytest.approx(math.log(800.0)), None)  # one size says nothing of its spread
    for total in (1200.0, 1000.0):
        p.observe(key, total)
    mean, var = p.log_moments(key)  # type: ignore[misc]
    logs = [math.log(x) for x in (800.0, 1200.0, 1000.0)]
    assert mean == pytest.approx(statistics.fmean(logs))
    assert var == pytest.approx(statistics.pvariance(logs))
    # graded as each run came: 800 predicted 1200, then the 1/t² estimate over (800, 1200) predicted 1000
    errors = [abs(800.0 - 1200.0) / 1200.0, abs(inverse_square((800.0, 1200.0)) - 1000.0) / 1000.0]
    assert p.median_error(key, "name") == pytest.approx(statistics.median(errors))

    recent = RecentByName(window=3, min_own=2, min_all=3)
    recent.add("a", 1.0)
    assert recent.median("a") is None  # one of its own, too few of all
    recent.add("b", 5.0)
    recent.add("b", 7.0)
    assert recent.median("a") == 5.0  # its own are too few: all names'
    assert recent.median("b") == 6.0
    recent.add("a", 3.0)
    assert recent.median("a") == 2.0
    assert list(recent.all) == [5.0, 7.0, 3.0]  # the window


def test_the_gate_timeout_setting_reaches_the_sampling_config(tmp_path: Path) -> None:
    from rm.service.settings import load_rm_settings

    site = tmp_path / "yarn-site.xml"
    site.write_text("<configuration><property><name>shepherd.resourcemanager.slearn.gate-timeout-ms</name>"
                    "<value>45000</value></property><property><name>shepherd.resourcemanager.slearn.trust-history"
                    "</name><value>false</value></property></configuration>")
    got = load_rm_settings(env={}, conf_dir=tmp_path).config.sampling
    assert got == SamplingConfig(gate_timeout_s=45.0, trust_history=False)
    (tmp_path / "empty").mkdir()
    assert load_rm_settings(env={}, conf_dir=tmp_path / "empty").config.sampling == SamplingConfig()
