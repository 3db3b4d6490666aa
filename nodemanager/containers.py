"""The node's containers: NEW -> RUNNING -> COMPLETE, stops, memory limits and what to report.

All state lives in one asyncio loop. Completed containers stay here (and their logs on disk) until
the RM has seen their final status and either the application ended or the retention elapsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from common.exits import (
    EXIT_ABORTED,
    EXIT_INVALID,
    EXIT_KILLED_AFTER_APP_COMPLETION,
    EXIT_KILLED_BY_APPMASTER,
    EXIT_KILLED_BY_RESOURCEMANAGER,
    EXIT_KILLED_EXCEEDED_PMEM,
)
from common.resources import MEMORY
from common.tokens import ContainerTokenFields
from nodemanager.config import NodeManagerConfig
from nodemanager.launch import (
    ContainerDirs,
    LaunchError,
    LaunchSpec,
    check_reachable,
    container_account,
    container_dirs,
    exit_code,
    give,
    kill_group,
    localize,
    plan_process,
    process_tree,
    spawn,
    validate,
)
from nodemanager.limits import CgroupV2, MemorySample, pmem_diagnostic, watch_memory
from proto import shepherd_pb2 as pb

log = logging.getLogger(__name__)

# YARN's ContainerExitStatus values that are not process exit codes (one definition, in the core)
ABORTED = EXIT_ABORTED
KILLED_EXCEEDED_PMEM = EXIT_KILLED_EXCEEDED_PMEM
KILLED_BY_APPMASTER = EXIT_KILLED_BY_APPMASTER
KILLED_BY_RESOURCEMANAGER = EXIT_KILLED_BY_RESOURCEMANAGER
KILLED_AFTER_APP_COMPLETION = EXIT_KILLED_AFTER_APP_COMPLETION
INVALID = EXIT_INVALID

ContainerState = Literal["NEW", "RUNNING", "COMPLETE"]
_PB_STATE = {
    "NEW": pb.CONTAINER_NEW,
    "RUNNING": pb.CONTAINER_RUNNING,
    "COMPLETE": pb.CONTAINER_COMPLETE,
}
_MB = 1024 * 1024


def now_ms() -> int:
    return int(time.time() * 1000)


class ContainerExists(Exception):
    pass


@dataclass(eq=False)
class Container:
    container_id: str
    app_id: str
    user: str
    resource: dict[str, int]
    dirs: ContainerDirs
    state: ContainerState = "NEW"
    exit_status: int = INVALID
    diagnostics: str = ""
    start_time_ms: int = field(default_factory=now_ms)
    finish_time_ms: int = 0
    pid: int | None = None
    kill_request: tuple[int, str] | None = None  # (exit status, diagnostics) once a stop is asked
    acked: bool = False  # the RM has received the COMPLETE status
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def status(self) -> pb.ContainerStatus:
        return pb.ContainerStatus(
            container_id=self.container_id,
            state=_PB_STATE[self.state],
            exit_status=self.exit_status,
            diagnostics=self.diagnostics,
            start_time_ms=self.start_time_ms,
            finish_time_ms=self.finish_time_ms,
        )


class ContainerTable:
    def __init__(
        self,
        cfg: NodeManagerConfig,
        *,
        nm_host: str,
        nm_port: int,
        nm_http_port: int,
        cgroups: CgroupV2 | None = None,
    ) -> None:
        self._cfg = cfg
        self._nm = (nm_host, nm_port, nm_http_port)
        self._cgroups = cgroups
        # a NodeManager running as root runs containers as an unprivileged account (YARN's nonsecure-mode
        # local user), never as root unless the operator said so
        self.account = container_account(cfg.container_user, cfg.allow_root_containers)
        if self.account is not None:
            check_reachable(self.account, cfg.work_dir)
            log.info("containers run as %s (uid %d)", self.account.name, self.account.uid)
        elif cfg.allow_root_containers and os.geteuid() == 0:
            log.warning("ROOT CONTAINERS: shepherd.nodemanager.allow-root-containers is set and this NodeManager "
                        "runs as root, so every container runs as root")
        self._containers: dict[str, Container] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._finished_apps: set[str] = set()

    # ------------------------------------------------------------ queries

    def get(self, container_id: str) -> Container | None:
        return self._containers.get(container_id)

    def all(self) -> list[Container]:
        return list(self._containers.values())

    def to_report(self) -> list[Container]:
        """Every container whose latest status the RM still needs."""
        return [c for c in self._containers.values() if not (c.state == "COMPLETE" and c.acked)]

    def acknowledge(self, container_ids: Iterable[str]) -> None:
        """The RM received these COMPLETE statuses."""
        for cid in container_ids:
            c = self._containers.get(cid)
            if c is not None and c.state == "COMPLETE":
                c.acked = True

    def used(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self._containers.values():
            if c.state != "COMPLETE":
                for k, v in c.resource.items():
                    out[k] = out.get(k, 0) + v
        return out

    # ------------------------------------------------------------ start

    def start(self, token: ContainerTokenFields, spec: LaunchSpec) -> Container:
        """Accept a container and launch it in the background (raises LaunchError, ContainerExists)."""
        if token.container_id in self._containers:
            raise ContainerExists(f"Container {token.container_id} already exists on this node")
        validate(spec)
        c = Container(
            container_id=token.container_id,
            app_id=token.app_id,
            user=token.user,
            resource=dict(token.resource),
            dirs=container_dirs(self._cfg.work_dir, token.app_id, token.container_id),
        )
        self._containers[c.container_id] = c
        self._finished_apps.discard(c.app_id)
        self._background(self._run(c, spec))
        return c

    def _give_dirs(self, c: Container) -> None:
        """The container's work, log and staging directories belong to the account it runs as."""
        give(self.account, c.dirs.app, c.dirs.logs.parent)
        give(self.account, c.dirs.work, c.dirs.logs, c.dirs.app / ".staging" / c.container_id, tree=True)

    async def _run(self, c: Container, spec: LaunchSpec) -> None:
        try:
            await self._launch_and_wait(c, spec)
        except Exception as exc:  # a container's failure must never take the daemon down
            log.exception("container %s failed", c.container_id)
            self._complete(c, INVALID, f"Container failed on the NodeManager: {exc}")
        finally:
            if c.state != "COMPLETE":  # cancelled while running
                self._complete(c, c.kill_request[0] if c.kill_request else ABORTED, c.diagnostics)

    async def _launch_and_wait(self, c: Container, spec: LaunchSpec) -> None:
        nm_host, nm_port, nm_http_port = self._nm
        try:
            c.dirs.work.mkdir(parents=True, exist_ok=True)
            c.dirs.logs.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(localize, spec.local_resources, c.dirs.work)
            await asyncio.to_thread(self._give_dirs, c)
            plan = plan_process(
                spec,
                c.dirs,
                container_id=c.container_id,
                app_id=c.app_id,
                user=c.user,
                nm_host=nm_host,
                nm_port=nm_port,
                nm_http_port=nm_http_port,
            )
        except (LaunchError, OSError) as exc:
            self._complete(c, INVALID, f"Container localization failed: {exc}")
            return
        if c.kill_request is not None:
            self._complete(c, *c.kill_request)
            return
        limit_mb = c.resource.get(MEMORY, 0)
        cgroup = self._make_cgroup(c, limit_mb)
        try:
            proc = await spawn(plan, c.dirs, self.account)
        except OSError as exc:
            if cgroup is not None:
                CgroupV2.remove(cgroup)
            self._complete(c, INVALID, f"Container launch failed: {exc}")
            return
        c.pid, c.state = proc.pid, "RUNNING"
        if cgroup is not None:  # children forked in the first instants stay outside; bash rarely has any
            try:
                CgroupV2.add(cgroup, proc.pid)
            except OSError as exc:
                log.warning("cannot move %s into its cgroup (%s); monitoring RSS", c.container_id, exc)
                CgroupV2.remove(cgroup)
                cgroup = None
        if c.kill_request is not None:  # stopped while it was being launched
            self._background(self._terminate(c, self._cfg.stop_grace_s))
        monitor: asyncio.Task[None] | None = None
        if limit_mb > 0 and cgroup is None:
            monitor = asyncio.create_task(
                watch_memory(proc.pid, limit_mb, self._cfg.memory_check_interval_s, self._breach_handler(c))
            )
        log.info("container %s running as pid %d", c.container_id, proc.pid)
        try:
            code = exit_code(await proc.wait())
        finally:
            if monitor is not None:
                monitor.cancel()
        # The leader is gone; make sure nothing else of the container survives it.
        await kill_group(proc.pid, (), 0 if c.kill_request else self._cfg.stop_grace_s)
        if c.kill_request is not None:
            status, diag = c.kill_request
            self._complete(c, status, f"{diag}\nContainer killed on request. Exit code is {code}")
        elif cgroup is not None and CgroupV2.oom_killed(cgroup):
            usage = MemorySample(CgroupV2.peak_bytes(cgroup), ())
            self._complete(
                c, KILLED_EXCEEDED_PMEM, pmem_diagnostic(proc.pid, c.container_id, usage, limit_mb)
            )
        elif code != 0:
            self._complete(c, code, f"Container exited with a non-zero exit code {code}.")
        else:
            self._complete(c, 0, "")
        if cgroup is not None:
            CgroupV2.remove(cgroup)

    def _make_cgroup(self, c: Container, limit_mb: int) -> Path | None:
        if self._cgroups is None or limit_mb <= 0:
            return None
        try:
            return self._cgroups.create(c.container_id, limit_mb * _MB)
        except OSError as exc:
            log.warning("cannot create a cgroup for %s (%s); monitoring RSS", c.container_id, exc)
            return None

    def _breach_handler(self, c: Container) -> Callable[[MemorySample], Awaitable[None]]:
        async def on_breach(sample: MemorySample) -> None:
            if c.kill_request is not None or c.pid is None:
                return
            diag = pmem_diagnostic(c.pid, c.container_id, sample, c.resource.get(MEMORY, 0))
            log.warning("%s", diag.splitlines()[0])
            c.kill_request = (KILLED_EXCEEDED_PMEM, diag)
            await self._terminate(c, 0)

        return on_breach

    def _complete(self, c: Container, exit_status: int, diagnostics: str) -> None:
        if c.state == "COMPLETE":
            return
        c.state, c.exit_status, c.diagnostics = "COMPLETE", exit_status, diagnostics
        c.finish_time_ms = now_ms()
        c.done.set()
        log.info("container %s completed with exit status %d", c.container_id, exit_status)

    # ------------------------------------------------------------ stop

    def request_stop(self, container_id: str, exit_status: int, diagnostics: str) -> bool:
        """Start stopping a container; False when it is unknown. Stopping a completed one is a no-op."""
        c = self._containers.get(container_id)
        if c is None:
            return False
        if c.state == "COMPLETE" or c.kill_request is not None:
            return True
        c.kill_request = (exit_status, diagnostics)
        if c.pid is not None:
            self._background(self._terminate(c, self._cfg.stop_grace_s))
        return True

    async def _terminate(self, c: Container, grace_s: float) -> None:
        if c.pid is None or c.state == "COMPLETE":
            return
        tree = await asyncio.to_thread(process_tree, c.pid)
        await kill_group(c.pid, tree, grace_s)

    def finish_app(self, app_id: str) -> None:
        """The application ended: stop its containers; its state goes once the RM has seen them."""
        self._finished_apps.add(app_id)
        for c in self.all():
            if c.app_id == app_id:
                self.request_stop(
                    c.container_id,
                    KILLED_AFTER_APP_COMPLETION,
                    "Container killed after the application ended.",
                )

    async def stop_all(self, exit_status: int, diagnostics: str, timeout_s: float | None = None) -> None:
        running = [c for c in self._containers.values() if c.state != "COMPLETE"]
        for c in running:
            self.request_stop(c.container_id, exit_status, diagnostics)
        if running:
            limit = timeout_s if timeout_s is not None else self._cfg.stop_grace_s + 10
            await asyncio.wait([asyncio.ensure_future(c.done.wait()) for c in running], timeout=limit)

    async def purge(self) -> None:
        """Forget acknowledged completed containers of ended apps or past the retention."""
        horizon = now_ms() - int(self._cfg.completed_retention_s * 1000)
        for c in self.all():
            if (
                c.state == "COMPLETE"
                and c.acked
                and (c.app_id in self._finished_apps or c.finish_time_ms < horizon)
            ):
                del self._containers[c.container_id]
        live_apps = {c.app_id for c in self._containers.values()}
        for app_id in list(self._finished_apps - live_apps):
            self._finished_apps.discard(app_id)
            if self._cfg.delete_app_dirs:
                app_dir = container_dirs(self._cfg.work_dir, app_id, "-").app
                await asyncio.to_thread(shutil.rmtree, app_dir, True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
