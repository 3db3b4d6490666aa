"""Newcomer journeys (docs/journeys.md) on one small live cluster, for the pass conditions the other end-to-end
tests leave out: a DAG whose task fails ends `submit --wait` with exit 1 naming its stage; Ctrl-C detaches
`submit --wait` and says how to re-attach; `logs APP` after the end has every container's logs and
`--file stderr` filters them; `app kill` stops every container within seconds and the allocated memory returns
to what it was; `app list -o json` has the REST object's core fields, names and values; piped output carries
no colour codes; a job that fits no node waits, and `app status`, `app explain`, the REST diagnostics and the
UI's app page give the same reason code, with its place in its queue."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from rm.client import RMClient
from rm.local import LocalCluster
from tests.e2e.conftest import sleep_job, wait_final, wait_until, write_job

pytestmark = pytest.mark.slow

ANSI = re.compile(r"\x1b\[")


def shepherd(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def allocated_mb(cluster: LocalCluster) -> int:
    return int(httpx.get(f"{cluster.rest_url}/ws/v1/cluster/metrics", timeout=10)
               .json()["clusterMetrics"]["allocatedMB"])


def test_failure_detach_logs_kill_and_scriptable_output(make_cluster: Any, tmp_path: Path) -> None:
    cluster = make_cluster(nodes=1)
    rm = ["--rm", cluster.rm_address]

    # a task that fails: exit 1, and the failed stage named
    failing = {"id": "breaks", "stages": [
        {"name": "extract", "tasks": 1, "memory_mb": 128, "command": "echo extracted; echo noted >&2"},
        {"name": "load", "tasks": 1, "memory_mb": 128, "parents": ["extract"], "max_attempts": 1,
         "command": "echo loading; exit 3"}]}
    run = shepherd("submit", str(write_job(tmp_path, failing)), "--wait", "--data-dir", str(tmp_path), *rm)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FINISHED/FAILED" in run.stdout or "FAILED/FAILED" in run.stdout, run.stdout
    assert "stage 'load'" in run.stdout, run.stdout
    assert not ANSI.search(run.stdout + run.stderr)  # piped: no colour codes
    failed_id = re.search(r"(application_\d+_\d+)", run.stdout)
    assert failed_id
    app_id = failed_id.group(1)

    # after the end, every container's logs; --file stderr keeps stderr only
    with RMClient(cluster.rm_address) as client:
        containers = [c.container_id for c in client.containers(app_id)]
    assert len(containers) == 3  # the AM, extract's task, load's task
    every = shepherd("logs", app_id, *rm)
    assert every.returncode == 0, every.stderr
    for cid in containers:
        assert cid in every.stdout, (cid, every.stdout[-2000:])
    assert "extracted" in every.stdout
    assert "loading" in every.stdout
    errs = shepherd("logs", app_id, "--file", "stderr", *rm)
    assert errs.returncode == 0, errs.stderr
    assert "noted" in errs.stdout
    assert "extracted" not in errs.stdout
    assert "loading" not in errs.stdout

    # the app list in JSON carries the REST object's fields; the table, piped, no colour codes
    listed = json.loads(shepherd("app", "list", "--all", "-o", "json", *rm).stdout)
    rest = httpx.get(f"{cluster.rest_url}/ws/v1/cluster/apps/{app_id}", timeout=10,
                     headers={"Authorization": f"Bearer {cluster.client_secret}"}).json()["app"]
    [mine] = [a for a in listed if a["id"] == app_id]
    # the REST object itself: the same fields, with the same values (the app has ended: nothing moves)
    assert set(mine) == set(rest), set(mine) ^ set(rest)
    assert mine == rest
    assert {"resourceRequests", "amContainerLogs", "clusterId", "queueUsagePercentage", "trackingUI"} <= set(mine)
    status = json.loads(shepherd("app", "status", app_id, "-o", "json", *rm).stdout)
    assert {k: v for k, v in status.items() if k in rest} == rest
    for command in (["app", "list", "--all"], ["app", "status", app_id], ["node", "list"], ["queue", "status"]):
        out = shepherd(*command, *rm)
        assert out.returncode == 0, (command, out.stderr)
        assert not ANSI.search(out.stdout), command

    # Ctrl-C detaches `submit --wait` and says how to follow the app again; the app runs on
    before = allocated_mb(cluster)
    long = sleep_job("long", 60, tasks=2)
    waiting = subprocess.Popen([sys.executable, "-m", "rm.cli", "submit", str(write_job(tmp_path, long)), "--wait",
                                "--data-dir", str(tmp_path), *rm], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        assert waiting.stdout is not None
        first = waiting.stdout.readline()
        found = re.search(r"(application_\d+_\d+)", first)
        assert found, first
        long_id = found.group(1)
        with RMClient(cluster.rm_address) as client:
            wait_until(lambda: sum(c.state == "RUNNING" for c in client.containers(long_id)) == 3, 30,
                       "the AM and both tasks to run")
            waiting.send_signal(signal.SIGINT)
            _, err = waiting.communicate(timeout=30)
            assert waiting.returncode == 130, err
            assert f"{long_id} keeps running" in err
            assert f"shepherd app attach {long_id}" in err
            assert client.app(long_id).state == "RUNNING"
            assert allocated_mb(cluster) > before

            # `app kill`: every container stops within seconds, KILLED/KILLED, the memory is given back
            killed = shepherd("app", "kill", long_id, *rm)
            assert killed.returncode == 0, killed.stderr
            report = wait_final(client, long_id, timeout=10)
            assert (report.state, report.final_status) == ("KILLED", "KILLED")
            wait_until(lambda: all(c.state == "COMPLETED" for c in client.containers(long_id)), 5,
                       "every container of the killed app to stop")
            wait_until(lambda: allocated_mb(cluster) == before, 5, "the allocated memory to return")
            again = shepherd("app", "kill", long_id, *rm)
            assert again.returncode != 0
            assert "already finished" in again.stderr
    finally:
        if waiting.poll() is None:
            waiting.kill()


def test_a_job_that_fits_no_node_gives_one_reason_everywhere(make_cluster: Any, tmp_path: Path) -> None:
    config = tmp_path / "rm.yaml"  # asks larger than any node are accepted, and wait
    config.write_text(yaml.safe_dump({"yarn.scheduler.maximum-allocation-mb": 16384,
                                      "queues": {"default": {"capacity": 100, "maximum-am-resource-percent": 100}}}))
    cluster = make_cluster(nodes=1, node_memory_mb=2048, rm_args=["--config", str(config)])
    rest = cluster.rest_url
    writer = {"Authorization": f"Bearer {cluster.client_secret}"}
    app_id = httpx.post(f"{rest}/ws/v1/cluster/apps/new-application", headers=writer).json()["application-id"]
    body = {"application-id": app_id, "application-name": "too-big", "resource": {"memory": 8192, "vCores": 1},
            "am-container-spec": {"commands": {"command": "sleep 60"}}}
    assert httpx.post(f"{rest}/ws/v1/cluster/apps", json=body, headers=writer).status_code == 202

    def explained() -> dict[str, Any] | None:
        e: dict[str, Any] = httpx.get(f"{rest}/ws/v1/shepherd/apps/{app_id}/explain",
                                      headers=writer).json()["explanation"]
        return e if e["reason"] == "ASK_EXCEEDS_EVERY_NODE" else None

    e = wait_until(explained, 20, "the app to wait for a node large enough")
    assert e["numbers"]["ask"]["memory-mb"] == 8192
    assert e["numbers"]["largest_node"]["memory-mb"] == 2048
    app = httpx.get(f"{rest}/ws/v1/cluster/apps/{app_id}", headers=writer).json()["app"]
    assert app["state"] == "ACCEPTED"
    assert app["diagnostics"].startswith("[ASK_EXCEEDS_EVERY_NODE]")
    page = httpx.get(f"{rest}/ui/apps/{app_id}", headers=writer).text  # as its owner: the page says why it waits
    assert '<code class="reason" id="reason">ASK_EXCEEDS_EVERY_NODE</code>' in page
    assert "8192" in page
    assert re.search(r"position 1 of 1 waiting in root\.default", page)

    status = shepherd("app", "status", app_id, "--rm", cluster.rm_address, "--rest", rest)
    assert status.returncode == 0, status.stderr
    flat = " ".join(status.stdout.replace("│", " ").split())
    assert "waiting [ASK_EXCEEDS_EVERY_NODE] position 1 of 1 waiting in root.default" in flat, status.stdout
    as_json = json.loads(shepherd("app", "status", app_id, "-o", "json", "--rm", cluster.rm_address,
                                  "--rest", rest).stdout)
    assert as_json["explanation"]["reason"] == "ASK_EXCEEDS_EVERY_NODE"
    assert as_json["explanation"]["positionInQueue"] == 1
    told = shepherd("app", "explain", app_id, "--rest", rest)
    assert "ASK_EXCEEDS_EVERY_NODE" in told.stdout
    assert "position 1 of 1" in " ".join(told.stdout.split())
    httpx.put(f"{rest}/ws/v1/cluster/apps/{app_id}/state", json={"state": "KILLED"}, headers=writer)
