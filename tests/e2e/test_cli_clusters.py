"""A named cluster in the user config file ($XDG_CONFIG_HOME/shepherd/config.yaml) is where the CLI goes when no
flag or variable says otherwise: its gRPC address, its REST URL and its credentials file, all three."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import sleep_job, write_job

pytestmark = pytest.mark.slow

UNSET = ("SHEPHERD_RM", "SHEPHERD_REST", "SHEPHERD_CONFIG", "SHEPHERD_CREDENTIALS", "SHEPHERD_CLIENT_SECRET",
         "HADOOP_CONF_DIR", "YARN_CONF_DIR")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_commands_reach_the_current_cluster_of_the_user_config(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1)
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    env["SHEPHERD_HOME"] = str(tmp_path / "empty-home")  # no index: the secret can only come from the config file

    def shepherd(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True, timeout=60,
                              check=False, env=env)

    gone = _closed_port()
    assert shepherd("config", "add-cluster", "gone", "--rm", f"127.0.0.1:{gone}", "--rest",
                    f"http://127.0.0.1:{gone}").returncode == 0
    added = shepherd("config", "add-cluster", "local", "--rm", cluster.rm_address, "--rest", cluster.rest_url,
                     "--credentials", str(cluster.credentials_path), "--use")
    assert added.returncode == 0, added.stderr
    path = tmp_path / "xdg" / "shepherd" / "config.yaml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    # gRPC: no --rm, no $SHEPHERD_RM
    nodes = shepherd("node", "list", "-o", "json")
    assert nodes.returncode == 0, nodes.stderr
    assert [n["id"] for n in json.loads(nodes.stdout)] == cluster.node_ids
    # a write over gRPC: the client secret comes from the cluster's credentials file named in the config
    job = write_job(tmp_path, sleep_job("named", 0.2, 1))
    submitted = shepherd("submit", str(job), "--data-dir", str(tmp_path / "out"))
    assert submitted.returncode == 0, submitted.stderr
    app_id = next(w for w in submitted.stdout.split() if w.startswith("application_"))
    # gRPC and REST from the same cluster: the size estimate comes over REST
    status = shepherd("app", "status", app_id, "-o", "json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["id"] == app_id
    assert "sizeEstimate" in json.loads(status.stdout)
    health = shepherd("admin", "check-health")  # REST only
    assert health.returncode == 0, health.stderr

    # another current cluster (here: down) and the commands follow it; --cluster picks one for a command
    assert shepherd("config", "use-cluster", "gone").returncode == 0
    down = shepherd("node", "list", "-o", "json")
    assert down.returncode == 1
    assert f"127.0.0.1:{gone}" in down.stderr
    picked = shepherd("--cluster", "local", "node", "list", "-o", "json")
    assert picked.returncode == 0, picked.stderr
    assert [n["id"] for n in json.loads(picked.stdout)] == cluster.node_ids
