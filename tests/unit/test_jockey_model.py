"""C(p, a) from the job simulator, the Amdahl fallback, and job profiles (Jockey §4.1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from am.jobspec import parse_job
from am.policies.jockey.model import Amdahl, CpaTable, allocation_grid, build_table, oracle_units
from am.policies.jockey.profile import (
    JobProfile,
    ProfileError,
    StageProfile,
    StageRun,
    allocation_unit,
    profile_from_job,
    profile_from_runs,
    units_of,
)
from am.policies.jockey.progress import CriticalPath, JobState
from am.policies.jockey.simulate import draw, schedule
from common.resources import Resources

ONE_STAGE = JobProfile("one", (StageProfile("s", 4, run_s=(10.0,)),))


def test_half_way_through_four_ten_second_tasks_on_two_units_ten_seconds_remain() -> None:
    """Two waves of two tasks: progress 0.5 is reached at t = 10, the job ends at t = 20."""
    table = build_table(ONE_STAGE, grid=(1, 2, 3, 4), runs=3)
    assert table.lookup(0.5, 2).tolist() == [10.0] * 16
    assert table.lookup(0.0, 2)[0] == 20.0
    assert table.lookup(1.0, 2)[0] == 0.0
    # one unit: four waves, p = 0.5 at t = 20 of 40; four units: one wave, nothing left once p moves
    assert table.lookup(0.5, 1)[0] == 20.0
    assert table.lookup(0.5, 4)[0] == 0.0
    assert table.lookup(0.0, 4)[0] == 10.0


def test_a_barrier_holds_the_next_stage_until_every_parent_task_is_done() -> None:
    """a: 2 × 10 s, then b: 1 × 5 s. One unit: a ends at 20, b at 25; progress (totalworkWithQ) weighs a
    20/25 = 0.8, so p = 0.8 is reached at t = 20 with 5 s left. Two units: a ends at 10, the job at 15."""
    job = JobProfile(
        "ab", (StageProfile("a", 2, run_s=(10.0,)), StageProfile("b", 1, run_s=(5.0,), parents=("a",)))
    )
    table = build_table(job, grid=(1, 2), runs=2, levels=10)
    assert table.lookup(0.0, 1)[0] == 25.0
    assert table.lookup(0.8, 1)[0] == 5.0
    assert table.lookup(0.0, 2)[0] == 15.0


def test_initialisation_holds_the_slot_before_the_task_runs() -> None:
    """4 tasks of 10 s with 2 s initialisation each on two units: two waves of 12 s."""
    job = JobProfile("init", (StageProfile("s", 4, run_s=(10.0,), init_s=(2.0,)),))
    assert build_table(job, grid=(2,), runs=2).lookup(0.0, 2)[0] == 24.0


def test_failures_make_the_job_longer_on_average() -> None:
    plain = JobProfile("f", (StageProfile("s", 20, run_s=(10.0,)),))
    flaky = JobProfile("f", (StageProfile("s", 20, run_s=(10.0,), failure_p=0.3),))
    calm = build_table(plain, grid=(5,), runs=64, seed=3).lookup(0.0, 5)
    rough = build_table(flaky, grid=(5,), runs=64, seed=3).lookup(0.0, 5)
    assert calm.tolist() == [40.0] * 16
    assert rough.mean() > 45.0
    assert rough.min() >= 40.0


def test_task_time_samples_spread_the_remaining_time_and_a_seed_replays_it() -> None:
    job = JobProfile("noisy", (StageProfile("s", 30, run_s=(2.0, 5.0, 20.0)),))
    first = build_table(job, grid=(1, 3, 6), runs=40, seed=7)
    again = build_table(job, grid=(1, 3, 6), runs=40, seed=7)
    assert np.array_equal(first.remaining_s, again.remaining_s)
    spread = first.lookup(0.0, 3)
    assert spread[-1] > spread[0]


def test_a_table_can_use_a_non_linear_indicator() -> None:
    """Independent stages a: 2 × 10 s and b: 2 × 30 s on two units; a runs over [0, 10], b over [10, 40].
    The critical-path indicator stays at 0 while b (l_b = 30 = S(0)) has not finished a task, so any
    p > 0 is first reached at t = 40 with nothing left. totalworkWithQ reads 20 / 80 = 0.25 at t = 10."""
    job = JobProfile("ab", (StageProfile("a", 2, run_s=(10.0,)), StageProfile("b", 2, run_s=(30.0,))))
    cp = build_table(job, grid=(2,), runs=2, indicator=CriticalPath(job))
    assert cp.lookup(0.0, 2)[0] == 40.0
    assert cp.lookup(0.1, 2)[0] == 0.0
    assert build_table(job, grid=(2,), runs=2, levels=20).lookup(0.25, 2)[0] == 30.0


def test_lookups_interpolate_between_levels_and_allocations() -> None:
    table = CpaTable.of([0.0, 1.0], [2, 4], [[100.0, 60.0], [0.0, 0.0]])
    assert table.lookup(0.5, 2)[0] == 50.0
    # between allocations linearly in 1 / a: S + P / a through (2, 100) and (4, 60) is 20 + 160 / a
    assert table.lookup(0.0, 3)[0] == pytest.approx(20.0 + 160.0 / 3)
    assert table.lookup(0.0, 1)[0] == 200.0  # below the grid: work-bound, 100 × 2 / 1
    assert table.lookup(0.0, 9)[0] == 60.0  # above the grid: no faster than the widest point


def test_amdahl_remaining_critical_path_plus_remaining_work_over_units() -> None:
    """a: 4 × 10 s, then b: 2 × 30 s. T_a = 40, T_b = 60; l_a = 10, l_b = 30; L_a = 30, L_b = 0.
    Half of a done: S = max(0.5 × 10 + 30, 1 × 30 + 0) = 35, P = 0.5 × 40 + 60 = 80;
    at 4 units 35 + 80 / 4 = 55 s, at 1 unit 115 s. All of a and half of b done: S = 15, P = 30,
    at 2 units 15 + 15 = 30 s."""
    job = JobProfile(
        "two", (StageProfile("a", 4, run_s=(10.0,)), StageProfile("b", 2, run_s=(30.0,), parents=("a",)))
    )
    model = Amdahl(job, grid=(1, 2, 4))
    assert model.terms(JobState.of(a=2)) == (35.0, 80.0)
    forecast = model.forecast(JobState.of(a=2), [4, 1])
    assert forecast.samples[:, 0].tolist() == [55.0, 115.0]
    assert model.remaining_s(JobState.of(a=4, b=1), 2) == 30.0
    assert model.remaining_s(JobState.of(a=4, b=2), 2) == 0.0


def test_the_oracle_allocation_rounds_total_work_over_the_deadline_up() -> None:
    assert oracle_units(12.7 * 3600, 3600) == 13
    assert oracle_units(100.0, 50.0) == 2


def test_the_allocation_grid_is_dense_when_small_and_geometric_when_large() -> None:
    assert allocation_grid(5) == (1, 2, 3, 4, 5)
    big = allocation_grid(1000)
    assert big[0] == 1
    assert big[-1] == 1000
    assert 10 <= len(big) <= 20
    assert list(big) == sorted(set(big))


def test_a_profile_from_a_job_file_keeps_the_declared_durations_and_dag() -> None:
    job = parse_job(
        {
            "id": "j",
            "name": "daily",
            "stages": [
                {"name": "m", "tasks": 3, "durations_s": [1, 2, 3], "memory_mb": 1024},
                {"name": "r", "tasks": 1, "duration_s": 4, "memory_mb": 2048, "parents": ["m"]},
            ],
        }
    )
    profile = profile_from_job(job)
    assert profile.name == "daily"
    assert [s.name for s in profile.stages] == ["m", "r"]
    assert profile.stages[0].run_s == (1.0, 2.0, 3.0)
    assert profile.stages[1].parents == ("m",)
    assert allocation_unit(profile) == Resources.of(memory_mb=1024, vcores=1)


def test_a_profile_from_runs_pools_samples_and_estimates_failures() -> None:
    run1 = [StageRun("m", 2, run_s=(4.0, 6.0), queue_s=(1.0, 3.0), attempts=3, failed_attempts=1)]
    run2 = [StageRun("m", 3, run_s=(5.0, 5.0, 5.0), attempts=3), StageRun("r", 1, (9.0,), parents=("m",))]
    profile = profile_from_runs("daily", [run1, run2])
    m = profile.stages[0]
    assert m.tasks == 3
    assert m.run_s == (4.0, 6.0, 5.0, 5.0, 5.0)
    assert m.failure_p == pytest.approx(1 / 6)
    assert m.mean_queue_s == 2.0
    assert profile.stages[1].parents == ("m",)


def test_a_profile_refuses_unknown_parents_and_bad_numbers() -> None:
    with pytest.raises(ProfileError, match="unknown"):
        JobProfile("x", (StageProfile("a", 1, (1.0,), parents=("z",)),))
    with pytest.raises(ProfileError, match="failure_p"):
        StageProfile("a", 1, (1.0,), failure_p=1.0)
    with pytest.raises(ProfileError, match="no samples"):
        StageProfile("a", 1, ())


def test_the_unit_is_the_most_common_container_and_a_container_counts_its_whole_units() -> None:
    small, big = Resources.of(memory_mb=1024, vcores=1), Resources.of(memory_mb=4096, vcores=2)
    profile = JobProfile(
        "u", (StageProfile("a", 10, (1.0,), container=small), StageProfile("b", 3, (1.0,), container=big))
    )
    assert allocation_unit(profile) == small
    assert units_of(big, small) == 2  # four units of memory, but only two of vcores
    assert units_of(small, big) == 0


def test_the_simulator_never_runs_more_tasks_than_units_at_once() -> None:
    job = JobProfile(
        "w",
        (
            StageProfile("a", 7, run_s=(1.0, 3.0)),
            StageProfile("b", 5, run_s=(2.0,), parents=("a",)),
            StageProfile("c", 4, run_s=(1.0, 4.0)),
        ),
    )
    draws = draw(job, 6, np.random.default_rng(0))
    for a in (1, 2, 3, 5):
        finish = schedule(job, draws, a)
        start = finish - draws.service_s
        for r in range(draws.runs):
            for t in np.unique(start[r]):
                running = np.sum((start[r] <= t) & (finish[r] > t))
                assert running <= a
        b = slice(draws.offsets[1], draws.offsets[2])
        a_end = finish[:, draws.offsets[0] : draws.offsets[1]].max(axis=1)
        assert np.all(start[:, b].min(axis=1) >= a_end - 1e-9)


@st.composite
def profiles(draw_: st.DrawFn) -> JobProfile:
    n = draw_(st.integers(1, 4))
    stages = []
    for i in range(n):
        parents = tuple(f"s{j}" for j in range(i) if draw_(st.booleans()))
        runs = tuple(draw_(st.lists(st.floats(0.5, 20), min_size=1, max_size=4)))
        stages.append(
            StageProfile(
                f"s{i}",
                draw_(st.integers(1, 8)),
                run_s=runs,
                init_s=(draw_(st.floats(0, 2)),),
                failure_p=draw_(st.sampled_from([0.0, 0.1])),
                parents=parents,
            )
        )
    return JobProfile("h", tuple(stages))


@settings(max_examples=25, deadline=None)
@given(profiles(), st.integers(0, 1000))
def test_more_units_never_predict_more_remaining_time(profile: JobProfile, seed: int) -> None:
    table = build_table(profile, grid=(1, 2, 3, 5, 8), runs=6, levels=10, samples=4, seed=seed)
    assert np.all(np.diff(table.remaining_s, axis=1) <= 1e-9)
    for p in (0.0, 0.37, 0.9):
        looked = [table.lookup(p, a) for a in (1, 1.5, 2, 4, 6.5, 8, 12)]
        assert all(np.all(b <= a + 1e-9) for a, b in itertools.pairwise(looked))


@settings(max_examples=25, deadline=None)
@given(profiles(), st.integers(0, 1000))
def test_more_progress_never_predicts_more_remaining_time(profile: JobProfile, seed: int) -> None:
    table = build_table(profile, grid=(1, 4), runs=6, levels=10, samples=4, seed=seed)
    assert np.all(np.diff(table.remaining_s, axis=0) <= 1e-9)
    assert np.all(table.remaining_s >= 0)
