"""Memory enforcement: a cgroup v2 ``memory.max`` where the host delegates one to us, otherwise a
monitor that sums the RSS of the container's process tree and kills it past the limit (the way
YARN's ContainersMonitor does)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from nodemanager.launch import process_tree

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class MemorySample:
    rss_bytes: int
    tree: tuple[tuple[int, int, str, int], ...]  # (pid, ppid, name, rss bytes)


def sample_tree(pid: int, *, include_root: bool = True) -> MemorySample:
    """RSS of a process and its descendants, or of the descendants only (blocking; psutil)."""
    total = 0
    rows: list[tuple[int, int, str, int]] = []
    for proc in process_tree(pid)[0 if include_root else 1 :]:
        try:
            with proc.oneshot():
                rss = int(proc.memory_info().rss)
                rows.append((proc.pid, proc.ppid(), proc.name(), rss))
        except psutil.Error:
            continue
        total += rss
    return MemorySample(total, tuple(rows))


def pmem_diagnostic(pid: int, container_id: str, sample: MemorySample, limit_mb: int) -> str:
    """YARN's wording, so that log scrapers and people recognise it."""
    lines = [
        (
            f"Container [pid={pid},containerID={container_id}] is running beyond physical memory limits. "
            f"Current usage: {sample.rss_bytes // _MB} MB of {limit_mb} MB physical memory used. "
            "Killing container."
        ),
        f"Dump of the process-tree for {container_id} :",
        "\t|- PID PPID EXECUTABLE RSS_MB",
    ]
    lines += [f"\t|- {p} {pp} {name} {rss // _MB}" for p, pp, name, rss in sample.tree]
    return "\n".join(lines)


async def watch_memory(
    pid: int,
    limit_mb: int,
    interval_s: float,
    on_breach: Callable[[MemorySample], Awaitable[None]],
    *,
    include_root: bool = True,
) -> None:
    """Poll the tree's RSS every ``interval_s`` (without ``pid`` itself unless ``include_root``: a container's
    supervisor is not the container's); call ``on_breach`` once when it exceeds the limit."""
    limit = limit_mb * _MB
    while True:
        if not psutil.pid_exists(pid):
            return
        sample = await asyncio.to_thread(lambda: sample_tree(pid, include_root=include_root))
        if sample.rss_bytes > limit:
            await on_breach(sample)
            return
        await asyncio.sleep(interval_s)


# ---------------------------------------------------------------- cgroup v2


class CgroupV2:
    """Per-container child cgroups under a delegated parent, each with ``memory.max``."""

    def __init__(self, parent: Path) -> None:
        self.parent = parent

    @staticmethod
    def detect(root: Path = CGROUP_ROOT) -> CgroupV2 | None:
        """A usable parent cgroup, or None (cgroup v1/hybrid hosts, no delegation, no permission).

        cgroup v2 lets a cgroup hand controllers to children only while it holds no processes, so
        when the daemon's own cgroup refuses, the daemon moves itself into a ``nodemanager`` leaf
        (what systemd's ``Delegate=yes`` expects) and containers go under a sibling parent.
        """
        parent: Path | None = None
        try:
            own = _own_cgroup()
            if own is None or not (root / "cgroup.controllers").exists():
                return None
            own_dir = root / own.lstrip("/")
            if "memory" not in (own_dir / "cgroup.controllers").read_text().split():
                return None
            try:
                _enable_memory(own_dir)
            except OSError:
                if own_dir == root:
                    raise
                leaf = own_dir / "nodemanager"
                leaf.mkdir(exist_ok=True)
                (leaf / "cgroup.procs").write_text(str(os.getpid()))
                _enable_memory(own_dir)
            parent = own_dir / f"shepherd-containers-{os.getpid()}"
            parent.mkdir(exist_ok=True)
            _enable_memory(parent)
            probe = CgroupV2(parent)
            probe.remove(probe.create("probe", 1024 * _MB))
            log.info("container memory limits: cgroup v2 under %s", parent)
            return probe
        except OSError as exc:
            log.info("cgroup v2 memory limits unavailable (%s); monitoring RSS instead", exc)
            if parent is not None:
                with contextlib.suppress(OSError):
                    parent.rmdir()
            return None

    def create(self, name: str, limit_bytes: int) -> Path:
        path = self.parent / name
        path.mkdir(exist_ok=True)
        (path / "memory.max").write_text(str(limit_bytes))
        with contextlib.suppress(OSError):
            (path / "memory.swap.max").write_text("0")
        with contextlib.suppress(OSError):
            (path / "memory.oom.group").write_text("1")
        return path

    @staticmethod
    def add(path: Path, pid: int) -> None:
        (path / "cgroup.procs").write_text(str(pid))

    @staticmethod
    def oom_killed(path: Path) -> bool:
        with contextlib.suppress(OSError, ValueError):
            for line in (path / "memory.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value) > 0
        return False

    @staticmethod
    def peak_bytes(path: Path) -> int:
        for name in ("memory.peak", "memory.current"):
            with contextlib.suppress(OSError, ValueError):
                return int((path / name).read_text().strip())
        return 0

    @staticmethod
    def remove(path: Path) -> None:
        with contextlib.suppress(OSError):
            (path / "cgroup.kill").write_text("1")
        with contextlib.suppress(OSError):
            path.rmdir()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.parent.rmdir()


def _enable_memory(cgroup: Path) -> None:
    (cgroup / "cgroup.subtree_control").write_text("+memory")


def _own_cgroup() -> str | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:]
    return None
