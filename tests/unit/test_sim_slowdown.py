"""Contention episodes: attempts running on a slowed node do less work a second, those already running too."""

from __future__ import annotations

import random

import pytest

from am.jobspec import parse_job
from sim.engine import Faults, SimConfig, Simulator, uniform_nodes
from sim.policies import make_policy
from sim.slowdown import Contention, NodeSpeeds, Slowdown


def test_work_done_across_a_span_is_integrated() -> None:
    speeds = NodeSpeeds([Slowdown(10.0, 20.0, 2.0)], ["a", "b"])
    assert speeds.end("a", 0.0, 5.0) == 5.0  # ends before the span
    assert speeds.end("a", 5.0, 10.0) == pytest.approx(20.0)  # 5 s at full speed, then 5 s of work in 10 s
    assert speeds.end("a", 12.0, 2.0) == pytest.approx(16.0)  # wholly inside: twice as long
    assert speeds.end("a", 15.0, 10.0) == pytest.approx(27.5)  # 2.5 s of work inside, 7.5 s after
    assert speeds.end("a", 30.0, 4.0) == 34.0
    assert speeds.factor("b", 15.0) == 2.0
    assert speeds.factor("b", 20.0) == 1.0


def test_overlapping_episodes_take_the_slowest_and_spare_other_nodes() -> None:
    speeds = NodeSpeeds([Slowdown(0.0, 10.0, 2.0, frozenset({"a"})), Slowdown(5.0, 15.0, 4.0, frozenset({"a"}))],
                        ["a", "b"])
    assert [speeds.factor("a", t) for t in (1.0, 6.0, 12.0, 16.0)] == [2.0, 4.0, 4.0, 1.0]
    assert speeds.end("a", 0.0, 5.0) == pytest.approx(15.0)  # 2.5 s of work by 5, 2.5 more by 15
    assert speeds.end("b", 0.0, 5.0) == 5.0
    assert not NodeSpeeds([], ["a"])


def test_the_fastest_node_bounds_a_chain_of_tasks_from_below() -> None:
    # a spares b until 10 s; from 10 to 20 both are slowed, a 2x and b 4x; from 20 to 30 only b, 3x
    speeds = NodeSpeeds([Slowdown(0.0, 20.0, 2.0, frozenset({"a"})), Slowdown(10.0, 30.0, 4.0, frozenset({"b"})),
                         Slowdown(20.0, 30.0, 3.0, frozenset({"b"}))], ["a", "b"])
    assert speeds.fastest_end(0.0, 8.0) == 8.0  # b runs at full speed until 10
    assert speeds.fastest_end(5.0, 10.0) == pytest.approx(20.0)  # 5 s of work by 10, 5 more by 20 at half speed
    assert speeds.fastest_end(5.0, 12.0) == pytest.approx(22.0)  # and 2 s more on a, free again from 20
    assert speeds.fastest_end(20.0, 3.0) == 23.0  # a is free again
    # one node the episodes never reach: no bound beyond the work itself
    assert NodeSpeeds([Slowdown(0.0, 50.0, 3.0, frozenset({"a"}))], ["a", "b"]).fastest_end(1.0, 10.0) == 11.0
    # every node slowed: the slowest-lasting envelope counts
    assert NodeSpeeds([Slowdown(0.0, 10.0, 2.0)], ["a", "b"]).fastest_end(0.0, 10.0) == pytest.approx(15.0)


def test_bad_episodes_are_refused() -> None:
    with pytest.raises(ValueError, match="start < end"):
        Slowdown(5.0, 5.0, 2.0)
    with pytest.raises(ValueError, match="at least 1"):
        Slowdown(0.0, 5.0, 0.5)


def test_drawn_episodes_follow_the_rates_they_are_given() -> None:
    c = Contention(per_hour=2.0, mean_s=300.0, nodes=(0.5, 0.5), factor=(2.0, 3.0))
    names = [f"n{i}" for i in range(10)]
    episodes = c.draw(random.Random(1), 200 * 3600.0, names)
    assert 300 < len(episodes) < 500  # 400 expected
    assert all(len(e.nodes) == 5 and 2.0 <= e.factor <= 3.0 for e in episodes)
    assert 200 < sum(e.end_s - e.start_s for e in episodes) / len(episodes) < 400
    assert c.draw(random.Random(1), 200 * 3600.0, names) == episodes
    assert Contention(per_hour=0.0, mean_s=60.0).draw(random.Random(1), 1e6, names) == ()


def test_an_episode_slows_the_tasks_already_running() -> None:
    job = parse_job({"id": "j", "arrival_s": 0.0,
                     "stages": [{"name": "s", "tasks": 4, "duration_s": 40.0, "memory_mb": 1024, "vcores": 1}]})
    nodes = uniform_nodes(1, 8192, 8)
    plain = Simulator([job], nodes, make_policy("drf"), SimConfig(seed=1)).run()
    slowed = Simulator([job], nodes, make_policy("drf"),
                       SimConfig(seed=1, faults=Faults(episodes=(Slowdown(10.0, 30.0, 3.0),)))).run()
    # every task runs through [10, 30] at a third of its speed: 20 s of it does 6.7 s of work, 13.3 s later
    extra = slowed.jobs[0].task_seconds - plain.jobs[0].task_seconds
    assert extra == pytest.approx(4 * 20.0 * (1 - 1 / 3), rel=1e-6)
    assert slowed.jcts()["j"] >= plain.jcts()["j"] + 12.0
    drawn = Simulator([job], nodes, make_policy("drf"),
                      SimConfig(seed=1, faults=Faults(contention=Contention(per_hour=360.0, mean_s=30.0)))).run()
    assert drawn.jcts()["j"] > plain.jcts()["j"]


def test_a_contention_spec_parses_with_its_defaults() -> None:
    from sim.slowdown import parse_contention

    assert parse_contention("1,600") == Contention(1.0, 600.0)
    assert parse_contention("0.5, 300, 0.1-0.2, 2-4") == Contention(0.5, 300.0, (0.1, 0.2), (2.0, 4.0))
    for bad in ("1", "1,0", "1,600,0.5", "1,600,0-1", "1,600,0.2-0.1", "1,600,0.5-1,0.5-2", "x,600"):
        with pytest.raises(ValueError, match="contention"):
            parse_contention(bad)
