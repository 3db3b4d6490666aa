"""An ApplicationMaster killed mid-job: the next attempt starts, the running task containers pass to it
(keep-containers-across-attempts) in the same processes, the tasks an earlier attempt finished are not run
again, and the job succeeds."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from rm.client import RMClient
from tests.e2e.conftest import am_process, submit_job, wait_final, wait_until, write_job
from tests.e2e.test_rm_restart import _am_containers, _task_processes

pytestmark = pytest.mark.slow


def test_a_killed_am_hands_its_running_tasks_to_the_next_attempt(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    marks = tmp_path / "marks"
    marks.mkdir(mode=0o777)
    marks.chmod(0o777)

    def stage(name: str, tasks: int, secs: int, *parents: str) -> dict[str, object]:
        return {"name": name, "tasks": tasks, "memory_mb": 128, "vcores": 1, "duration_s": secs,
                "parents": list(parents), "command": f"echo {{attempt}} >> {marks}/{{stage}}-{{task}}; sleep {secs}"}

    job = {"id": "resumed", "stages": [stage("s0", 2, 1), stage("s1", 2, 25, "s0"), stage("s2", 1, 1, "s1")]}
    cluster = make_cluster(nodes=2)
    with RMClient(cluster.rm_address) as client:
        app_id = submit_job(cluster, write_job(tmp_path, job), tmp_path)
        seq = app_id.removeprefix("application_")
        # s0 has finished, s1's two tasks run
        wait_until(lambda: len(list(marks.glob("s1-*"))) == 2, 120, "the second stage to start")
        tasks = wait_until(lambda: len(t := _task_processes(seq)) == 2 and t, 60, "both s1 tasks")
        (am_cid,) = _am_containers(seq)
        killed_at = time.monotonic()
        am_process(am_cid).send_signal(signal.SIGKILL)
        wait_until(lambda: len(client.attempts(app_id)) == 2 and
                   len([c for c in _am_containers(seq) if c != am_cid]) == 1, 60, "a second attempt's AM")
        new_attempt_s = time.monotonic() - killed_at
        # the running tasks go on in the same processes, now the second attempt's
        assert {c: p for c, p in _task_processes(seq).items() if c in tasks} == tasks
        final = wait_final(client, app_id, 180)
        assert (final.state, final.final_status) == ("FINISHED", "SUCCEEDED"), final.diagnostics
        assert final.attempts == 2
    runs = {f.name: f.read_text().split() for f in marks.iterdir()}
    assert sorted(runs) == ["s0-0", "s0-1", "s1-0", "s1-1", "s2-0"]
    assert all(len(lines) == 1 for lines in runs.values()), runs  # nothing ran twice
    print(f"AM SIGKILL to the next attempt's AM running: {new_attempt_s:.1f} s; {len(tasks)} running tasks kept")
