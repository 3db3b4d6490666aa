"""LowCost (Morpheus §6) and YARN's greedy agent on small plans."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.errors import BadRequest
from common.resources import Resources
from rm.core.reservation.greedy import GreedyAgent
from rm.core.reservation.lowcost import LowCostAgent
from rm.core.reservation.placement import (
    DOES_NOT_FIT,
    Placement,
    PlacementProblem,
    PlacementRejected,
    StageSpec,
)
from rm.core.reservation.requests import ReservationDefinition, ReservationRequest
from rm.core.reservation.system import ReservationConfig, ReservationRejected, ReservationSystem

MIN = 60_000
CORE = Resources.of(memory_mb=1024, vcores=1)
CAP = np.array([10.0])


def stage(gangs: int, duration: int = 1, size: float = 1.0, request: int = 0) -> StageSpec:
    return StageSpec(request, np.array([size]), gangs, duration)


def problem(base: list[float], *stages: StageSpec, interpreter: str = "R_ORDER_NO_GAP",
            alignment: float = 0.0) -> PlacementProblem:
    return PlacementProblem(np.array([base], dtype=float), CAP, tuple(stages), interpreter,  # type: ignore[arg-type]
                            alignment)


def placed(p: Placement | PlacementRejected) -> Placement:
    assert isinstance(p, Placement), p
    return p


def row(p: Placement) -> list[float]:
    return [float(x) for x in p.alloc[0]]


def system(window_s: int = 3600, agent: str = "lowcost", vcores: int = 10) -> ReservationSystem:
    s = ReservationSystem(ReservationConfig(step_s=60, window_s=window_s, agent=agent), cluster_ts=7)
    s.set_capacity("root.default", Resources.of(memory_mb=1024 * vcores, vcores=vcores))
    return s


def defn(arrival_min: int, deadline_min: int, *reqs: tuple[int, int, int], interp: str = "R_ALL",
         period_min: int = 0, alignment: float = 0.0) -> ReservationDefinition:
    """reqs: (containers, minutes, min_concurrency)."""
    return ReservationDefinition(
        arrival_min * MIN, deadline_min * MIN,
        tuple(ReservationRequest(CORE, n, d * MIN, g) for n, d, g in reqs),
        interp, recurrence_ms=period_min * MIN, alignment=alignment,  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------------------------------ LowCost


def test_places_where_the_plan_is_least_loaded() -> None:
    base = [8.0] * 6 + [2.0] * 6
    got = placed(LowCostAgent().place(problem(base, stage(4, 3), interpreter="R_ALL")))
    assert not row(got)[:6].count(0) < 6  # nothing in the busy half
    assert sum(row(got)) == 12  # 4 gangs x 3 steps
    assert max(b + a for b, a in zip(base, row(got), strict=True)) <= 10


def test_stretches_demand_to_flatten_the_peak() -> None:
    got = placed(LowCostAgent().place(problem([0.0] * 8, stage(4, 2), interpreter="R_ALL")))
    assert max(row(got)) == 1  # four one-container gangs of two steps side by side rather than stacked
    assert sum(row(got)) == 8


def test_skyline_stages_are_contiguous_in_order() -> None:
    stages = (stage(2, 1, request=0), stage(6, 1, request=1), stage(2, 1, request=2))
    got = placed(LowCostAgent().place(problem([0.0] * 12, *stages)))
    spans = {r: (a, b) for r, a, b in got.spans}
    assert spans[0][1] + 1 == spans[1][0]
    assert spans[1][1] + 1 == spans[2][0]
    used = [i for i, x in enumerate(row(got)) if x > 0]
    assert used == list(range(used[0], used[-1] + 1))
    assert sum(row(got)) == 10


def test_each_stage_takes_room_proportional_to_its_share() -> None:
    # a big middle stage gets a longer interval, so it is stretched more than the small ones
    stages = (stage(2, 1, request=0), stage(12, 1, request=1), stage(2, 1, request=2))
    got = placed(LowCostAgent().place(problem([0.0] * 16, *stages)))
    spans = {r: b - a + 1 for r, a, b in got.spans}
    assert spans[1] > spans[0]
    assert spans[1] > spans[2]


def test_earliest_end_wins_ties_and_alignment_pulls_to_the_middle() -> None:
    plain = placed(LowCostAgent().place(problem([0.0] * 30, stage(3, 3))))
    assert plain.first == 0
    centred = placed(LowCostAgent().place(problem([0.0] * 30, stage(3, 3), alignment=1.0)))
    mid = (centred.first + centred.last) / 2
    assert abs(mid - 14.5) <= 1.5


def test_r_any_takes_the_cheaper_alternative() -> None:
    base = [6.0] * 10
    tall = stage(1, 2, size=4.0, request=0)  # a gang of 4 for 2 steps: peak 10
    wide = stage(1, 4, request=1)  # one container for 4 steps: peak 7
    got = placed(LowCostAgent().place(problem(base, tall, wide, interpreter="R_ANY")))
    assert [s[0] for s in got.spans] == [1]


def test_rejects_what_does_not_fit_and_says_why() -> None:
    got = LowCostAgent().place(problem([9.0] * 5, stage(1, 1, size=2.0), interpreter="R_ALL"))
    assert isinstance(got, PlacementRejected)
    assert got.reason == DOES_NOT_FIT
    assert "does not fit between arrival and deadline" in got.message
    assert got.detail["most_gangs_at_once"] == 0


def test_periodic_cost_is_the_worst_instance() -> None:
    s = system(window_s=3600)  # 60 steps; an hourly job has one instance, a 20-minute job three
    blocker = defn(45, 50, (10, 5, 1), period_min=60)  # fills offset 45..49 of the hour, i.e. offset 5..9 of
    s.submit("reservation_7_0001", "root.default", blocker, user="u", now=0)  # the third 20-minute instance
    job = defn(0, 19, (5, 5, 5), period_min=20)  # a 5-minute gang of 5, anywhere in its 19 minutes
    s.submit("reservation_7_0002", "root.default", job, user="u", now=0)
    (b,) = s.plans["root.default"].bookings["reservation_7_0002"]
    assert b.period == 20
    offsets = {(b.start + j) % 20 for j in range(b.length)}
    assert not offsets & set(range(5, 10))  # avoids the offsets that are full in one of its instances
    assert s.plans["root.default"].timeline.overbooked(0, 60) == []


# ------------------------------------------------------------------------------------------ greedy


def test_greedy_places_latest_first() -> None:
    got = placed(GreedyAgent().place(problem([0.0] * 10, stage(3, 2), interpreter="R_ALL")))
    assert row(got) == [0.0] * 8 + [3.0, 3.0]


def test_greedy_orders_stages_backwards_from_the_deadline() -> None:
    got = placed(GreedyAgent().place(problem([0.0] * 10, stage(2, 1, request=0), stage(5, 2, request=1),
                                             interpreter="R_ORDER")))
    assert row(got) == [0.0] * 7 + [2.0, 5.0, 5.0]


def test_lowcost_spreads_where_greedy_stacks() -> None:
    base = [0.0] * 5 + [6.0] * 5
    greedy = placed(GreedyAgent().place(problem(base, stage(4, 2), interpreter="R_ALL")))
    lowcost = placed(LowCostAgent().place(problem(base, stage(4, 2), interpreter="R_ALL")))
    peak = lambda p: max(b + a for b, a in zip(base, row(p), strict=True))
    assert peak(lowcost) < peak(greedy)


# ------------------------------------------------------------------------------------ through the plan


def test_rejection_names_arrival_and_deadline_and_changes_nothing() -> None:
    s = system()
    s.submit("reservation_7_0001", "root.default", defn(0, 10, (10, 10, 10)), user="u", now=0)
    version = s.plans["root.default"].timeline.version
    with pytest.raises(ReservationRejected) as err:
        s.submit("reservation_7_0002", "root.default", defn(0, 10, (1, 1, 1)), user="u", now=0)
    assert err.value.reason == DOES_NOT_FIT
    assert "between arrival (0) and deadline (600000)" in err.value.message
    assert s.plans["root.default"].timeline.version == version
    assert "reservation_7_0002" not in s.reservations


def test_gang_larger_than_the_plan_is_refused_up_front() -> None:
    with pytest.raises(BadRequest, match="largest gang"):
        system().submit("reservation_7_0001", "root.default", defn(0, 10, (11, 1, 11)), user="u", now=0)


_request = st.tuples(
    st.integers(0, 50),  # arrival minute
    st.integers(1, 30),  # window minutes
    st.integers(1, 12),  # containers
    st.integers(1, 8),  # duration minutes
    st.integers(1, 4),  # gang
    st.sampled_from(["R_ALL", "R_ORDER", "R_ORDER_NO_GAP", "R_ANY"]),
    st.sampled_from([0, 0, 20, 30, 60, 45]),  # period minutes (45 does not divide the hour window)
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_request, min_size=1, max_size=14), st.sampled_from(["lowcost", "greedy"]))
def test_plan_never_exceeds_capacity_and_accepted_bookings_never_move(
    reqs: list[tuple[int, int, int, int, int, str, int]], agent: str
) -> None:
    s = system(agent=agent)
    book = s.plans["root.default"]
    for i, (arr, win, n, dur, gang, interp, period) in enumerate(reqs):
        before = {rid: [(b.start, b.period, b.loads.copy()) for b in bs] for rid, bs in book.bookings.items()}
        dur = min(dur, win)
        gang = min(gang, n)
        period = period if period > win else 0
        d = defn(arr, arr + win, (n, dur, gang), (max(1, n // 2), max(1, dur // 2), 1), interp=interp,
                 period_min=period)
        with contextlib.suppress(BadRequest):
            s.submit(f"reservation_7_{i + 1:04d}", "root.default", d, user="u", now=0)
        for rid, old in before.items():
            now = [(b.start, b.period, b.loads) for b in book.bookings[rid]]
            assert len(now) == len(old)
            for (s0, p0, l0), (s1, p1, l1) in zip(old, now, strict=True):
                assert (s0, p0) == (s1, p1)
                assert np.array_equal(l0, l1)
        assert book.timeline.overbooked(0, 24 * 60) == []
