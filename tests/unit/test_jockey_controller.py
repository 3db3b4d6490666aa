"""Jockey's control loop (§4.3): the smallest best allocation, slack, hysteresis and the dead zone."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from am.policies.jockey.controller import (
    ControlConfig,
    Decision,
    JockeyController,
    expected_utilities,
    smallest_maximiser,
    smooth,
)
from am.policies.jockey.model import CpaTable, build_table
from am.policies.jockey.profile import JobProfile, StageProfile
from am.policies.jockey.progress import JobState, StageState, TotalWorkWithQ
from am.policies.jockey.utility import default_utility

MIN = 60.0


def test_hysteresis_moves_a_fifth_of_the_gap_each_period() -> None:
    """From 10 toward 20 at α = 0.2: 10 + 2 = 12, 12 + 1.6 = 13.6, 13.6 + 1.28 = 14.88."""
    steps = [10.0]
    for _ in range(3):
        steps.append(smooth(steps[-1], 20.0, 0.2))
    assert steps == pytest.approx([10.0, 12.0, 13.6, 14.88])


ONE_STAGE = TotalWorkWithQ(JobProfile("x", (StageProfile("s", 10, (1.0,)),)))


def table_of(grid: list[int], at_start: list[float]) -> CpaTable:
    """A hand-made table: remaining seconds per allocation at p = 0, falling linearly to 0 at p = 1."""
    return CpaTable.of([0.0, 1.0], grid, [at_start, [0.0] * len(grid)], ONE_STAGE)


def test_the_controller_applies_hysteresis_and_rounds_the_request_up() -> None:
    """A table where only 20 units meet the deadline; starting from 10 the request goes 12, 14, 15."""
    ctl = JockeyController(
        table_of([10, 19, 20], [1000.0, 1000.0, 100.0]),
        default_utility(200),
        ControlConfig(
            initial_units=10,
            period_s=1,
        ),
    )
    decisions = [ctl.step(float(t), JobState()) for t in range(3)]
    assert [d.raw_units for d in decisions] == [20, 20, 20]
    assert [d.smoothed_units for d in decisions] == pytest.approx([12.0, 13.6, 14.88])
    assert [d.requested_units for d in decisions] == [12, 14, 15]
    assert ctl.trace == tuple(decisions)


def test_coming_down_the_request_reaches_its_target() -> None:
    """From 11 toward 10: 10.8, 10.64, 10.512 (requests 11), then 10.4096 is within half a unit and
    snaps to 10. Without the snap the rounded-up request would stay at 11 for about 90 periods."""
    ctl = JockeyController(
        table_of([10, 11], [50.0, 40.0]),
        default_utility(200),
        ControlConfig(initial_units=11, period_s=1, dead_zone_s=0.0, min_units=10),
    )
    decisions = [ctl.step(float(t), JobState()) for t in range(4)]
    assert [d.raw_units for d in decisions] == [10] * 4
    assert [d.smoothed_units for d in decisions] == pytest.approx([10.8, 10.64, 10.512, 10.0])
    assert [d.requested_units for d in decisions] == [11, 11, 11, 10]


def test_the_smallest_allocation_with_the_best_utility_wins() -> None:
    """Deadline 50 s, no slack, no dead zone. Remaining 100, 60, 40, 30 s at 1, 2, 4, 8 units: 4 and 8
    both finish in time (utility 1); 4 is the smaller. When none makes it, more is better. The controller
    weighs every whole unit, the table interpolating between its allocations: 3 units, 20 + 80 / 3 = 46.7 s
    (the line through (2, 60) and (4, 40) in 1 / a), also finish in time, and 3 is the smallest that does."""
    utility = default_utility(50)
    on_time = expected_utilities(utility, 0.0, np.array([[100.0], [60.0], [40.0], [30.0]]), slack=1.0)
    assert on_time[2] == on_time[3] == 1.0
    assert on_time[1] < 1.0
    assert smallest_maximiser([1, 2, 4, 8], on_time) == 2
    late = expected_utilities(utility, 0.0, np.array([[100.0], [90.0], [80.0], [80.0]]), slack=1.0)
    assert smallest_maximiser([1, 2, 4, 8], late) == 2  # 4 and 8 tie at the best; 4 is smaller
    table = table_of([1, 2, 4, 8], [100.0, 60.0, 40.0, 30.0])
    ctl = JockeyController(table, utility, ControlConfig(slack=1.0, dead_zone_s=0.0))
    assert ctl.candidates() == list(range(1, 9))
    assert ctl.step(0.0, JobState()).raw_units == 3


def test_with_slack_and_dead_zone_a_fifty_minute_prediction_is_late_for_sixty() -> None:
    """d = 60 min, D = 3 min: planned against 57. 50 min × 1.2 = 60 > 57, three minutes late, and
    the planning utility there is U(63 min) = 1 − 2 × 3/10 = 0.4. The real deadline is still met."""
    ctl = JockeyController(
        table_of([1], [50 * MIN]), default_utility(60 * MIN), ControlConfig(dead_zone_s=3 * MIN)
    )
    d = ctl.step(0.0, JobState())
    assert d.predicted_finish == pytest.approx(60 * MIN)
    assert d.late_s == pytest.approx(3 * MIN)
    assert d.expected_utility == pytest.approx(0.4)
    assert d.status == "ON_TRACK"
    d = JockeyController(
        table_of([1], [45 * MIN]), default_utility(60 * MIN), ControlConfig(dead_zone_s=3 * MIN)
    ).step(0.0, JobState())
    assert d.late_s == pytest.approx(-3 * MIN)
    assert d.expected_utility == 1.0


def test_period_and_dead_zone_scale_with_the_deadline() -> None:
    """The paper's 1 min and 3 min at d = 60 min; 10 s and 30 s at d = 10 min."""
    table = table_of([1], [1.0])
    hour = JockeyController(table, default_utility(60 * MIN))
    assert (hour.period_s, hour.dead_zone_s) == (60.0, 180.0)
    short = JockeyController(table, default_utility(10 * MIN))
    assert (short.period_s, short.dead_zone_s) == pytest.approx((10.0, 30.0))


