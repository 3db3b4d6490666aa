"""The operator CLI's noun-verb commands against a live cluster: app, node, queue; -o json|yaml; --watch."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from common.credentials import client_secret
from tests.e2e.conftest import wait_until

pytestmark = pytest.mark.slow


def shepherd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True, timeout=60,
                          check=False)


def rest_submit(rest: str, command: str, queue: str = "default") -> str:
    writer = {"Authorization": f"Bearer {client_secret(rest)}"}  # found as the CLI finds it
    app_id = str(httpx.post(f"{rest}/ws/v1/cluster/apps/new-application", headers=writer).json()["application-id"])
    body = {"application-id": app_id, "application-name": "cli", "queue": queue,
            "resource": {"memory": 256, "vCores": 1}, "am-container-spec": {"commands": {"command": command}}}
    assert httpx.post(f"{rest}/ws/v1/cluster/apps", json=body, headers=writer).status_code == 202
    return app_id


def test_app_node_and_queue_commands(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    queues = tmp_path / "queues.yaml"
    queues.write_text(yaml.safe_dump({"default": {"capacity": 60}, "other": {"capacity": 40}}))
    cluster = make_cluster(nodes=1, rm_args=["--queues", str(queues)])
    rm, rest = ["--rm", cluster.rm_address], ["--rest", cluster.rest_url]
    app_id = rest_submit(cluster.rest_url, "sleep 120")
    done = rest_submit(cluster.rest_url, "true")
    wait_until(lambda: httpx.get(f"{cluster.rest_url}/ws/v1/cluster/apps/{done}/state").json()["state"]
               == "FINISHED", 30, "the short app to finish")

    listed = json.loads(shepherd("app", "list", "-o", "json", *rm).stdout)
    assert [a["id"] for a in listed] == [app_id]  # unfinished apps by default, as YARN
    everything = json.loads(shepherd("app", "list", "--all", "-o", "json", *rm).stdout)
    assert {a["id"] for a in everything} == {app_id, done}
    finished = json.loads(shepherd("app", "list", "-s", "finished", "-o", "json", *rm).stdout)
    assert [a["id"] for a in finished] == [done]
    table = shepherd("app", "list", *rm)
    assert app_id in table.stdout
    assert "1 application(s)" in table.stdout

    status = yaml.safe_load(shepherd("app", "status", app_id, "-o", "yaml", *rm).stdout)
    assert status["id"] == app_id
    assert status["appAttempts"][0]["appAttemptId"].startswith("appattempt_")
    assert json.loads(shepherd("app", app_id, "-o", "json", *rm).stdout)["id"] == app_id

    moved = shepherd("app", "move", app_id, "other", *rest)
    assert moved.returncode == 0, moved.stderr
    assert "root.other" in moved.stdout
    assert shepherd("app", "move", app_id, "nowhere", *rest).returncode == 2
    prio = shepherd("app", "priority", app_id, "3", *rest)
    assert "priority 3" in prio.stdout
    life = shepherd("app", "lifetime", app_id, "3600", *rest)
    assert life.returncode == 0, life.stderr
    app = httpx.get(f"{cluster.rest_url}/ws/v1/cluster/apps/{app_id}").json()["app"]
    assert (app["queue"], app["priority"]) == ("root.other", 3)

    nodes = json.loads(shepherd("node", "list", "-o", "json", *rm).stdout)
    node_id = cluster.node_ids[0]
    assert [n["id"] for n in nodes] == [node_id]
    one = yaml.safe_load(shepherd("node", "status", node_id, "-o", "yaml", *rm).stdout)
    assert one["state"] == "RUNNING"
    assert shepherd("node", "status", "nope:1", *rm).returncode == 2
    root = json.loads(shepherd("queue", "status", "-o", "json", *rm).stdout)
    assert sorted(c["path"] for c in root["children"]) == ["root.default", "root.other"]
    other = shepherd("queue", "status", "other", *rm)
    assert "root.other" in other.stdout
    assert "capacity 40%" in other.stdout
    # per-user use: the moved app's user holds its AM's 256 MB in root.other, nothing in root.default
    wait_until(lambda: httpx.get(f"{cluster.rest_url}/ws/v1/cluster/apps/{app_id}").json()["app"]["state"]
               == "RUNNING", 30, "the moved app to run")
    users = json.loads(shepherd("queue", "status", "other", "-o", "json", *rm).stdout)["users"]
    assert [(u["user"], u["appsRunning"], u["appsPending"], u["used"]["memory-mb"]) for u in users] \
        == [(app["user"], 1, 0, 256)]
    assert json.loads(shepherd("queue", "status", "default", "-o", "json", *rm).stdout)["users"] == []
    assert app["user"] in shepherd("queue", "status", *rm).stdout  # root: every user, in the table

    watch = subprocess.Popen([sys.executable, "-m", "rm.cli", "app", "list", "--watch", "--interval", "0.5",
                              "-o", "yaml", *rm], stdout=subprocess.PIPE, text=True)
    assert watch.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "---\n" not in seen:
        seen.append(watch.stdout.readline())
    watch.send_signal(signal.SIGINT)
    assert watch.wait(10) == 0
    assert "---\n" in seen
    assert any(app_id in line for line in seen)

    killed = shepherd("app", "kill", app_id, *rm)
    assert killed.returncode == 0, killed.stderr
    again = shepherd("app", "kill", app_id, done, *rm)
    assert again.returncode == 2
    assert "KILLED" in again.stderr
