"""What lets a restarted NodeManager take its containers back: the per-container state directory and the
handle on a container's supervisor, whether this daemon started it or found it alive after a restart.

See docs/nodemanager-recovery.md for the whole story.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodemanager.statefiles import (
    EXIT,
    RECORD,
    SUPERVISOR,
    containers_root,
    read_json,
    same_boot,
    same_process,
    start_ticks,
    valid_container_id,
    write_json,
)

log = logging.getLogger(__name__)

POLL_S = 0.2  # how often a supervisor is checked when pidfds are unavailable


@dataclass(frozen=True, slots=True)
class Found:
    """One container's state directory as a restarted NodeManager finds it."""

    container_id: str
    record: dict[str, Any] | None
    supervisor: dict[str, Any] | None  # supervisor.json
    exit: dict[str, Any] | None  # exit.json


class ContainerStore:
    """``<work_dir>/nmstate/containers/<container id>/``: one directory per container launched here."""

    def __init__(self, work_dir: Path) -> None:
        self.root = containers_root(work_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        for d in (self.root, self.root.parent):
            os.chmod(d, 0o700)  # tokens' fields and environments are nobody else's business
        self._lock: int | None = None

    def lock(self) -> None:
        """Hold the work dir for this daemon (until ``unlock()`` or its death): a second NodeManager on the same
        work dir would take this one's containers for its own."""
        path = self.root.parent / "lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise OSError(f"another NodeManager (pid {holder}) uses the work dir {self.root.parent.parent}") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock = fd

    def unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def path(self, container_id: str) -> Path:
        if not valid_container_id(container_id):
            raise ValueError(f"invalid container id {container_id!r}")
        return self.root / container_id

    def exists(self, container_id: str) -> bool:
        return valid_container_id(container_id) and self.path(container_id).exists()

    def create(self, container_id: str, record: dict[str, Any]) -> Path:
        """The new container's directory with its record; FileExistsError when it was launched here before."""
        d = self.path(container_id)
        d.mkdir(mode=0o700)
        write_json(d / RECORD, record)
        return d

    def save(self, container_id: str, record: dict[str, Any]) -> None:
        d = self.path(container_id)
        if d.is_dir():
            write_json(d / RECORD, record)

    def supervisor(self, container_id: str) -> dict[str, Any] | None:
        return read_json(self.path(container_id) / SUPERVISOR)

    def exit(self, container_id: str) -> dict[str, Any] | None:
        return read_json(self.path(container_id) / EXIT)

    def remove(self, container_id: str) -> None:
        shutil.rmtree(self.path(container_id), ignore_errors=True)

    def scan(self) -> Iterator[Found]:
        for d in sorted(self.root.iterdir()):
            if not d.is_dir() or not valid_container_id(d.name):
                continue
            yield Found(d.name, read_json(d / RECORD), read_json(d / SUPERVISOR), read_json(d / EXIT))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class SupervisorProcess:
    """A container's supervisor (``nodemanager.supervise``): this daemon's child, or one adopted after a
    restart through a pidfd, so that signals and the wait never reach another process that got its pid."""

    def __init__(self, pid: int, ticks: int | None, *, proc: asyncio.subprocess.Process | None = None,
                 pidfd: int | None = None) -> None:
        self.pid = pid
        self.ticks = ticks
        self._proc = proc
        self._pidfd = pidfd

    @classmethod
    def child(cls, proc: asyncio.subprocess.Process) -> SupervisorProcess:
        return cls(proc.pid, start_ticks(proc.pid), proc=proc)

    @classmethod
    def adopt(cls, info: dict[str, Any] | None) -> SupervisorProcess | None:
        """The supervisor ``info`` (supervisor.json) names, if that very process is still alive."""
        pid, ticks = _int((info or {}).get("pid")), _int((info or {}).get("start_ticks"))
        if pid is None or ticks is None or not same_boot(info) or not same_process(pid, ticks):
            return None
        pidfd: int | None = None
        with contextlib.suppress(OSError, AttributeError):
            pidfd = os.pidfd_open(pid)
        if not same_process(pid, ticks):  # it ended (and the pid may be reused) while the pidfd was opened
            if pidfd is not None:
                os.close(pidfd)
            return None
        return cls(pid, ticks, pidfd=pidfd)

    @property
    def adopted(self) -> bool:
        return self._proc is None

    def alive(self) -> bool:
        if self._proc is not None:
            return self._proc.returncode is None
        return same_process(self.pid, self.ticks)

    def send(self, sig: signal.Signals) -> None:
        """Signal the supervisor; nothing when it has ended."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self._proc is not None:
                if self._proc.returncode is None:
                    self._proc.send_signal(sig)
            elif self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, sig)
            elif same_process(self.pid, self.ticks):
                os.kill(self.pid, sig)

    async def wait(self) -> None:
        """Until the supervisor has exited."""
        if self._proc is not None:
            await self._proc.wait()
            return
        if self._pidfd is not None:
            loop = asyncio.get_running_loop()
            exited = loop.create_future()
            fd = self._pidfd

            def readable() -> None:
                if not exited.done():
                    exited.set_result(None)

            loop.add_reader(fd, readable)
            try:
                if self.alive():  # a pidfd becomes readable once the process has exited
                    await exited
            finally:
                loop.remove_reader(fd)
            return
        while self.alive():
            await asyncio.sleep(POLL_S)

    def close(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = None
