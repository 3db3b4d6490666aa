"""Dynamic reprovisioning (Morpheus §7): stretch a slow run only where the plan has room."""

from __future__ import annotations

from common.resources import Resources
from rm.core.harness import Harness, ask
from rm.core.reservation.dra import (
    EXTENDED,
    NO_ROOM,
    PARTIAL,
    WITHIN_SKYLINE,
    DraConfig,
    demands_from_snapshot,
    evaluate,
)
from rm.core.reservation.requests import ReservationDefinition, ReservationId, ReservationRequest
from rm.core.reservation.system import ReservationConfig, ReservationSystem

MIN = 60_000
CORE = Resources.of(memory_mb=1024, vcores=1)


def plan_with_job() -> tuple[ReservationSystem, ReservationId]:
    s = ReservationSystem(ReservationConfig(step_s=60, window_s=3600), cluster_ts=1)
    s.set_capacity("root.default", Resources.of(memory_mb=10 * 1024, vcores=10))
    rid = s.new_reservation_id()  # 4 containers for the first 10 minutes
    s.submit(rid, "default", ReservationDefinition(0, 10 * MIN, (ReservationRequest(CORE, 4, 10 * MIN, 4),)),
             user="u", now=0)
    return s, rid


def block(s: ReservationSystem, cores: int) -> None:
    """Another reservation holding ``cores`` for minutes 10..20 (when the slow job runs over)."""
    d = ReservationDefinition(10 * MIN, 20 * MIN, (ReservationRequest(CORE, cores, 10 * MIN, cores),))
    s.submit(s.new_reservation_id(), "default", d, user="other", now=0)


def cores(n: int) -> Resources:
    return CORE * n


def test_slow_run_is_extended_when_the_plan_has_room() -> None:
    s, rid = plan_with_job()
    now = 10.5 * 60  # the skyline has ended, the job still runs and asks
    (d,) = evaluate(s, {rid: cores(6)}, now=now).decisions
    assert d.outcome == EXTENDED
    assert d.wanted == 6
    assert d.granted == 6
    assert d.cap == cores(8)  # rho 2 x the 4 the skyline gave over the last two minutes
    assert s.view(now).active[0].guaranteed == cores(6)
    assert s.plans["root.default"].timeline.overbooked(0, 60) == []


def test_no_extension_without_room() -> None:
    s, rid = plan_with_job()
    block(s, 10)
    (d,) = evaluate(s, {rid: cores(6)}, now=10.5 * 60).decisions
    assert d.outcome == NO_ROOM
    assert d.granted == 0
    assert rid not in {r.reservation_id for r in s.view(10.5 * 60).active}


def test_partial_extension_takes_what_fits() -> None:
    s, rid = plan_with_job()
    block(s, 7)
    (d,) = evaluate(s, {rid: cores(6)}, now=10.5 * 60).decisions
    assert d.outcome == PARTIAL
    assert d.granted == 3


def test_demand_within_the_skyline_needs_nothing() -> None:
    s, rid = plan_with_job()
    (d,) = evaluate(s, {rid: cores(3)}, now=5 * 60).decisions
    assert d.outcome == WITHIN_SKYLINE
    assert d.granted == 0


def test_extra_is_capped_at_rho_times_the_recent_skyline() -> None:
    s, rid = plan_with_job()
    (d,) = evaluate(s, {rid: cores(40)}, now=10.5 * 60, config=DraConfig(rho=1.5)).decisions
    assert d.granted == 6  # 1.5 x 4


def test_re_evaluation_replaces_the_extension_and_asks_again_after_t() -> None:
    s, rid = plan_with_job()
    first = evaluate(s, {rid: cores(6)}, now=10.5 * 60)
    assert first.next_at == 11.5 * 60
    evaluate(s, {rid: cores(5)}, now=first.next_at)
    dra = [b for b in s.plans["root.default"].bookings[rid] if b.kind == "dra"]
    assert len(dra) == 1
    assert dra[0].loads[1].max() == 5
    evaluate(s, {rid: cores(0)}, now=12.5 * 60)
    assert [b for b in s.plans["root.default"].bookings[rid] if b.kind == "dra"] == []


def test_demands_come_from_used_plus_pending_of_the_reservation_apps() -> None:
    s, rid = plan_with_job()
    h = Harness()
    h.node("n1", vcores=8, memory_mb=8192)
    app = h.app(asks=[ask(vcores=1, memory_mb=1024, num=2)], used=cores(4))
    h.app(asks=[ask(num=5)])  # not in any reservation
    s.attach(app.id, rid)
    assert demands_from_snapshot(h.snapshot(), s) == {rid: cores(6)}
