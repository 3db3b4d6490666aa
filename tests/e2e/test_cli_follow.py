"""Following an application from the CLI: `app wait` until it ends, its attempts and its containers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import sleep_job, submit_job, write_job

pytestmark = pytest.mark.slow


def _cli(cluster, *args: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return subprocess.run([sys.executable, "-m", "rm.cli", *args, "--rm", cluster.rm_address], capture_output=True,
                          text=True, timeout=120, check=False)


def test_app_wait_attempts_and_containers(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1)
    app_id = submit_job(cluster, write_job(tmp_path, sleep_job("followed", 1, tasks=2)), tmp_path)
    waited = _cli(cluster, "app", "wait", app_id)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert "FINISHED/SUCCEEDED" in waited.stdout
    attempts = json.loads(_cli(cluster, "app", "attempts", app_id, "-o", "json").stdout)
    assert [a["appAttemptState"] for a in attempts] == ["FINISHED"]
    containers = json.loads(_cli(cluster, "app", "containers", app_id, "-o", "json").stdout)
    assert len(containers) == 3  # the AM and two tasks
    assert {c["state"] for c in containers} == {"COMPLETED"}
    assert sorted(c["exitStatus"] for c in containers if not c["containerId"].endswith("_000001")) == [0, 0]
    assert all(c["logUrl"].startswith("http://") for c in containers)
    missing = _cli(cluster, "app", "wait", "application_1_9999")
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr
