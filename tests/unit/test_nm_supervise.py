"""The per-container supervisor (python -m nodemanager.supervise) on its own: it records itself and the task,
waits for the task, kills what the task left behind before it records the exit code, stops on SIGTERM (with
the grace) and SIGUSR1 (at once), reports a command it cannot start, and starts nothing once its parent is
gone. Also the process identities (pid + start time) the NodeManager relies on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from nodemanager.launch import SHEPHERD_ROOT
from nodemanager.statefiles import (
    EXIT,
    SUPERVISOR,
    mark_alive,
    orphaned,
    read_json,
    same_process,
    start_ticks,
    write_json,
)


def dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def supervise(state: Path, command: str, *, grace_s: float = 0.3, parent: int | None = None,
              alive: Path | None = None) -> subprocess.Popen[bytes]:
    state.mkdir(exist_ok=True)
    spec: dict[str, Any] = {"argv": ["/bin/bash", "-c", command], "env": {"PATH": "/usr/bin:/bin"}, "cwd": str(state),
                            "grace_s": grace_s}
    if alive is not None:
        spec["alive_file"] = str(alive)
    proc = subprocess.Popen(
        [sys.executable, "-m", "nodemanager.supervise", "--state-dir", str(state),
         "--parent", str(parent or os.getpid()), "container_x"],
        stdin=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(SHEPHERD_ROOT)}, start_new_session=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(spec).encode())
    proc.stdin.close()
    return proc


def wait_file(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().endswith("\n")):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text()


def exit_record(state: Path) -> dict[str, Any]:
    record = read_json(state / EXIT)
    assert record is not None
    return record


def test_the_exit_code_is_recorded_after_every_descendant_is_gone(tmp_path: Path) -> None:
    proc = supervise(tmp_path, "setsid sleep 1000 & echo $! > setsid.pid; (sleep 1001 & echo $! > orphan.pid); "
                               "setsid bash -c 'trap \"\" TERM; while :; do sleep 0.1; done' & echo $! > stubborn.pid;"
                               " until [ -f go ]; do sleep 0.02; done; exit 3")
    pids = [int(wait_file(tmp_path / f)) for f in ("setsid.pid", "orphan.pid", "stubborn.pid")]
    assert not any(dead(p) for p in pids)
    # the double-forked sleep lost its parent at once: it is the supervisor's child now (sub-reaper)
    assert psutil.Process(pids[1]).ppid() == proc.pid
    # the supervisor records the task's pid once Popen returns, which a busy machine may let the task outrun
    deadline = time.monotonic() + 10
    while (info := read_json(tmp_path / SUPERVISOR)) is None or "task_pid" not in info:
        assert time.monotonic() < deadline, info
        time.sleep(0.02)
    assert info["pid"] == proc.pid
    assert same_process(info["task_pid"], info["task_start_ticks"])
    (tmp_path / "go").touch()
    assert proc.wait(10) == 0
    assert all(dead(p) for p in pids)  # the stubborn one got SIGKILL after the grace
    record = exit_record(tmp_path)
    assert record["exit_code"] == 3
    assert record["stopped"] is False


def test_sigterm_stops_with_the_grace_and_sigusr1_at_once(tmp_path: Path) -> None:
    graceful = supervise(tmp_path / "a", "trap '' TERM; echo $$ > pid; while :; do sleep 0.05; done", grace_s=0.5)
    now = supervise(tmp_path / "b", "trap '' TERM; echo $$ > pid; while :; do sleep 0.05; done", grace_s=60)
    pids = [int(wait_file(tmp_path / d / "pid")) for d in ("a", "b")]
    graceful.send_signal(signal.SIGTERM)
    now.send_signal(signal.SIGUSR1)
    assert graceful.wait(10) == 0
    assert now.wait(10) == 0  # not the 60 s grace
    assert all(dead(p) for p in pids)
    for d in ("a", "b"):
        record = exit_record(tmp_path / d)
        assert record["exit_code"] == 128 + signal.SIGKILL
        assert record["stopped"] is True


def test_a_command_that_cannot_start_is_recorded(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    spec = {"argv": ["/nonexistent/tool"], "env": {}, "cwd": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "nodemanager.supervise", "--state-dir", str(tmp_path), "--parent", str(os.getpid()),
         "container_x"],
        input=json.dumps(spec).encode(), env={**os.environ, "PYTHONPATH": str(SHEPHERD_ROOT)}, capture_output=True,
        timeout=10, check=False,
    )
    assert proc.returncode == 0
    record = exit_record(tmp_path)
    assert record["exit_code"] == 127
    assert "/nonexistent/tool" in record["error"]
    assert b"cannot start" in proc.stderr


def test_nothing_starts_once_the_parent_is_gone(tmp_path: Path) -> None:
    proc = supervise(tmp_path, "touch started", parent=1)  # not its parent: as if the NodeManager had died
    assert proc.wait(10) == 1
    assert not (tmp_path / SUPERVISOR).exists()
    assert not (tmp_path / "started").exists()


def test_process_identities() -> None:
    me = start_ticks(os.getpid())
    assert isinstance(me, int)
    assert same_process(os.getpid(), me)
    assert not same_process(os.getpid(), me + 1)  # the same pid, another start: a reused pid
    assert start_ticks(2**22 + 1) is None
    assert not same_process(None, me)


def test_json_state_files_are_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    write_json(path, {"a": 1})
    write_json(path, {"a": 2}, sync=True)
    assert read_json(path) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]
    path.write_text("[1, 2")
    assert read_json(path) is None
    assert read_json(tmp_path / "missing.json") is None


def test_a_task_whose_nodemanager_is_gone_past_the_rms_expiry_is_stopped(tmp_path: Path) -> None:
    alive = tmp_path / "alive"
    mark_alive(alive, expiry_s=1.0)
    proc = supervise(tmp_path / "c", "sleep 1000", alive=alive)
    kept = tmp_path / "kept"
    mark_alive(alive, expiry_s=1.0)
    proc_kept = supervise(kept, "sleep 1000", alive=tmp_path / "never-written")  # no expiry known: runs on
    deadline = time.monotonic() + 20
    while proc.poll() is None:  # nobody touches the alive file: after 1 s the NodeManager counts as gone
        assert time.monotonic() < deadline, "the orphaned task was never stopped"
        time.sleep(0.1)
    record = exit_record(tmp_path / "c")
    assert record["orphaned"] is True
    assert record["exit_code"] == 143
    assert proc_kept.poll() is None
    proc_kept.send_signal(signal.SIGUSR1)
    proc_kept.wait(10)


def test_the_alive_file_says_whether_the_nodemanager_has_been_gone_past_the_expiry(tmp_path: Path) -> None:
    alive = tmp_path / "alive"
    assert not orphaned(alive, time.time())  # never written: nothing known
    mark_alive(alive, None)
    assert not orphaned(alive, time.time() + 10_000)  # registered with no expiry known
    mark_alive(alive, 30.0)
    assert not orphaned(alive, time.time() + 10)
    assert orphaned(alive, time.time() + 31)
