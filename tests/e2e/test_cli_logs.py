"""`shepherd logs` on a real cluster: --tail, --file, and YARN's -applicationId / -log_files / -containerId."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rm.client import RMClient
from tests.e2e.conftest import sleep_job, submit_job, wait_final, write_job

pytestmark = pytest.mark.slow


def logs(cluster: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", "logs", *args, "--rm", cluster.rm_address],
                          capture_output=True, text=True, timeout=60, check=False)


def test_logs_tail_files_and_yarn_spellings(make_cluster: Any, tmp_path: Path) -> None:
    cluster = make_cluster(nodes=1)
    job = sleep_job("talky", 1, tasks=1)
    job["stages"][0]["command"] = "for i in 1 2 3 4 5; do echo line-$i; done; echo oops-{task} >&2"
    app_id = submit_job(cluster, write_job(tmp_path, job), tmp_path)
    with RMClient(cluster.rm_address) as client:
        assert wait_final(client, app_id).final_status == "SUCCEEDED"
        (task,) = [c.container_id for c in client.containers(app_id) if not c.container_id.endswith("_000001")]

    everything = logs(cluster, app_id, "-c", task)
    assert everything.returncode == 0, everything.stderr
    assert [ln for ln in everything.stdout.splitlines() if ln.startswith("line-")] == [f"line-{i}" for i in range(1, 6)]

    tailed = logs(cluster, app_id, "-c", task, "--tail", "2")
    assert tailed.returncode == 0, tailed.stderr
    assert [ln for ln in tailed.stdout.splitlines() if ln.startswith("line-")] == ["line-4", "line-5"]
    assert f"{task} on " in tailed.stdout  # its heading

    yarn = logs(cluster, "-applicationId", app_id, "-containerId", task, "-log_files", "stderr")
    assert yarn.returncode == 0, yarn.stderr
    assert "oops-0" in yarn.stdout
    assert "line-" not in yarn.stdout
    assert "(stderr)" in yarn.stdout

    both = logs(cluster, "-applicationId", app_id, "-containerId", task, "-log_files", "ALL", "-n", "1")
    assert [ln for ln in both.stdout.splitlines() if ln.startswith(("line-", "oops-"))] == ["line-5", "oops-0"]

    missing = logs(cluster, "-applicationId", "application_1_0042")
    assert missing.returncode == 2
    assert "doesn't exist" in missing.stderr