# ---------------------------------------------------------------- a tiny fluid job under control
#
# One stage of 1,000 tasks, 12,500 unit-seconds of work, perfectly parallel: with a units the profile
# finishes in 12,500 / a s, so C(p, a) = 12,500 (1 − p) / a. Deadline 200 s: D = 10 s, period 10/3 s,
# planning deadline 190 s. The first target is the smallest a with 1.2 × 12,500 / a <= 190: a = 79
# (predicted 189.9 s; 78 would give 192.3 s). The real job runs at ``speed`` times the profile's pace.

WORK = 12_500.0
TASKS = 1000


def fluid_table() -> CpaTable:
    levels = np.linspace(0.0, 1.0, 201)
    grid = tuple(range(1, 151))
    remaining = WORK * (1.0 - levels)[:, None] / np.asarray(grid, dtype=np.float64)[None, :]
    profile = JobProfile("fluid", (StageProfile("s", TASKS, (WORK / TASKS,)),))
    return CpaTable(levels, grid, remaining[:, :, None], TotalWorkWithQ(profile))


def drive(speed: float, periods: int, *, paced: bool = False) -> list[Decision]:
    """The fluid job under the controller. ``paced``: the controller knows the profile and the job reports
    its finished tasks' run times (each took 1 / speed times the profile's 12.5 s)."""
    table = fluid_table()
    profile = table.indicator.profile if paced and table.indicator is not None else None
    ctl = JockeyController(table, default_utility(200.0), profile=profile)
    done_work, now, out = 0.0, 0.0, []
    for _ in range(periods):
        done = math.floor(done_work / WORK * TASKS + 1e-9)
        state = JobState({"s": StageState(done=done, done_s=done * WORK / TASKS / speed)})
        d = ctl.step(now, state if paced else JobState.of(s=done))
        out.append(d)
        done_work = min(WORK, done_work + speed * d.requested_units * ctl.period_s)
        now += ctl.period_s
    return out


def test_the_fluid_job_starts_at_the_smallest_allocation_that_plans_to_make_it() -> None:
    first = drive(1.0, 1)[0]
    assert first.requested_units == 79
    assert first.predicted_finish == pytest.approx(1.2 * WORK / 79)


