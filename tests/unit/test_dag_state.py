"""Task states of a DAG job: runnable sets follow the edges, retries, lost containers, progress."""

from __future__ import annotations

from typing import Any

import pytest

from am.dag_state import EXIT_ABORTED, EXIT_PREEMPTED, DagState
from am.jobspec import parse_job


def diamond(**overrides: Any) -> DagState:
    """a -> (b, c) -> d, two tasks each."""

    def s(name: str, *parents: str) -> dict[str, Any]:
        return {"name": name, "tasks": 2, "memory_mb": 256, "duration_s": 10, "parents": list(parents),
                **overrides.get(name, {})}

    return DagState(parse_job({"id": "j", "stages": [s("a"), s("b", "a"), s("c", "a"), s("d", "b", "c")]}))


def run(dag: DagState, stage: str, task: int, exit_status: int = 0, *, t0: float = 0.0, t1: float = 1.0) -> str:
    cid = f"c-{stage}-{task}-{dag.task(stage, task).launches}"
    dag.start(stage, task, cid, t0)
    return dag.complete(cid, exit_status, t1).outcome


def runnable_stages(dag: DagState) -> list[str]:
    return [s.name for s in dag.stages if dag.runnable(s.name)]


def test_only_roots_start_runnable() -> None:
    dag = diamond()
    assert runnable_stages(dag) == ["a"]
    assert dag.count("d", "WAITING") == 2


def test_runnable_sets_follow_the_edges() -> None:
    dag = diamond()
    assert run(dag, "a", 0) == "succeeded"
    assert runnable_stages(dag) == ["a"]  # half of a is not enough
    dag.start("a", 1, "x", 0.0)
    done = dag.complete("x", 0, 1.0)
    assert done.newly_runnable == ("b", "c")
    assert runnable_stages(dag) == ["b", "c"]
    run(dag, "b", 0)
    run(dag, "b", 1)
    assert runnable_stages(dag) == ["c"]  # d needs c as well
    run(dag, "c", 0)
    run(dag, "c", 1)
    assert runnable_stages(dag) == ["d"]
    run(dag, "d", 0)
    assert not dag.finished
    run(dag, "d", 1)
    assert dag.finished
    assert dag.succeeded_all
    assert dag.failed_task is None


def test_running_tasks_are_not_runnable() -> None:
    dag = diamond()
    dag.start("a", 0, "c1", 0.0)
    assert dag.runnable("a") == [1]
    assert dag.task_for_container("c1") is dag.task("a", 0)
    with pytest.raises(ValueError, match="RUNNING"):
        dag.start("a", 0, "c2", 0.0)
    with pytest.raises(ValueError, match="not RUNNABLE"):
        dag.start("b", 0, "c3", 0.0)


def test_failures_are_retried_until_max_attempts() -> None:
    dag = diamond(a={"max_attempts": 3})
    assert run(dag, "a", 0, 1) == "retry"
    assert dag.task("a", 0).status == "RUNNABLE"
    assert run(dag, "a", 0, -104) == "retry"
    assert not dag.finished
    assert run(dag, "a", 0, 1) == "failed"
    failed = dag.failed_task
    assert failed is not None
    assert (failed.stage, failed.index, failed.failures, failed.last_exit_status) == ("a", 0, 3, 1)
    assert dag.finished
    assert not dag.succeeded_all


@pytest.mark.parametrize("status", [EXIT_ABORTED, EXIT_PREEMPTED])
def test_lost_containers_do_not_count(status: int) -> None:
    dag = diamond(a={"max_attempts": 1})
    assert run(dag, "a", 0, status) == "requeued"
    assert run(dag, "a", 0, status) == "requeued"
    task = dag.task("a", 0)
    assert (task.status, task.failures, task.launches, task.attempt) == ("RUNNABLE", 0, 2, 2)
    assert run(dag, "a", 0, 0) == "succeeded"


def test_attempt_numbers_count_every_launch() -> None:
    dag = diamond()
    assert dag.start("a", 0, "c1", 0.0) == 0
    dag.complete("c1", EXIT_ABORTED, 1.0)
    assert dag.start("a", 0, "c2", 1.0) == 1
    assert dag.task("a", 0).attempt == 1
    dag.complete("c2", 7, 2.0)
    assert dag.start("a", 0, "c3", 2.0) == 2


def test_progress_counts_succeeded_tasks() -> None:
    dag = diamond()
    assert dag.progress() == 0.0
    run(dag, "a", 0)
    run(dag, "a", 1, 1)  # a failed attempt is not progress
    assert dag.progress() == pytest.approx(1 / 8)


def test_unknown_container_changes_nothing() -> None:
    dag = diamond()
    assert dag.complete("nobody", 0, 1.0).outcome == "unknown"
    assert dag.succeeded == 0


def test_measured_durations_replace_the_estimate() -> None:
    dag = diamond()
    assert dag.estimate_s("a") == 10.0
    assert dag.remaining_work_s(0.0) == 80.0
    run(dag, "a", 0, t0=0.0, t1=4.0)
    assert dag.measured_durations("a") == [4.0]
    assert dag.estimate_s("a") == 4.0
    dag.start("a", 1, "c", 10.0)
    dag2_remaining = dag.remaining_work_s(11.0)
    assert dag2_remaining == pytest.approx(3.0 + 60.0)  # a/1 has 3 s left of 4; b, c, d untouched
    dag.complete("c", 0, 20.0, measured_s=2.0)
    assert dag.measured_durations("a") == [4.0, 2.0]
    assert dag.estimate_s("a") == 3.0


