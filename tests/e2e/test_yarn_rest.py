"""YARN's REST API on a live cluster: yarn-api-client 1.0.3 drives every P0 call, bad input gets
RemoteExceptions and changes nothing, plain commands run as AMs, and "why is it pending" names the cause."""

from __future__ import annotations

import getpass
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from yarn_api_client import ResourceManager
from yarn_api_client.errors import APIError

from rm.local import LocalCluster
from tests.e2e.conftest import kill_strays, wait_until

pytestmark = pytest.mark.slow

CONFIG = {
    "yarn.scheduler.maximum-allocation-mb": 16384,  # larger than any node: such asks are accepted and wait
    "yarn.scheduler.maximum-allocation-vcores": 8,
    "queues": {
        "default": {"capacity": 50, "maximum-am-resource-percent": 100},
        "limited": {"capacity": 50, "maximum-capacity": 50, "maximum-am-resource-percent": 100},
    },
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    root = tmp_path_factory.mktemp("yarn-rest")
    config = root / "shepherd.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    c = LocalCluster(root / "cluster", allow_root_containers=True,
                     nodes=2, grpc_port=0, rest_port=0, ipc_client_port=0,
                     ipc_scheduler_port=0, node_memory_mb=4096, node_vcores=4, rm_args=["--config", str(config)])
    c.start()
    try:
        yield c
    finally:
        c.stop()
        kill_strays(root)


@pytest.fixture(scope="module")
def yac(cluster: LocalCluster) -> ResourceManager:
    secret = cluster.client_secret

    def bearer(request: Any) -> Any:  # yarn-api-client takes any requests auth: the cluster's client secret
        request.headers["Authorization"] = f"Bearer {secret}"
        return request

    return ResourceManager(service_endpoints=[cluster.rest_url], timeout=30, auth=bearer)


def submit(rm: ResourceManager, command: str, *, memory: int = 256, queue: str = "default",
           **extra: Any) -> str:
    new = rm.cluster_new_application().data
    assert new["maximum-resource-capability"] == {"memory": 16384, "vCores": 8}
    app_id = str(new["application-id"])
    body = {"application-id": app_id, "application-name": f"t-{app_id[-4:]}", "queue": queue,
            "am-container-spec": {"commands": {"command": command}, **extra.pop("spec", {})},
            "resource": {"memory": memory, "vCores": 1}, "max-app-attempts": 1, **extra}
    assert rm.cluster_submit_application(body).data == {}
    return app_id


def state_of(rm: ResourceManager, app_id: str) -> str:
    return str(rm.cluster_application_state(app_id).data["state"])


