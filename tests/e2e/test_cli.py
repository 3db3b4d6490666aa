"""The shepherd CLI's read and write commands against a live cluster; garbage on the wire."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import grpc
import httpx
import pytest
import yaml

from rm.client import RMClient
from tests.e2e.conftest import ROOT, sleep_job, submit_job, wait_until, write_job

pytestmark = pytest.mark.slow


def shepherd(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_cli_runs_the_tpch_example_and_reads_the_cluster(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=2)
    rm = ["--rm", cluster.rm_address]
    out = tmp_path / "tpch-out"
    started = time.monotonic()
    run = shepherd("submit", str(ROOT / "examples" / "tpch-q5.yaml"), "--wait", "--env", f"OUTPUT_DIR={out}", *rm)
    took = time.monotonic() - started
    assert run.returncode == 0, run.stdout + run.stderr
    assert took < 60, took
    assert json.loads((out / "tpch-q5.json").read_text())

    apps = json.loads(shepherd("apps", "-o", "json", *rm).stdout)
    assert len(apps) == 1
    app_id = apps[0]["id"]  # the REST API's app object
    assert apps[0]["state"] == "FINISHED"
    assert apps[0]["finalStatus"] == "SUCCEEDED"
    one = json.loads(shepherd("app", app_id, "-o", "json", *rm).stdout)
    assert one["id"] == app_id
    assert one["appAttempts"][0]["appAttemptState"] in ("FINISHED", "FINISHING")
    nodes = json.loads(shepherd("nodes", "-o", "json", *rm).stdout)
    assert sorted(n["id"] for n in nodes) == sorted(cluster.node_ids)
    assert all(n["state"] == "RUNNING" for n in nodes)
    table = shepherd("apps", *rm)
    assert app_id in table.stdout
    # the job's stages (submit --wait's per-stage lines): in the report and over REST, every one done
    job = yaml.safe_load((ROOT / "examples" / "tpch-q5.yaml").read_text())
    with RMClient(cluster.rm_address) as client:
        stages = client.app(app_id).stages
    assert [(s.name, s.tasks, s.done, s.state) for s in stages] == [
        (st["name"], st.get("tasks", 1), st.get("tasks", 1), "SUCCEEDED") for st in job["stages"]]
    rest = httpx.get(f"{cluster.rest_url}/ws/v1/shepherd/apps/{app_id}/stages", timeout=10,
                     headers={"Authorization": f"Bearer {cluster.client_secret}"}).json()
    assert [(s["name"], s["done"], s["state"]) for s in rest["stages"]["stage"]] == [
        (s.name, s.done, s.state) for s in stages]
    assert httpx.get(f"{cluster.rest_url}/ws/v1/shepherd/apps/application_1_0042/stages", timeout=10
                     ).status_code == 404

    logs = shepherd("logs", app_id, *rm)
    assert logs.returncode == 0
    assert "registered" in logs.stdout  # the AM's own log

    missing = shepherd("app", "application_1_0042", *rm)
    assert missing.returncode == 2
    assert "doesn't exist" in missing.stderr


def test_cli_kill_and_follow_logs(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1)
    rm = ["--rm", cluster.rm_address]
    job = sleep_job("chatty", 60, tasks=1)
    job["stages"][0]["command"] = "echo tick-{task}; sleep 60"
    app_id = submit_job(cluster, write_job(tmp_path, job), tmp_path)
    with RMClient(cluster.rm_address) as client:
        wait_until(lambda: sum(c.state == "RUNNING" for c in client.containers(app_id)) == 2, 30, "the task")
        follow = subprocess.Popen([sys.executable, "-m", "rm.cli", "logs", app_id, "--follow", *rm],
                                  stdout=subprocess.PIPE, text=True)
        wait_until(lambda: client.app(app_id).state == "RUNNING", 10, "running")
        killed = shepherd("kill", app_id, *rm)
        assert killed.returncode == 0, killed.stderr
        text, _ = follow.communicate(timeout=30)
        assert "tick-0" in text
        assert client.app(app_id).state == "KILLED"
        again = shepherd("kill", app_id, *rm)
        assert again.returncode == 2  # killing a finished app is refused
        assert "KILLED" in again.stderr


def test_garbage_on_the_wire_is_refused_and_the_rm_keeps_serving(make_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1)
    with grpc.insecure_channel(cluster.rm_address) as ch:
        for method in ("/shepherd.v1.ResourceTracker/NodeHeartbeat",
                       "/shepherd.v1.ApplicationMaster/Allocate",
                       "/shepherd.v1.ApplicationClient/SubmitApplication"):
            call = ch.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
            with pytest.raises(grpc.RpcError) as err:
                call(b"\xff\xfe\x00garbage\x12\x99", timeout=10)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "malformed request" in (err.value.details() or "")
    with grpc.insecure_channel(cluster.node_ids[0]) as ch:
        call = ch.unary_unary("/shepherd.v1.ContainerManager/StartContainers", request_serializer=lambda b: b,
                              response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as err:
            call(b"\x0a\xff\xff\xff", timeout=10)
        assert err.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED)
    with RMClient(cluster.rm_address) as client:
        assert client.apps() == []
        assert client.metrics().active_nodes == 1
