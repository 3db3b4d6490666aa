"""SLearn live: the `slearn` scheduler on a local cluster of 3 NodeManagers (12 vcores).

While a greedy job keeps the cluster full, a 100-task job that declares no durations is gated to its
k = ⌈3 % × 100⌉ = 3 pilots: its estimate is SAMPLING, `explain` names SAMPLING_PILOTS for its held tasks, and
no more than 3 of its tasks run. The RM is killed and started again while it samples: the gate keeps its 3
pilots and places no new ones. Once the pilots finish it is ESTIMATED from them (tasks × their mean runtime)
and its other tasks run. On an idle cluster the same job's tasks take the idle capacity at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from rm.client import RMClient
from rm.local import LocalCluster
from tests.e2e.conftest import FINAL, submit_job, wait_final, wait_until, write_job

pytestmark = [pytest.mark.slow, pytest.mark.long]

TASKS = 100
PILOT_S = 4


def wide(job_id: str) -> dict[str, Any]:
    """100 tasks of 4 s, no declared duration: the RM knows nothing of its size."""
    return {"id": job_id, "stages": [{"name": "work", "tasks": TASKS, "memory_mb": 128, "vcores": 1,
                                      "command": f"sleep {PILOT_S}"}]}


def greedy() -> dict[str, Any]:
    """A best-effort job that always wants the whole cluster; its tasks end at staggered times."""
    return {"id": "hog", "am_policy": "greedy", "stages": [
        {"name": "s", "tasks": 400, "memory_mb": 128, "vcores": 1, "duration_s": 10.0,
         "command": "sleep $((6 + {task} % 7))"}]}


def running_tasks(rm: RMClient, app_id: str) -> int:
    return sum(1 for c in rm.containers(app_id) if c.state in ("ALLOCATED", "ACQUIRED", "RUNNING")
               and not c.container_id.endswith("_000001"))


def slearn_cluster(make_cluster: Callable[..., LocalCluster], tmp_path: Path
                   ) -> tuple[LocalCluster, dict[str, str], Callable[[str], dict[str, Any]]]:
    """A cluster of 3 NodeManagers (12 vcores) under the `slearn` scheduler, the headers of a viewer of every
    app (an app's details are its viewers': VIEW_APP), and a reader of an app's size estimate."""
    config = tmp_path / "rm.yaml"
    config.write_text(yaml.safe_dump({"shepherd.resourcemanager.scheduler": "slearn"}))
    cluster = make_cluster(nodes=3, node_memory_mb=2048, node_vcores=4, rm_args=["--config", str(config)])
    viewer = {"Authorization": f"Bearer {cluster.client_secret}"}

    def estimate(app_id: str) -> dict[str, Any]:
        return dict(httpx.get(f"{cluster.rest_url}/ws/v1/shepherd/apps/{app_id}/estimate", timeout=10,
                              headers=viewer).json()["estimate"])

    return cluster, viewer, estimate


def fill_with_greedy(cluster: LocalCluster, rm: RMClient, tmp_path: Path) -> str:
    """Submit a greedy job and wait until it holds all 12 vcores."""
    hog = submit_job(cluster, write_job(tmp_path, greedy()), tmp_path)
    wait_until(lambda: rm.metrics().allocated.values.get("vcores", 0) >= 12, 60, "the greedy job to fill it")
    return hog


def test_a_wide_job_is_sampled_estimated_and_kept_across_a_restart(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster, viewer, estimate = slearn_cluster(make_cluster, tmp_path)
    with RMClient(cluster.rm_address) as rm:
        hog = fill_with_greedy(cluster, rm, tmp_path)
        job = submit_job(cluster, write_job(tmp_path, wide("wide")), tmp_path)
        sampling = wait_until(lambda: (e := estimate(job))["state"] == "SAMPLING"
                              and e["sampling"]["pilotsStarted"] == e["sampling"]["pilots"] and e, 60,
                              "the job to be gated with its pilots started", interval=0.1)
        assert sampling["sampling"]["pilots"] == 3
        assert sampling["sampling"]["open"] is False
        most = 0
        for _ in range(10):  # a full cluster: the job runs its pilots only
            most = max(most, running_tasks(rm, job))
            time.sleep(0.1)
        assert most <= 3, f"{most} of its tasks ran while it sampled"
        # every pilot placed: what is left of its tasks waits for the pilots (or for room nothing else wants)
        held = httpx.get(f"{cluster.rest_url}/ws/v1/shepherd/apps/{job}/explain", timeout=10,
                         headers=viewer).json()["explanation"]
        assert held["reason"] == "SAMPLING_PILOTS", held
        assert running_tasks(rm, job) <= 3
        sampler = httpx.get(f"{cluster.rest_url}/ws/v1/shepherd/sampling", timeout=10,
                            headers=viewer).json()["sampling"]
        assert (sampler["enabled"], sampler["rule"], sampler["nextRatio"]) == (True, "adaptive", 0.03), sampler
        assert sampler["gatedApps"] >= 1, sampler
        assert next(r for r in sampler["ratios"] if r["ratio"] == 0.03)["jobsSampled"] >= 1, sampler

    cluster.restart_rm(kill=True)  # while it samples
    with RMClient(cluster.rm_address) as rm:
        after = estimate(job)
        assert after["sampling"]["pilots"] == 3, after  # the same gate, not sampled again
        assert after["sampling"]["pilotsStarted"] == 3, after
        # (until the greedy AM has registered again and resent its asks, its room is idle, and the gate lets
        # the job's other tasks have it: work conservation)
        e = wait_until(lambda: (e := estimate(job))["state"] != "SAMPLING" and e, 90, "the pilots to finish")
        assert e["state"] == "ESTIMATED", e
        assert e["sampling"]["open"] is True
        assert e["sampling"]["pilotsStarted"] == 3, e
        (group,) = e["groups"]
        assert PILOT_S <= group["meanRuntime"] < PILOT_S + 4, group
        assert e["estimate"]["source"] == "slearn"
        assert e["estimate"]["totalTaskSeconds"] == pytest.approx(TASKS * group["meanRuntime"], rel=0.01)
        rm.kill(hog)
        report = wait_final(rm, job, 300)
        assert (report.final_status, report.attempts) == ("SUCCEEDED", 1)

        # an idle cluster: the gate holds the job to its pilots only where nothing else wants the room
        again = submit_job(cluster, write_job(tmp_path, wide("wide")), tmp_path)
        most = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and rm.app(again).state not in FINAL:
            most = max(most, running_tasks(rm, again))
            if most >= 9:
                break
            time.sleep(0.2)
        assert most >= 9, f"at most {most} of its tasks ran at once on an idle cluster"
        assert estimate(again)["sampling"]["pilots"] == 3
        assert wait_final(rm, again, 300).final_status == "SUCCEEDED"
