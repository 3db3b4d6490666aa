"""`shepherd down` stops a cluster `shepherd up` runs in the background: up's own pid file names the processes,
each is signalled and waited for, and nothing of the cluster is left running."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from rm.client import RMClient
from rm.local import host_cores, local_share
from tests.e2e.conftest import wait_until

pytestmark = pytest.mark.slow


def start_up(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    data = tmp_path / "c"
    log = (tmp_path / "up.log").open("wb")
    up = subprocess.Popen([sys.executable, "-m", "rm.cli", "up", "--nodes", "2", "--grpc-port", "0", "--rest-port",
                           "0", "--ipc-client-port", "0", "--ipc-scheduler-port", "0", "--data-dir", str(data),
                           "--allow-root-containers"],
                          stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tmp_path)
    wait_until(lambda: "cluster ready" in (tmp_path / "up.log").read_text() or up.poll() is not None, 120,
               "shepherd up to be ready")
    assert up.poll() is None, (tmp_path / "up.log").read_text()
    return up, data


def down(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", "down", *args], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path)


def recorded(data: Path) -> dict[str, int]:
    return {p["role"]: p["pid"] for p in json.loads((data / "up.json").read_text())["processes"]}


def test_down_stops_a_cluster_up_runs_in_the_background(tmp_path: Path) -> None:
    up, data = start_up(tmp_path)
    try:
        pids = recorded(data)
        assert set(pids) == {"up", "rm", "nm0", "nm1"}
        assert pids["up"] == up.pid
        rm = re.search(r"cluster ready rm=(\S+)", (tmp_path / "up.log").read_text())
        assert rm
        listed = subprocess.run([sys.executable, "-m", "rm.cli", "node", "list", "-o", "json", "--rm", rm.group(1)],
                                capture_output=True, text=True, timeout=60, check=True).stdout
        nodes_seen = json.loads(listed)
        assert [n["state"] for n in nodes_seen] == ["RUNNING", "RUNNING"]
        # the two split the host (its memory less the reserve, at most 4096 MB each, and its cores): together
        # they never claim more than the machine
        memory, vcores = local_share(2)
        assert [n["totalResource"]["memory"] for n in nodes_seen] == [memory, memory]
        assert [n["totalResource"]["vCores"] for n in nodes_seen] == [vcores, vcores]
        assert 2 * memory <= psutil.virtual_memory().total // 2**20
        assert 2 * vcores <= max(2, host_cores())
        done = down(tmp_path, "--data-dir", "c")  # relative, as given to `up`
        assert done.returncode == 0, done.stdout + done.stderr
        assert "stopped the local cluster" in done.stdout
        assert up.wait(10) == 0
        assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                       for pid in pids.values())
        assert not (data / "up.json").exists()
        said = (tmp_path / "up.log").read_text()
        assert "stopped the cluster" in said
        ready = re.search(r"cluster ready rm=127\.0\.0\.1:(\d+) rest=http://127\.0\.0\.1:(\d+)", said)
        assert ready, said
        nodes = re.findall(r"NodeManager\s+127\.0\.0\.1:(\d+)", said)
        assert len(nodes) == 2, said
        for port in (*ready.groups(), *nodes):
            with socket.socket() as sock:  # nothing listens on the cluster's ports any more
                assert sock.connect_ex(("127.0.0.1", int(port))) != 0, port
        again = down(tmp_path, "--data-dir", str(data))
        assert again.returncode == 0
        assert "nothing to stop" in again.stdout
    finally:
        if up.poll() is None:
            up.kill()


def test_down_stops_the_daemons_of_an_up_that_was_killed(tmp_path: Path) -> None:
    up, data = start_up(tmp_path)
    pids = recorded(data)
    up.send_signal(signal.SIGKILL)  # its daemons run on (their own sessions)
    up.wait(10)
    daemons = [psutil.Process(pids[role]) for role in ("rm", "nm0", "nm1")]
    try:
        assert all(p.is_running() for p in daemons)
        done = down(tmp_path, "--data-dir", str(data))
        assert done.returncode == 0, done.stdout + done.stderr
        for p in daemons:
            assert not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
        assert not (data / "up.json").exists()
    finally:
        for p in daemons:
            if p.is_running():
                p.kill()


def test_a_lone_nodemanager_offers_the_detected_host_less_the_reserve(make_cluster: Any) -> None:
    """A NodeManager started without --memory-mb or --vcores, alone on its host, offers what it detects: the
    host's memory less its 1 GB reserve, and every core."""
    cluster = make_cluster(nodes=1, node_memory_mb=None, node_vcores=None)
    with RMClient(cluster.rm_address) as client:
        (node,) = client.nodes()
    offered = {k: int(v) for k, v in node.capability.values.items()}
    assert offered["memory-mb"] == max(512, psutil.virtual_memory().total // 2**20 - 1024)
    assert offered["vcores"] == psutil.cpu_count()
