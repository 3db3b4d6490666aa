"""``python -m nodemanager.supervise``: the small process every container runs under.

The NodeManager starts one supervisor per container and hands it the launch (argv, environment, working
directory, the account to run as, the stop grace) as JSON on stdin. The supervisor

1. makes itself a child sub-reaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so that every process the
   container starts -- ``setsid`` daemons and double-forked grandchildren included -- stays its descendant:
   an orphan re-parents to it, not to init;
2. while it has not recorded itself, dies with the NodeManager (``PR_SET_PDEATHSIG``), so a NodeManager
   killed during a launch leaves either nothing running or a supervisor it will find on restart;
3. records its pid and start time, then the task's, in ``supervisor.json``;
4. starts the task in a new session (as the container's account), waits for it, then stops what the task
   left behind: SIGTERM to every descendant, SIGKILL after the grace, again and again until it has no
   child left;
5. only then writes the task's exit code to ``exit.json`` (atomically, synced) and exits.

So an exit code survives the NodeManager being down, and a completion is never recorded while one process
of the container is alive. SIGTERM (or SIGINT) asks for a stop with the grace, SIGUSR1 for one without.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from nodemanager.statefiles import EXIT, SUPERVISOR, boot_id, orphaned, start_ticks, write_json

ORPHAN_CHECK_S = 2.0  # how often a supervisor looks whether its NodeManager is still there
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# the exit code recorded when the task could not be started at all (a shell's "command not found")
LAUNCH_FAILED = 127


def prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}, {value}): {os.strerror(err)}")


def shell_code(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128+N for a signal N."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128


class Supervisor:
    def __init__(self, state_dir: Path, spec: dict[str, Any]) -> None:
        self.state_dir = state_dir
        self.argv: list[str] = [str(a) for a in spec["argv"]]
        self.env: dict[str, str] = {str(k): str(v) for k, v in spec.get("env", {}).items()}
        self.cwd: str | None = spec.get("cwd")
        self.uid: int | None = spec.get("uid")
        self.gid: int | None = spec.get("gid")
        self.grace_s = max(0.0, float(spec.get("grace_s", 3.0)))
        # the NodeManager's alive file: when it has been silent past the RM's node expiry, the task is stopped
        self.alive = Path(spec["alive_file"]) if spec.get("alive_file") else None
        self.orphaned = False
        self._check_at = 0.0
        self.stop: str | None = None  # "graceful" or "now" once asked
        self.task: subprocess.Popen[bytes] | None = None
        self.status: int | None = None  # the task's wait status once reaped
        self._term_sent = False
        self._kill_at: float | None = None
        self._wake_r, self._wake_w = os.pipe()
        self.boot = boot_id()

    # ------------------------------------------------------------ signals

    def install_signals(self) -> None:
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        signal.set_wakeup_fd(self._wake_w)
        signal.signal(signal.SIGCHLD, self._on_child)
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGUSR1, self._on_stop_now)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # no terminal; never a reason to leave the task

    def _on_child(self, signum: int, frame: FrameType | None) -> None:
        pass  # the wakeup fd does the work

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        if self.stop is None:
            self.stop = "graceful"

    def _on_stop_now(self, signum: int, frame: FrameType | None) -> None:
        self.stop = "now"

    # ------------------------------------------------------------ the task

    def record(self, **extra: Any) -> None:
        me = os.getpid()
        write_json(self.state_dir / SUPERVISOR, {"pid": me, "start_ticks": start_ticks(me), "boot_id": self.boot,
                                                 **extra}, sync=True)

    def start_task(self) -> str | None:
        """Start the task; the reason when it cannot be started."""
        identity: dict[str, Any] = {}
        if self.uid is not None:
            identity = {"user": self.uid, "group": self.gid, "extra_groups": []}
        try:
            self.task = subprocess.Popen(
                self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL, start_new_session=True,
                close_fds=True, **identity,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            return f"cannot start {self.argv[0]}: {exc}"
        pid = self.task.pid
        self.record(task_pid=pid, task_pgid=pid, task_start_ticks=start_ticks(pid))
        return None

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process().children(recursive=True)
        except psutil.Error:
            return []

    def signal_tree(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the task's group and every descendant; a SIGKILL round stops them all first, so
        that none of them forks between the walk and its own SIGKILL."""
        procs = self.descendants()
        for each in (signal.SIGSTOP, sig) if sig == signal.SIGKILL else (sig,):
            if self.task is not None and self.status is None:  # the group id cannot be reused before the reap
                with contextlib.suppress(OSError):
                    os.killpg(self.task.pid, each)
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    proc.send_signal(each)

    def reap(self) -> bool:
        """Reap every child that ended; False once no child is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            except InterruptedError:
                continue
            if pid == 0:
                return True
            if self.task is not None and pid == self.task.pid:
                self.status = status
                self.task.returncode = shell_code(status)

    def run(self) -> int:
        """Wait for the task, then until nothing it started is left; the task's exit code."""
        while self.reap():
            now = time.monotonic()
            if self.alive is not None and self.stop is None and now >= self._check_at:
                self._check_at = now + ORPHAN_CHECK_S
                if orphaned(self.alive, time.time()):  # the RM has given this node's work to others
                    self.orphaned, self.stop = True, "graceful"
            if (self.status is not None or self.stop is not None) and not self._term_sent:
                self._term_sent = True
                grace = 0.0 if self.stop == "now" else self.grace_s
                if grace > 0:
                    self.signal_tree(signal.SIGTERM)
                self._kill_at = now + grace
            if self.stop == "now" and self._kill_at is not None:
                self._kill_at = min(self._kill_at, now)
            timeout: float | None = ORPHAN_CHECK_S if self.alive is not None and self.stop is None else None
            if self._kill_at is not None:
                if now >= self._kill_at:
                    self.signal_tree(signal.SIGKILL)
                    timeout = 0.1
                else:
                    timeout = min(1.0, self._kill_at - now)
            self._wait(timeout)
        return shell_code(self.status) if self.status is not None else LAUNCH_FAILED

    def _wait(self, timeout: float | None) -> None:
        with contextlib.suppress(InterruptedError):
            select.select([self._wake_r], [], [], timeout)
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while os.read(self._wake_r, 512):
                pass

    def finish(self, code: int, error: str = "") -> None:
        body: dict[str, Any] = {
            "exit_code": code,
            "stopped": self.stop is not None,
            "orphaned": self.orphaned,
            "finished_ms": int(time.time() * 1000),
        }
        if error:
            body["error"] = error
        write_json(self.state_dir / EXIT, body, sync=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nodemanager.supervise")
    parser.add_argument("--state-dir", type=Path, required=True, help="the container's state directory")
    parser.add_argument("--parent", type=int, required=True, help="the NodeManager's pid")
    parser.add_argument("container_id", help="for ps(1); the state directory names the container")
    args = parser.parse_args(argv)
    spec = json.loads(sys.stdin.buffer.read() or b"{}")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != args.parent:  # the NodeManager is already gone: nothing was recorded, start nothing
        return 1
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    sup = Supervisor(args.state_dir, spec)
    sup.install_signals()
    sup.record()
    # recorded: from here on the NodeManager finds this process after a restart, so it may outlive it
    prctl(PR_SET_PDEATHSIG, 0)
    if sup.stop is not None:
        sup.finish(LAUNCH_FAILED, "stopped before the task started")
        return 0
    error = sup.start_task()
    if error is not None:
        sup.finish(LAUNCH_FAILED, error)
        print(f"shepherd: {error}", file=sys.stderr, flush=True)
        return 0
    sup.finish(sup.run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
