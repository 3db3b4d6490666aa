"""Work-preserving RM restart, live: an RM killed with SIGKILL mid-job comes back on its store, the AM and
the running task containers carry on in the same processes, and no task runs twice."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from rm.client import RMClient
from tests.e2e.conftest import am_process, fresh_pg_database, wait_final, wait_until, write_job


def _task_processes(app_seq: str) -> dict[str, int]:
    """container id → pid of the running ``sleep`` task processes of the app with this id suffix."""
    found: dict[str, int] = {}
    for p in psutil.process_iter(["pid", "name"]):
        with contextlib.suppress(psutil.Error):
            if p.info["name"] != "sleep":
                continue
            cid = p.environ().get("CONTAINER_ID", "")
            if app_seq in cid:
                found[cid] = p.info["pid"]
    return found


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_killed_rm_comes_back_with_every_container_and_no_task_runs_twice(  # type: ignore[no-untyped-def]
        make_cluster, tmp_path: Path, backend: str) -> None:
    store_url, drop = fresh_pg_database() if backend == "postgresql" else (None, None)
    marks = tmp_path / "marks"
    marks.mkdir(mode=0o777)
    marks.chmod(0o777)  # the tasks may run as another account
    stage = {"tasks": 2, "memory_mb": 128, "vcores": 1, "duration_s": 15,  # long enough to outlast the restart
             "command": f"echo {{attempt}} >> {marks}/{{stage}}-{{task}}; sleep 15"}
    job = {"id": "carried", "stages": [{"name": "s0", **stage}, {"name": "s1", "parents": ["s0"], **stage}]}
    try:
        cluster = make_cluster(nodes=2, store_url=store_url)
        # `submit --wait` rides through the restart: it waits for the RM, and exits 0 when the job succeeds
        waiting = subprocess.Popen(
            [sys.executable, "-m", "rm.cli", "submit", str(write_job(tmp_path, job)), "--rm", cluster.rm_address,
             "--data-dir", str(tmp_path), "--wait"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert waiting.stdout is not None
        first = waiting.stdout.readline()
        m = re.search(r"(application_\d+_\d+)", first)
        assert m, first
        app_id = m.group(1)
        with RMClient(cluster.rm_address) as client:
            seq = app_id.removeprefix("application_")
            tasks = wait_until(lambda: len(t := _task_processes(seq)) == 2 and t, 60, "both first-stage tasks")
            report = client.app(app_id)
            assert report.state == "RUNNING"
            am_cid = next(c for c in _am_containers(seq))
            am_pid = am_process(am_cid).pid

        killed_at = time.monotonic()
        cluster.restart_rm(kill=True)
        with RMClient(cluster.rm_address) as client:
            serving_s = time.monotonic() - killed_at
            after = client.app(app_id)
            assert after.state == "RUNNING"
            # the same processes, under the same container ids, still run
            assert am_process(am_cid).pid == am_pid
            still = _task_processes(seq)
            assert {c: p for c, p in still.items() if c in tasks} == tasks
            final = wait_final(client, app_id, 120)
            assert (final.state, final.final_status) == ("FINISHED", "SUCCEEDED"), final.diagnostics
            assert final.attempts == 1
        out = first + waiting.communicate(timeout=60)[0]
        assert waiting.returncode == 0, out
        assert "waiting for it" in out, out
        assert "Traceback" not in out
        runs = {f.name: f.read_text().split() for f in marks.iterdir()}
        assert sorted(runs) == ["s0-0", "s0-1", "s1-0", "s1-1"]
        assert all(len(lines) == 1 for lines in runs.values()), runs  # no task ran twice
        assert serving_s < 30
        print(f"RM SIGKILL to serving again: {serving_s:.1f} s; {len(tasks)} task containers and the AM kept")
    finally:
        if drop is not None:
            drop()


def _am_containers(app_seq: str) -> list[str]:
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if "am.dag" in " ".join(p.info["cmdline"] or []):
                cid = p.environ().get("CONTAINER_ID", "")
                if app_seq in cid:
                    out.append(cid)
    return out
