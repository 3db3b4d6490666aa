"""A deadline the RM changes at run time reaches the Jockey AM policy (``set_deadline``): the controller plans
for the new deadline (a tighter one asks for more units at once), a job file's own utility is moved by the
change, a deadline heard before the first call or by a job without one starts the control loop, and a
report within a second of the current deadline changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from am.dag_state import DagState
from am.jobspec import Job, parse_job
from am.policies import JockeyAsks, make_ask_policy
from am.policies.api import FollowsDeadline
from common.resources import Resources

GB = 1024
SHARE = Resources.of(memory_mb=40 * GB, vcores=40)


def job(**extra: Any) -> Job:
    return parse_job({"id": "slo", "arrival_s": 0.0, **extra,
                      "stages": [{"name": "map", "tasks": 60, "duration_s": 10.0, "memory_mb": GB},
                                 {"name": "reduce", "tasks": 10, "duration_s": 10.0, "memory_mb": GB,
                                  "parents": ["map"]}]})


def policy() -> JockeyAsks:
    p = make_ask_policy("jockey", seed=3, started_at=0.0)
    assert isinstance(p, JockeyAsks)
    assert isinstance(p, FollowsDeadline)
    return p


def test_a_tighter_deadline_asks_for_more_at_once() -> None:
    p = policy()
    dag = DagState(job(deadline_s=600.0))
    p.asks(dag, SHARE, 0.0)
    assert p.controller is not None
    before = p.controller.trace[-1].requested_units
    p.set_deadline(200.0)
    assert p.controller.utility.deadline == pytest.approx(200.0)
    p.asks(dag, SHARE, 1.0)
    after = p.controller.trace[-1].requested_units
    assert after > before
    # the same deadline again, a little off by network delay: nothing changes
    utility = p.controller.utility
    p.set_deadline(200.4)
    assert p.controller.utility is utility


def test_a_job_utility_moves_by_the_change() -> None:
    p = policy()
    dag = DagState(job(utility=[[0, 1], [10, 1], [12, -1]]))
    p.asks(dag, SHARE, 0.0)
    assert p.controller is not None
    p.set_deadline(900.0)  # 15 min instead of 10
    assert p.controller.utility.points == ((300.0, 1.0), (900.0, 1.0), (1020.0, -1.0))


def test_a_deadline_heard_first_or_late_starts_the_loop() -> None:
    early = policy()
    early.set_deadline(300.0)  # before the first call: kept for it
    early.asks(DagState(job()), SHARE, 0.0)
    assert early.controller is not None
    assert early.controller.utility.deadline == pytest.approx(300.0)

    late = policy()
    dag = DagState(job())
    late.asks(dag, SHARE, 0.0)
    assert late.controller is None  # no deadline: an ordinary altruistic job
    late.set_deadline(400.0)
    assert late.controller is not None
    assert late.controller.utility.deadline == pytest.approx(400.0)
    late.asks(dag, SHARE, 5.0)
    assert late.signals().guarantee is not None


def test_each_control_decision_is_reported_once_with_relative_times() -> None:
    p = policy()
    dag = DagState(job(deadline_s=600.0))
    p.asks(dag, SHARE, 0.0)
    first = p.signals().control
    assert len(first) == 1
    assert first[0].age_s == 0.0
    assert first[0].requested_units == p.controller.trace[0].requested_units  # type: ignore[union-attr]
    assert first[0].finish_in_s == pytest.approx(p.controller.trace[0].predicted_finish)  # type: ignore[union-attr]
    p.asks(dag, SHARE, 1.0)  # within the period: no new decision
    assert p.signals().control == ()
    p.asks(dag, SHARE, 30.0)  # a period (10 s at a 600 s deadline) has passed
    later = p.signals().control
    assert len(later) == 1
    assert later[0].age_s == 0.0
    assert later[0].finish_in_s == pytest.approx(
        p.controller.trace[-1].predicted_finish - 30.0)  # type: ignore[union-attr]
