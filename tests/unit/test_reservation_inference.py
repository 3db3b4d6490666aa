"""SLO inference from run history: period, earliest start, deadline, skyline, and the signed-off reservation."""

from __future__ import annotations

import pytest

from common.resources import Resources
from rm.core.reservation.inference import (
    DatasetAccess,
    InferenceConfig,
    RunRecord,
    accesses_from_runs,
    dataset_times,
    infer_period,
    propose,
    robust_cv,
    skyline_from_containers,
)
from rm.core.reservation.system import ReservationConfig, ReservationSystem

DAY = 86_400
HOUR = 3600
CORE = Resources.of(memory_mb=1024, vcores=1)
SKYLINES = [(2, 2, 4, 4, 2), (2, 3, 4, 4, 2), (2, 2, 4, 5, 2), (2, 2, 4, 4, 1), (2, 2, 4, 4, 2)]


def history(read_at: float | None = 6 * HOUR, days: int = 5) -> list[RunRecord]:
    runs = []
    for d in range(days):
        base = 20_000 * DAY + d * DAY  # some day, aligned to the epoch's days
        jitter = (d % 3) * 60
        runs.append(RunRecord("ingest", f"application_1_{3 * d + 1:04d}", base + HOUR - 600 + jitter,
                              base + HOUR - 600 + jitter, base + HOUR + jitter, (1,), CORE,
                              outputs=(f"/raw/{d}",)))
        runs.append(RunRecord("etl", f"application_1_{3 * d + 2:04d}", base + 2 * HOUR, base + 2 * HOUR + 30,
                              base + 2 * HOUR + 30 + 300, tuple(float(x) for x in SKYLINES[d]), CORE,
                              queue="root.default", user="etl", inputs=(f"/raw/{d}",), outputs=(f"/etl/{d}",)))
        if read_at is not None:
            runs.append(RunRecord("report", f"application_1_{3 * d + 3:04d}", base + read_at + jitter,
                                  base + read_at + jitter, base + read_at + jitter + 60, (1,), CORE,
                                  inputs=(f"/etl/{d}",)))
    return runs


def test_period_snaps_to_a_natural_value() -> None:
    assert infer_period([0, DAY + 30, 2 * DAY - 20, 3 * DAY]) == (DAY, "")
    period, why = infer_period([0, 100, 1000, 1900, 4000])
    assert period is None
    assert "not periodic" in why
    assert infer_period([0, DAY])[0] is None  # too few runs


def test_robust_cv_is_mad_over_median() -> None:
    assert robust_cv([10, 10, 10]) == 0
    assert robust_cv([9, 10, 12]) == pytest.approx(1 / 10)


def test_dataset_times_come_from_other_jobs_accesses() -> None:
    runs = history()
    acc = accesses_from_runs(runs)
    etl = runs[1]
    t_in, t_out = dataset_times(etl, acc)
    assert t_in == runs[0].finish_time
    assert t_out == runs[2].start_time


def test_proposal_for_a_daily_job() -> None:
    runs = history()
    p = propose("etl", runs, accesses_from_runs(runs), InferenceConfig(alpha=0.5))
    assert p is not None
    assert p.actionable, p
    assert p.period_s == DAY
    assert HOUR <= p.earliest_start_s <= HOUR + 120  # p95 of when the input was last written
    assert p.deadline_s == pytest.approx(6 * HOUR + 60)  # median first read of the output
    assert len(p.skyline) == 5
    assert p.skyline[2] == 4
    assert p.runs == 5
    assert p.user == "etl"


def test_signed_off_proposal_becomes_a_periodic_reservation() -> None:
    runs = history()
    p = propose("etl", runs, accesses_from_runs(runs), InferenceConfig(alpha=0.5))
    assert p is not None
    now = 20_010 * DAY + 12 * HOUR  # past today's deadline: the next instance is tomorrow
    d = p.to_definition(now=now)
    assert d.recurrence_ms == DAY * 1000
    assert d.interpreter == "R_ORDER_NO_GAP"
    assert d.arrival_ms // 1000 >= now
    assert d.deadline_ms - d.arrival_ms < d.recurrence_ms
    s = ReservationSystem(ReservationConfig(), cluster_ts=1)
    s.set_capacity("root.default", Resources.of(memory_mb=8192, vcores=8))
    rid = s.new_reservation_id()
    s.submit(rid, "default", d, user=p.user, now=now)
    (b,) = s.plans["root.default"].bookings[rid]
    assert b.period == 24 * 60
    assert b.loads[1].sum() == sum(p.skyline)


def test_unread_outputs_give_no_actionable_deadline() -> None:
    runs = history(read_at=None)
    p = propose("etl", runs, accesses_from_runs(runs))
    assert p is not None
    assert not p.actionable
    assert any("never read" in r for r in p.reasons)


def test_no_slack_is_not_actionable() -> None:
    runs = history(read_at=2 * HOUR + 340)  # read a median 70 s after the job ends, a 300 s job
    p = propose("etl", runs, accesses_from_runs(runs))
    assert p is not None
    assert not p.actionable
    assert any("slack" in r for r in p.reasons)


def test_irregular_submissions_give_no_proposal() -> None:
    runs = [RunRecord("x", f"a{i}", t, t, t + 10, (1,), CORE) for i, t in enumerate([0, 50, 4000, 4100, 9000])]
    assert propose("x", runs, []) is None


def test_skyline_from_containers_averages_per_step() -> None:
    two = Resources.of(memory_mb=2048, vcores=2)
    sky = skyline_from_containers([(0, 90, CORE), (30, 120, two), (0, 60, CORE)], start=0, step_s=60, unit=CORE)
    # step 0: 1 + 2 x 0.5 + 1 = 3; step 1: 0.5 + 2 = 2.5
    assert sky == (3.0, 2.5)


def test_dataset_access_kinds() -> None:
    acc = DatasetAccess("/p", "read", 1.0, "a")
    assert acc.kind == "read"


def test_skyline_from_containers_ends_when_a_container_starts_on_a_rounded_step_boundary() -> None:
    start = 929.5313294735885  # start + 180 s lands where (t - start) // 60 is 2, not 3
    sky = skyline_from_containers([(start + 180.0, start + 300.0, CORE)], start=start, step_s=60, unit=CORE)
    assert sky == pytest.approx((0, 0, 0, 1, 1), abs=1e-6)
