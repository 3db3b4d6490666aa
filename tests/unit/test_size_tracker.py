"""The RM's own measure of a job's size from its finished tasks (SLearn's data), on the ledger."""

from __future__ import annotations

import json

import pytest

from common.ids import AppId
from common.resources import Resources
from common.terms import SizeEstimate
from rm.core.entities import App, Container
from rm.core.events import AppFinished, AppStarted, ContainerCompleted, Journal
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
