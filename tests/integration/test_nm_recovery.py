"""NodeManager restarts and failures lose no work: a NodeManager process SIGKILLed and restarted on the same
port and work dir takes its running containers back (same pids, monitored and stoppable again), reports the
ones that ended meanwhile with their real exit codes, refuses to launch a container id twice, and leaves no
process behind; no container leaves an orphan (S21); an RM that gives up on a node gets its containers killed
once the node is back; an unreachable RM or a RESYNC stops nothing.

The NodeManager runs as a real process (``python -m nodemanager``) against the fake ResourceTracker of
test_nodemanager.py, or in-process where no restart is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import psutil
import pytest

from common import tokens
from nodemanager.containers import Container
from nodemanager.launch import container_dirs
from nodemanager.recovery import ContainerStore
from nodemanager.statefiles import EXIT, SUPERVISOR, write_json
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from tests.integration.test_nodemanager import (
    APP1,
    ATTEMPT1,
    DEADLINE_S,
    KEY,
    REPO,
    FakeResourceTracker,
    cid,
    dead,
    running_nm,
    start_rm,
    wait_for_file,
)

ORPHAN_LIMIT_S = 10.0  # I-ORPHAN: nothing of a container alive 10 s after it completes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def supervisors(work_dir: Path) -> list[psutil.Process]:
    """Live container supervisors of the NodeManager whose work dir is ``work_dir``."""
    out: list[psutil.Process] = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if "nodemanager.supervise" in cmd and str(work_dir) in cmd and proc.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(proc)
    return out


class NodeManagerProcess:
    """``python -m nodemanager`` on a fixed port, so that a restart keeps the node id."""

    def __init__(self, rm_port: int, port: int, work_dir: Path, log: Path, *extra: str) -> None:
        self.argv = [
            sys.executable, "-m", "nodemanager", "--rm", f"127.0.0.1:{rm_port}", "--port", str(port),
            "--http-port", "0", "--allow-root-containers", "--memory-mb", "4096", "--vcores", "8",
            "--work-dir", str(work_dir), "--no-cgroups", "--heartbeat-interval", "0.2", "--stop-grace", "1",
            *extra,
        ]  # fmt: skip
        self.work_dir = work_dir
        self.log = log
        self.node_id = f"127.0.0.1:{port}"
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with self.log.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, cwd=REPO, env=env, stdout=asyncio.subprocess.PIPE, stderr=log
            )
        assert self.proc.stdout is not None
        line = (await asyncio.wait_for(self.proc.stdout.readline(), DEADLINE_S)).decode()
        assert line.startswith(f"nodemanager ready node_id={self.node_id} "), (line, self.log.read_text()[-3000:])

    async def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        await self.proc.wait()

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), DEADLINE_S)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()

    def dirs(self, container_id: str) -> Any:
        return container_dirs(self.work_dir, APP1, container_id)

    async def call(self, method: str, request: Any) -> Any:
        auth = (("authorization", f"Bearer {tokens.nm_token(KEY, ATTEMPT1, self.node_id)}"),)
        async with grpc.aio.insecure_channel(self.node_id) as channel:
            stub = pbg.ContainerManagerStub(channel)  # type: ignore[no-untyped-call]
            return await getattr(stub, method)(request, metadata=auth, timeout=10)

    async def launch(self, container_id: str, command: str, memory_mb: int = 256) -> pb.StartContainersResponse:
        fields = tokens.ContainerTokenFields(
            container_id, self.node_id, APP1, "alice", {"memory-mb": memory_mb, "vcores": 1}, time.time() + 600
        )
        request = pb.StartContainersRequest(requests=[pb.StartContainerRequest(
            container_token=tokens.container_token(KEY, fields),
            launch_context=pb.ContainerLaunchContext(commands=[command]),
        )])
        response: pb.StartContainersResponse = await self.call("StartContainers", request)
        return response


@contextlib.asynccontextmanager
async def fake_rm() -> AsyncIterator[tuple[FakeResourceTracker, int]]:
    server, rm, port = await start_rm()
    try:
        yield rm, port
    finally:
        await server.stop(None)


def statuses(request: pb.RegisterNodeRequest) -> dict[str, pb.ContainerStatus]:
    return {s.container_id: s for s in request.container_statuses}


# ---------------------------------------------------------------- SIGKILL and restart


@pytest.mark.asyncio
async def test_a_restarted_nodemanager_takes_back_its_containers(tmp_path: Path) -> None:
    keep, ended, later, hog, idle = cid(2), cid(3), cid(4), cid(5), cid(6)
    hog_code = "import time; b = b'x' * (400 << 20); time.sleep(60)"
    commands = {
        keep: "echo $$ > pid; sleep 300",
        # ends while the NodeManager is down, leaving a setsid daemon its supervisor must kill first
        ended: f"echo $$ > pid; setsid sleep 301 & echo $! > daemon.pid; until [ -f {tmp_path}/go-ended ]; "
               "do sleep 0.05; done; exit 7",
        later: f"echo $$ > pid; until [ -f {tmp_path}/go-later ]; do sleep 0.05; done; exit 5",
        hog: f'echo $$ > pid; until [ -f {tmp_path}/go-hog ]; do sleep 0.05; done; "$SHEPHERD_PYTHON" -c "{hog_code}"',
        idle: "echo $$ > pid; sleep 300",  # still running when the restarted NodeManager is stopped
    }  # fmt: skip
    async with fake_rm() as (rm, rm_port):
        nm = NodeManagerProcess(rm_port, free_port(), tmp_path / "nm", tmp_path / "nm.log")
        await nm.start()
        try:
            for c, command in commands.items():
                assert not (await nm.launch(c, command, memory_mb=128 if c == hog else 256)).failed
            for c in commands:
                await rm.wait_until(rm.state_is(c, pb.CONTAINER_RUNNING))
            pids = {c: int(await wait_for_file(nm.dirs(c).work / "pid")) for c in commands}
            daemon = int(await wait_for_file(nm.dirs(ended).work / "daemon.pid"))

            await nm.kill()
            (tmp_path / "go-ended").touch()
            await until(lambda: dead(pids[ended]) and dead(daemon), ORPHAN_LIMIT_S, "the container to end")
            assert not any(dead(pids[c]) for c in (keep, later, hog, idle))

            registered = len(rm.registrations)
            await nm.start()  # a few seconds after the SIGKILL, same port, same work dir
            await rm.wait_until(lambda: len(rm.registrations) > registered)
            reported = statuses(rm.registrations[registered])
            assert {c: reported[c].state for c in commands} == {
                keep: pb.CONTAINER_RUNNING, ended: pb.CONTAINER_COMPLETE,
                later: pb.CONTAINER_RUNNING, hog: pb.CONTAINER_RUNNING, idle: pb.CONTAINER_RUNNING,
            }  # fmt: skip
            assert reported[ended].exit_status == 7
            assert "non-zero exit code 7" in reported[ended].diagnostics
            assert not any(dead(pids[c]) for c in (keep, later, hog, idle))  # the very same processes

            # monitored again: exits and memory limits of the adopted containers are seen
            (tmp_path / "go-later").touch()
            assert (await rm.completed(later)).exit_status == 5
            (tmp_path / "go-hog").touch()
            hogged = await rm.completed(hog)
            assert hogged.exit_status == -104, hogged.diagnostics
            assert dead(pids[hog])

            # a container id is launched once, whether it runs or has ended
            again = await nm.launch(keep, "true")
            assert "already is running" in again.failed[0].message
            again = await nm.launch(ended, "true")
            assert "launched here before" in again.failed[0].message

            # and stoppable: the RM's cleanup kills an adopted container
            rm.containers_to_cleanup = [keep]
            stopped = await rm.completed(keep)
            assert stopped.exit_status == -106
            assert dead(pids[keep])
            print(f"\nkept pids {sorted(pids[c] for c in (keep, later, hog, idle))}; exit codes reported: "
                  f"ended during the outage {reported[ended].exit_status}, after it {rm.latest(later).exit_status}")  # type: ignore[union-attr]
        finally:
            await nm.stop()
        assert all(dead(pid) for pid in [*pids.values(), daemon])  # idle's too: the normal stop stops it
        assert rm.latest(idle).exit_status == -100  # type: ignore[union-attr]
        assert supervisors(nm.work_dir) == []


@pytest.mark.asyncio
async def test_a_nodemanager_killed_during_a_stop_finishes_it_on_restart(tmp_path: Path) -> None:
    c = cid(2)
    async with fake_rm() as (rm, rm_port):
        nm = NodeManagerProcess(rm_port, free_port(), tmp_path / "nm", tmp_path / "nm.log", "--stop-grace", "30")
        await nm.start()
        try:
            await nm.launch(c, "trap 'echo term' TERM; echo $$ > pid; while :; do sleep 0.1; done")
            pid = int(await wait_for_file(nm.dirs(c).work / "pid"))
            await rm.wait_until(rm.state_is(c, pb.CONTAINER_RUNNING))
            await nm.call("StopContainers", pb.ContainerIdsRequest(container_ids=[c]))
            await wait_for_file(nm.dirs(c).logs / "stdout")  # the SIGTERM arrived; SIGKILL is 30 s away
            await nm.kill()
            assert not dead(pid)
            registered = len(rm.registrations)
            nm = NodeManagerProcess(rm_port, int(nm.node_id.rsplit(":", 1)[1]), tmp_path / "nm", tmp_path / "nm.log")
            await nm.start()
            await rm.wait_until(lambda: len(rm.registrations) > registered)
            assert statuses(rm.registrations[registered])[c].state == pb.CONTAINER_RUNNING
            # the stop asked before the crash is finished at once (its grace began before the crash) and
            # reported with its own status, killed by the ApplicationMaster
            status = await rm.completed(c, timeout=5.0)
            assert status.exit_status == -105
            assert dead(pid)
        finally:
            await nm.stop()


@pytest.mark.asyncio
async def test_without_recovery_a_restart_kills_what_was_left(tmp_path: Path) -> None:
    c = cid(2)
    async with fake_rm() as (rm, rm_port):
        port = free_port()
        nm = NodeManagerProcess(rm_port, port, tmp_path / "nm", tmp_path / "nm.log")
        await nm.start()
        try:
            await nm.launch(c, "echo $$ > pid; setsid sleep 302 & echo $! > daemon.pid; sleep 300")
            pid = int(await wait_for_file(nm.dirs(c).work / "pid"))
            daemon = int(await wait_for_file(nm.dirs(c).work / "daemon.pid"))
            await nm.kill()
            registered = len(rm.registrations)
            nm = NodeManagerProcess(rm_port, port, tmp_path / "nm", tmp_path / "nm.log", "--no-recovery")
            await nm.start()
            await rm.wait_until(lambda: len(rm.registrations) > registered)
            assert list(rm.registrations[registered].container_statuses) == []
            assert dead(pid)
            assert dead(daemon)
            assert supervisors(nm.work_dir) == []
            assert not (await nm.launch(c, "true")).failed  # nothing remembered, so nothing refused
            assert (await rm.completed(c)).exit_status == 0
        finally:
            await nm.stop()


@pytest.mark.asyncio
async def test_a_second_nodemanager_on_the_same_work_dir_is_refused(tmp_path: Path) -> None:
    async with fake_rm() as (rm, rm_port):
        first = NodeManagerProcess(rm_port, free_port(), tmp_path / "nm", tmp_path / "nm.log")
        await first.start()
        try:
            second = NodeManagerProcess(rm_port, free_port(), tmp_path / "nm", tmp_path / "nm2.log")
            proc = await asyncio.create_subprocess_exec(
                *second.argv, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(proc.communicate(), DEADLINE_S)
            assert proc.returncode == 1
            assert f"another NodeManager (pid {first.proc.pid}) uses the work dir" in err.decode()  # type: ignore[union-attr]
            assert len(rm.registrations) == 1
        finally:
            await first.stop()


@pytest.mark.asyncio
async def test_what_a_restart_finds_without_a_live_supervisor_is_reported_aborted(tmp_path: Path) -> None:
    work = tmp_path / "nm"
    store = ContainerStore(work)
    never, lost, done = cid(2), cid(3), cid(4)
    for c in (never, lost, done):
        record = Container(container_id=c, app_id=APP1, user="alice", resource={"memory-mb": 128, "vcores": 1},
                           dirs=container_dirs(work, APP1, c), token_expires=time.time() + 600).record()
        store.create(c, record)
    # the supervisor of ``lost`` was killed (a pid that is not alive), ``done``'s recorded its exit
    write_json(store.path(lost) / SUPERVISOR, {"pid": 2**22 + 1, "start_ticks": 1, "task_pid": 2**22 + 2,
                                               "task_start_ticks": 1})
    write_json(store.path(done) / SUPERVISOR, {"pid": 2**22 + 3, "start_ticks": 1})
    write_json(store.path(done) / EXIT, {"exit_code": 0, "stopped": False})
    async with running_nm(tmp_path) as h:
        reported = statuses(h.rm.registrations[0])
        assert {c: (s.state, s.exit_status) for c, s in reported.items()} == {
            never: (pb.CONTAINER_COMPLETE, -100), lost: (pb.CONTAINER_COMPLETE, -100),
            done: (pb.CONTAINER_COMPLETE, 0)}
        assert "never ran" in reported[never].diagnostics
        assert "without recording" in reported[lost].diagnostics
        assert "already exists" in (await h.start(never, "true")).failed[0].message


# ---------------------------------------------------------------- no orphans (S21)


@pytest.mark.asyncio
async def test_a_container_leaves_no_descendant_behind(tmp_path: Path) -> None:
    c = cid(2)
    go = tmp_path / "go"
    command = (
        "setsid sleep 1000 & echo $! > setsid.pid; "
        "(sleep 1001 & echo $! > orphan.pid); "  # double-forked: its parent is gone at once
        "setsid bash -c 'trap \"\" TERM; echo $$ > stubborn.pid; while :; do sleep 0.1; done' & "
        f"until [ -f {go} ]; do sleep 0.05; done; exit 0"
    )
    async with running_nm(tmp_path) as h:
        await h.start(c, command)
        work = h.dirs(c).work
        pids = [int(await wait_for_file(work / name)) for name in ("setsid.pid", "orphan.pid", "stubborn.pid")]
        await h.rm.wait_until(h.rm.state_is(c, pb.CONTAINER_RUNNING))
        assert not any(dead(pid) for pid in pids)
        go.touch()
        started = time.monotonic()
        status = await h.rm.completed(c, timeout=ORPHAN_LIMIT_S + 5)
        left = [pid for pid in pids if not dead(pid)]  # at the moment the completion is reported
        elapsed = time.monotonic() - started
        print(f"\ncompleted after {elapsed:.1f} s (grace 1 s); descendants left: {len(left)} of {len(pids)}")
        assert left == []
        assert status.exit_status == 0
        assert elapsed < ORPHAN_LIMIT_S
        assert supervisors(h.work_dir) == []


@pytest.mark.asyncio
async def test_a_stopped_container_leaves_no_descendant_behind(tmp_path: Path) -> None:
    c = cid(2)
    command = "setsid sleep 1000 & echo $! > setsid.pid; (sleep 1001 & echo $! > orphan.pid); sleep 300"
    async with running_nm(tmp_path) as h:
        await h.start(c, command)
        work = h.dirs(c).work
        pids = [int(await wait_for_file(work / name)) for name in ("setsid.pid", "orphan.pid")]
        await h.rm.wait_until(h.rm.state_is(c, pb.CONTAINER_RUNNING))
        await h.stub.StopContainers(pb.ContainerIdsRequest(container_ids=[c]), metadata=h.nm_auth(), timeout=10)
        status = await h.rm.completed(c, timeout=ORPHAN_LIMIT_S)
        assert [pid for pid in pids if not dead(pid)] == []
        assert status.exit_status == -105


@pytest.mark.asyncio
@pytest.mark.skipif(os.geteuid() != 0, reason="only a NodeManager running as root switches accounts")
async def test_under_a_root_nodemanager_the_task_runs_as_nobody_and_its_supervisor_does_not(tmp_path: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="shepherd-nm-recovery-"))  # pytest's tmp dirs are closed to nobody
    os.chmod(work, 0o755)
    try:
        async with running_nm(tmp_path, work_dir=work / "nm", allow_root_containers=False) as h:
            await h.start(cid(2), "id -u > uid; exit 3")
            assert (await h.rm.completed(cid(2))).exit_status == 3
            assert int((h.dirs(cid(2)).work / "uid").read_text()) == pwd.getpwnam("nobody").pw_uid
            state = h.nm.table.store.path(cid(2))
            assert state.stat().st_uid == 0  # out of the task's reach
            assert state.stat().st_mode & 0o077 == 0
            assert json.loads((state / "exit.json").read_text())["exit_code"] == 3
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.asyncio
async def test_a_killed_supervisor_leaves_nothing_either(tmp_path: Path) -> None:
    c = cid(2)
    async with running_nm(tmp_path) as h:
        await h.start(c, "setsid sleep 1000 & echo $! > setsid.pid; echo $$ > pid; sleep 300")
        work = h.dirs(c).work
        pids = [int(await wait_for_file(work / name)) for name in ("pid", "setsid.pid")]
        await h.rm.wait_until(h.rm.state_is(c, pb.CONTAINER_RUNNING))
        supervisor = h.nm.table.get(c).supervisor  # type: ignore[union-attr]
        assert supervisor is not None
        os.kill(supervisor.pid, signal.SIGKILL)  # no exit code recorded; its descendants re-parent elsewhere
        status = await h.rm.completed(c, timeout=ORPHAN_LIMIT_S)
        assert [pid for pid in pids if not dead(pid)] == []
        assert status.exit_status == -100
        assert "without recording" in status.diagnostics


# ---------------------------------------------------------------- the RM loses the node, or is unreachable


class GivingUpTracker(FakeResourceTracker):
    """An RM that marked the node LOST: it answers RESYNC, and once the node has registered again names the
    containers it gave up on for cleanup."""

    def __init__(self) -> None:
        super().__init__()
        self.give_up: list[str] = []

    async def RegisterNodeManager(self, request: pb.RegisterNodeRequest, context: Any) -> pb.RegisterNodeResponse:
        response = await super().RegisterNodeManager(request, context)
        if len(self.registrations) > 1:
            self.containers_to_cleanup, self.give_up = self.give_up, []
        return response


@pytest.mark.asyncio
async def test_containers_the_rm_gave_up_on_are_killed_when_the_node_comes_back(tmp_path: Path) -> None:
    server = grpc.aio.server()
    rm = GivingUpTracker()
    pbg.add_ResourceTrackerServicer_to_server(rm, server)  # type: ignore[no-untyped-call]
    rm_port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    nm = NodeManagerProcess(rm_port, free_port(), tmp_path / "nm", tmp_path / "nm.log")
    try:
        await nm.start()
        lost, kept = cid(2), cid(3)
        for c in (lost, kept):
            await nm.launch(c, "echo $$ > pid; setsid sleep 303 & echo $! > daemon.pid; sleep 300")
        pids = {c: int(await wait_for_file(nm.dirs(c).work / "pid")) for c in (lost, kept)}
        daemon = int(await wait_for_file(nm.dirs(lost).work / "daemon.pid"))
        await rm.wait_until(rm.state_is(kept, pb.CONTAINER_RUNNING))
        rm.give_up = [lost]
        rm.next_action = pb.NODE_ACTION_RESYNC
        await rm.wait_until(lambda: len(rm.registrations) == 2)
        assert {s.container_id: s.state for s in rm.registrations[1].container_statuses} == {
            lost: pb.CONTAINER_RUNNING, kept: pb.CONTAINER_RUNNING}  # the RESYNC itself killed nothing
        status = await rm.completed(lost, timeout=5.0)  # stop grace 1 s: at once
        assert status.exit_status == -106
        assert dead(pids[lost])
        assert dead(daemon)
        assert not dead(pids[kept])
    finally:
        await nm.stop()
        await server.stop(None)


@pytest.mark.asyncio
async def test_an_unreachable_rm_stops_nothing(tmp_path: Path) -> None:
    rm_port = free_port()
    server, rm, _ = await start_rm(rm_port)
    nm = NodeManagerProcess(rm_port, free_port(), tmp_path / "nm", tmp_path / "nm.log")
    try:
        await nm.start()
        c = cid(2)
        await nm.launch(c, "echo $$ > pid; sleep 300")
        pid = int(await wait_for_file(nm.dirs(c).work / "pid"))
        await rm.wait_until(rm.state_is(c, pb.CONTAINER_RUNNING))
        await server.stop(None)
        await asyncio.sleep(3.0)  # heartbeats fail meanwhile
        assert not dead(pid)
        server, rm, _ = await start_rm(rm_port)  # an RM restarted without this node's registration
        rm.next_action = pb.NODE_ACTION_RESYNC
        await rm.wait_until(lambda: len(rm.registrations) == 1)
        assert statuses(rm.registrations[0])[c].state == pb.CONTAINER_RUNNING
        assert not dead(pid)
    finally:
        await nm.stop()
        await server.stop(None)
