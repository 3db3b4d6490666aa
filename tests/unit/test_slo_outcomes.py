"""What the RM observes of an app with a deadline when it ends: met or missed, its completion ratio, its
requested units' share above the oracle allocation of the work it did, and its AM's model build time."""

from __future__ import annotations

import json

import pytest
from prometheus_client import CollectorRegistry

from common.ids import AppId
from common.resources import Resources
from common.terms import ControlStep
from rm.core.entities import App
from rm.service.app_slo import ControlRecord, share_above, work_done
from rm.service.slo_metrics import SloOutcomes

UNIT = Resources.of(memory_mb=1024, vcores=1)


def record(t: float, units: int) -> ControlRecord:
    return ControlRecord(t, 0.0, units, float(units), units, t + 60.0, "ON_TRACK", False)


def test_the_share_above_the_oracle_weighs_each_request_by_how_long_it_held() -> None:
    trace = [record(0.0, 4), record(10.0, 8)]
    assert share_above(trace, 5, 30.0) == pytest.approx(3 * 20 / (4 * 10 + 8 * 20))
    assert share_above(trace, 8, 30.0) == 0.0
    assert share_above([record(0.0, 0)], 1, 30.0) is None  # nothing asked


def ended_app(*, status: str, finish: float, build: float | None) -> App:
    job = {"id": "j", "deadline_s": 100, "stages": [{"name": "s", "tasks": 10, "memory_mb": 1024}]}
    app = App(app_id=AppId("application_1_0001"), name="j", queue="root.default", user="u",  # type: ignore[arg-type]
              app_type="SHEPHERD", priority=0, am_resource=UNIT, am_launch={}, max_attempts=1, tags=(),
              unmanaged=False, job_spec_json=json.dumps(job), submit_time=1000.0, state="FINISHED")
    app.final_status, app.finish_time = status, 1000.0 + finish
    app.vcore_seconds, app.memory_seconds = 400.0, 400.0 * 1024  # 400 unit-seconds over 100 s: oracle 4
    app.model_build_s = build
    # heard at 1000 s and 1040 s: 4 units from 1000 s, 6 from 1040 s (both decided when heard)
    app.control = [(1000.0, ControlStep(0.0, 0.1, 4, 4.0, 4, 90.0, "ON_TRACK")),
                   (1040.0, ControlStep(0.0, 0.5, 6, 6.0, 6, 50.0, "ON_TRACK"))]
    return app


def test_an_ended_app_is_counted_met_or_missed_with_its_share_above_the_oracle_and_build_time() -> None:
    registry = CollectorRegistry()
    outcomes = SloOutcomes(registry, UNIT)
    met = ended_app(status="SUCCEEDED", finish=90.0, build=1.5)
    assert work_done(met, UNIT) == 400.0
    outcomes.observe(met, met.finish_time)
    outcomes.observe(ended_app(status="SUCCEEDED", finish=130.0, build=None), 1130.0)  # late
    outcomes.observe(ended_app(status="FAILED", finish=50.0, build=None), 1050.0)  # failed in time: missed

    def value(name: str, labels: dict[str, str] | None = None) -> float | None:
        return registry.get_sample_value(name, labels or {})

    assert value("shepherd_slo_deadlines_total", {"outcome": "met"}) == 1
    assert value("shepherd_slo_deadlines_total", {"outcome": "missed"}) == 2
    assert value("shepherd_slo_completion_ratio_count") == 3
    # the met app asked 4 units for 40 s, then 6 for 50 s: (6 - 4) x 50 of 460 unit-seconds above the oracle
    assert value("shepherd_slo_allocation_above_oracle_count") == 3
    assert value("shepherd_slo_allocation_above_oracle_bucket", {"le": "0.25"}) == 2  # the late one: 180 of 700
    assert value("shepherd_slo_allocation_above_oracle_bucket", {"le": "0.3"}) == 3
    assert value("shepherd_slo_model_build_seconds_count") == 1
    assert value("shepherd_slo_model_build_seconds_sum") == 1.5
    single = CollectorRegistry()
    SloOutcomes(single, UNIT).observe(met, met.finish_time)
    assert single.get_sample_value("shepherd_slo_allocation_above_oracle_sum") == pytest.approx(100 / 460)
