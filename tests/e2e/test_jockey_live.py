"""Jockey live: the `jockey` scheduler on a local cluster of 3 NodeManagers (12 vcores), two greedy best-effort
jobs keeping it full. A two-stage sleep-task DAG run as an ordinary job takes its fair share and ends past
D seconds, and its run becomes the job's profile; the same DAG with a utility due at D and the `jockey` AM
policy is modelled from that profile, asks for a guarantee above its fair share, is granted it from its queue,
and ends by D. `GET .../slo` shows the requested and granted guarantee, the control loop's decisions and the
runs the AM was modelled from, and the guarantee falls once the job nears its end. Run with tasks twice as
slow, the job asks for more earlier; a halved deadline raises its request, and an RM restart keeps both."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from rm.client import RMClient
from tests.e2e.conftest import submit_job, wait_final, wait_until, write_job

pytestmark = [pytest.mark.slow, pytest.mark.long]

DUE_S = 32.0  # the SLO job's deadline, after its submission
TASK_S = 6.0
MOVED_S = 75.0  # the deadline after it is halved: MRM's book needs about 60 s for the job's claimed work


def dag(job_id: str, **extra: Any) -> dict[str, Any]:
    """96 task-seconds: 12 map tasks, then 4 reduce tasks, 6 s each, one vcore."""
    return {"id": job_id, **extra, "stages": [
        {"name": "map", "tasks": 12, "memory_mb": 128, "vcores": 1, "duration_s": TASK_S, "command": f"sleep {TASK_S:g}"},
        {"name": "reduce", "tasks": 4, "memory_mb": 128, "vcores": 1, "duration_s": TASK_S,
         "command": f"sleep {TASK_S:g}", "parents": ["map"]}]}


def greedy(i: int) -> dict[str, Any]:
    """A best-effort job that keeps asking for the whole cluster; its tasks end at staggered times, so
    containers keep coming free."""
    return {"id": f"hog{i}", "am_policy": "greedy", "stages": [
        {"name": "s", "tasks": 120, "memory_mb": 128, "vcores": 1, "duration_s": 12.0,
         "command": "sleep $((8 + ({task} * 5 + " + str(3 * i) + ") % 9))"}]}


Sample = tuple[float, int, int, int]  # (s after submission, requested, granted, fair share) in vcores


def follow(rm: RMClient, http: httpx.Client, app_id: str, submitted: float) -> tuple[list[Sample], dict[str, Any]]:
    """Sample the app's SLO view every half second until it ends; the samples and its last view."""
    samples: list[Sample] = []
    while rm.app(app_id).state not in ("FINISHED", "FAILED", "KILLED"):
        got = http.get(f"/ws/v1/shepherd/apps/{app_id}/slo").json()["slo"]
        share = rm.app(app_id).fair_share.values.get("vcores", 0)
        samples.append((time.time() - submitted, (got.get("requestedGuarantee") or {}).get("vCores", 0),
                        (got.get("grantedGuarantee") or {}).get("vCores", 0), share))
        time.sleep(0.5)
    return samples, http.get(f"/ws/v1/shepherd/apps/{app_id}/slo").json()["slo"]


def requested_at(samples: list[Sample], t: float) -> int:
    """The guarantee requested at ``t`` s after submission (the last sample before it)."""
    before = [r for s, r, _, _ in samples if s <= t]
    return before[-1] if before else 0


