"""The ResourceManager runs with ``MALLOC_ARENA_MAX=2`` however it is started: ``shepherd up`` (a LocalCluster)
starts it with the variables (``RM_MALLOC``), and a bare ``shepherd rm`` started without it starts itself again, once,
with them.
Checked where glibc reads it: the running RM process's own environment (``/proc/<pid>/environ``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rm.commands.arenas import ARENA_VAR, RESTARTED, RM_MALLOC, restart_command, rm_environment
from rm.local import RM_READY, LocalCluster

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
SHEPHERD = Path(sys.executable).parent / "shepherd"


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def without_arenas() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in (*RM_MALLOC, RESTARTED)}


def run_bare_rm(command: list[str], tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """Start ``command`` (a bare ``shepherd rm``), wait until it serves, and return its environment as the
    kernel holds it for the process that serves."""
    args = [*command, "rm", "--grpc-port", "0", "--rest-port", "0", "--data-dir", str(tmp_path / "rm"),
            "--create-store", "--ipc-client-port", "-1", "--ipc-scheduler-port", "-1", "--ipc-admin-port", "-1",
            "--log-format", "text"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    ready = threading.Event()
    seen: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if RM_READY.search(line):
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert ready.wait(60), "".join(seen[-40:])
        assert proc.poll() is None, "".join(seen[-40:])  # serving, not ended
        return environ_of(proc.pid)  # the same pid: the restart replaced the process, it did not fork
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_when_a_bare_rm_restarts_itself() -> None:
    python, script = "/usr/bin/python3", "/venv/bin/shepherd"
    orig = [python, script, "rm", "--grpc-port", "0"]
    assert restart_command(["rm", "--grpc-port", "0"], orig, python, {}) == orig
    assert restart_command(["--cluster", "prod", "rm"], [python, "-m", "rm.cli", "--cluster", "prod", "rm"],
                           python, {}) == [python, "-m", "rm.cli", "--cluster", "prod", "rm"]
    assert restart_command(["rm"], orig, python, {ARENA_VAR: "8"}) is None  # the user's value stays
    assert restart_command(["rm"], orig, python, {ARENA_VAR: ""}) is None
    assert restart_command(["rm"], orig, python, {RESTARTED: "1"}) is None  # restarted once already
    assert restart_command(["up"], [python, script, "up"], python, {}) is None  # only the RM itself
    assert restart_command(["--cluster", "rm", "app", "list"], orig, python, {}) is None
    assert restart_command(["rm", "--check-config"], orig, python, {}) is None
    assert restart_command(["rm", "--help"], orig, python, {}) is None
    assert restart_command(["rm"], [], python, {}) is None  # no command line to run again
    assert rm_environment({"PATH": "/bin"}) == {"PATH": "/bin", **RM_MALLOC}
    assert rm_environment({ARENA_VAR: "4"}) == {**RM_MALLOC, ARENA_VAR: "4"}
    assert rm_environment({"MALLOC_TRIM_THRESHOLD_": "0"})["MALLOC_TRIM_THRESHOLD_"] == "0"


@pytest.mark.parametrize("command", [[sys.executable, "-m", "rm.cli"], [str(SHEPHERD)]], ids=["module", "script"])
def test_a_bare_rm_runs_with_two_arenas(command: list[str], tmp_path: Path) -> None:
    if not Path(command[0]).exists():
        pytest.skip(f"{command[0]} is not installed")
    env = run_bare_rm(command, tmp_path, without_arenas())
    assert {name: env.get(name) for name in RM_MALLOC} == RM_MALLOC
    assert env[RESTARTED] == "1"


def test_a_bare_rm_keeps_the_users_value(tmp_path: Path) -> None:
    env = run_bare_rm([sys.executable, "-m", "rm.cli"], tmp_path, {**without_arenas(), ARENA_VAR: "4"})
    assert env[ARENA_VAR] == "4"
    assert RESTARTED not in env  # not restarted: the value was there from the start


def test_the_rm_of_shepherd_up_runs_with_two_arenas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in RM_MALLOC:
        monkeypatch.delenv(name, raising=False)
    cluster = LocalCluster(tmp_path / "cluster", allow_root_containers=True,
                           nodes=1, grpc_port=0, rest_port=0, ipc_client_port=-1,
                           ipc_scheduler_port=-1, ipc_admin_port=-1)
    cluster.start_rm()
    try:
        assert cluster.rm is not None
        assert cluster.rm.proc is not None
        env = environ_of(cluster.rm.proc.pid)
        assert {name: env.get(name) for name in RM_MALLOC} == RM_MALLOC
        assert RESTARTED not in env  # started with it: no second start
    finally:
        assert cluster.rm is not None
        cluster.rm.stop()
