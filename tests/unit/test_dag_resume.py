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
    assert second.task("c", 1).status == "RUNNABLE"  # its container was not passed on: it runs again
    assert runnable_stages(second) == ["b", "c"]
    assert second.complete("kept", 0, 25.0).outcome == "succeeded"
    assert second.progress() == 3 / 8


def test_a_checkpoint_that_does_not_fit_the_job_changes_nothing() -> None:
    dag = diamond()
    for junk in ({}, {"done": "x"}, {"done": {"zz": {"0": 1.0}}, "running": {"c1": ["a", 99, 1]}},
                 {"done": {"a": {"7": 1.0, "x": 2.0, "0": "slow"}}}, {"running": {"c1": "a"}}):
        assert dag.resume(junk, inherited={"c1"}, now=1.0) == (0, 0)
    assert runnable_stages(dag) == ["a"]
    assert dag.succeeded == 0
