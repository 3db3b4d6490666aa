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


def test_app_attach_follows_the_am_and_detaches(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import select
    import signal

    from rm.client import RMClient
    from tests.e2e.conftest import wait_final, wait_until

    cluster = make_cluster(nodes=1)
    # attached until the end: the states, the DAG AM's own log, the verdict
    app_id = submit_job(cluster, write_job(tmp_path, sleep_job("attached", 1, tasks=2)), tmp_path)
    attached = _cli(cluster, "app", "attach", app_id)
    assert attached.returncode == 0, attached.stdout + attached.stderr
    assert f"{app_id} RUNNING" in attached.stdout
    assert f"AM container_{app_id.removeprefix('application_')}_01_000001" in attached.stdout
    assert "am.dag: finishing with SUCCEEDED" in attached.stdout  # the AM's own log, to its last line
    assert attached.stdout.index("finishing with SUCCEEDED") < attached.stdout.index("FINISHED/SUCCEEDED")
    assert attached.stdout.rstrip().endswith(f"{app_id} FINISHED/SUCCEEDED")

    # Ctrl-C detaches; the app goes on and succeeds
    app_id = submit_job(cluster, write_job(tmp_path, sleep_job("detached", 4, tasks=1)), tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "rm.cli", "app", "attach", app_id, "--rm", cluster.rm_address],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with RMClient(cluster.rm_address) as client:
            wait_until(lambda: client.app(app_id).state == "RUNNING", 60, f"{app_id} to run")
            # Ctrl-C once attach is following: its first line says so (before that, on a loaded machine, the
            # interpreter may still be importing and dies of the signal instead of detaching)
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, "attach printed nothing in 60 s"
            first = proc.stdout.readline()
            assert app_id in first, first
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            assert proc.returncode == 130, out + err
            assert f"detached; {app_id} keeps running" in err
            assert client.app(app_id).state not in ("KILLED", "FAILED")
            assert wait_final(client, app_id).final_status == "SUCCEEDED"
    finally:
        if proc.poll() is None:
            proc.kill()
