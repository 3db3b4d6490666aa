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
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import psutil

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
    LIMIT_USERS,
    Account,
    ContainerDirs,
    LaunchError,
    LaunchSpec,
    check_reachable,
    container_account,
    container_dirs,
    give,
    kill_processes,
    localize,
    plan_process,
    process_tree,
    processes_of,
    session_members,
    spawn_supervised,
    submitter_account,
    validate,
)
from nodemanager.limits import CgroupV2, MemorySample, pmem_diagnostic, watch_memory
from nodemanager.recovery import ContainerStore, Found, SupervisorProcess
from nodemanager.statefiles import alive_file, read_json, same_boot, same_process, write_json
from proto import shepherd_pb2 as pb

log = logging.getLogger(__name__)

# YARN's ContainerExitStatus values that are not process exit codes (one definition, in the core)
ABORTED = EXIT_ABORTED
KILLED_EXCEEDED_PMEM = EXIT_KILLED_EXCEEDED_PMEM
KILLED_BY_APPMASTER = EXIT_KILLED_BY_APPMASTER
KILLED_BY_RESOURCEMANAGER = EXIT_KILLED_BY_RESOURCEMANAGER
KILLED_AFTER_APP_COMPLETION = EXIT_KILLED_AFTER_APP_COMPLETION
INVALID = EXIT_INVALID
KILLED_STATUSES = frozenset({ABORTED, KILLED_BY_APPMASTER, KILLED_BY_RESOURCEMANAGER, KILLED_AFTER_APP_COMPLETION,
                             KILLED_EXCEEDED_PMEM})

