"""The simulator engine: latencies, the real AM loop, determinism, faults, and a golden decision trace."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from am.jobspec import Job, parse_job
from sim.am import RemainingPath
from sim.engine import Faults, NodeSpec, SimConfig, Simulator, Timing, uniform_nodes
from sim.policies import make_policy

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "sim_small_decisions.json"


def job(job_id: str, arrival: float, *stages: dict[str, Any]) -> Job:
    return parse_job({"id": job_id, "arrival_s": arrival, "stages": list(stages)})


def stage(name: str, tasks: int, seconds: float, parents: tuple[str, ...] = (), memory_mb: int = 1024,
          vcores: int = 1, **extra: Any) -> dict[str, Any]:
    return {"name": name, "tasks": tasks, "duration_s": seconds, "memory_mb": memory_mb, "vcores": vcores,
            "parents": list(parents), **extra}


def next_tick(t: float, phase: float, interval: float) -> float:
    return phase + math.ceil((t - phase) / interval - 1e-9) * interval


def test_one_task_job_follows_the_live_latencies() -> None:
    timing = Timing()
    sim = Simulator([job("j", 0.0, stage("s", 1, 10.0))], uniform_nodes(1, 8192, 4), make_policy("drf"),
                    SimConfig(seed=3, timing=timing))
    phase = next(iter(sim.phase.values()))
    result = sim.run()
    registered = timing.launch_s + timing.am_startup_s  # the AM container is placed at once
    started = registered + timing.am_interval_s + timing.launch_s  # asks at registration, container next tick
    reported = next_tick(started + 10.0, phase, timing.nm_heartbeat_s)
    learned = registered + math.floor((reported - registered) / timing.am_interval_s + 1e-9 + 1) * timing.am_interval_s
    assert result.jcts()["j"] == pytest.approx(learned)
    (record,) = result.jobs
    assert record.status == "SUCCEEDED"
    assert record.queueing_delay == pytest.approx(started)


def test_a_dag_runs_stage_after_stage_and_frees_everything() -> None:
    w = [job("dag", 0.0, stage("a", 4, 2.0), stage("b", 2, 3.0, ("a",)), stage("c", 1, 1.0, ("a", "b")))]
    sim = Simulator(w, uniform_nodes(2, 8192, 4), make_policy("drf"), SimConfig(seed=1))
    result = sim.run()
    jct = result.jcts()["dag"]
    assert 2.0 + 3.0 + 1.0 < jct < 2.0 + 3.0 + 1.0 + 3 * 1.5 + 1.5  # three stages, each learned late
    assert all(n.allocated.is_zero() for n in sim.ledger.nodes.values())
    assert not sim.ledger.active
    assert not any(c.live for c in sim.ledger.containers.values())
    assert not sim.runs
    assert result.task_completions == 7


def test_runs_are_deterministic_for_a_seed() -> None:
    w = [job(f"j{i}", 1.5 * i, stage("m", 6, 4.0 + i), stage("r", 2, 2.0, ("m",))) for i in range(5)]
    config = SimConfig(seed=7, record_decisions=True, faults=Faults(noise=0.3, straggler_rate=0.1))
    one = Simulator(w, uniform_nodes(2, 8192, 4), make_policy("drf"), config)
    two = Simulator(w, uniform_nodes(2, 8192, 4), make_policy("drf"), config)
    assert one.run().jcts() == two.run().jcts()
    assert one.decisions == two.decisions


def test_drf_shares_a_small_cluster_between_two_backlogged_jobs() -> None:
    w = [job("a", 0.0, stage("s", 40, 5.0)), job("b", 0.0, stage("s", 40, 5.0))]
    sim = Simulator(w, uniform_nodes(1, 16384, 8), make_policy("drf"), SimConfig(seed=0, record_decisions=True))
    result = sim.run()
    first_wave = [d for d in sim.decisions if d[2] == "s"][:6]  # 8 vcores minus the two AMs
    assert sorted(d[1] for d in first_wave) == ["a", "a", "a", "b", "b", "b"]
    assert result.jcts()["a"] == pytest.approx(result.jcts()["b"], rel=0.15)


def test_fifo_finishes_the_first_job_long_before_the_second() -> None:
    w = [job("a", 0.0, stage("s", 30, 5.0)), job("b", 0.1, stage("s", 30, 5.0))]
    result = Simulator(w, uniform_nodes(1, 16384, 8), make_policy("fifo"), SimConfig(seed=0)).run()
    assert result.jcts()["a"] < 0.7 * result.jcts()["b"]


def test_failed_attempts_are_retried_and_a_task_out_of_attempts_fails_the_job() -> None:
    w = [job("ok", 0.0, stage("s", 20, 2.0, max_attempts=20))]
    flaky = Simulator(w, uniform_nodes(2, 8192, 4), make_policy("drf"), SimConfig(seed=2, faults=Faults(failure_rate=0.3)))
    (record,) = flaky.run().jobs
    assert record.status == "SUCCEEDED"
    doomed = [job("bad", 0.0, stage("s", 3, 2.0, max_attempts=2))]
    failing = Simulator(doomed, uniform_nodes(1, 8192, 4), make_policy("drf"),
                        SimConfig(seed=2, faults=Faults(failure_rate=1.0)))
    (record,) = failing.run().jobs
    assert record.status == "FAILED"
    assert all(n.allocated.is_zero() for n in failing.ledger.nodes.values())


def test_stragglers_make_jobs_slower() -> None:
    w = [job(f"j{i}", 0.0, stage("s", 10, 5.0)) for i in range(3)]
    plain = Simulator(w, uniform_nodes(4, 8192, 8), make_policy("drf"), SimConfig(seed=4)).run()
    slow = Simulator(w, uniform_nodes(4, 8192, 8), make_policy("drf"),
                     SimConfig(seed=4, faults=Faults(straggler_rate=0.5, straggler_factor=3.0))).run()
    assert sum(slow.jcts().values()) > sum(plain.jcts().values())


def test_every_baseline_completes_a_mixed_workload() -> None:
    w = [job(f"j{i}", 2.0 * i, stage("m", 3 + i, 3.0, memory_mb=512 * (1 + i % 3), vcores=1 + i % 2),
             stage("r", 1 + i % 2, 2.0, ("m",))) for i in range(8)]
    nodes = [NodeSpec("a", 8192, 4), NodeSpec("b", 4096, 8, rack="/r2")]
    for name in ("fifo", "drf", "tetris", "sjf", "tetris:0.5"):
        result = Simulator(w, nodes, make_policy(name), SimConfig(seed=0)).run()
        assert len(result.jcts()) == 8, name
        assert all(j.status == "SUCCEEDED" for j in result.jobs), name


def test_carbyne_takes_a_leftover_cap_and_other_knobs_are_refused() -> None:
    from rm.core.policies.leftover import LeftoverStage

    w = [job(f"j{i}", 1.0 * i, stage("m", 6, 3.0), stage("r", 1, 2.0, ("m",))) for i in range(4)]
    w = [j.model_copy(update={"am_policy": "carbyne", "altruism_floor": 0.5}) for j in w]
    policy = make_policy("carbyne:1.5")
    assert [s.cap for s in policy.pipeline if isinstance(s, LeftoverStage)] == [1.5]
    result = Simulator(w, uniform_nodes(2, 8192, 4), policy, SimConfig(seed=0)).run()
    assert all(j.status == "SUCCEEDED" for j in result.jobs)
    for bad in ("carbyne:lots", "carbyne:0.5", "drf:2"):
        with pytest.raises(ValueError, match=r"cap|parameter"):
            make_policy(bad)


def test_remaining_path_follows_the_critical_path() -> None:
    j = job("cp", 0.0, stage("a", 2, 1.0), stage("b", 1, 5.0, ("a",)), stage("c", 1, 2.0))
    path = RemainingPath(j, [[1.0, 3.0], [5.0], [2.0]])
    assert path.remaining_s(0.0) == 8.0  # a's longest task, then b
    path.started("a", 0, end=1.0)
    path.started("a", 1, end=3.0)
    assert path.remaining_s(1.0) == 7.0  # 2 s left of a's second task, then b
    path.ended("a", 0, "succeeded")
    path.ended("a", 1, "retry")  # its retry runs 3 s again
    assert path.remaining_s(3.0) == 8.0
    path.started("a", 1, end=6.0)
    path.ended("a", 1, "succeeded")
    assert path.remaining_s(6.0) == 5.0


def _one_decision_per_line(trace: dict[str, list[list[Any]]]) -> str:
    parts = []
    for name, rows in trace.items():
        body = ",\n".join("    " + json.dumps(r) for r in rows)
        parts.append(f'  "{name}": [\n{body}\n  ]')
    return "{\n" + ",\n".join(parts) + "\n}\n"


def test_golden_decision_trace_of_a_small_scenario() -> None:
    """Every placement of a small mixed scenario under each baseline; UPDATE_GOLDEN=1 rewrites the file."""
    w = [job("etl", 0.0, stage("extract", 4, 3.0, memory_mb=2048), stage("load", 1, 2.0, ("extract",))),
         job("adhoc", 1.0, stage("scan", 3, 2.0, vcores=2)),
         job("report", 2.5, stage("q", 2, 1.5), stage("agg", 1, 1.0, ("q",)))]
    trace: dict[str, list[list[Any]]] = {}
    for name in ("fifo", "drf", "tetris", "sjf"):
        sim = Simulator(w, uniform_nodes(2, 4096, 4), make_policy(name), SimConfig(seed=1, record_decisions=True))
        sim.run()
        trace[name] = [list(d) for d in sim.decisions]
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(_one_decision_per_line(trace))
    assert trace == json.loads(GOLDEN.read_text())
