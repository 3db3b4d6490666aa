"""``shepherd down``: stop a local cluster that ``shepherd up`` runs (in another shell or in the background).

``up`` writes ``<data-dir>/up.json`` once its daemons are ready: its own pid and those of the ResourceManager and
NodeManagers, each with its process start time (so a pid the system has since given to another process is
never signalled), and removes it when it stops. ``down`` sends SIGTERM to ``up`` (which stops the
NodeManagers, then the ResourceManager, as Ctrl-C does), then to any daemon still running (``up`` killed
outright leaves them), and waits for each to exit."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import typer

from rm.commands.output import console, error

STATE_FILE = "up.json"


@dataclass(frozen=True, slots=True)
class Proc:
    role: str  # up, rm, nm0, nm1, ...
    pid: int
    started: float  # psutil's create_time(): tells this process from a later one with the same pid


def _started(pid: int) -> float:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return 0.0


def write_state(data_dir: Path, cluster: Any) -> Path:
    """Record the processes of a running local cluster (``rm.local.LocalCluster``) for ``shepherd down``."""
    procs = [("up", os.getpid())]
    if cluster.rm is not None and cluster.rm.proc is not None:
        procs.append(("rm", cluster.rm.proc.pid))
    procs += [(f"nm{i}", nm.proc.pid) for i, nm in enumerate(cluster.nms) if nm.proc is not None]
    state = {"rest": cluster.rest_url, "rm": cluster.rm_address,
             "processes": [{"role": role, "pid": pid, "started": _started(pid)} for role, pid in procs]}
    path = data_dir / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1) + "\n")
    tmp.replace(path)
    return path


def remove_state(data_dir: Path) -> None:
    """``up`` is stopping: forget its processes (only if the file is still its own)."""
    path = data_dir / STATE_FILE
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        procs = json.loads(path.read_text())["processes"]
        if any(p["role"] == "up" and p["pid"] == os.getpid() for p in procs):
            path.unlink()


def read_state(path: Path) -> list[Proc]:
    data = json.loads(path.read_text())
    return [Proc(str(p["role"]), int(p["pid"]), float(p["started"])) for p in data["processes"]]


def alive(p: Proc) -> bool:
    """Still the process ``up`` recorded (same pid, same start time), and not a zombie."""
    try:
        proc = psutil.Process(p.pid)
        return abs(proc.create_time() - p.started) < 0.5 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal(p: Proc, sig: int) -> None:
    if alive(p):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p.pid, sig)


def _wait(procs: list[Proc], timeout: float) -> list[Proc]:
    """Wait up to ``timeout`` for them to exit; those still running."""
    deadline = time.monotonic() + timeout
    left = [p for p in procs if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if alive(p)]
    return left


def down(
    data_dir: Path = typer.Option(Path(".shepherd"), help="data directory of the local cluster (as given to `up`)"),
    timeout: float = typer.Option(60.0, "--timeout", min=1.0, help="seconds to wait for the daemons to exit before "
                                  "they are killed (SIGKILL)"),
) -> None:
    """Stop the local cluster `shepherd up` runs from --data-dir (in the background or another shell): its
    NodeManagers, then its ResourceManager, waiting for each to exit. Its state stays for the next `up`.

    Exits 0 when nothing of it runs any more (also when nothing ran), 1 if a daemon had to be killed or could
    not be stopped."""
    path = data_dir / STATE_FILE
    try:
        procs = read_state(path)
    except FileNotFoundError:
        console.print(f"no local cluster is running from {data_dir} (no {STATE_FILE}); nothing to stop",
                      highlight=False, soft_wrap=True)
        raise typer.Exit(0) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        error(f"cannot read {path}: {exc}")
        raise typer.Exit(1) from None
    running = [p for p in procs if alive(p)]
    if not running:
        path.unlink(missing_ok=True)
        console.print(f"the local cluster of {data_dir} is not running (its processes are gone); removed {path}",
                      highlight=False, soft_wrap=True)
        raise typer.Exit(0)
    up = [p for p in running if p.role == "up"]
    daemons = [p for p in running if p.role != "up"]
    for p in up:  # `up` stops its NodeManagers, then its ResourceManager
        _signal(p, signal.SIGTERM)
    left = _wait(running, timeout / 2 if up else 0.0)
    # `up` gone, or not stopping them in time: the NodeManagers first, then the ResourceManager
    for group in ([p for p in left if p.role.startswith("nm")], [p for p in left if p.role in ("rm", "up")]):
        for p in group:
            _signal(p, signal.SIGTERM)
        left = [p for p in left if p not in group] + _wait(group, timeout / 4)
    killed = [p for p in left if alive(p)]
    for p in killed:
        _signal(p, signal.SIGKILL)
    stuck = _wait(killed, 5.0)
    if not stuck:
        path.unlink(missing_ok=True)
    names = ", ".join(f"{p.role} (pid {p.pid})" for p in daemons)
    if stuck:
        error(f"could not stop {', '.join(f'{p.role} (pid {p.pid})' for p in stuck)}")
        raise typer.Exit(1)
    if killed:
        error(f"killed {', '.join(f'{p.role} (pid {p.pid})' for p in killed)} after {timeout:g} s")
        raise typer.Exit(1)
    console.print(f"stopped the local cluster of {data_dir}: {names or 'shepherd up'}; its state stays for the "
                  "next `shepherd up`", highlight=False, soft_wrap=True)