def test_at_half_the_profiles_speed_the_request_rises_within_three_periods() -> None:
    decisions = drive(0.5, 4)
    assert any(d.requested_units > decisions[0].requested_units for d in decisions[1:4])
    assert all(b.requested_units >= a.requested_units for a, b in itertools.pairwise(decisions))


def test_faster_than_the_profile_the_request_falls() -> None:
    decisions = drive(2.0, 8)
    assert decisions[-1].requested_units < decisions[0].requested_units
    assert all(b.requested_units <= a.requested_units for a, b in itertools.pairwise(decisions))


def test_on_the_profiles_pace_the_request_holds_inside_the_dead_zone() -> None:
    """On pace, the shrinking slack makes 78 units enough after a few periods, but at 79 the job would
    finish less than D ahead of the planning deadline: the controller holds until it is a D ahead."""
    decisions = drive(1.0, 12)
    assert {d.requested_units for d in decisions} == {79}
    assert any(d.held and d.raw_units < 79 for d in decisions)
    assert all(d.status == "ON_TRACK" for d in decisions)


def test_paced_at_half_speed_the_request_rises_sooner_and_further() -> None:
    """With the profile, the controller scales C by the run's pace: tasks taking twice the profile's time
    show the job is slow from the first period's finished tasks. Unpaced, it sees only progress lagging a
    little more each period: its target creeps 79, 80, 81, 81 over three periods; paced it is 95 after two."""
    plain, paced = drive(0.5, 6), drive(0.5, 6, paced=True)
    assert paced[2].raw_units >= 1.15 * plain[2].raw_units
    assert paced[-1].requested_units >= plain[-1].requested_units + 10
    assert paced[-1].pace > 1.3
    assert plain[-1].pace == 1.0


def test_paced_on_the_profiles_pace_nothing_changes() -> None:
    plain, paced = drive(1.0, 12), drive(1.0, 12, paced=True)
    assert [d.requested_units for d in paced] == [d.requested_units for d in plain]
    assert {d.pace for d in paced} == {1.0}


def test_a_step_before_the_period_is_up_changes_nothing() -> None:
    ctl = JockeyController(fluid_table(), default_utility(200.0))
    first = ctl.step(0.0, JobState())
    assert ctl.step(1.0, JobState.of(s=1)) is first
    assert len(ctl.trace) == 1
    ctl.step(ctl.period_s, JobState.of(s=1))
    assert len(ctl.trace) == 2


def test_a_tighter_deadline_raises_the_request_at_once() -> None:
    """The paper's §5.2: halve the deadline mid-run and the allocation goes up."""
    ctl = JockeyController(fluid_table(), default_utility(200.0), ControlConfig(hysteresis=1.0))
    before = ctl.step(0.0, JobState())
    ctl.set_utility(default_utility(100.0))
    after = ctl.step(1.0, JobState())
    assert after.requested_units > before.requested_units


def test_a_moved_deadline_rescales_the_dead_zone_but_never_lengthens_the_period() -> None:
    """At d = 120 s: period 2 s, dead zone 6 s. Tripled to 360 s the dead zone is 18 s and the period stays 2 s
    (a 6 s period would hand units back three times as slowly); halved to 60 s both shrink: 1 s and 3 s."""
    ctl = JockeyController(fluid_table(), default_utility(120.0))
    assert (ctl.period_s, ctl.dead_zone_s) == pytest.approx((2.0, 6.0))
    ctl.set_utility(default_utility(360.0))
    assert (ctl.period_s, ctl.dead_zone_s) == pytest.approx((2.0, 18.0))
    ctl.set_utility(default_utility(60.0))
    assert (ctl.period_s, ctl.dead_zone_s) == pytest.approx((1.0, 3.0))


def test_a_later_deadline_hands_units_back_at_the_pace_of_the_first() -> None:
    """Smoothing the change as the paper's loop does, tripling the deadline of a job asking 132 units lowers
    its request every 2 s period: 115, 101, 90, 81 (α = 0.2 of the way to its new target each time). A 6 s
    period would have held 115 until 6.5 s."""
    ctl = JockeyController(fluid_table(), default_utility(120.0), ControlConfig(smooth_changes=True))
    assert ctl.step(0.0, JobState()).requested_units == 132
    ctl.set_utility(default_utility(360.0))
    assert [ctl.step(t, JobState()).requested_units for t in (0.5, 2.5, 4.5, 6.5)] == [115, 101, 90, 81]


