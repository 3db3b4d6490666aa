"""Fidelity: the same small DAG workload run live on a local cluster and in the simulator.

The simulator replays the live submit times and models the live latencies (AM start-up, 0.5 s AM allocate
interval, 1 s NodeManager heartbeats, container launch); its per-job JCTs, averaged over a few seeds (the
heartbeat phases are random live too), must be within 15% of the live ones.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from am.jobspec import Job, parse_job
from rm.client import RMClient
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.policies import make_policy
from tests.e2e.conftest import submit_job, wait_final, write_job

pytestmark = [pytest.mark.slow, pytest.mark.long]

NODES, NODE_MEMORY_MB, NODE_VCORES = 2, 4096, 4
TOLERANCE = 0.15
SEEDS = range(5)


def _stage(name: str, tasks: int, seconds: float, parents: list[str], memory_mb: int = 256) -> dict[str, Any]:
    return {"name": name, "tasks": tasks, "duration_s": seconds, "memory_mb": memory_mb, "vcores": 1,
            "parents": parents, "command": f"sleep {seconds}"}


# (offset of the submission in seconds, job): they overlap, and for a while want more than the 8 vcores
WORKLOAD: list[tuple[float, dict[str, Any]]] = [
    (0.0, {"id": "fid-a", "stages": [_stage("scan", 3, 4, []), _stage("agg", 2, 3, ["scan"])]}),
    (1.5, {"id": "fid-b", "stages": [_stage("scan", 2, 5, []), _stage("agg", 1, 2, ["scan"])]}),
    (3.0, {"id": "fid-c", "stages": [_stage("m", 2, 4, []), _stage("r", 1, 4, ["m"]), _stage("out", 1, 3, ["r"])]}),
    (6.0, {"id": "fid-d", "stages": [_stage("only", 3, 6, [], memory_mb=512)]}),
]


def _with_greedy_asks(job: dict[str, Any]) -> dict[str, Any]:
    """Pin the AM's ask policy when the job format can name one, so live and simulated AMs agree."""
    return {**job, "am_policy": "greedy"} if "am_policy" in Job.model_fields else job


def simulate(arrivals: dict[str, float]) -> dict[str, float]:
    jobs = []
    for _, spec in WORKLOAD:
        data = _with_greedy_asks(spec)
        jobs.append(parse_job({**data, "arrival_s": arrivals[spec["id"]]}))
    jobs.sort(key=lambda j: j.arrival_s)
    totals: dict[str, float] = {}
    for seed in SEEDS:
        result = Simulator(jobs, uniform_nodes(NODES, NODE_MEMORY_MB, NODE_VCORES), make_policy("drf"),
                           SimConfig(seed=seed)).run()
        for job_id, jct in result.jcts().items():
            totals[job_id] = totals.get(job_id, 0.0) + jct
    return {job_id: total / len(SEEDS) for job_id, total in totals.items()}


def test_simulated_jcts_are_within_15_percent_of_a_live_run(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=NODES, node_memory_mb=NODE_MEMORY_MB, node_vcores=NODE_VCORES)
    paths = {spec["id"]: write_job(tmp_path, _with_greedy_asks(spec)) for _, spec in WORKLOAD}
    start = time.monotonic()
    apps: dict[str, str] = {}
    for offset, spec in WORKLOAD:
        delay = offset - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)
        apps[spec["id"]] = submit_job(cluster, paths[spec["id"]], tmp_path)
    live: dict[str, float] = {}
    submitted: dict[str, float] = {}
    with RMClient(cluster.rm_address) as client:
        for job_id, app in apps.items():
            report = wait_final(client, app, timeout=240)
            assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED"), report.diagnostics
            submitted[job_id] = report.submit_time_ms / 1000.0
            live[job_id] = (report.finish_time_ms - report.submit_time_ms) / 1000.0
    first = min(submitted.values())
    simulated = simulate({j: t - first for j, t in submitted.items()})
    errors = {j: abs(simulated[j] - live[j]) / live[j] for j in live}
    table = "\n".join(f"{j}: live {live[j]:.2f}s  simulated {simulated[j]:.2f}s  error {errors[j]:.1%}"
                      for j in sorted(live))
    print(table)
    assert max(errors.values()) <= TOLERANCE, table
