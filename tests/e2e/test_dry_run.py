"""The dry run against the real thing: a job planned (``POST /ws/v1/shepherd/plan``, ``shepherd job plan``) on a
live 3-node cluster, then submitted; its predicted JCT (predicted finish − plan time) must be within 15% of
its live JCT (finish − submit), on an idle cluster and on one a greedy job fills. A plan changes nothing: the
app count is the same before and after.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from rm.cli import _submit_and_wait
from rm.client import RMClient
from rm.local import LocalCluster
from tests.e2e.conftest import wait_final, wait_until, write_job

pytestmark = [pytest.mark.slow, pytest.mark.long]

NODES, NODE_MEMORY_MB, NODE_VCORES = 3, 4096, 4
TOLERANCE = 0.15
PLAN = "/ws/v1/shepherd/plan"


def _stage(name: str, tasks: int, seconds: float, parents: list[str]) -> dict[str, Any]:
    return {"name": name, "tasks": tasks, "duration_s": seconds, "memory_mb": 256, "vcores": 1, "parents": parents,
            "command": f"sleep {seconds}"}


def _planned(job_id: str) -> dict[str, Any]:
    """The job to plan: three stages of sleep tasks (3-8 s). Its AM asks greedily, as the fidelity test's do:
    an altruistic AM's first asks (DEFAULT for one task, ALTRUISTIC for the rest, until its share is known)
    race live with the NodeManager heartbeats that free the greedy job's containers — which of the two the
    RM hears first decides whether the job gets four containers or one, a 20% swing for this job."""
    return {"id": job_id, "am_policy": "greedy",
            "stages": [_stage("scan", 5, 6, []), _stage("join", 3, 8, ["scan"]), _stage("out", 1, 3, ["join"])]}


GREEDY = {"id": "filler", "am_policy": "greedy", "stages": [_stage("hog", 22, 10, [])]}
"""Holds 11 of the 12 vcores (its AM the twelfth) for two waves of 10 s tasks."""


def _app_count(cluster: LocalCluster) -> int:
    apps = httpx.get(f"{cluster.rest_url}/ws/v1/cluster/apps", timeout=10).json()["apps"]
    return len((apps or {}).get("app", []))


def _plan(cluster: LocalCluster, job: dict[str, Any]) -> dict[str, Any]:
    resp = httpx.post(f"{cluster.rest_url}{PLAN}", json=job, timeout=60,
                      headers={"Authorization": f"Bearer {cluster.client_secret}"})
    assert resp.status_code == 200, resp.text
    plan: dict[str, Any] = resp.json()["plan"]
    return plan


def _submit(cluster: LocalCluster, path: Path, data_dir: Path, name: str) -> str:
    """Submit as ``shepherd submit`` does, in this process (no interpreter start between plan and submit)."""
    code, app_id = _submit_and_wait(cluster.rm_address, path, data_dir, queue=None, env={}, wait=False)
    assert code == 0
    with RMClient(cluster.rm_address) as client:
        assert client.app(app_id).name == name
    return app_id


def _live_jct(cluster: LocalCluster, app_id: str) -> float:
    with RMClient(cluster.rm_address) as client:
        report = wait_final(client, app_id, timeout=180)
    assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED"), report.diagnostics
    return float(report.finish_time_ms - report.submit_time_ms) / 1000.0


def _predicted_jct(plan: dict[str, Any]) -> float:
    assert plan["status"] == "SUCCEEDED", plan
    return float(plan["predictedFinishTime"] - plan["planTime"]) / 1000.0


def _running_containers(cluster: LocalCluster, app_id: str) -> int:
    app = httpx.get(f"{cluster.rest_url}/ws/v1/cluster/apps/{app_id}", timeout=10,  # as a viewer (VIEW_APP)
                    headers={"Authorization": f"Bearer {cluster.client_secret}"}).json()["app"]
    return int(app.get("runningContainers", 0))


def test_predicted_finish_is_within_15_percent_idle_and_behind_a_greedy_job(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=NODES, node_memory_mb=NODE_MEMORY_MB, node_vcores=NODE_VCORES)
    errors: dict[str, tuple[float, float, float]] = {}

    # an idle cluster: the CLI and REST give the same plan, and nothing is submitted
    idle = _planned("plan-idle")
    path = write_job(tmp_path, idle)
    before = _app_count(cluster)
    out = subprocess.run([sys.executable, "-m", "rm.cli", "job", "plan", str(path), "-o", "json", "--rest",
                          cluster.rest_url], capture_output=True, text=True, timeout=120, check=True).stdout
    by_cli = json.loads(out)
    assert by_cli["queue"] == "root.default"
    assert by_cli["amContainer"]["node"]
    assert by_cli["firstStage"]["name"] == "scan"
    assert sum(p["tasks"] for p in by_cli["firstStage"]["placements"]) == 5
    assert by_cli["delays"] == []
    table = subprocess.run([sys.executable, "-m", "rm.cli", "job", "plan", str(path), "--rest", cluster.rest_url],
                           capture_output=True, text=True, timeout=120, check=True).stdout
    assert "predicted finish" in table
    assert "root.default" in table
    plan = _plan(cluster, idle)
    assert _app_count(cluster) == before
    app = _submit(cluster, path, tmp_path, "plan-idle")
    predicted, live = _predicted_jct(plan), _live_jct(cluster, app)
    errors["idle"] = (predicted, live, abs(predicted - live) / live)

    # behind a greedy job that holds 11 of the 12 vcores
    filler = _submit(cluster, write_job(tmp_path, GREEDY), tmp_path, "filler")
    wait_until(lambda: _running_containers(cluster, filler) >= 9, 30, "the greedy job to fill the cluster")
    busy = _planned("plan-busy")
    path = write_job(tmp_path, busy)
    before = _app_count(cluster)
    plan = _plan(cluster, busy)
    assert _app_count(cluster) == before
    app = _submit(cluster, path, tmp_path, "plan-busy")
    predicted, live = _predicted_jct(plan), _live_jct(cluster, app)
    errors["busy"] = (predicted, live, abs(predicted - live) / live)
    assert [d["id"] for d in plan["delays"]] in ([], [filler]), plan["delays"]
    _live_jct(cluster, filler)

    report = "\n".join(f"{k}: predicted {p:.2f}s  live {a:.2f}s  error {e:.1%}" for k, (p, a, e) in errors.items())
    print(report)
    assert max(e for _, _, e in errors.values()) <= TOLERANCE, report