def test_yarn_api_client_runs_every_p0_call(cluster: LocalCluster, yac: ResourceManager, tmp_path: Path) -> None:
    rm = yac
    info = rm.cluster_information().data["clusterInfo"]
    assert info["haState"] == "ACTIVE"
    metrics = rm.cluster_metrics().data["clusterMetrics"]
    assert (metrics["activeNodes"], metrics["totalMB"]) == (2, 8192)
    assert rm.cluster_scheduler().data["scheduler"]["schedulerInfo"]["type"] == "capacityScheduler"
    limited = rm.cluster_scheduler_queue("limited")
    assert limited is not None
    assert limited["absoluteMaxCapacity"] == 50
    partition = rm.cluster_queue_partition(limited, "")
    assert rm.cluster_scheduler_queue_availability(partition, 90) is True
    nodes = rm.cluster_nodes(states=["RUNNING"]).data["nodes"]["node"]
    assert sorted(n["id"] for n in nodes) == sorted(cluster.node_ids)
    assert rm.cluster_nodes().data["nodes"]["node"]
    assert rm.cluster_node(cluster.node_ids[0]).data["node"]["state"] == "RUNNING"

    data = tmp_path / "data.txt"
    data.write_text("local resource content\n")
    app_id = submit(rm, 'cat data.txt; echo "greeting=$GREETING"; sleep 120', spec={
        "environment": {"entry": [{"key": "GREETING", "value": "hello from the env"}]},
        "local-resources": {"entry": {"key": "data.txt", "value": {
            "resource": f"file://{data}", "type": "FILE", "visibility": "APPLICATION"}}},
    }, **{"application-type": "SCRIPT", "application-tags": {"tag": ["e2e"]}})
    wait_until(lambda: state_of(rm, app_id) == "RUNNING", 30, "the AM command to run")

    def listed(**filters: Any) -> list[str]:
        apps = rm.cluster_applications(**filters).data["apps"]["app"]
        return [a["id"] for a in apps]

    started = rm.cluster_application(app_id).data["app"]["startedTime"]
    assert app_id in listed(states=["RUNNING"])
    assert app_id not in listed(states=["FINISHED"])
    assert app_id in listed(queue="default", user=getpass.getuser(), limit=10, application_types=["script"],
                            application_tags=["E2E"], started_time_begin=started, started_time_end=started)
    assert app_id not in listed(started_time_begin=started + 1)
    app = rm.cluster_application(app_id).data["app"]
    assert (app["state"], app["finalStatus"], app["allocatedMB"]) == ("RUNNING", "UNDEFINED", 256)
    running = rm.cluster_metrics().data["clusterMetrics"]  # the numbers a YARN dashboard reads
    assert running["appsRunning"] >= 1
    assert running["allocatedMB"] >= 256
    assert running["availableMB"] == running["totalMB"] - running["allocatedMB"]
    assert running["activeNodes"] == 2
    attempts = rm.cluster_application_attempts(app_id).data["appAttempts"]["appAttempt"]
    assert len(attempts) == 1
    attempt_id = attempts[0]["appAttemptId"]
    assert rm.cluster_application_attempt_info(app_id, attempt_id).data["appAttempt"]["id"] == 1

    # the command, its environment and its local resource were honoured
    logs_url = f"{attempts[0]['logsLink']}/stdout"
    out = wait_until(lambda: "greeting" in (t := httpx.get(logs_url, timeout=10).text) and t, 20, "AM stdout")
    assert "local resource content" in out
    assert "greeting=hello from the env" in out

    assert rm.cluster_get_application_queue(app_id).data == {"queue": "root.default"}
    assert rm.cluster_change_application_queue(app_id, "limited").data == {"queue": "root.limited"}
    assert rm.cluster_change_application_queue(app_id, "root.default").data == {"queue": "root.default"}
    assert rm.cluster_get_application_priority(app_id).data == {"priority": 0}
    assert rm.cluster_change_application_priority(app_id, 2).data == {"priority": 2}
    timeouts = rm.cluster_application_timeouts(app_id).data["timeouts"]["timeout"]
    assert timeouts[0]["expiryTime"] == "UNLIMITED"
    updated = rm.cluster_update_application_timeout(app_id, "LIFETIME", "2099-06-01T10:00:00.000+0200").data
    assert updated["timeout"]["expiryTime"] == "2099-06-01T08:00:00.000+0000"
    assert rm.cluster_application_timeout(app_id, "LIFETIME").data["timeout"]["remainingTimeInSeconds"] > 0

    # the plain command never registered, and is killable all the same
    assert rm.cluster_application_kill(app_id).data == {"state": "KILLED"}
    app = rm.cluster_application(app_id).data["app"]
    assert (app["state"], app["finalStatus"]) == ("KILLED", "KILLED")
    container = attempts[0]["containerId"]
    node_http = attempts[0]["nodeHttpAddress"]

    def stopped() -> bool:
        # COMPLETE, or already gone: a container of a finished app is forgotten once the RM has its status
        resp = httpx.get(f"http://{node_http}/ws/v1/node/containers/{container}", timeout=10)
        return resp.status_code == 404 or resp.json()["container"]["state"] == "COMPLETE"

    wait_until(stopped, 30, "the AM process to be stopped")
    wait_until(lambda: rm.cluster_metrics().data["clusterMetrics"]["allocatedMB"] == 0, 10, "memory back")


def test_a_command_that_exits_zero_finishes_and_one_that_fails_fails(yac: ResourceManager) -> None:
    ok = submit(yac, "echo done")
    bad = submit(yac, "exit 3")
    wait_until(lambda: state_of(yac, ok) == "FINISHED", 30, "the command to finish")
    wait_until(lambda: state_of(yac, bad) == "FAILED", 30, "the command to fail")
    assert yac.cluster_application(ok).data["app"]["finalStatus"] == "SUCCEEDED"
    failed = yac.cluster_application(bad).data["app"]
    assert failed["finalStatus"] == "FAILED"
    assert "exitCode: 3" in failed["diagnostics"]


def _snapshot(base: str) -> Any:
    apps = httpx.get(f"{base}/ws/v1/cluster/apps").json()["apps"]["app"]
    metrics = httpx.get(f"{base}/ws/v1/cluster/metrics").json()["clusterMetrics"]
    return ([(a["id"], a["state"], a["finalStatus"], a["queue"], a["priority"]) for a in apps],
            {k: v for k, v in metrics.items() if k.startswith("apps")})


