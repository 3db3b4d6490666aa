"""Deadlines you can buy (MRM), live: a local cluster of 3 NodeManagers on the default (mrm) scheduler.

Five recorded runs of a sleep-task job train the estimator; `shepherd job quote` prints a curve whose earliest
finish is at least now + the critical path and whose prices fall; a deadline before the earliest finish is
refused (409) and creates no app; buying the earliest deadline works, and a quote for a job that would jump
ahead of a bought deadline is dearer; both bought deadlines are met while a greedy best-effort job fills the
cluster; a stock YARN REST submission with the `shepherd.deadline` tag gets a claim the same way; after an
RM restart the bought deadlines and their claims are unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import sleep_job, submit_job, wait_until, write_job

pytestmark = [pytest.mark.slow, pytest.mark.long]


def cli(cluster: Any, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True, timeout=60,
                          check=check)


def app(cluster: Any, app_id: str) -> dict[str, Any]:
    return dict(httpx.get(f"{cluster.rest_url}/ws/v1/cluster/apps/{app_id}", timeout=10,  # as a viewer (VIEW_APP)
                          headers={"Authorization": f"Bearer {cluster.client_secret}"}).json()["app"])


def buy(cluster: Any, job: Path, data_dir: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return cli(cluster, "submit", str(job), "--rm", cluster.rm_address, "--data-dir", str(data_dir), *flags,
               check=False)


def app_id_of(out: str) -> str:
    import re

    m = re.search(r"(application_\d+_\d+)", out)
    assert m, out
    return m.group(1)


def test_deadlines_bought_live(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=3, node_memory_mb=2048, node_vcores=4)
    rest = cluster.rest_url
    nightly = write_job(tmp_path, sleep_job("nightly", 2, 4))
    for _ in range(5):  # five recorded runs of the job train the estimator
        submit_job(cluster, nightly, tmp_path)
    def finished() -> int:
        apps = (httpx.get(f"{rest}/ws/v1/cluster/apps", timeout=10).json()["apps"] or {}).get("app", [])
        return sum(1 for a in apps if a["state"] == "FINISHED" and a["finalStatus"] == "SUCCEEDED")

    wait_until(lambda: finished() >= 5, 120, "the five training runs to finish")

    def trained() -> dict[str, Any] | None:  # the RM refits its estimator off the loop, within a second or two
        q = json.loads(cli(cluster, "job", "quote", str(nightly), "--rest", rest, "-o", "json").stdout)
        return q if q["estimate"]["runs"] == 5 else None

    wait_until(trained, 30, "the estimator to be fitted on the five runs")
    before = time.time()
    q0 = json.loads(cli(cluster, "job", "quote", str(nightly), "--rest", rest, "-o", "json").stdout)
    assert q0["estimate"]["method"] == "bin"
    assert q0["estimate"]["runs"] == 5
    assert q0["earliestFinish"] >= (before + q0["criticalPath"]) * 1000 - 1
    prices = [p["price"] for p in q0["curve"]]
    assert prices == sorted(prices, reverse=True)
    assert prices[-1] < prices[0]
    table = cli(cluster, "job", "quote", str(nightly), "--rest", rest).stdout
    assert "earliest finish" in table
    assert "price by deadline" in table

    # a deadline before the earliest finish: refused, no app
    n_apps = len(httpx.get(f"{rest}/ws/v1/cluster/apps", timeout=10).json()["apps"]["app"])
    early = buy(cluster, nightly, tmp_path, "--deadline", "+6s")
    assert early.returncode != 0
    assert "earliest feasible finish" in early.stdout + early.stderr
    assert len(httpx.get(f"{rest}/ws/v1/cluster/apps", timeout=10).json()["apps"]["app"]) == n_apps

    # a greedy best-effort job fills the cluster
    hog = write_job(tmp_path, sleep_job("hog", 30, 60, am_policy="greedy"))
    hog_id = submit_job(cluster, hog, tmp_path)
    wait_until(lambda: app(cluster, hog_id)["runningContainers"] >= 10, 60, "the hog to fill the cluster")

    # a far deadline first, then the earliest deadline of a job that jumps ahead of it: dearer than on an
    # empty book
    far = buy(cluster, nightly, tmp_path, "--deadline", "+240s")
    assert far.returncode == 0, far.stdout + far.stderr
    far_id = app_id_of(far.stdout)
    q1 = json.loads(cli(cluster, "job", "quote", str(nightly), "--rest", rest, "-o", "json").stdout)
    assert q1["curve"][0]["jumpsAhead"] == 1
    assert q1["curve"][0]["jumpAhead"] > 0
    assert q1["curve"][0]["price"] > q0["curve"][0]["price"]
    soon = buy(cluster, nightly, tmp_path, "--quote", q1["id"])
    assert soon.returncode == 0, soon.stdout + soon.stderr
    soon_id = app_id_of(soon.stdout)
    assert app(cluster, soon_id)["deadline"]["deadline"] == q1["earliestFinish"]

    listing = httpx.get(f"{rest}/ws/v1/shepherd/deadlines", timeout=10).json()["deadlines"]["deadline"]
    assert [d["id"] for d in listing][:2] == [soon_id, far_id]
    assert "nightly" in cli(cluster, "deadlines", "--rest", rest).stdout

    # both are met although the hog holds the cluster
    for app_id in (soon_id, far_id):
        done = wait_until(lambda a=app_id: (x := app(cluster, a))["state"] in ("FINISHED", "FAILED", "KILLED") and x,
                          300, f"{app_id} to end")
        assert done["finalStatus"] == "SUCCEEDED"
        assert done["deadline"]["status"] == "MET", done["deadline"]
    assert app(cluster, hog_id)["state"] == "RUNNING"
    metrics = httpx.get(f"{rest}/metrics", timeout=10).text
    assert 'shepherd_deadline_outcomes_total{outcome="met"} 2.0' in metrics

    # a stock YARN client (REST, no job file) asks with the tag: the same estimate by name, the same claim
    headers = {"Authorization": f"Bearer {cluster.client_secret}"}
    new = httpx.post(f"{rest}/ws/v1/cluster/apps/new-application", headers=headers, timeout=10).json()
    body = {"application-id": new["application-id"], "application-name": "nightly", "application-type": "YARN",
            "application-tags": {"tag": ["shepherd.deadline=+600"]},
            "am-container-spec": {"commands": {"command": "sleep 1"}}, "resource": {"memory": 128, "vCores": 1}}
    r = httpx.post(f"{rest}/ws/v1/cluster/apps", json=body, headers=headers, timeout=10)
    assert r.status_code == 202, r.text
    stock = app(cluster, new["application-id"])
    assert stock["deadline"]["estimate"]["method"] == "bin"
    held = {d["id"]: (d["deadline"], d["price"], d["estimate"])
            for d in httpx.get(f"{rest}/ws/v1/shepherd/deadlines", timeout=10).json()["deadlines"]["deadline"]}

    # after an RM restart the deadlines and claims are as they were
    cluster.restart_rm()
    wait_until(lambda: httpx.get(f"{cluster.rest_url}/ws/v1/cluster/info", timeout=10).status_code == 200, 30,
               "the RM to answer")
    again = {d["id"]: (d["deadline"], d["price"], d["estimate"])
             for d in httpx.get(f"{cluster.rest_url}/ws/v1/shepherd/deadlines", timeout=10)
             .json()["deadlines"]["deadline"]}
    assert again == held
