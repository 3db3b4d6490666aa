"""A real Prometheus server scrapes the ResourceManager and a NodeManager; what it stores matches the
YARN REST metrics."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from common.credentials import client_secret
from rm.local import LocalCluster
from tests.e2e.conftest import wait_until

pytestmark = pytest.mark.slow
MIB = 1024 * 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def prometheus_binary() -> str:
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the prometheus binary is missing (Debian: apt-get install prometheus)")
        pytest.skip("the prometheus binary is not installed (Debian: apt-get install prometheus)")
    return binary


@pytest.fixture
def prometheus(prometheus_binary: str, make_cluster: Any, tmp_path: Path) -> Iterator[tuple[str, LocalCluster]]:
    cluster: LocalCluster = make_cluster(nodes=1, node_memory_mb=4096, node_vcores=4)
    rm_target = cluster.rest_url.removeprefix("http://")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {"job_name": "rm", "static_configs": [{"targets": [rm_target]}]},
            {"job_name": "nm", "static_configs": [{"targets": [cluster.node_http[0]]}]},
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = _free_port()
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [prometheus_binary, f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _ok(f"{base}/-/ready"), 60, "Prometheus to be ready")
        yield base, cluster
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def query(base: str, expr: str) -> list[dict[str, Any]]:
    resp = httpx.get(f"{base}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert resp["status"] == "success", resp
    return list(resp["data"]["result"])


def scalar(base: str, expr: str) -> float | None:
    result = query(base, expr)
    return float(result[0]["value"][1]) if len(result) == 1 else None


def test_prometheus_scrapes_the_rm_and_a_nodemanager(prometheus: tuple[str, LocalCluster]) -> None:
    base, cluster = prometheus
    wait_until(lambda: len(query(base, "up == 1")) == 2, 30, "both targets to be up")
    rest = cluster.rest_url
    writer = {"Authorization": f"Bearer {client_secret(rest)}"}
    new = httpx.post(f"{rest}/ws/v1/cluster/apps/new-application", headers=writer).json()
    app_id = new["application-id"]
    body = {"application-id": app_id, "application-name": "holder", "resource": {"memory": 768, "vCores": 1},
            "am-container-spec": {"commands": {"command": "sleep 120"}}}
    assert httpx.post(f"{rest}/ws/v1/cluster/apps", json=body, headers=writer).status_code == 202

    def allocated_mb() -> int:
        return int(httpx.get(f"{rest}/ws/v1/cluster/metrics").json()["clusterMetrics"]["allocatedMB"])

    wait_until(lambda: allocated_mb() == 768, 30, "the AM container to be allocated")
    wait_until(lambda: scalar(base, 'shepherd_queue_allocated_memory_bytes{job="rm",queue="root"}') == 768 * MIB,
               30, "Prometheus to store the RM's allocated memory")
    by_queue = {r["metric"]["queue"]: float(r["value"][1])
                for r in query(base, 'shepherd_queue_allocated_memory_bytes{job="rm"} / 1048576')}
    assert by_queue == {"root": allocated_mb(), "root.default": allocated_mb()}
    wait_until(lambda: scalar(base, 'shepherd_nodemanager_allocated_memory_bytes{job="nm"}') == 768 * MIB, 30,
               "Prometheus to store the NodeManager's allocated memory")
    assert scalar(base, 'shepherd_nodes{job="rm",state="running"}') == 1
    wait_until(lambda: scalar(base, 'shepherd_queue_apps_running{job="rm",queue="root"}') == 1, 30,
               "the app to count as running")
    assert (scalar(base, 'sum(shepherd_scheduling_cycle_seconds_count{job="rm"})') or 0) > 0
    # the loop-lag probe samples four times a second; an idle RM is never a second late
    assert (scalar(base, 'shepherd_event_loop_lag_seconds_count{job="rm"}') or 0) > 0
    assert scalar(base, 'histogram_quantile(0.99, shepherd_event_loop_lag_seconds_bucket{job="rm"})') < 1.0
    waits = query(base, 'shepherd_queue_wait_seconds_count{job="rm",queue="root.default"}')
    assert waits
    assert float(waits[0]["value"][1]) >= 1
    httpx.put(f"{rest}/ws/v1/cluster/apps/{app_id}/state", json={"state": "KILLED"}, headers=writer)
    wait_until(lambda: scalar(base, 'shepherd_queue_allocated_memory_bytes{job="rm",queue="root"}') == 0, 30,
               "allocated memory to fall back to zero")
    wait_until(lambda: scalar(base, 'shepherd_nodemanager_containers_killed_total{job="nm"}') == 1, 30,
               "the NodeManager to count the killed container")
