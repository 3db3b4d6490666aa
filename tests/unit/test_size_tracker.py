"""The RM's own measure of a job's size from its finished tasks (SLearn's data), on the ledger."""

from __future__ import annotations

import json

import pytest

from common.ids import AppId
from common.resources import Resources
from common.terms import SizeEstimate
from rm.core.entities import App, Container
from rm.core.events import AppFinished, AppStarted, ContainerCompleted, Journal, PlanApplied
from rm.core.sizes_glue import DECLARED, ESTIMATED, THIN, UNKNOWN, SizeTracker


def app(job: dict[str, object] | None, name: str = "etl") -> App:
    return App(app_id=AppId("application_1_0001"), name=name, queue="root.default", user="u",  # type: ignore[arg-type]
               app_type="SHEPHERD", priority=0, am_resource=Resources.of(memory_mb=1024, vcores=1), am_launch={},
               max_attempts=1, tags=(), unmanaged=False, job_spec_json=json.dumps(job) if job else "",
               submit_time=0.0, state="RUNNING")


def done(priority: int, start: float, end: float) -> ContainerCompleted:
    c = Container(container_id="c", app_id=AppId("application_1_0001"), attempt_id="a", node_id="n",  # type: ignore[arg-type]
                  resource=Resources.of(memory_mb=1024, vcores=1), priority=priority, allocation_request_id=1,
                  ask_type="DEFAULT", is_am=False, state="COMPLETED", allocate_time=start, start_time=start,
                  finish_time=end)
    return ContainerCompleted(c, end)


def test_finished_tasks_estimate_the_job_and_scale_the_declared_later_stages() -> None:
    reports: list[SizeEstimate | None] = []
    tracker = SizeTracker(lambda _, s: reports.append(s))
    job = {"id": "etl", "stages": [
        {"name": "map", "tasks": 100, "duration_s": 5, "memory_mb": 1024},
        {"name": "reduce", "tasks": 10, "duration_s": 20, "memory_mb": 1024, "parents": ["map"]}]}
    tracker.on_event(AppStarted(app(job), 0.0), Journal())
    assert tracker.describe(AppId("application_1_0001"))["state"] == DECLARED
    assert reports[-1] == SizeEstimate(700.0, "declared", 700.0, 0.0)
    for s in (10.0, 12.0, 14.0):  # three pilots of the map stage: twice what it declared
        tracker.on_event(done(0, 1.0, 1.0 + s), Journal())
    first = reports[-1]  # the first measured estimate is reported at once
    assert first is not None
    assert first.total_s == pytest.approx(100 * 10.0 + 10 * 20 * 2.0)
    tracker.flush()  # later tasks' estimates are reported by the next snapshot (or a reader of the app's estimate)
    est = reports[-1]
    assert est is not None
    assert est.source == "slearn"
    assert est.total_s == pytest.approx(100 * 12.0 + 10 * 20 * 2.4)  # the maps measured; reduces scaled by 12/5
    assert est.remaining_s == pytest.approx(est.total_s - 36.0)
    described = tracker.describe(AppId("application_1_0001"))
    assert described["state"] == ESTIMATED
    assert described["finishedTasks"] == 3
    tracker.on_event(AppFinished(app(job), 20.0), Journal())
    assert tracker.describe(AppId("application_1_0001"))["state"] == UNKNOWN


def test_thin_and_unknown_jobs() -> None:
    tracker = SizeTracker(lambda _, s: None)
    tracker.on_event(AppStarted(app({"id": "t", "stages": [{"name": "s", "tasks": 2, "memory_mb": 1024}]}), 0.0),
                     Journal())
    assert tracker.describe(AppId("application_1_0001"))["state"] == THIN
    tracker.on_event(AppStarted(app(None, "stock"), 0.0), Journal())
    assert tracker.describe(AppId("application_1_0001"))["state"] == UNKNOWN
    tracker.on_event(done(20, 1.0, 9.0), Journal())  # a stock app's maps: measured, counted as they finish
    assert tracker.describe(AppId("application_1_0001"))["state"] == ESTIMATED


def test_a_wide_job_runs_its_pilots_first_on_a_busy_cluster_and_everything_on_an_idle_one() -> None:
    from am.jobspec import parse_job
    from sim.engine import SimConfig, Simulator, uniform_nodes
    from sim.policies import make_policy

    def wide(job_id: str, arrival: float) -> object:
        return parse_job({"id": job_id, "arrival_s": arrival, "stages": [
            {"name": "s", "tasks": 100, "duration_s": 10, "memory_mb": 1024}]})

    hog = parse_job({"id": "hog", "arrival_s": 0.0, "am_policy": "greedy", "stages": [
        {"name": "s", "tasks": 200, "duration_s": 60, "memory_mb": 1024}]})
    # busy: the hog holds the cluster; the wide job gets its AM, then only its 3 pilots until they finish
    sim = Simulator([hog, wide("w", 5.0)], uniform_nodes(1, 33 * 1024, 33), make_policy("slearn"),  # type: ignore[list-item]
                    SimConfig(seed=1))
    w_id = sim.app_ids[1]
    before_pilots: list[int] = []  # task containers the wide job got before its first task finished

    class Watch:
        hears = frozenset({PlanApplied, ContainerCompleted})
        finished = False

        def on_event(self, event: object, journal: Journal) -> None:
            if isinstance(event, ContainerCompleted) and event.container.app_id == w_id \
                    and not event.container.is_am:
                Watch.finished = True
            if isinstance(event, PlanApplied) and not Watch.finished:
                before_pilots.extend(1 for p in event.applied if p.app_id == w_id and p.allocation_request_id != -1)

    sim.ledger.subscribe(Watch())
    sim.run()
    assert sum(before_pilots) == 3  # 3 % of 100 tasks: three pilots, nothing more until they finish
    assert sim.ledger.sizes.counters.get("gates_opened_pilots", 0) >= 1
    # idle: the same job alone starts all its tasks at once (held tasks take idle capacity)
    alone = Simulator([wide("w", 0.0)], uniform_nodes(1, 120 * 1024, 120), make_policy("slearn"),  # type: ignore[list-item]
                      SimConfig(seed=1))
    result = alone.run()
    (record,) = result.jobs
    assert record.finish is not None
    assert record.finish < 10 * 2 + 10  # one wave of tasks, not pilots then the rest


def test_the_sampler_state_shows_the_rule_each_ratios_jobs_and_the_gated_apps() -> None:
    from rm.core.state_types import SamplingConfig

    tracker = SizeTracker(lambda _, s: None)
    tracker.sampling = True
    wide = {"id": "w", "stages": [{"name": "map", "tasks": 100, "memory_mb": 1024}]}
    tracker.on_event(AppStarted(app(wide), 0.0), Journal())
    state = tracker.sampler()
    assert (state["enabled"], state["rule"], state["nextRatio"], state["gatedApps"]) == (True, "adaptive", 0.03, 1)
    rows = {r["ratio"]: r for r in state["ratios"]}
    assert rows[0.03] == {"ratio": 0.03, "jobsSampled": 1, "jobsFinished": 0, "score": None}
    assert rows[0.02]["jobsSampled"] == 0
    fixed = SizeTracker(lambda _, s: None, config=SamplingConfig(ratio=0.1))
    fixed.sampling = True
    fixed.on_event(AppStarted(app(wide), 0.0), Journal())
    assert fixed.sampler()["rule"] == "fixed"
    assert fixed.sampler()["ratios"] == [{"ratio": 0.1, "jobsSampled": 1, "jobsFinished": 0, "score": None}]
