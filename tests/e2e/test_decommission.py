"""`shepherd admin decommission` and `recommission` on a real local cluster: the node's state shows in
`/ws/v1/cluster/nodes` and `shepherd node status`, its NodeManager shuts down and may not register again until
recommissioned, and an app whose AM ran there gets a new attempt elsewhere and finishes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from rm.client import RMClient
from tests.e2e.conftest import sleep_job, submit_job, wait_final, wait_until, write_job
from tests.integration.conftest import closed_port

pytestmark = pytest.mark.slow


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True, timeout=60,
                          check=False)


def node_state(rest: str, node_id: str) -> str:
    return str(httpx.get(f"{rest}/ws/v1/cluster/nodes/{node_id}", timeout=10).json()["node"]["state"])


def test_decommission_shuts_the_node_down_until_it_is_recommissioned(make_cluster: Any) -> None:
    cluster = make_cluster(nodes=2)
    rest, (n0, n1) = cluster.rest_url, cluster.node_ids
    healthy = cli("admin", "check-health", "--rest", rest)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "2 RUNNING node(s)" in healthy.stdout
    down = cli("admin", "check-health", "--rest", f"http://127.0.0.1:{closed_port()}")
    assert down.returncode == 1
    assert "no ResourceManager answers" in down.stderr
    missing = cli("admin", "decommission", "ghost:1", "--rest", rest)
    assert missing.returncode == 2
    assert "ghost:1" in missing.stdout + missing.stderr
    bad = cli("admin", "decommission", n1, "--graceful", "soon", "--rest", rest)
    assert bad.returncode == 2
    assert node_state(rest, n1) == "RUNNING"

    done = cli("admin", "decommission", n1, "--graceful", "10m", "--rest", rest)  # nothing runs there: at once
    assert done.returncode == 0, done.stdout + done.stderr
    assert "DECOMMISSIONED" in done.stdout
    nm1 = cluster.nms[1]
    wait_until(lambda: not nm1.alive(), 20, "the decommissioned NodeManager to shut down")
    status = cli("node", "status", n1, "--rm", cluster.rm_address, "-o", "json")
    assert '"DECOMMISSIONED"' in status.stdout, status.stdout + status.stderr
    assert node_state(rest, n0) == "RUNNING"
    assert cli("admin", "check-health", "--rest", rest).returncode == 0  # taken out on purpose
    cluster.nm_args += ["--port", n1.rsplit(":", 1)[1]]  # started again as the same node
    with pytest.raises(RuntimeError, match="decommissioned"):  # it may not register again
        cluster.start_nm(1)

    back = cli("admin", "recommission", n1, "--rest", rest)
    assert back.returncode == 0, back.stdout + back.stderr
    assert node_state(rest, n1) == "NEW"
    cluster.start_nm(1)
    assert cluster.node_ids[1] == n1
    assert node_state(rest, n1) == "RUNNING"


def test_graceful_decommission_of_an_am_node_moves_the_app_on(make_cluster: Any, tmp_path: Path) -> None:
    cluster = make_cluster(nodes=2)
    rest = cluster.rest_url
    # tasks that outlast the grace period by far, however long the decommission command takes to start here
    app_id = submit_job(cluster, write_job(tmp_path, sleep_job("moved", 15, tasks=2)), tmp_path)

    def am_node() -> str:
        atts = httpx.get(f"{rest}/ws/v1/cluster/apps/{app_id}/appattempts", timeout=10,
                         headers={"Authorization": f"Bearer {cluster.client_secret}"}).json()
        return str(atts["appAttempts"]["appAttempt"][-1]["nodeId"])

    node = wait_until(am_node, 60, "the AM to be placed")
    done = cli("admin", "decommission", node, "--graceful", "3", "--rest", rest)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "DECOMMISSIONING" in done.stdout
    shown = httpx.get(f"{rest}/ws/v1/cluster/nodes?states=DECOMMISSIONING", timeout=10).json()["nodes"]["node"]
    assert [n["id"] for n in shown] == [node]
    assert 0 <= shown[0]["decommissioningTimeout"] <= 3
    wait_until(lambda: node_state(rest, node) == "DECOMMISSIONED", 30, "the node to be decommissioned")
    with RMClient(cluster.rm_address) as client:
        report = wait_final(client, app_id, 180)
    assert report.state == "FINISHED"
    assert report.final_status == "SUCCEEDED"
    assert am_node() != node


def test_a_restarted_rm_keeps_a_decommissioning_node_and_its_deadline(make_cluster: Any, tmp_path: Path) -> None:
    cluster = make_cluster(nodes=2)
    app_id = submit_job(cluster, write_job(tmp_path, sleep_job("held", 60, tasks=1)), tmp_path)

    def am_node() -> str:
        atts = httpx.get(f"{cluster.rest_url}/ws/v1/cluster/apps/{app_id}/appattempts", timeout=10,
                         headers={"Authorization": f"Bearer {cluster.client_secret}"}).json()
        return str(atts["appAttempts"]["appAttempt"][-1]["nodeId"])

    node = wait_until(am_node, 60, "the AM to be placed")
    other = next(n for n in cluster.node_ids if n != node)
    assert cli("admin", "decommission", node, "--graceful", "1h", "--rest", cluster.rest_url).returncode == 0
    assert cli("admin", "decommission", other, "--rest", cluster.rest_url).returncode == 0
    before = httpx.get(f"{cluster.rest_url}/ws/v1/cluster/nodes/{node}", timeout=10).json()["node"]
    cluster.restart_rm()
    rest = cluster.rest_url
    wait_until(lambda: node_state(rest, node) == "DECOMMISSIONING", 60, "the node to re-register, decommissioning")
    after = httpx.get(f"{rest}/ws/v1/cluster/nodes/{node}", timeout=10).json()["node"]
    assert after["decommissionDeadline"] == before["decommissionDeadline"]
    assert node_state(rest, other) == "DECOMMISSIONED"
    with RMClient(cluster.rm_address) as client:
        assert client.app(app_id).state == "RUNNING"  # its AM runs on, on the decommissioning node