def test_a_moved_deadline_is_taken_at_once() -> None:
    """By default the step after a change takes its target (the owner's change is no noise to damp): tripled,
    132 units drop to 44 at once; moved back, they rise at once."""
    ctl = JockeyController(fluid_table(), default_utility(120.0))
    assert ctl.step(0.0, JobState()).requested_units == 132
    ctl.set_utility(default_utility(360.0))
    later = ctl.step(0.5, JobState())
    assert later.requested_units == later.raw_units == 44
    ctl.set_utility(default_utility(120.0))
    sooner = ctl.step(1.0, JobState())
    assert sooner.requested_units == sooner.raw_units > 120


def test_the_request_respects_the_hard_limit() -> None:
    ctl = JockeyController(fluid_table(), default_utility(50.0), ControlConfig(max_units=40))
    d = ctl.step(0.0, JobState())
    assert d.requested_units == 40
    assert d.status == "AT_RISK"


def test_a_ceiling_caps_the_request_and_brings_a_higher_one_down_at_once() -> None:
    """A job asking 132 units hears that its queue can guarantee at most 100: its next request is 100, not a
    fifth of the way down from 132; the ceiling is a candidate though the table's grid has no 100 of its own
    here (a grid of even allocations), and it is AT_RISK because 100 cannot make the deadline."""
    levels = np.linspace(0.0, 1.0, 201)
    grid = tuple(range(2, 152, 2))
    remaining = WORK * (1.0 - levels)[:, None] / np.asarray(grid, dtype=np.float64)[None, :]
    profile = JobProfile("fluid", (StageProfile("s", TASKS, (WORK / TASKS,)),))
    table = CpaTable(levels, grid, remaining[:, :, None], TotalWorkWithQ(profile))
    ctl = JockeyController(table, default_utility(100.0), ControlConfig(period_s=1.0))
    assert ctl.step(0.0, JobState()).requested_units > 100
    ctl.set_ceiling(99)
    assert ctl.max_units == 99
    assert 99 in ctl.candidates()
    assert max(ctl.candidates()) == 99
    d = ctl.step(1.0, JobState())
    assert (d.raw_units, d.requested_units, d.status) == (99, 99, "AT_RISK")
    ctl.set_ceiling(None)  # told no ceiling: back to the table's largest allocation
    assert ctl.max_units is None
    assert max(ctl.candidates()) == 150


def test_the_configured_limit_and_the_ceiling_whichever_is_lower() -> None:
    ctl = JockeyController(fluid_table(), default_utility(50.0), ControlConfig(max_units=40))
    ctl.set_ceiling(60)
    assert ctl.max_units == 40
    ctl.set_ceiling(30)
    assert ctl.max_units == 30
    assert ctl.step(0.0, JobState()).requested_units == 30
    ctl.set_ceiling(0)  # a ceiling below one unit still lets the job ask for its minimum
    assert ctl.max_units == 1


def test_the_controller_drives_a_simulated_table_too() -> None:
    """A table from the job simulator: one stage of 400 × 1 s tasks, deadline 57 s (D = 2.85 s, period
    0.95 s, planning deadline 54.15 s). Nine units take ceil(400 / 9) = 45 s, 1.2 × 45 = 54 s: in time;
    eight take 50 s, 1.2 × 50 = 60 s: late. At half speed the job falls behind and the request rises."""
    profile = JobProfile("sim", (StageProfile("s", 400, (1.0,)),))
    table = build_table(profile, grid=tuple(range(1, 41)), runs=2, levels=100)
    ctl = JockeyController(table, default_utility(57.0))
    first = ctl.step(0.0, JobState())
    assert first.requested_units == 9
    done, now = 0.0, 0.0
    for _ in range(4):
        done += 0.5 * ctl.step(now, JobState.of(s=int(done))).requested_units * ctl.period_s
        now += ctl.period_s
    assert max(d.requested_units for d in ctl.trace[1:4]) > first.requested_units


