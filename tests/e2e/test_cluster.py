"""End-to-end: a real ResourceManager, NodeManagers and DAG ApplicationMasters running real processes."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common.resources import Resources
from rm.client import RMClient
from tests.e2e.conftest import (
    ROOT,
    am_process,
    fresh_pg_database,
    sleep_job,
    submit_job,
    wait_final,
    wait_until,
    write_job,
)

pytestmark = pytest.mark.slow


def test_shepherd_up_and_submit_runs_a_dag_over_two_nodes(tmp_path: Path) -> None:
    data = tmp_path / "up"
    up = subprocess.Popen(
        [sys.executable, "-m", "rm.cli", "up", "--nodes", "2", "--data-dir", str(data), "--grpc-port", "0",
         "--rest-port", "0", "--allow-root-containers"],  # as root: pytest's tmp dirs are private
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert up.stdout is not None
        address = ""
        for line in up.stdout:
            m = re.search(r"cluster ready rm=(\S+)", line)
            if m:
                address = m.group(1)
                break
        assert address, "shepherd up did not report a ready cluster"
        out = tmp_path / "out"
        done = subprocess.run(
            [sys.executable, "-m", "rm.cli", "submit", str(ROOT / "examples" / "wordcount.yaml"), "--wait",
             "--rm", address, "--env", f"OUTPUT_DIR={out}"],
            check=False, capture_output=True, text=True, timeout=180,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "FINISHED/SUCCEEDED" in done.stdout
        check = subprocess.run([sys.executable, str(ROOT / "examples" / "verify_wordcount.py"), str(out)],
                               check=False, capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
        with RMClient(address) as client:
            (app,) = client.apps()
            containers = client.containers(app.application_id)
        nodes_used = {c.node_id for c in containers}
        assert len(containers) >= 1 + 4 + 4 + 1  # AM + generate + count + merge
        assert len(nodes_used) >= 2, nodes_used
        # every container that ran a task succeeded (-105: one the AM had no task for and gave back;
        # -107: stopped when the app ended)
        assert all(c.exit_status in (0, -105, -107) for c in containers if c.state == "COMPLETED"), [(c.container_id, c.exit_status, c.diagnostics) for c in containers]
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(30)
    assert up.returncode == 0


def test_two_backlogged_jobs_settle_at_equal_dominant_shares(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Tasks are short, so containers churn and every freed container goes to the job with the lower
    # dominant share; the shares are read from the RM's reports over a window once the jobs have settled.
    cluster = make_cluster(nodes=2, node_memory_mb=6144, node_vcores=8)
    mem_heavy = write_job(tmp_path, sleep_job("mem-heavy", 3, tasks=400, memory_mb=1024, vcores=1))
    cpu_heavy = write_job(tmp_path, sleep_job("cpu-heavy", 3, tasks=400, memory_mb=256, vcores=2))
    a = submit_job(cluster, mem_heavy, tmp_path)
    b = submit_job(cluster, cpu_heavy, tmp_path)
    total = Resources.of(memory_mb=2 * 6144, vcores=16)
    with RMClient(cluster.rm_address) as client:
        wait_until(lambda: client.app(a).running_containers > 1 and client.app(b).running_containers > 1, 60,
                   "both jobs to run tasks")
        time.sleep(10)  # let the first wave, which one job may have taken alone, turn over
        samples = []
        for _ in range(30):
            ra, rb = client.app(a), client.app(b)
            samples.append((Resources(dict(ra.used.values)).dominant_share(total),
                            Resources(dict(rb.used.values)).dominant_share(total)))
            time.sleep(0.5)
        da = sum(s[0] for s in samples) / len(samples)
        db = sum(s[1] for s in samples) / len(samples)
        # The scheduler is work-conserving and holds no node for a waiting ask: a freed vcore that a
        # cpu-heavy task (two vcores) cannot use goes to mem-heavy, so the shares can part by one container
        # of each job, not only by the larger one (nodes of 8 vcores fragment).
        one_each = (Resources.of(memory_mb=1024, vcores=1).dominant_share(total)
                    + Resources.of(memory_mb=256, vcores=2).dominant_share(total))
        print(f"\nDRF dominant shares over the window: mem-heavy {da:.3f}, cpu-heavy {db:.3f}, one of each {one_each:.3f}")
        assert abs(da - db) <= one_each, (da, db, samples)
        assert min(da, db) > 0.3, (da, db)  # both really run, and the cluster is busy
        ra = client.app(a)
        assert dict(ra.fair_share.values).get("memory-mb", 0) > 0  # the AM learns its DRF share
        client.kill(a)
        client.kill(b)


def test_a_killed_nodemanager_loses_its_containers_and_the_job_still_finishes(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=2, nm_expiry_s=4.0, node_memory_mb=2048, node_vcores=4)
    job = write_job(tmp_path, sleep_job("nm-loss", 4, tasks=6, stages=2))
    app_id = submit_job(cluster, job, tmp_path)
    with RMClient(cluster.rm_address) as client:
        am_node = wait_until(lambda: client.attempts(app_id)[-1].node_id, 30, "the AM to be placed")
        victim = next(i for i, n in enumerate(cluster.node_ids) if n != am_node)
        victim_id = cluster.node_ids[victim]
        wait_until(lambda: any(c.node_id == victim_id and c.state == "RUNNING"
                               for c in client.containers(app_id)), 60, "a task on the other node")
        cluster.nms[victim].signal(signal.SIGKILL)
        wait_until(lambda: any(n.state == "LOST" for n in client.nodes()), 30, "the node to be LOST")
        lost = [c for c in client.containers(app_id) if c.node_id == victim_id]
        assert lost
        assert all(c.exit_status == -100 for c in lost if c.state == "COMPLETED")
        assert any("lost" in c.diagnostics for c in lost)
        final = wait_final(client, app_id, 120)
        assert (final.state, final.final_status) == ("FINISHED", "SUCCEEDED"), final.diagnostics
        assert final.attempts == 1


def test_a_killed_am_gets_a_second_attempt_that_finishes_the_job(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=2)
    job = write_job(tmp_path, sleep_job("am-loss", 3, tasks=4, stages=2))
    app_id = submit_job(cluster, job, tmp_path)
    with RMClient(cluster.rm_address) as client:
        wait_until(lambda: client.app(app_id).state == "RUNNING", 30, "the AM to register")
        am_container = client.app(app_id).am_container_id
        proc = wait_until(lambda: _find(am_container), 20, "the AM process")
        proc.send_signal(signal.SIGKILL)
        final = wait_final(client, app_id, 120)
        assert (final.state, final.final_status) == ("FINISHED", "SUCCEEDED"), final.diagnostics
        attempts = client.attempts(app_id)
        assert len(attempts) == 2
        assert attempts[0].state == "FAILED"
        assert "137" in attempts[0].diagnostics


def _find(container_id: str):  # type: ignore[no-untyped-def]
    try:
        return am_process(container_id)
    except LookupError:
        return None


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_rm_restart_keeps_every_app(make_cluster, tmp_path: Path, backend: str) -> None:  # type: ignore[no-untyped-def]
    store_url = None
    drop = None
    if backend == "postgresql":
        store_url, drop = fresh_pg_database()
    try:
        cluster = make_cluster(nodes=2, store_url=store_url)
        with RMClient(cluster.rm_address) as client:
            done = submit_job(cluster, write_job(tmp_path, sleep_job("quick", 0.5, tasks=2)), tmp_path)
            assert wait_final(client, done).final_status == "SUCCEEDED"
            killed = submit_job(cluster, write_job(tmp_path, sleep_job("killed", 60, tasks=2)), tmp_path)
            client.kill(killed)
            running = submit_job(cluster, write_job(tmp_path, sleep_job("long", 4, tasks=2, stages=2)), tmp_path)
            wait_until(lambda: client.app(running).state == "RUNNING", 30, "the long job to run")
            before = {r.application_id: (r.state, r.final_status, r.name, r.queue) for r in client.apps()}
        cluster.restart_rm()
        with RMClient(cluster.rm_address) as client:
            after = {r.application_id: (r.state, r.final_status, r.name, r.queue) for r in client.apps()}
            assert after.keys() == before.keys()
            assert after[done] == before[done] == ("FINISHED", "SUCCEEDED", "quick", "root.default")
            assert after[killed] == before[killed]
            assert after[running][0] == "RUNNING"  # its AM and containers carried over
            final = wait_final(client, running, 120)
            assert (final.state, final.final_status) == ("FINISHED", "SUCCEEDED"), final.diagnostics
            assert final.attempts == 1
    finally:
        if drop is not None:
            drop()


def test_a_task_using_far_more_memory_than_asked_is_killed_with_a_diagnostic(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1)
    hog = {
        "id": "hog",
        "stages": [{
            "name": "hog", "tasks": 1, "memory_mb": 128, "vcores": 1, "max_attempts": 1,
            "command": "$SHEPHERD_PYTHON -c 'import time; b = bytearray(600 * 1024 * 1024); time.sleep(60)'",
        }],
    }
    app_id = submit_job(cluster, write_job(tmp_path, hog), tmp_path)
    with RMClient(cluster.rm_address) as client:
        final = wait_final(client, app_id, 90)
        assert final.final_status == "FAILED"
        task = [c for c in client.containers(app_id) if c.container_id != final.am_container_id]
        assert len(task) == 1
        assert task[0].exit_status == -104
        assert "physical memory" in task[0].diagnostics
        assert "128" in task[0].diagnostics
        assert "-104" in final.diagnostics or "memory" in final.diagnostics
