"""Carbyne live: a job with a barrier yields what it does not need now; a short job gets the leftover."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from common.credentials import client_secret
from tests.e2e.conftest import submit_job, wait_until, write_job

pytestmark = pytest.mark.slow


def test_one_job_yields_and_the_other_gets_containers_from_the_leftover(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1, node_memory_mb=4096, node_vcores=8)
    rest = cluster.rest_url
    # J2 first: many short tasks, more than its share can run at once, so it keeps asking ALTRUISTIC too
    short = {"id": "short", "stages": [
        {"name": "work", "tasks": 40, "memory_mb": 256, "vcores": 1, "duration_s": 3, "command": "sleep 3"}]}
    # J1: a long task gates the final stage, so its wide stage can wait: it asks ALTRUISTIC for it; its
    # remaining work stays above J2's, so the leftover goes to J2 first (shortest remaining time first)
    yielder = {
        "id": "yielder",
        "stages": [
            {"name": "long", "tasks": 1, "memory_mb": 256, "vcores": 1, "duration_s": 120, "command": "sleep 120"},
            {"name": "wide", "tasks": 16, "memory_mb": 256, "vcores": 1, "duration_s": 3, "command": "sleep 3"},
            {"name": "final", "tasks": 1, "memory_mb": 256, "vcores": 1, "duration_s": 1, "command": "sleep 1",
             "parents": ["long", "wide"]},
        ],
    }

    def app(app_id: str) -> dict:  # type: ignore[type-arg]
        return httpx.get(f"{rest}/ws/v1/cluster/apps/{app_id}", timeout=10,  # as a viewer (VIEW_APP)
                         headers={"Authorization": f"Bearer {cluster.client_secret}"}).json()["app"]

    j2 = submit_job(cluster, write_job(tmp_path, short), tmp_path)
    wait_until(lambda: app(j2)["state"] == "RUNNING", 30, "the short job's AM to run")
    j1 = submit_job(cluster, write_job(tmp_path, yielder), tmp_path)

    def yielding() -> dict | None:  # type: ignore[type-arg]
        # its wide stage is asked ALTRUISTIC: no DEFAULT ask beyond what must start now
        a = app(j1)
        if a["state"] == "RUNNING" and a["pendingAltruisticAsks"] > 0 and a["pendingDefaultAsks"] == 0:
            return a
        return None

    seen = wait_until(yielding, 60, "the barrier job to yield (ALTRUISTIC asks, no DEFAULT ones)")
    assert seen["fairShareVCores"] > 0

    got_leftover = wait_until(lambda: (a := app(j2))["leftoverContainers"] > 0 and a, 60,
                              "the short job to get leftover containers")
    assert got_leftover["leftoverContainers"] >= 1

    wait_until(lambda: app(j2)["state"] == "FINISHED", 120, "the short job to finish")
    assert app(j2)["finalStatus"] == "SUCCEEDED"

    text = httpx.get(f"{rest}/metrics", timeout=10).text
    m = re.search(r"^shepherd_leftover_containers_total (\S+)$", text, re.MULTILINE)
    assert m, "the leftover counter is exported"
    assert float(m.group(1)) >= 1
    httpx.put(f"{rest}/ws/v1/cluster/apps/{j1}/state", json={"state": "KILLED"}, timeout=10,
              headers={"Authorization": f"Bearer {client_secret(rest)}"})