def test_per_task_durations_are_the_spec_estimate() -> None:
    dag = DagState(parse_job({"id": "j", "stages": [
        {"name": "a", "tasks": 2, "memory_mb": 1, "durations_s": [1.0, 5.0]}]}))
    assert dag.estimate_s("a", 1) == 5.0
    assert dag.remaining_work_s(0.0) == 6.0


@pytest.mark.parametrize("seed", range(4))
def test_a_stages_remaining_work_is_the_sum_of_its_tasks(seed: int) -> None:
    """The stage sum (kept tight, it is read on every heartbeat) equals remaining_task_s over its tasks, summed
    in index order, to the bit, before and after the first measurement, with per-task durations or one."""
    from random import Random

    rng = Random(seed)
    dag = diamond(a={"durations_s": [rng.random() * 10 for _ in range(2)]},
                  b={"duration_s": 0.1 + rng.random()}, c={"tasks": 2, "durations_s": [0.3, 7.7]})
    now, live = 0.0, 0
    while not dag.finished and now < 500:
        now += rng.random() * 3
        for st in dag.stages:
            want = sum(dag.remaining_task_s(t, now) for t in dag.tasks(st.name))
            assert dag.remaining_stage_s(st.name, now) == want
            tally = dag.tally(st.name, now)
            assert tally.running_s == [dag.remaining_task_s(t, now) for t in dag.tasks(st.name) if t.status == "RUNNING"]
            assert tally.runnable == len(dag.runnable(st.name))
            assert tally.waiting == dag.count(st.name, "WAITING")
            runnable = dag.runnable(st.name)
            if runnable and rng.random() < 0.5:
                dag.start(st.name, runnable[0], f"c{live}", now)
                live += 1
        running = [t for t in dag.tasks() if t.status == "RUNNING"]
        if running and rng.random() < 0.6:
            task = rng.choice(running)
            assert task.container_id is not None
            dag.complete(task.container_id, 0 if rng.random() < 0.8 else 1, now)
    assert dag.finished


def test_a_shuffle_seed_starts_a_first_stage_in_a_drawn_order_so_pilots_are_a_random_sample() -> None:
    job = parse_job({"id": "j", "stages": [
        {"name": "map", "tasks": 100, "memory_mb": 256, "duration_s": 10},
        {"name": "reduce", "tasks": 10, "memory_mb": 256, "duration_s": 10, "parents": ["map"]}]})
    assert DagState(job).runnable("map") == list(range(100))  # no seed: index order
    dag = DagState(job, shuffle_seed=7)
    order = dag.runnable("map")
    assert sorted(order) == list(range(100))
    assert order != list(range(100))
    assert DagState(job, shuffle_seed=7).runnable("map") == order  # a restarted attempt draws the same order
    assert DagState(job, shuffle_seed=8).runnable("map") != order
    # three pilots of many seeded runs are spread over the whole stage, not its first partitions
    firsts = [i for s in range(200) for i in DagState(job, shuffle_seed=s).runnable("map")[:3]]
    assert 40 < sum(firsts) / len(firsts) < 60
    assert max(firsts) > 90
    dag.start("map", order[0], "c1", 0.0)
    assert dag.runnable("map") == order[1:]  # the next pilot is the next drawn task
    for i in range(100):  # a later stage keeps index order
        if dag.task("map", i).status == "RUNNABLE":
            dag.start("map", i, f"m{i}", 0.0)
        dag.complete(f"m{i}" if i != order[0] else "c1", 0, 1.0)
    assert dag.runnable("reduce") == list(range(10))


def test_the_remaining_critical_path_follows_each_stages_longest_task() -> None:
    """a -> (b, c) -> d with per-task durations in b: b's 40 s task makes the chain a (10) + b (40) + d (10)
    = 60 s, where the stage estimates (b's mean 25 s) would say 45. After a's tasks ran twice their declared
    time, b (no task finished yet) is scaled by the job's ratio: 10 + 80 = 90 s left at t = 20."""
    dag = diamond(b={"durations_s": [10.0, 40.0]})
    assert dag.longest_remaining_s(0.0) == {"a": 10.0, "b": 40.0, "c": 10.0, "d": 10.0}
    assert dag.remaining_critical_path_s(0.0) == 60.0
    assert dag.tails_s(0.0) == {"a": 60.0, "b": 50.0, "c": 20.0, "d": 10.0}
    run(dag, "a", 0, t0=0.0, t1=20.0)
    run(dag, "a", 1, t0=0.0, t1=20.0)  # a is done: 20 s each, against 10 declared (a's estimate is now 20)
    assert dag.longest_remaining_s(20.0)["a"] == 0.0
    assert dag.longest_remaining_s(20.0)["b"] == pytest.approx(80.0)
    assert dag.remaining_critical_path_s(20.0) == pytest.approx(80.0 + 10.0)
    dag.start("b", 1, "long", 20.0)
    assert dag.longest_remaining_s(50.0)["b"] == pytest.approx(50.0)  # 80 s at the job's pace, 30 s of it run


def test_a_stage_without_per_task_durations_counts_its_estimate() -> None:
    dag = diamond()
    assert dag.remaining_critical_path_s(0.0) == 30.0
    run(dag, "a", 0, t0=0.0, t1=4.0)
    assert dag.longest_remaining_s(4.0)["a"] == 4.0  # the measured mean
    run(dag, "a", 1, t0=0.0, t1=4.0)
    assert dag.remaining_critical_path_s(4.0) == 20.0  # b or c, then d; a is done
