"""Hot reload of the queue tree: editing the queues file and `shepherd admin refresh-queues` (or SIGHUP) changes
the queues without a restart; an invalid edit, or one that strands running apps, is refused naming the queue,
and the old queues stay in force."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import sleep_job, submit_job, wait_until, write_job

pytestmark = pytest.mark.slow


def _capacities(rest: str) -> dict[str, float]:
    info = httpx.get(f"{rest}/ws/v1/cluster/scheduler", timeout=10).json()["scheduler"]["schedulerInfo"]
    out: dict[str, float] = {}

    def walk(queues: Any) -> None:
        for q in (queues or {}).get("queue", []):
            out[q["queueName"]] = q["capacity"]
            walk(q.get("queues"))

    walk(info.get("queues"))
    return out


def _refresh(cluster: Any, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", "admin", "refresh-queues", *flags, "--rest",
                           cluster.rest_url],
                          capture_output=True, text=True, timeout=60, check=False)


def _queue_status(cluster: Any, queue: str) -> str:
    shown = subprocess.run([sys.executable, "-m", "rm.cli", "queue", "status", queue, "--rm", cluster.rm_address],
                           capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0, shown.stderr
    return " ".join(shown.stdout.split())


def test_queues_are_refreshed_live_and_a_bad_edit_keeps_the_old_ones(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    queues = tmp_path / "queues.yaml"
    queues.write_text("a: {capacity: 50}\nb: {capacity: 50}\n")
    cluster = make_cluster(nodes=1, rm_args=["--queues", str(queues)])
    assert _capacities(cluster.rest_url)["a"] == 50
    job = sleep_job("held", 60, tasks=1)
    job["queue"] = "a"
    submit_job(cluster, write_job(tmp_path, job), tmp_path)

    queues.write_text("a: {capacity: 70}\nb: {capacity: 30}\n")
    checked = _refresh(cluster, "--dry-run")  # validated by the running RM, nothing applied
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "valid" in checked.stdout
    assert "root.a" in checked.stdout
    assert _capacities(cluster.rest_url)["a"] == 50
    done = _refresh(cluster)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "root.a" in done.stdout
    assert _capacities(cluster.rest_url) == {"a": 70, "b": 30}
    assert "capacity 70%" in _queue_status(cluster, "a")  # `shepherd queue status` follows, no restart

    queues.write_text("b: {capacity: 100}\n")  # a still holds a running app
    checked = _refresh(cluster, "--dry-run")
    assert checked.returncode == 2
    assert "root.a" in checked.stdout + checked.stderr
    refused = _refresh(cluster)
    assert refused.returncode == 2
    assert "root.a" in refused.stdout + refused.stderr
    assert "not changed" in refused.stdout + refused.stderr
    queues.write_text("a: {capacity: 70}\nb: {capacity: 70}\n")  # more than 100 % among siblings
    refused = _refresh(cluster)
    assert refused.returncode == 2
    assert _capacities(cluster.rest_url) == {"a": 70, "b": 30}
    assert "capacity 70%" in _queue_status(cluster, "a")  # the old queues stay in force

    queues.write_text("a: {capacity: 60}\nb: {capacity: 40}\n")  # SIGHUP does the same
    assert cluster.rm is not None
    cluster.rm.signal(signal.SIGHUP)
    wait_until(lambda: _capacities(cluster.rest_url) == {"a": 60, "b": 40}, 20, "the queues to follow SIGHUP")
