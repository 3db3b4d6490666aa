"""The files a container leaves under the NodeManager's work dir, shared by the daemon and the per-container
supervisor (``nodemanager.supervise``): the layout, atomic JSON writes, and process identities that survive
PID reuse.

Standard library only: the supervisor imports this module for every container it starts.

Layout, one directory per container launched on this node (owned by the NodeManager's account, 0700)::

    <work_dir>/nmstate/containers/<container id>/
        record.json      the NodeManager's record: ids, resource, token expiry, dirs, state, kill request
        supervisor.json  written by the supervisor: its own pid and start time, then the task's
        exit.json        written by the supervisor once the task and every descendant are gone
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from common.atomic import replace_file

STATE_DIR = "nmstate"
ALIVE = "alive"  # touched by a running NodeManager every heartbeat period; its content names the RM's node expiry
RECORD = "record.json"
SUPERVISOR = "supervisor.json"
EXIT = "exit.json"


def containers_root(work_dir: Path) -> Path:
    return work_dir / STATE_DIR / "containers"


def alive_file(work_dir: Path) -> Path:
    return work_dir / STATE_DIR / ALIVE


def mark_alive(path: Path, expiry_s: float | None) -> None:
    """The NodeManager is alive (its supervisors leave their tasks running). ``expiry_s``: after how long the RM
    gives a silent node up, once the RM has said so; supervisors stop their tasks when the NodeManager has been
    gone that long (the RM has by then handed the work to other nodes)."""
    want = {"pid": os.getpid(), "expiry_s": expiry_s}
    if read_json(path) != want:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, want)
    else:
        os.utime(path)


def orphaned(path: Path, now: float) -> bool:
    """Whether the NodeManager that wrote ``path`` has been gone for longer than the RM's node expiry."""
    info = read_json(path)
    expiry = info.get("expiry_s") if info is not None else None
    if not isinstance(expiry, int | float) or expiry <= 0:
        return False
    try:
        return now - path.stat().st_mtime > expiry
    except OSError:
        return False


def valid_container_id(container_id: str) -> bool:
    """A container id that is safe as one path component."""
    return (
        0 < len(container_id) < 256
        and "/" not in container_id
        and "\0" not in container_id
        and not container_id.startswith(".")
    )


def write_json(path: Path, data: dict[str, Any], *, sync: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically (a reader sees the old or the new file, never a part)."""
    replace_file(path, json.dumps(data, separators=(",", ":")).encode(), sync=sync)


def read_json(path: Path) -> dict[str, Any] | None:
    """The object in ``path``; None when it is missing or not a JSON object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def boot_id() -> str:
    """This boot of the host ("" when unknown): start times count from the boot, pids restart with it."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def same_boot(info: dict[str, Any] | None) -> bool:
    """True unless ``info`` (supervisor.json) was written during another boot of the host."""
    recorded = (info or {}).get("boot_id")
    return not recorded or recorded == boot_id()


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field 22); None when there is no
    such process or it is a zombie. A pid together with its start time names one process even after the pid
    is reused."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()  # the command name may hold spaces and parentheses
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    try:
        return int(fields[19])
    except ValueError:
        return None


def same_process(pid: int | None, ticks: int | None) -> bool:
    """True when ``pid`` is alive and is the process that started at ``ticks``."""
    return pid is not None and pid > 0 and ticks is not None and start_ticks(pid) == ticks
