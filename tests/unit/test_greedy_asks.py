"""Greedy asks and the ask table the AM keeps in step with the RM."""

from __future__ import annotations

from typing import Any

import pytest

from am.dag_state import DagState
from am.jobspec import parse_job
from am.policies import (
    ALTRUISTIC_BASE,
    AskDecision,
    AskTable,
    GreedyAsks,
    make_ask_policy,
    request_id,
    stage_index_of,
)
from common.resources import Resources


def dag_of(*stages: dict[str, Any]) -> DagState:
    return DagState(parse_job({"id": "j", "stages": list(stages)}))


def s(name: str, tasks: int, *parents: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "tasks": tasks, "memory_mb": 1024, "vcores": 2, "duration_s": 5,
            "parents": list(parents), **fields}


def ask(rid: int, n: int, *, stage: str = "a", work: float = 100.0) -> AskDecision:
    return AskDecision(rid, stage, 0, Resources.of(memory_mb=1, vcores=1), n, "DEFAULT", work)


def test_asks_default_for_every_runnable_task() -> None:
    dag = dag_of(s("a", 3), s("b", 2, resources={"gpu": 1}), s("c", 1, "a", "b"))
    decisions = GreedyAsks().asks(dag, Resources.ZERO, now=0.0)
    assert [(d.stage, d.allocation_request_id, d.priority, d.num_containers, d.ask_type) for d in decisions] == [
        ("a", 1, 0, 3, "DEFAULT"), ("b", 2, 0, 2, "DEFAULT"),
    ]
    assert decisions[1].capability == Resources.of(memory_mb=1024, vcores=2, gpu=1)
    assert all(d.remaining_work_s == dag.remaining_work_s(0.0) == 30.0 for d in decisions)


def test_running_and_waiting_tasks_are_not_asked_for() -> None:
    dag = dag_of(s("a", 2), s("b", 1, "a"))
    dag.start("a", 0, "c1", 0.0)
    decisions = GreedyAsks().asks(dag, Resources.ZERO, now=1.0)
    assert [(d.stage, d.num_containers) for d in decisions] == [("a", 1)]
    dag.start("a", 1, "c2", 0.0)
    assert GreedyAsks().asks(dag, Resources.ZERO, now=1.0) == []


def test_later_stages_get_larger_priority_values() -> None:
    dag = dag_of(s("a", 1), s("b", 1, "a"))
    dag.start("a", 0, "c1", 0.0)
    dag.complete("c1", 0, 1.0)
    (decision,) = GreedyAsks().asks(dag, Resources.ZERO, now=1.0)
    assert (decision.stage, decision.priority, decision.allocation_request_id) == ("b", 1, 2)


def test_failed_task_is_asked_for_again() -> None:
    dag = dag_of(s("a", 1))
    dag.start("a", 0, "c1", 0.0)
    dag.complete("c1", 1, 1.0)
    assert [d.num_containers for d in GreedyAsks().asks(dag, Resources.ZERO, now=1.0)] == [1]


def test_registry() -> None:
    assert isinstance(make_ask_policy("greedy"), GreedyAsks)
    with pytest.raises(ValueError, match="unknown ask policy 'nope'; known: carbyne, greedy"):
        make_ask_policy("nope")


def test_request_ids_map_back_to_stages() -> None:
    assert request_id(0) == 1
    assert request_id(4, "ALTRUISTIC") == ALTRUISTIC_BASE + 5
    for i in range(5):
        assert stage_index_of(request_id(i, "DEFAULT")) == i
        assert stage_index_of(request_id(i, "ALTRUISTIC")) == i
    assert stage_index_of(0) is None


def test_ask_table_sends_only_changes() -> None:
    table = AskTable()
    assert table.update([ask(1, 3), ask(2, 0)]) == [ask(1, 3)]  # nothing to withdraw for id 2
    assert table.update([ask(1, 3)]) == []
    assert table.update([ask(1, 2)]) == [ask(1, 2)]
    assert table.update([]) == [ask(1, 0)]
    assert table.entries() == []


def test_ask_table_counts_down_deliveries() -> None:
    table = AskTable()
    table.update([ask(1, 3)])
    table.delivered(1)
    table.delivered(7)  # not an outstanding entry: ignored
    assert table.entries() == [ask(1, 2)]
    # One task failed while another got its container: still 3 wanted, and the RM holds 2.
    assert table.update([ask(1, 3)]) == [ask(1, 3)]
    table.delivered(1)
    table.delivered(1)
    table.delivered(1)
    assert table.entries() == []
    assert table.update([]) == []


def test_ask_table_resends_when_remaining_work_drifts() -> None:
    table = AskTable()
    table.update([ask(1, 1, work=100.0)])
    assert table.update([ask(1, 1, work=97.0)]) == []
    assert table.update([ask(1, 1, work=90.0)]) == [ask(1, 1, work=90.0)]


def test_ask_table_rejects_bad_decisions() -> None:
    with pytest.raises(ValueError, match="two decisions"):
        AskTable().update([ask(1, 1), ask(1, 2)])
    with pytest.raises(ValueError, match="negative"):
        AskTable().update([ask(1, -1)])
