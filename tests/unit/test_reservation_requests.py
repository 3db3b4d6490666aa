"""Reservation definitions: ids, gangs, validation with YARN's messages, skylines as definitions."""

from __future__ import annotations

import pytest

from common.errors import BadRequest
from common.resources import Resources
from rm.core.reservation.requests import (
    ReservationDefinition,
    ReservationRequest,
    parse_reservation_id,
    reservation_id,
    skyline_definition,
    validate_definition,
)

CORE = Resources.of(memory_mb=1024, vcores=1)
CAP = Resources.of(memory_mb=4096, vcores=4)


def d(*reqs: ReservationRequest, interp: str = "R_ALL", arrival: int = 0, deadline: int = 10_000,
      period: int = 0) -> ReservationDefinition:
    return ReservationDefinition(arrival, deadline, reqs, interp, recurrence_ms=period)  # type: ignore[arg-type]


def test_ids_round_trip() -> None:
    assert reservation_id(1404198295326, 3) == "reservation_1404198295326_0003"
    assert parse_reservation_id("reservation_1404198295326_12345") == (1404198295326, 12345)
    with pytest.raises(BadRequest):
        parse_reservation_id("application_1_0001")


def test_gangs_round_up() -> None:
    r = ReservationRequest(CORE, 10, 1000, 4)
    assert r.gangs == 3
    assert r.gang == Resources.of(memory_mb=4096, vcores=4)


def test_min_duration_depends_on_the_interpreter() -> None:
    reqs = (ReservationRequest(CORE, 1, 3000), ReservationRequest(CORE, 1, 5000))
    assert d(*reqs).min_duration_ms() == 5000
    assert d(*reqs, interp="R_ORDER").min_duration_ms() == 8000


@pytest.mark.parametrize(
    ("defn", "message"),
    [
        (d(), "No resources have been specified"),
        (d(ReservationRequest(CORE, 1, 1000), deadline=50), "is the past"),
        (d(ReservationRequest(CORE, 1, 20_000)), "must be greater or equal to the minimum resource duration"),
        (d(ReservationRequest(CORE, 5, 1000, 5)), "largest gang"),
        (d(ReservationRequest(CORE, 2, 1000, 3)), "min-concurrency"),
        (d(ReservationRequest(CORE, 0, 1000)), "num-containers"),
        (d(ReservationRequest(CORE, 1, 0)), "duration must be positive"),
        (d(ReservationRequest(Resources(), 1, 10)), "capability"),
        (d(ReservationRequest(CORE, 1, 1000), period=10_000), "recurrence"),
        (d(ReservationRequest(CORE, 1, 1000), period=-1), "Negative Period"),
    ],
)
def test_validation_messages(defn: ReservationDefinition, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        validate_definition(defn, now_ms=100, capacity=CAP)


def test_any_needs_only_one_alternative_to_fit() -> None:
    ok = d(ReservationRequest(CORE, 5, 1000, 5), ReservationRequest(CORE, 1, 1000), interp="R_ANY")
    validate_definition(ok, now_ms=0, capacity=CAP)


def test_instances_of_a_periodic_definition() -> None:
    p = d(ReservationRequest(CORE, 1, 1000), arrival=100, deadline=2000, period=5000)
    assert p.instance(2) == (10_100, 12_000)
    assert p.instance_at(50) == 0
    assert p.instance_at(10_100) == 2
    assert p.instance_at(10_099) == 1


def test_skyline_becomes_order_no_gap_runs() -> None:
    sd = skyline_definition([0, 2, 2, 4, 0, 1, 0], CORE, arrival_ms=0, deadline_ms=600_000, step_ms=60_000)
    assert sd.interpreter == "R_ORDER_NO_GAP"
    assert [(r.num_containers, r.duration_ms) for r in sd.requests] == [(2, 120_000), (4, 60_000), (1, 60_000),
                                                                        (1, 60_000)]
    with pytest.raises(BadRequest):
        skyline_definition([0, 0], CORE, arrival_ms=0, deadline_ms=1, step_ms=1)