def _remote(resp: httpx.Response, status: int) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = resp.json()["RemoteException"]
    assert {"exception", "message", "javaClassName"} <= set(body)
    return body


def test_bad_requests_get_remote_exceptions_and_change_nothing(cluster: LocalCluster,
                                                               yac: ResourceManager) -> None:
    base = cluster.rest_url
    done = submit(yac, "true")
    wait_until(lambda: state_of(yac, done) == "FINISHED", 30, "the app to finish")
    before = _snapshot(base)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {cluster.client_secret}"}
    body = _remote(httpx.post(f"{base}/ws/v1/cluster/apps", content=b'{"application-id": ', headers=headers),
                   400)
    assert body["exception"] == "BadRequestException"
    assert _remote(httpx.get(f"{base}/ws/v1/cluster/apps/application_1_9999"), 404)["exception"] == \
        "NotFoundException"
    assert "Invalid application-state" in _remote(httpx.get(f"{base}/ws/v1/cluster/apps?states=RUNING"),
                                                  400)["message"]
    # killing an app that has ended is answered with its state and changes nothing, as YARN does
    killed = httpx.put(f"{base}/ws/v1/cluster/apps/{done}/state", json={"state": "KILLED"}, headers=headers)
    assert (killed.status_code, killed.json()) == (200, {"state": "FINISHED"})
    assert yac.cluster_application_kill(done).data == {"state": "FINISHED"}
    with pytest.raises(APIError, match="status: 400"):
        yac.cluster_submit_application({"application-id": "nope"})
    with pytest.raises(APIError, match="status: 404"):
        yac.cluster_application("application_1_9999")
    assert _snapshot(base) == before
    assert yac.cluster_application(done).data["app"]["finalStatus"] == "SUCCEEDED"


def shepherd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True, timeout=60,
                          check=False)


def test_explain_names_the_cause_and_the_numbers(cluster: LocalCluster, yac: ResourceManager) -> None:
    base = cluster.rest_url
    viewer = {"Authorization": f"Bearer {cluster.client_secret}"}  # an app's details are its viewers' (VIEW_APP)
    huge = submit(yac, "sleep 300", memory=12288)
    holder = submit(yac, "sleep 300", memory=3072, queue="limited")
    wait_until(lambda: state_of(yac, holder) == "RUNNING", 30, "the first app of the limited queue")
    held = submit(yac, "sleep 300", memory=2048, queue="limited")

    def explanation(app_id: str, code: str) -> Any:
        def get() -> Any:
            e = httpx.get(f"{base}/ws/v1/shepherd/apps/{app_id}/explain", headers=viewer).json()["explanation"]
            return e if e["reason"] == code else None
        return wait_until(get, 20, f"{app_id} to wait with {code}")

    e = explanation(huge, "ASK_EXCEEDS_EVERY_NODE")
    assert e["numbers"]["ask"] == {"memory-mb": 12288, "vcores": 1}
    assert e["numbers"]["largest_node"]["memory-mb"] == 4096
    assert e["numbers"]["node"] in cluster.node_ids
    assert "12288" in e["message"]
    assert "4096" in e["message"]
    app = yac.cluster_application(huge).data["app"]
    assert app["state"] == "ACCEPTED"
    assert app["diagnostics"].startswith("[ASK_EXCEEDS_EVERY_NODE]")

    e = explanation(held, "QUEUE_AT_MAX_CAPACITY")
    assert e["queue"] == "root.limited"
    assert e["numbers"]["used"]["memory-mb"] == 3072
    assert e["numbers"]["max"]["memory-mb"] == 4096
    assert e["numbers"]["ask"]["memory-mb"] == 2048
    assert e["positionInQueue"] == 1
    assert yac.cluster_application(held).data["app"]["diagnostics"].startswith("[QUEUE_AT_MAX_CAPACITY]")

    cli = shepherd("app", "explain", held, "--rest", base, "-o", "json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["reason"] == "QUEUE_AT_MAX_CAPACITY"
    table = shepherd("app", "explain", huge, "--rest", base)
    assert "ASK_EXCEEDS_EVERY_NODE" in table.stdout
    status = shepherd("app", huge, "--rm", cluster.rm_address, "-o", "json")
    assert json.loads(status.stdout)["diagnostics"].startswith("[ASK_EXCEEDS_EVERY_NODE]")
    for app_id in (huge, holder, held):
        yac.cluster_application_kill(app_id)
