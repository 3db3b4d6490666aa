"""Carbyne live: a job with a barrier yields what it does not need now; a short job gets the leftover."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import submit_job, wait_until, write_job

pytestmark = pytest.mark.slow


def test_one_job_yields_and_the_other_gets_containers_from_the_leftover(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1, node_memory_mb=4096, node_vcores=8)
    rest = cluster.rest_url
    # J1: a long task gates the final stage, so its wide stage can wait: it asks ALTRUISTIC for it
    yielder = {
        "id": "yielder",
        "stages": [
            {"name": "long", "tasks": 1, "memory_mb": 256, "vcores": 1, "duration_s": 25, "command": "sleep 25"},
            {"name": "wide", "tasks": 10, "memory_mb": 256, "vcores": 1, "duration_s": 3, "command": "sleep 3"},
            {"name": "final", "tasks": 1, "memory_mb": 256, "vcores": 1, "duration_s": 1, "command": "sleep 1",
             "parents": ["long", "wide"]},
        ],
    }
    # J2: less work in all, but more than its share can run at once: it takes what J1 leaves
    short = {"id": "short", "stages": [
        {"name": "work", "tasks": 12, "memory_mb": 256, "vcores": 1, "duration_s": 3, "command": "sleep 3"}]}
    j1 = submit_job(cluster, write_job(tmp_path, yielder), tmp_path)
    j2 = submit_job(cluster, write_job(tmp_path, short), tmp_path)

    def app(app_id: str) -> dict:  # type: ignore[type-arg]
        return httpx.get(f"{rest}/ws/v1/cluster/apps/{app_id}", timeout=10).json()["app"]

    def yielding() -> dict | None:  # type: ignore[type-arg]
        # its wide stage is asked ALTRUISTIC: no DEFAULT ask beyond what must start now
        a = app(j1)
        if a["state"] == "RUNNING" and a["pendingAltruisticAsks"] > 0 and a["pendingDefaultAsks"] == 0:
            return a
        return None

    seen = wait_until(yielding, 30, "the barrier job to yield (ALTRUISTIC asks, no DEFAULT ones)")
    assert seen["fairShareVCores"] > 0

    got_leftover = wait_until(lambda: (a := app(j2))["leftoverContainers"] > 0 and a, 60,
                              "the short job to get leftover containers")
    assert got_leftover["leftoverContainers"] >= 1

    for app_id in (j1, j2):
        wait_until(lambda a=app_id: app(a)["state"] == "FINISHED", 90, f"{app_id} to finish")  # type: ignore[misc]
        assert app(app_id)["finalStatus"] == "SUCCEEDED"

    text = httpx.get(f"{rest}/metrics", timeout=10).text
    m = re.search(r"^shepherd_leftover_containers_total (\S+)$", text, re.MULTILINE)
    assert m, "the leftover counter is exported"
    assert float(m.group(1)) >= 1
