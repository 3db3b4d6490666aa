"""Reservations first (DESIGN.md step 1): guaranteed capacity, lending, reclaiming."""

from __future__ import annotations

import pytest

from common.resources import Resources
from rm.core.harness import Harness, ask
from rm.core.model import ClusterSnapshot
from rm.core.plan import Place
from rm.core.policies.drf import DrfStage
from rm.core.policies.tetris import TetrisPacker
from rm.core.reservation.requests import ReservationDefinition, ReservationRequest
from rm.core.reservation.stage import (
    RESERVATION_LENT,
    ActiveReservation,
    Reclaim,
    ReservationStage,
    ReservationView,
    view_from_snapshot,
)
from rm.core.reservation.system import ReservationConfig, ReservationSystem

MIN = 60_000
CORE = Resources.of(memory_mb=1024, vcores=1)


@pytest.fixture
def harness() -> Harness:
    h = Harness()
    h.node("n1", vcores=4, memory_mb=4096)
    h.node("n2", vcores=4, memory_mb=4096)
    return h


def reserve(containers: int, minutes: int = 10) -> tuple[ReservationSystem, str]:
    s = ReservationSystem(ReservationConfig(step_s=60, window_s=3600), cluster_ts=1)
    s.set_capacity("root.default", Resources.of(memory_mb=8192, vcores=8))
    rid = s.new_reservation_id()
    d = ReservationDefinition(0, minutes * MIN, (ReservationRequest(CORE, containers, minutes * MIN, containers),))
    s.submit(rid, "default", d, user="u", now=0)
    return s, rid


def pipeline(system: ReservationSystem, reclaims: list[Reclaim] | None = None) -> list[object]:
    def source(snap: ClusterSnapshot, now: float) -> ReservationView:
        return system.view(now)

    sink = reclaims.extend if reclaims is not None else None
    return [ReservationStage(TetrisPacker(), source, sink), DrfStage(TetrisPacker())]


def test_reservation_gets_its_capacity_and_ad_hoc_jobs_fill_the_rest(harness: Harness) -> None:
    system, rid = reserve(4)
    adhoc = harness.app(asks=[ask(vcores=1, memory_mb=1024, num=8)], submit_time=0.0)  # first in line
    prod = harness.app(asks=[ask(vcores=1, memory_mb=1024, num=6)], submit_time=5.0)
    system.attach(prod.id, rid)
    plan = harness.cycle(pipeline(system), now=30.0)  # type: ignore[arg-type]
    got_prod = plan.count(Place.match(app_id=prod.id))
    got_adhoc = plan.count(Place.match(app_id=adhoc.id))
    assert plan.counters["placed_in_reservation"] == 4
    assert got_prod >= 4
    assert got_prod + got_adhoc == 8
    assert got_adhoc >= 2
    assert any(w.reason == "reservation-step" and w.t == 60.0 for w in plan.wake)


def test_unused_reserved_capacity_is_lent(harness: Harness) -> None:
    system, rid = reserve(4)
    prod = harness.app(asks=[], used=Resources())
    system.attach(prod.id, rid)
    adhoc = harness.app(asks=[ask(vcores=1, memory_mb=1024, num=8)])
    plan = harness.cycle(pipeline(system), now=30.0)  # type: ignore[arg-type]
    assert plan.count(Place.match(app_id=adhoc.id)) == 8


def test_lent_capacity_is_reclaimed_when_the_reservation_asks() -> None:
    system, rid = reserve(4)
    full = Resources.of(memory_mb=4096, vcores=4)
    h = Harness()
    h.node("n1", vcores=4, memory_mb=4096, allocated=full)
    h.node("n2", vcores=4, memory_mb=4096, allocated=full)
    older = h.app(used=Resources(), submit_time=0.5)
    adhoc = h.app(used=full + full, submit_time=1.0)  # ad-hoc work took the reserved capacity meanwhile
    prod = h.app(asks=[ask(vcores=1, memory_mb=1024, num=3)], submit_time=2.0)
    system.attach(prod.id, rid)
    reclaims: list[Reclaim] = []
    plan = h.cycle(pipeline(system, reclaims), now=70.0)  # type: ignore[arg-type]
    assert plan.count() == 0
    assert reclaims == [Reclaim(adhoc.id, Resources.of(memory_mb=3072, vcores=3), rid)]  # type: ignore[arg-type]
    rejection = plan.rejections[(prod.id, 0)]
    assert rejection.reason == RESERVATION_LENT
    assert rejection.detail["reclaim"] == [{"app": adhoc.id, "amount": {"memory-mb": 3072, "vcores": 3}}]
    assert plan.counters["reservation_reclaims"] == 1
    assert older.id not in {r.app_id for r in reclaims}


def test_reclaims_newest_outsiders_first_then_over_users() -> None:
    h = Harness()
    h.node("n1", vcores=8, memory_mb=8192, allocated=Resources.of(memory_mb=8192, vcores=8))
    old = h.app(used=Resources.of(memory_mb=4096, vcores=4), submit_time=1.0)
    new = h.app(used=Resources.of(memory_mb=2048, vcores=2), submit_time=2.0)
    other = h.app(used=Resources.of(memory_mb=2048, vcores=2), submit_time=0.0)  # in a reservation, 1 over
    prod = h.app(asks=[ask(vcores=1, memory_mb=1024, num=4)], submit_time=3.0)
    view = ReservationView((
        ActiveReservation("reservation_1_0001", "root.default", Resources.of(memory_mb=4096, vcores=4),  # type: ignore[arg-type]
                          (prod.id,)),
        ActiveReservation("reservation_1_0002", "root.default", Resources.of(memory_mb=1024, vcores=1),  # type: ignore[arg-type]
                          (other.id,)),
    ))
    got: list[Reclaim] = []
    h.cycle([ReservationStage(TetrisPacker(), lambda s, n: view, got.extend)])
    assert [(r.app_id, r.amount.vcores) for r in got] == [(new.id, 2), (old.id, 2)]


def test_reservation_apps_beyond_their_guarantee_wait_for_fair_share(harness: Harness) -> None:
    system, rid = reserve(2)
    prod = harness.app(asks=[ask(vcores=1, memory_mb=1024, num=5)])
    system.attach(prod.id, rid)
    plan = harness.cycle([ReservationStage(TetrisPacker(), lambda s, n: system.view(n))], now=30.0)
    assert plan.count(Place.match(app_id=prod.id)) == 2
    assert plan.rejections[(prod.id, 0)].reason == "RESERVATION_USED_UP"


def test_no_active_reservation_is_a_no_op(harness: Harness) -> None:
    system, rid = reserve(2, minutes=10)
    app = harness.app(asks=[ask(num=2)])
    system.attach(app.id, rid)
    plan = harness.cycle([ReservationStage(TetrisPacker(), lambda s, n: system.view(n))], now=3600.0)
    assert plan.count() == 0
    assert plan.wake == []


def test_default_source_reads_the_snapshot(harness: Harness) -> None:
    assert view_from_snapshot(harness.snapshot(), 0.0).active == ()