def test_a_quantile_instead_of_the_expectation_accepts_some_risk() -> None:
    """Deadline 100 s, D = 0, no slack. At 1 unit three of four runs take 80 s and one 200 s; 2 units
    always take 50 s. The expectation counts the slow run (E[U] < 1) and asks for 2; the median does
    not and settles for 1."""
    table = CpaTable.of(
        [0.0, 1.0], [1, 2], [[[80.0, 80.0, 80.0, 200.0], [50.0] * 4], [[0.0] * 4] * 2], ONE_STAGE
    )
    plain = ControlConfig(slack=1.0, dead_zone_s=0.0)
    median = ControlConfig(slack=1.0, dead_zone_s=0.0, quantile=0.5)
    assert JockeyController(table, default_utility(100.0), plain).step(0.0, JobState()).requested_units == 2
    assert JockeyController(table, default_utility(100.0), median).step(0.0, JobState()).requested_units == 1


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.1, 3.0), min_size=1, max_size=12),
    st.integers(1, 60),
    st.one_of(st.none(), st.integers(60, 150)),
)
def test_requests_stay_within_the_limits_and_raw_targets_are_smallest_maximisers(
    speeds: list[float], lowest: int, highest: int | None
) -> None:
    table = fluid_table()
    config = ControlConfig(min_units=lowest, max_units=highest)
    ctl = JockeyController(table, default_utility(200.0), config)
    done, now = 0.0, 0.0
    for speed in speeds:
        state = JobState.of(s=math.floor(done / WORK * TASKS + 1e-9))
        d = ctl.step(now, state)
        assert lowest <= d.requested_units <= (highest if highest is not None else 150)
        cands = ctl.candidates()
        forecast = table.forecast(state, [float(a) for a in cands])
        plan = default_utility(200.0).shifted(ctl.dead_zone_s)
        eu = expected_utilities(plan, now, forecast.samples, 1.2)
        assert d.raw_units == cands[smallest_maximiser(cands, eu)]
        done = min(WORK, done + speed * d.requested_units * ctl.period_s)
        now += ctl.period_s


def drive_slowed(window: float | None, periods: int, slow_from: int) -> list[Decision]:
    """The fluid job at the profile's pace, then from period ``slow_from`` three times slower (contention
    part-way through); the job reports its finished tasks' run times."""
    table = fluid_table()
    assert table.indicator is not None
    ctl = JockeyController(table, default_utility(200.0), ControlConfig(pace_window_periods=window),
                           profile=table.indicator.profile)
    done_work, ran_s, now, out = 0.0, 0.0, 0.0, []
    for k in range(periods):
        done = math.floor(done_work / WORK * TASKS + 1e-9)
        done_s = ran_s * (done * WORK / TASKS) / done_work if done_work > 0 else 0.0
        d = ctl.step(now, JobState({"s": StageState(done=done, done_s=done_s)}))
        out.append(d)
        speed = 1.0 if k < slow_from else 1.0 / 3.0
        work = min(WORK - done_work, speed * d.requested_units * ctl.period_s)
        done_work += work
        ran_s += work / speed  # each task of this period took 1 / speed times the profile's time
        now += ctl.period_s
    return out


def test_a_pace_window_sees_a_slowdown_that_starts_part_way_through() -> None:
    """Over the whole run, a threefold slowdown from the fifth period shows slowly: the earlier tasks, on
    pace, dilute it (1.07, 1.14, 1.21, 1.27 in the four periods after). The pace of the last three periods'
    tasks, with the whole run's as its prior, shows it sooner (1.14, 1.32, 1.46, 1.68), and the request
    follows (102 units against 90 four periods in)."""
    whole, recent = drive_slowed(None, 10, 4), drive_slowed(3.0, 10, 4)
    assert [d.requested_units for d in whole[:5]] == [d.requested_units for d in recent[:5]]  # on pace: the same
    assert all(r.pace > w.pace for r, w in zip(recent[5:], whole[5:], strict=True))
    assert recent[8].pace > 1.25 * whole[8].pace
    assert recent[-1].requested_units >= whole[-1].requested_units + 10
    with pytest.raises(ValueError, match="pace_window_periods"):
        ControlConfig(pace_window_periods=0.0)
