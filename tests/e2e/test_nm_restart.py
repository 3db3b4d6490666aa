"""End-to-end: a NodeManager SIGKILLed in the middle of a job and restarted a few seconds later on the same
port and work dir, with a real ResourceManager and a DAG ApplicationMaster: its tasks keep running in the
same processes (or, when they end during the outage, are reported with their exit codes), none runs twice,
and the job finishes on its first attempt."""

from __future__ import annotations

import contextlib
import signal
import socket
import time
from pathlib import Path

import psutil
import pytest

from rm.client import RMClient
from tests.e2e.conftest import sleep_job, submit_job, wait_final, wait_until, write_job

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def container_pids(app_id: str) -> dict[str, int]:
    """The pid of each container's task of ``app_id`` (the process whose parent is the supervisor)."""
    out: dict[str, int] = {}
    for proc in psutil.process_iter(["pid", "ppid"]):
        with contextlib.suppress(psutil.Error):
            cid = proc.environ().get("CONTAINER_ID", "")
            parent = psutil.Process(proc.info["ppid"])
            if app_id.removeprefix("application_") in cid and "nodemanager.supervise" in " ".join(parent.cmdline()):
                out[cid] = proc.info["pid"]
    return out


@pytest.mark.parametrize(("task_s", "outage_s"), [(6.0, 2.0), (3.0, 6.0)], ids=["tasks-outlive-the-outage",
                                                                             "tasks-end-during-the-outage"])
def test_a_restarted_nodemanager_keeps_its_tasks_and_none_runs_twice(  # type: ignore[no-untyped-def]
        make_cluster, tmp_path: Path, task_s: float, outage_s: float) -> None:
    port = free_port()
    cluster = make_cluster(nodes=1, nm_expiry_s=30.0, node_memory_mb=4096, node_vcores=8,
                           nm_args=["--port", str(port)])
    job = write_job(tmp_path, sleep_job("nm-restart", task_s, tasks=3))
    app_id = submit_job(cluster, job, tmp_path)
    with RMClient(cluster.rm_address) as client:
        wait_until(lambda: sum(c.state == "RUNNING" for c in client.containers(app_id)) == 4, 60,
                   "the AM and three tasks to run")
        pids = wait_until(lambda: len(p := container_pids(app_id)) == 4 and p, 20, "their processes")
        node_id = cluster.node_ids[0]

        cluster.nms[0].signal(signal.SIGKILL)
        time.sleep(outage_s)
        alive = container_pids(app_id)
        cluster.start_nm(0)
        assert cluster.node_ids[0] == node_id
        assert alive.items() <= pids.items()  # nothing started meanwhile
        assert container_pids(app_id).items() <= alive.items()  # what still ran is taken back as it is
        if task_s > outage_s:
            assert alive == pids
        else:
            assert alive.keys() == {cid for cid in pids if cid.endswith("_000001")}  # the tasks ended meanwhile

        final = wait_final(client, app_id, 90)
        assert (final.state, final.final_status) == ("FINISHED", "SUCCEEDED"), final.diagnostics
        assert final.attempts == 1
        # no task started a second time: the node launched exactly the containers it had before the SIGKILL
        launched = {d.name for d in (cluster.data_dir / "nm0" / "nmstate" / "containers").iterdir()}
        assert launched == set(pids)
        ended = {c.container_id: (c.state, c.exit_status) for c in client.containers(app_id)}
        tasks = sorted(cid for cid in pids if not cid.endswith("_000001"))
        assert [ended[cid] for cid in tasks] == [("COMPLETED", 0)] * 3