def test_a_recurring_job_meets_a_deadline_its_fair_share_misses_and_asks_earlier_when_slower(  # type: ignore[no-untyped-def]
        make_cluster, tmp_path: Path) -> None:
    """The DAG runs once as an ordinary job: on its fair share it ends past D, and its run becomes the job's
    profile. It runs again with a deadline at D under its Jockey loop, modelled from that profile (the RM says
    which runs), and meets it. A third run whose tasks take twice as long (its job file unchanged) falls behind
    the profile and asks for more earlier than the second did."""
    config = tmp_path / "rm.yaml"
    config.write_text(yaml.safe_dump({"shepherd.resourcemanager.scheduler": "jockey"}))
    cluster = make_cluster(nodes=3, node_memory_mb=2048, node_vcores=4, rm_args=["--config", str(config)])
    due_min = DUE_S / 60
    utility = [[0, 1], [due_min, 1], [due_min * 1.2, -1]]
    headers = {"Authorization": f"Bearer {cluster.client_secret}"}
    with RMClient(cluster.rm_address) as rm, httpx.Client(base_url=cluster.rest_url, timeout=10, headers=headers) as http:
        hogs = [submit_job(cluster, write_job(tmp_path, greedy(i)), tmp_path) for i in range(2)]
        wait_until(lambda: rm.metrics().allocated.values.get("vcores", 0) >= 12, 60, "the greedy jobs to fill it")

        # the job on its fair share alone: its run is the job's profile
        submitted = time.time()
        plain = submit_job(cluster, write_job(tmp_path, dag("daily")), tmp_path)
        report = wait_final(rm, plain, 180)
        plain_s = report.finish_time_ms / 1000 - submitted
        assert report.final_status == "SUCCEEDED"
        assert plain_s > DUE_S, f"the fair share alone made it in {plain_s:.1f} s: the test proves nothing"
        assert all(rm.app(h).state == "RUNNING" for h in hogs)  # still competing
        profile = wait_until(lambda: (r := http.get("/ws/v1/shepherd/jobs/daily/profile")).status_code == 200 and r,
                             30, "the job's profile")
        assert profile.json()["jobProfile"]["runs"] == [plain]

        # the same job with a deadline, under its Jockey control loop
        submitted = time.time()
        slo = submit_job(cluster, write_job(tmp_path, dag("daily", am_policy="jockey", utility=utility)), tmp_path)
        samples, last = follow(rm, http, slo, submitted)
        trace = last["controlTrace"]
        report = rm.app(slo)
        slo_s = report.finish_time_ms / 1000 - submitted
        timeline = "\n".join(f"{t:5.1f}s requested {r} granted {g} fair share {f}" for t, r, g, f in samples)
        assert last["profileRuns"] == [plain], "its AM was not handed the first run's profile"
        assert report.final_status == "SUCCEEDED"
        assert slo_s <= DUE_S, f"the jockey job took {slo_s:.1f} s against {DUE_S:g} (plain {plain_s:.1f} s)\n{timeline}"
        assert trace, "the AM reported no control decision"
        peak = max(r for _, r, _, _ in samples)
        assert any(r > f > 0 for _, r, _, f in samples), f"never asked above its fair share\n{timeline}"
        assert any(g > f > 0 for _, _, g, f in samples), f"never granted above its fair share\n{timeline}"
        assert trace[-1]["requestedUnits"] < peak, f"the guarantee did not fall near the end\n{timeline}"
        print(f"jockey live: plain {plain_s:.1f} s, jockey {slo_s:.1f} s (due {DUE_S:g} s), peak request {peak}")
        print(timeline)

        # the same job file, its tasks now twice as slow: behind its profile, it asks for more, sooner
        slower = dag("daily", am_policy="jockey", utility=utility)
        for stage in slower["stages"]:
            stage["command"] = f"sleep {2 * TASK_S:g}"
        submitted = time.time()
        slow = submit_job(cluster, write_job(tmp_path, slower), tmp_path)
        slow_samples, last = follow(rm, http, slow, submitted)
        assert last["profileRuns"] == [plain, slo]
        slow_timeline = "\n".join(f"{t:5.1f}s requested {r} granted {g} fair share {f}"
                                   for t, r, g, f in slow_samples)
        window = [t for t, _, _, _ in slow_samples if t <= 2.5 * TASK_S]
        ahead = [t for t in window if requested_at(slow_samples, t) > requested_at(samples, t)]
        behind = [t for t in window if requested_at(slow_samples, t) < requested_at(samples, t)]
        print(f"jockey live: the slower run asked for more at {len(ahead)} of {len(window)} samples of its first "
              f"{2.5 * TASK_S:g} s, less at {len(behind)}\n{slow_timeline}")
        assert ahead, f"the slower run never asked for more than the normal one early on\n{slow_timeline}"
        assert min(ahead) < 2.5 * TASK_S
        assert len(ahead) > len(behind), f"the slower run did not ask for more early on\n{slow_timeline}"


