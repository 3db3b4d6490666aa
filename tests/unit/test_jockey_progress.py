"""Jockey's progress indicators (§4.2, §5.4) on a two-stage job worked by hand.

The job: stage ``a`` has 4 tasks of 10 s that each waited 5 s in the queue; stage ``b`` (after ``a``,
a barrier) has 2 tasks of 30 s and no queueing. So T_a = 40, Q_a = 20, T_b = 60, Q_b = 0; l_a = 10,
l_b = 30; L_a = l_b + L_b = 30, L_b = 0; the whole remaining critical path is S(0) = max(10 + 30, 30) = 40.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from am.dag_state import DagState
from am.jobspec import parse_job
from am.policies.jockey.profile import (
    JobProfile,
    ProfileError,
    StageProfile,
    profile_from_job,
    stage_runs_from_dag,
)
from am.policies.jockey.progress import (
    CriticalPath,
    JobState,
    MinStage,
    StageState,
    TotalWork,
    TotalWorkWithQ,
    VertexFrac,
    fractions,
    job_state_from_dag,
    observed_pace,
)

JOB = JobProfile(
    "two",
    (
        StageProfile("a", 4, run_s=(10.0,), queue_s=5.0),
        StageProfile("b", 2, run_s=(30.0,), parents=("a",)),
    ),
)


def test_total_work_with_queueing_counts_queued_and_running_time_of_finished_tasks() -> None:
    """a all done, b half done: (1 × (20 + 40) + 0.5 × (0 + 60)) / (60 + 60) = 90 / 120 = 0.75."""
    assert TotalWorkWithQ(JOB).progress(JobState.of(a=4, b=1)) == pytest.approx(0.75)


def test_total_work_with_queueing_mid_first_stage() -> None:
    """a 3 of 4 done, b none: 0.75 × 60 / 120 = 0.375; queueing makes a weigh as much as b."""
    assert TotalWorkWithQ(JOB).progress(JobState.of(a=3)) == pytest.approx(0.375)


def test_the_papers_other_indicators_on_the_same_state() -> None:
    """a done, b half done.
    totalwork: (40 + 0.5 × 60) / 100 = 0.7.  vertexfrac: 5 / 6.
    cp: S = (1 − 0.5) × 30 + 0 = 15, so 1 − 15 / 40 = 0.625.
    minstage-inf: with unlimited slots a runs over [0, 10] and b over [10, 40] (of 40); b is the only
    unfinished stage: 10/40 + 0.5 × 30/40 = 0.625."""
    state = JobState.of(a=4, b=1)
    assert TotalWork(JOB).progress(state) == pytest.approx(0.7)
    assert VertexFrac(JOB).progress(state) == pytest.approx(5 / 6)
    assert CriticalPath(JOB).progress(state) == pytest.approx(0.625)
    assert MinStage.unlimited(JOB).progress(state) == pytest.approx(0.625)
    assert MinStage.unlimited(JOB).name == "minstage-inf"


def test_minstage_reads_the_reference_runs_stage_times() -> None:
    """Reference run: a over [0, 20], b over [20, 80]. a half done: min(0 + 0.5 × 0.25, 0.25 + 0) = 0.125."""
    job = JobProfile(
        "two",
        (
            StageProfile("a", 4, run_s=(10.0,), typical_start_s=0.0, typical_end_s=20.0),
            StageProfile("b", 2, run_s=(30.0,), parents=("a",), typical_start_s=20.0, typical_end_s=80.0),
        ),
    )
    assert MinStage.from_reference_run(job).progress(JobState.of(a=2)) == pytest.approx(0.125)
    with pytest.raises(ProfileError, match="start/end"):
        MinStage.from_reference_run(JOB)


def test_every_indicator_reads_zero_at_the_start_and_one_at_the_end() -> None:
    for ind in (
        TotalWorkWithQ(JOB),
        TotalWork(JOB),
        VertexFrac(JOB),
        CriticalPath(JOB),
        MinStage.unlimited(JOB),
    ):
        assert ind.progress(JobState()) == pytest.approx(0.0), ind.name
        assert ind.progress(JobState.of(a=4, b=2)) == pytest.approx(1.0), ind.name


def test_running_tasks_do_not_count_and_this_runs_task_count_is_used() -> None:
    """Running tasks earn nothing until they finish; a run with 8 tasks in a (not 4) halves f_a."""
    running = JobState({"a": StageState(done=2, running_elapsed_s=(4.0, 9.0))})
    assert TotalWorkWithQ(JOB).progress(running) == pytest.approx(0.25)
    bigger = JobState({"a": StageState(done=2, tasks=8)})
    assert fractions(JOB, bigger).tolist() == [0.25, 0.0]


def test_a_stage_the_profile_does_not_know_is_an_error() -> None:
    with pytest.raises(ProfileError, match="lacks"):
        TotalWorkWithQ(JOB).progress(JobState.of(c=1))


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 4), st.integers(0, 2), st.integers(0, 4), st.integers(0, 2))
def test_finishing_more_tasks_never_lowers_progress(a1: int, b1: int, a2: int, b2: int) -> None:
    lo, hi = JobState.of(a=min(a1, a2), b=min(b1, b2)), JobState.of(a=max(a1, a2), b=max(b1, b2))
    for ind in (
        TotalWorkWithQ(JOB),
        TotalWork(JOB),
        VertexFrac(JOB),
        CriticalPath(JOB),
        MinStage.unlimited(JOB),
    ):
        p_lo, p_hi = ind.progress(lo), ind.progress(hi)
        assert 0.0 <= p_lo <= p_hi + 1e-12 <= 1.0 + 1e-12, ind.name
    assert np.all(fractions(JOB, hi) >= fractions(JOB, lo))


def test_the_dag_application_masters_state_reads_as_a_job_state_and_a_stage_record() -> None:
    """Stage m: task 0 succeeded after 4 s, task 1 failed once then runs since t = 5; r waits."""
    job = parse_job(
        {
            "id": "j",
            "stages": [
                {"name": "m", "tasks": 2, "duration_s": 4, "memory_mb": 512},
                {"name": "r", "tasks": 1, "duration_s": 2, "memory_mb": 512, "parents": ["m"]},
            ],
        }
    )
    dag = DagState(job)
    dag.start("m", 0, "c0", now=0.0)
    dag.start("m", 1, "c1", now=0.0)
    dag.complete("c0", 0, now=4.0)
    dag.complete("c1", 1, now=3.0)
    dag.start("m", 1, "c2", now=5.0)
    state = job_state_from_dag(dag, now=7.0)
    assert state.stages["m"] == StageState(done=1, tasks=2, running_elapsed_s=(2.0,), done_s=4.0, timed=1)
    assert state.stages["r"] == StageState(done=0, tasks=1, done_s=0.0, timed=0)
    profile = profile_from_job(job)
    assert TotalWorkWithQ(profile).progress(state) == pytest.approx(4 / 10)
    assert observed_pace(profile, state, prior_s=0.0) == pytest.approx(1.0)  # 4 s, as the job file says
    m = stage_runs_from_dag(dag)[0]
    assert m.run_s == (4.0,)
    assert (m.attempts, m.failed_attempts) == (3, 1)


def test_the_pace_is_the_finished_tasks_run_times_over_the_profiles() -> None:
    """a's 4 tasks took 20 s each (the profile says 10) and one of b's took 30 s (as profiled):
    (80 + 30) / (40 + 30) = 11 / 7 slower."""
    state = JobState({"a": StageState(done=4, done_s=80.0), "b": StageState(done=1, done_s=30.0)})
    assert observed_pace(JOB, state, prior_s=0.0) == pytest.approx(110 / 70)


def test_the_prior_pulls_a_little_evidence_toward_the_profiles_pace() -> None:
    """Two of a's tasks at twice their time: 40 s against 20 expected; with 20 s of prior evidence at the
    profile's pace, (40 + 20) / (20 + 20) = 1.5; with 180 s of it, 220 / 200 = 1.1."""
    state = JobState({"a": StageState(done=2, done_s=40.0)})
    assert observed_pace(JOB, state, prior_s=20.0) == pytest.approx(1.5)
    assert observed_pace(JOB, state, prior_s=180.0) == pytest.approx(220 / 200)


def test_no_run_times_no_pace() -> None:
    """Nothing finished, or finished tasks without run times (a state rebuilt after a restart): pace 1.
    Only the timed tasks are compared: 3 finished, 1 timed at 15 s against 10."""
    assert observed_pace(JOB, JobState.of(a=3, b=1), prior_s=0.0) == 1.0
    assert observed_pace(JOB, JobState(), prior_s=0.0) == 1.0
    state = JobState({"a": StageState(done=3, done_s=15.0, timed=1)})
    assert observed_pace(JOB, state, prior_s=0.0) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="prior_s"):
        observed_pace(JOB, state, prior_s=-1.0)
