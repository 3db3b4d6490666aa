"""A DAG AM's later attempt goes on from the checkpoint an earlier one left: finished tasks stay finished,
containers passed on keep their tasks, and a checkpoint that does not fit the job is ignored."""

from __future__ import annotations

import json

from tests.unit.test_dag_state import diamond, run, runnable_stages


def test_a_checkpoint_round_trip_carries_finished_and_running_tasks_over() -> None:
    first = diamond()
    run(first, "a", 0, t1=3.0)
    run(first, "a", 1, t1=4.0)
    first.start("b", 0, "kept", 5.0)
    first.start("c", 1, "lost", 5.0)
    saved = json.loads(json.dumps(first.checkpoint()))
    assert saved["done"] == {"a": {"0": 3.0, "1": 4.0}}
    assert saved["running"] == {"kept": ["b", 0, 1], "lost": ["c", 1, 1]}

    second = diamond()
    carried, adopted = second.resume(saved, inherited={"kept"}, now=20.0)
    assert (carried, adopted) == (2, 1)
    assert second.count("a", "SUCCEEDED") == 2
    assert second.measured_durations("a") == [3.0, 4.0]
    assert second.task_for_container("kept") == second.task("b", 0)
    assert second.task("b", 0).status == "RUNNING"
    assert second.task("c", 1).status == "RUNNING"  # held until the RM says how its container ended
    assert second.settle(21.0) == 1  # it did not: gone with the old attempt, so it runs again
    assert second.task("c", 1).status == "RUNNABLE"
    assert runnable_stages(second) == ["b", "c"]
    assert second.complete("kept", 0, 25.0).outcome == "succeeded"
    assert second.progress() == 3 / 8


def test_a_task_that_ended_while_no_am_could_hear_it_is_not_run_again() -> None:
    first = diamond()
    run(first, "a", 0)
    run(first, "a", 1)
    first.start("b", 0, "ended-meanwhile", 5.0)
    second = diamond()
    second.resume(json.loads(json.dumps(first.checkpoint())), inherited=set(), now=20.0)
    assert second.complete("ended-meanwhile", 0, 21.0, measured_s=4.0).outcome == "succeeded"  # handed over
    assert second.settle(21.0) == 0
    assert second.task("b", 0).status == "SUCCEEDED"


def test_a_checkpoint_that_does_not_fit_the_job_changes_nothing() -> None:
    dag = diamond()
    for junk in ({}, {"done": "x"}, {"done": {"zz": {"0": 1.0}}, "running": {"c1": ["a", 99, 1]}},
                 {"done": {"a": {"7": 1.0, "x": 2.0, "0": "slow"}}}, {"running": {"c1": "a"}}):
        assert dag.resume(junk, inherited={"c1"}, now=1.0) == (0, 0)
    assert runnable_stages(dag) == ["a"]
    assert dag.succeeded == 0