def test_a_halved_deadline_raises_the_guarantee_and_a_restart_keeps_the_slo(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The job buys a generous deadline (an MRM claim, with its Jockey loop above it); 8 s in, its deadline is
    halved (to a time the deadline book can still keep): admission lays the claim again, the AM hears the new deadline in its allocate answers and asks for
    more. Then the RM is killed and started again: the deadline, the claim and the requested guarantee are as
    they were, and the job ends in one attempt by its new deadline."""
    config = tmp_path / "rm.yaml"
    config.write_text(yaml.safe_dump({"shepherd.resourcemanager.scheduler": "jockey"}))
    cluster = make_cluster(nodes=3, node_memory_mb=2048, node_vcores=4, rm_args=["--config", str(config)])
    with RMClient(cluster.rm_address) as rm:
        for i in range(2):
            submit_job(cluster, write_job(tmp_path, greedy(i)), tmp_path)
        wait_until(lambda: rm.metrics().allocated.values.get("vcores", 0) >= 12, 60, "the greedy jobs to fill it")
        submitted = time.time()
        slo = submit_job(cluster, write_job(tmp_path, dag("moved", am_policy="jockey", deadline_s=2 * MOVED_S)),
                         tmp_path)
    headers = {"Authorization": f"Bearer {cluster.client_secret}"}
    with httpx.Client(base_url=cluster.rest_url, timeout=10, headers=headers) as http:
        def slo_now() -> dict[str, Any]:
            return dict(http.get(f"/ws/v1/shepherd/apps/{slo}/slo").json()["slo"])

        def requested() -> int:
            return int((slo_now().get("requestedGuarantee") or {}).get("vCores", 0))

        first = wait_until(requested, 30, "the AM's first requested guarantee")
        time.sleep(max(0.0, submitted + 8 - time.time()))
        before = requested()
        new_deadline_ms = int((submitted + MOVED_S) * 1000)
        moved = http.put(f"/ws/v1/shepherd/apps/{slo}/deadline", json={"deadline": new_deadline_ms})
        assert moved.status_code == 200, moved.text
        assert moved.json()["slo"]["deadline"] == new_deadline_ms
        raised = wait_until(lambda: (r := requested()) > before and r, 15, "the AM to ask for more")
        print(f"jockey live: requested {first} at first, {before} before the move, {raised} after it")

        kept = slo_now()
        cluster.restart_rm(kill=True)
    with httpx.Client(base_url=cluster.rest_url, timeout=10, headers=headers) as http:
        after = dict(http.get(f"/ws/v1/shepherd/apps/{slo}/slo").json()["slo"])
        assert (after["deadline"], after["claimed"]) == (new_deadline_ms, True)
        assert after["deadline"] == kept["deadline"]
        assert (after.get("requestedGuarantee") or {}).get("vCores", 0) >= 1  # stored with the app
    with RMClient(cluster.rm_address) as rm:
        report = wait_final(rm, slo, 120)
        assert (report.state, report.final_status, report.attempts) == ("FINISHED", "SUCCEEDED", 1)
        took = report.finish_time_ms / 1000 - submitted
        assert report.finish_time_ms <= new_deadline_ms, f"ended {took:.1f} s after submission, due {MOVED_S:g}"
        print(f"jockey live: the moved job ended {took:.1f} s after submission, due {MOVED_S:g} s")