ContainerState = Literal["NEW", "RUNNING", "COMPLETE"]
_PB_STATE = {
    "NEW": pb.CONTAINER_NEW,
    "RUNNING": pb.CONTAINER_RUNNING,
    "COMPLETE": pb.CONTAINER_COMPLETE,
}
_MB = 1024 * 1024
# how long a supervisor may take to start its task, and to stop it beyond the grace, before the daemon acts
SUPERVISOR_START_S = 60.0
SUPERVISOR_SLACK_S = 5.0


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
    pid: int | None = None  # the task's (the container's own process, under its supervisor)
    kill_request: tuple[int, str] | None = None  # (exit status, diagnostics) once a stop is asked
    acked: bool = False  # the RM has received the COMPLETE status
    done: asyncio.Event = field(default_factory=asyncio.Event)
    token_expires: float = 0.0  # the container token's expiry: until then a relaunch is refused
    task_ticks: int | None = None  # the task's start time (clock ticks since boot), against PID reuse
    supervisor: SupervisorProcess | None = None
    cgroup: Path | None = None
    recovered: bool = False  # taken back from a previous run of this NodeManager

    def record(self) -> dict[str, Any]:
        """What the state directory keeps of this container (the supervisor keeps its own pids)."""
        return {
            "container_id": self.container_id,
            "app_id": self.app_id,
            "user": self.user,
            "resource": self.resource,
            "token_expires": self.token_expires,
            "work_dir": str(self.dirs.work),
            "log_dir": str(self.dirs.logs),
            "app_dir": str(self.dirs.app),
            "state": self.state,
            "start_time_ms": self.start_time_ms,
            "pid": self.pid,
            "pgid": self.pid,  # the task leads its own session and process group
            "task_start_ticks": self.task_ticks,
            "supervisor_pid": self.supervisor.pid if self.supervisor else None,
            "supervisor_start_ticks": self.supervisor.ticks if self.supervisor else None,
            "cgroup": str(self.cgroup) if self.cgroup else None,
            "kill_request": list(self.kill_request) if self.kill_request else None,
            "exit_status": self.exit_status,
            "diagnostics": self.diagnostics,
            "finish_time_ms": self.finish_time_ms,
            "acked": self.acked,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Container:
        kill = data.get("kill_request")
        state = data.get("state")
        return cls(
            container_id=str(data["container_id"]),
            app_id=str(data["app_id"]),
            user=str(data.get("user", "")),
            resource={str(k): int(v) for k, v in dict(data.get("resource") or {}).items()},
            dirs=ContainerDirs(work=Path(data["work_dir"]), logs=Path(data["log_dir"]), app=Path(data["app_dir"])),
            state=state if state in _PB_STATE else "NEW",
            exit_status=int(data.get("exit_status", INVALID)),
            diagnostics=str(data.get("diagnostics", "")),
            start_time_ms=int(data.get("start_time_ms") or now_ms()),
            finish_time_ms=int(data.get("finish_time_ms") or 0),
            pid=data.get("pid") if isinstance(data.get("pid"), int) else None,
            kill_request=(int(kill[0]), str(kill[1])) if isinstance(kill, list) and len(kill) == 2 else None,
            acked=bool(data.get("acked", False)),
            token_expires=float(data.get("token_expires") or 0.0),
            task_ticks=data.get("task_start_ticks") if isinstance(data.get("task_start_ticks"), int) else None,
            cgroup=Path(data["cgroup"]) if data.get("cgroup") else None,
            recovered=True,
        )

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
        # limit-users false: each container as its app's user's account instead (resolved at its launch)
        self.as_submitter = self.account is not None and not cfg.limit_users
        if self.as_submitter:
            log.info("containers run as their app's user (%s is false), never root nor a uid below %d",
                     LIMIT_USERS, cfg.min_user_id)
        elif self.account is not None:
            check_reachable(self.account, cfg.work_dir)
            log.info("containers run as %s (uid %d)", self.account.name, self.account.uid)
        elif cfg.allow_root_containers and os.geteuid() == 0:
            log.warning("ROOT CONTAINERS: shepherd.nodemanager.allow-root-containers is set and this NodeManager "
                        "runs as root, so every container runs as root")
        self.store = ContainerStore(cfg.work_dir)
        self.store.lock()
        self._containers: dict[str, Container] = {}
        self._tombstones: dict[str, float] = {}  # forgotten containers whose token is still valid -> its expiry
        self._tasks: set[asyncio.Task[Any]] = set()
        self._finished_apps: set[str] = set()
        # what happened to containers in this run, counted as it happens (a completed container leaves the
        # table soon after the RM has seen it, so a scrape of the table would miss most of them)
        self.counts = {"launched": 0, "completed": 0, "failed": 0, "killed": 0}
        self.completed = asyncio.Event()  # a container completed since the heartbeat cleared it (out-of-band beat)

    @property
    def node_id(self) -> str:
        return f"{self._nm[0]}:{self._nm[1]}"

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
            if c is not None and c.state == "COMPLETE" and not c.acked:
                c.acked = True
                self._save(c)

    def used(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self._containers.values():
            if c.state != "COMPLETE":
                for k, v in c.resource.items():
                    out[k] = out.get(k, 0) + v
        return out

    def _save(self, c: Container) -> None:
        """Keep ``c``'s record in its state directory (a failure costs only its recovery after a restart)."""
        try:
            self.store.save(c.container_id, c.record())
        except (OSError, ValueError) as exc:
            log.warning("cannot record the state of container %s: %s", c.container_id, exc)

    # ------------------------------------------------------------ start

    def start(self, token: ContainerTokenFields, spec: LaunchSpec) -> Container:
        """Accept a container and launch it in the background (raises LaunchError, ContainerExists).

        A container id is launched at most once on this node, across restarts of this daemon too: its state
        directory is kept until its container token has expired."""
        cid = token.container_id
        self.check_new(cid)
        validate(spec)
        c = Container(
            container_id=cid,
            app_id=token.app_id,
            user=token.user,
            resource=dict(token.resource),
            dirs=container_dirs(self._cfg.work_dir, token.app_id, cid),
            token_expires=float(token.expires),
        )
        try:
            self.store.create(cid, c.record())
        except FileExistsError:
            raise ContainerExists(self._relaunch_message(cid)) from None
        except (OSError, ValueError) as exc:
            raise LaunchError(f"cannot record container {cid} under {self.store.root}: {exc}") from exc
        self._containers[c.container_id] = c
        self._finished_apps.discard(c.app_id)
        self._background(self._run(c, self._launch_and_wait(c, spec)))
        return c

    def check_new(self, cid: str) -> None:
        """Raise ContainerExists unless ``cid`` was never launched here (as far as this node remembers)."""
        if cid in self._containers or cid in self._tombstones or self.store.exists(cid):
            raise ContainerExists(self._relaunch_message(cid))

    def _relaunch_message(self, cid: str) -> str:
        c = self._containers.get(cid)
        if c is not None and c.state != "COMPLETE":
            return f"Container {cid} already exists on this node: it already is running (a container is launched once)"
        return (f"Container {cid} already exists on this node: it was launched here before and has completed "
                "(a container is launched once)")

    def account_of(self, c: Container) -> Account | None:
        """The account ``c`` runs as: its app's user's with limit-users false, else the one of every container
        (None: as this daemon). Raises LaunchError when the app's user may not run containers here."""
        if not self.as_submitter:
            return self.account
        account = submitter_account(c.user, self._cfg.min_user_id)
        try:
            check_reachable(account, self._cfg.work_dir)
        except ValueError as exc:
            raise LaunchError(str(exc)) from None
        return account

    @staticmethod
    def _give_dirs(c: Container, account: Account | None) -> None:
        """The container's work, log and staging directories belong to the account it runs as."""
        give(account, c.dirs.app, c.dirs.logs.parent)
        give(account, c.dirs.work, c.dirs.logs, c.dirs.app / ".staging" / c.container_id, tree=True)

    async def _run(self, c: Container, body: Coroutine[Any, Any, None]) -> None:
        try:
            await body
        except Exception as exc:  # a container's failure must never take the daemon down
            log.exception("container %s failed", c.container_id)
            self._complete(c, INVALID, f"Container failed on the NodeManager: {exc}")
        finally:
            if c.state != "COMPLETE":  # cancelled while running
                self._complete(c, c.kill_request[0] if c.kill_request else ABORTED, c.diagnostics)

    async def _launch_and_wait(self, c: Container, spec: LaunchSpec) -> None:
        nm_host, nm_port, nm_http_port = self._nm
        try:
            account = self.account_of(c)
            c.dirs.work.mkdir(parents=True, exist_ok=True)
            c.dirs.logs.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(localize, spec.local_resources, c.dirs.work)
            await asyncio.to_thread(self._give_dirs, c, account)
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
        c.cgroup = self._make_cgroup(c, c.resource.get(MEMORY, 0))
        self._save(c)
        try:
            proc = await spawn_supervised(
                plan, c.dirs, account, state_dir=self.store.path(c.container_id),
                container_id=c.container_id, grace_s=self._cfg.stop_grace_s, alive=alive_file(self._cfg.work_dir),
            )
        except OSError as exc:
            self._drop_cgroup(c)
            self._complete(c, INVALID, f"Container launch failed: {exc}")
            return
        self._adopt(c, SupervisorProcess.child(proc), self._cfg.stop_grace_s)
        if c.cgroup is not None:  # the supervisor has not started the task yet: python takes longer to start
            try:
                CgroupV2.add(c.cgroup, proc.pid)
            except OSError as exc:
                log.warning("cannot move %s into its cgroup (%s); monitoring RSS", c.container_id, exc)
                self._drop_cgroup(c)
        await self._supervise(c)

    def _adopt(self, c: Container, supervisor: SupervisorProcess, grace_s: float) -> None:
        c.supervisor = supervisor
        if c.kill_request is not None:  # stopped while it was being launched, or before a restart
            self._background(self._terminate(c, grace_s))

    async def _supervise(self, c: Container) -> None:
        """Watch a container's supervisor (started here or taken back after a restart) until it has exited,
        then complete the container with the exit code it recorded."""
        sup = c.supervisor
        assert sup is not None
        if c.pid is None:
            await self._await_task(c, sup)
        if c.pid is not None and c.state == "NEW":
            c.state = "RUNNING"
            self._save(c)  # recorded before any heartbeat can report it running (no await in between)
            self.counts["launched"] += 1
            log.info("container %s running as pid %d (supervisor pid %d)", c.container_id, c.pid, sup.pid)
        limit_mb = c.resource.get(MEMORY, 0)
        monitor: asyncio.Task[None] | None = None
        if limit_mb > 0 and c.cgroup is None:
            monitor = asyncio.create_task(watch_memory(
                sup.pid, limit_mb, self._cfg.memory_check_interval_s, self._breach_handler(c), include_root=False,
            ))
        try:
            await sup.wait()
        finally:
            if monitor is not None:
                monitor.cancel()
        await self._finish(c, await asyncio.to_thread(self.store.exit, c.container_id))

    async def _await_task(self, c: Container, sup: SupervisorProcess) -> None:
        """Until the supervisor has recorded the task's pid (or ended)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SUPERVISOR_START_S
        delay = 0.01
        while True:
            info = self.store.supervisor(c.container_id) or {}
            if isinstance(info.get("task_pid"), int):
                c.pid = info["task_pid"]
                ticks = info.get("task_start_ticks")
                c.task_ticks = ticks if isinstance(ticks, int) else None
                return
            if not sup.alive():
                return
            if loop.time() > deadline:
                log.error("the supervisor of %s did not start it within %.0f s; killing it",
                          c.container_id, SUPERVISOR_START_S)
                sup.send(signal.SIGKILL)
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)

    async def _finish(self, c: Container, exit: dict[str, Any] | None) -> None:
        """Complete ``c`` from what its supervisor recorded in exit.json (None: nothing)."""
        code = exit.get("exit_code") if exit is not None else None
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        if code is None:
            # the supervisor was killed before it recorded the exit: its task's tree may have outlived it
            await self._kill_leftovers(c, include_supervisor=True, grace_s=self._cfg.stop_grace_s)
        error = str(exit.get("error") or "") if exit is not None else ""
        if c.kill_request is not None:
            status, diag = c.kill_request
            shown = code if code is not None else "unknown"
            self._complete(c, status, f"{diag}\nContainer killed on request. Exit code is {shown}")
        elif error:
            self._complete(c, INVALID, f"Container launch failed: {error}")
        elif c.cgroup is not None and CgroupV2.oom_killed(c.cgroup):
            usage = MemorySample(CgroupV2.peak_bytes(c.cgroup), ())
            self._complete(
                c, KILLED_EXCEEDED_PMEM, pmem_diagnostic(c.pid or 0, c.container_id, usage, c.resource.get(MEMORY, 0))
            )
        elif code is None:
            self._complete(c, ABORTED, "The container's supervisor ended without recording the container's exit "
                                       "code; whatever was left of the container has been killed.")
        elif code != 0:
            self._complete(c, code, f"Container exited with a non-zero exit code {code}.")
        else:
            self._complete(c, 0, "")
        self._drop_cgroup(c)
        if c.supervisor is not None:
            c.supervisor.close()

    async def _kill_leftovers(self, c: Container, *, include_supervisor: bool, grace_s: float) -> bool:
        """Kill the container's supervisor tree (the supervisor too if ``include_supervisor``), what is left of
        its task's session and process group, and any process carrying its id; True once none of it is alive."""
        sup = c.supervisor
        leader = c.pid

        def collect() -> list[psutil.Process]:
            procs: list[psutil.Process] = []
            if sup is not None and sup.alive():
                procs += process_tree(sup.pid)[0 if include_supervisor else 1 :]
            if leader is not None and same_process(leader, c.task_ticks):
                # while the task lives its pid is its own, and so are its session and process group
                procs += process_tree(leader) + session_members(leader)
            # whatever escaped both (re-parented away from a killed supervisor, in a session of its own) still
            # carries the container's id in its environment; a reused pid does not
            return procs + processes_of(c.container_id)

        gone = await kill_processes(collect, grace_s)
        if not gone:
            log.error("processes of container %s survived SIGKILL", c.container_id)
        return gone

    def _make_cgroup(self, c: Container, limit_mb: int) -> Path | None:
        if self._cgroups is None or limit_mb <= 0:
            return None
        try:
            return self._cgroups.create(c.container_id, limit_mb * _MB)
        except OSError as exc:
            log.warning("cannot create a cgroup for %s (%s); monitoring RSS", c.container_id, exc)
            return None

    def _drop_cgroup(self, c: Container) -> None:
        if c.cgroup is not None:
            CgroupV2.remove(c.cgroup)
            c.cgroup = None

    def _breach_handler(self, c: Container) -> Callable[[MemorySample], Awaitable[None]]:
        async def on_breach(sample: MemorySample) -> None:
            if c.kill_request is not None or c.state == "COMPLETE":
                return
            diag = pmem_diagnostic(c.pid or 0, c.container_id, sample, c.resource.get(MEMORY, 0))
            log.warning("%s", diag.splitlines()[0])
            c.kill_request = (KILLED_EXCEEDED_PMEM, diag)
            self._save(c)
            await self._terminate(c, 0)

        return on_breach

    def _complete(self, c: Container, exit_status: int, diagnostics: str) -> None:
        if c.state == "COMPLETE":
            return
        c.state, c.exit_status, c.diagnostics = "COMPLETE", exit_status, diagnostics
        c.finish_time_ms = now_ms()
        self._save(c)
        kind = "completed" if exit_status == 0 else \
            "killed" if exit_status in KILLED_STATUSES or c.kill_request is not None else "failed"
        self.counts[kind] += 1
        c.done.set()
        self.completed.set()
        log.info("container %s completed with exit status %d", c.container_id, exit_status)

    # ------------------------------------------------------------ recovery

    async def recover(self) -> None:
        """Take back what a previous run of this NodeManager left: containers still running are watched (and
        stoppable) again, those that ended meanwhile complete with the exit code their supervisor recorded.
        With recovery off, or when this run has another node id, stop them all and forget them."""
        marker = self.store.root.parent / "node.json"
        previous = (read_json(marker) or {}).get("node_id")
        found = await asyncio.to_thread(lambda: list(self.store.scan()))
        keep = self._cfg.recovery_enabled and previous in (None, self.node_id)
        if found and not keep:
            why = ("recovery is off (yarn.nodemanager.recovery.enabled)" if not self._cfg.recovery_enabled
                   else f"they ran as node {previous}, this is node {self.node_id}")
            log.warning("stopping and forgetting %d container(s) a previous run of this NodeManager left: %s",
                        len(found), why)
        write_json(marker, {"node_id": self.node_id})
        for f in found:
            try:
                await (self._recover(f) if keep else self._discard(f))
            except Exception:  # one bad state directory must not keep the node down
                log.exception("cannot recover container %s", f.container_id)
        if keep and found:
            running = sum(1 for c in self._containers.values() if c.state != "COMPLETE")
            log.info("recovered %d container(s) from %s: %d running, %d to report as completed",
                     len(found), self.store.root, running,
                     sum(1 for c in self._containers.values() if c.state == "COMPLETE" and not c.acked))

    async def _discard(self, f: Found) -> None:
        sup = SupervisorProcess.adopt(f.supervisor)
        c = Container(container_id=f.container_id, app_id="", user="", resource={},
                      dirs=container_dirs(self._cfg.work_dir, "-", f.container_id), supervisor=sup)
        info = f.supervisor or {}
        if isinstance(info.get("task_pid"), int) and same_boot(info):
            c.pid, c.task_ticks = info["task_pid"], info.get("task_start_ticks")
        if sup is not None or c.pid is not None:
            await self._kill_leftovers(c, include_supervisor=True, grace_s=self._cfg.stop_grace_s)
        if sup is not None:
            sup.close()
        await asyncio.to_thread(self.store.remove, f.container_id)

    async def _recover(self, f: Found) -> None:
        try:
            if f.record is None:
                raise ValueError("no record.json")
            c = Container.from_record(f.record)
        except (KeyError, ValueError, TypeError) as exc:
            log.warning("container state %s is unreadable (%s): stopping what is left of it",
                        self.store.path(f.container_id), exc)
            await self._discard(f)
            return
        sup = SupervisorProcess.adopt(f.supervisor)
        info = f.supervisor or {}
        if isinstance(info.get("task_pid"), int) and same_boot(info):  # after a reboot no pid is the task's
            ticks = info.get("task_start_ticks")
            c.pid, c.task_ticks = info["task_pid"], ticks if isinstance(ticks, int) else None
        if c.state == "COMPLETE":
            if sup is not None:  # completed on a stop that outlived the daemon: finish the stop
                c.supervisor = sup
                await self._kill_leftovers(c, include_supervisor=True, grace_s=0)
                sup.close()
            if c.acked:
                self._forget(c)
            else:
                c.done.set()
                self._containers[c.container_id] = c
            return
        self._containers[c.container_id] = c
        if sup is not None:
            if c.pid is not None:
                c.state = "RUNNING"
            self._save(c)
            log.info("container %s taken back: pid %s, supervisor pid %d", c.container_id, c.pid, sup.pid)
            self._adopt(c, sup, 0)  # a stop pending since before the restart has had its grace
            self._background(self._run(c, self._supervise(c)))
        elif f.exit is not None:
            await self._finish(c, f.exit)
            log.info("container %s ended while the NodeManager was down, exit status %d",
                     c.container_id, c.exit_status)
        elif f.supervisor is None:  # the supervisor died with the daemon before it recorded itself: nothing ran
            status = c.kill_request[0] if c.kill_request else ABORTED
            self._complete(c, status, "Container launch interrupted by a NodeManager restart; it never ran.")
        else:
            await self._finish(c, None)

    def _forget(self, c: Container) -> None:
        """``c`` leaves the table; its state directory stays (refusing a relaunch) while its token is valid."""
        if c.token_expires > time.time():
            self._tombstones[c.container_id] = c.token_expires
        else:
            self.store.remove(c.container_id)

    # ------------------------------------------------------------ stop

    def request_stop(self, container_id: str, exit_status: int, diagnostics: str) -> bool:
        """Start stopping a container; False when it is unknown. Stopping a completed one is a no-op."""
        c = self._containers.get(container_id)
        if c is None:
            return False
        if c.state == "COMPLETE" or c.kill_request is not None:
            return True
        c.kill_request = (exit_status, diagnostics)
        self._save(c)
        if c.supervisor is not None:
            self._background(self._terminate(c, self._cfg.stop_grace_s))
        return True

    async def _terminate(self, c: Container, grace_s: float) -> None:
        """Ask the supervisor to stop the container (SIGTERM: with the grace, SIGUSR1: at once); if it has not
        within the grace and a few seconds more, kill the whole tree from here."""
        sup = c.supervisor
        if sup is None or c.state == "COMPLETE":
            return
        sup.send(signal.SIGTERM if grace_s > 0 else signal.SIGUSR1)
        try:
            await asyncio.wait_for(c.done.wait(), grace_s + SUPERVISOR_SLACK_S)
        except TimeoutError:
            if c.state != "COMPLETE":
                log.warning("the supervisor of container %s did not stop it; killing the whole tree",
                            c.container_id)
                await self._kill_leftovers(c, include_supervisor=True, grace_s=0)

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
                self._forget(c)
        now = time.time()
        for cid, expires in list(self._tombstones.items()):
            if expires <= now:
                del self._tombstones[cid]
                await asyncio.to_thread(self.store.remove, cid)
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
        self.store.unlock()

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
