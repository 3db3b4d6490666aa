"""The NodeManager daemon on loopback against a fake ResourceTracker: registration, heartbeats,
token checks, real container processes, stops, memory limits, cleanup, the web server and the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import socket
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import psutil
import pytest

from common import ids, tokens
from nodemanager.config import NodeManagerConfig
from nodemanager.daemon import NodeManager, run_nodemanager
from nodemanager.launch import container_dirs
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg

REPO = Path(__file__).resolve().parents[2]
KEY = b"k" * 32
CLUSTER_TS = 1_700_000_000_000
APP1 = ids.app_id(CLUSTER_TS, 1)
APP2 = ids.app_id(CLUSTER_TS, 2)
ATTEMPT1 = ids.attempt_id(APP1, 1)
ATTEMPT2 = ids.attempt_id(APP2, 1)
DEADLINE_S = 20.0


def cid(n: int, attempt: str = ATTEMPT1) -> str:
    return ids.container_id(ids.AttemptId(attempt), n)


class FakeResourceTracker(pbg.ResourceTrackerServicer):
    """Records what the NodeManager says; hands out KEY; can order cleanups and resyncs."""

    def __init__(self) -> None:
        self.registrations: list[pb.RegisterNodeRequest] = []
        self.heartbeats: list[pb.NodeHeartbeatRequest] = []
        self.unregistered = 0
        self.changed = asyncio.Condition()
        self.containers_to_cleanup: list[str] = []
        self.applications_to_cleanup: list[str] = []
        self.next_action = pb.NODE_ACTION_NORMAL
        self.nm_expiry_ms = 0  # the node expiry registrations announce (0: none)
        self.hang_s = 0.0  # heartbeats wait this long before the answer (a partition, as the NodeManager sees it)
        self.out_of_band_gap_ms = 100  # what heartbeat answers allow (0: completions wait for the interval)
        self._response_id = 0

    async def _record(self, update: Callable[[], None]) -> None:
        async with self.changed:
            update()
            self.changed.notify_all()

    async def RegisterNodeManager(
        self, request: pb.RegisterNodeRequest, context: Any
    ) -> pb.RegisterNodeResponse:
        await self._record(lambda: self.registrations.append(request))
        self._response_id = 0
        return pb.RegisterNodeResponse(
            action=pb.NODE_ACTION_NORMAL, container_token_key=KEY, rm_identifier=CLUSTER_TS,
            nm_expiry_ms=self.nm_expiry_ms,
        )

    async def NodeHeartbeat(self, request: pb.NodeHeartbeatRequest, context: Any) -> pb.NodeHeartbeatResponse:
        if self.hang_s:
            await asyncio.sleep(self.hang_s)
        await self._record(lambda: self.heartbeats.append(request))
        action, self.next_action = self.next_action, pb.NODE_ACTION_NORMAL
        self._response_id += 1
        response = pb.NodeHeartbeatResponse(
            response_id=self._response_id,
            action=action,
            containers_to_cleanup=self.containers_to_cleanup,
            applications_to_cleanup=self.applications_to_cleanup,
            out_of_band_gap_ms=self.out_of_band_gap_ms,
        )
        self.containers_to_cleanup, self.applications_to_cleanup = [], []
        return response

    async def UnregisterNodeManager(
        self, request: pb.UnregisterNodeRequest, context: Any
    ) -> pb.UnregisterNodeResponse:
        await self._record(lambda: setattr(self, "unregistered", self.unregistered + 1))
        return pb.UnregisterNodeResponse()

    async def wait_until(self, predicate: Callable[[], object], timeout: float = DEADLINE_S) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(predicate), timeout)

    def latest(self, container_id: str) -> pb.ContainerStatus | None:
        for hb in reversed(self.heartbeats):
            for status in hb.container_statuses:
                if status.container_id == container_id:
                    return status
        return None

    def state_is(self, container_id: str, state: int) -> Callable[[], bool]:
        def check() -> bool:
            status = self.latest(container_id)
            return status is not None and status.state == state

        return check

    async def completed(self, container_id: str, timeout: float = DEADLINE_S) -> pb.ContainerStatus:
        await self.wait_until(self.state_is(container_id, pb.CONTAINER_COMPLETE), timeout)
        status = self.latest(container_id)
        assert status is not None
        return status


async def start_rm(port: int = 0) -> tuple[grpc.aio.Server, FakeResourceTracker, int]:
    server = grpc.aio.server()
    rm = FakeResourceTracker()
    pbg.add_ResourceTrackerServicer_to_server(rm, server)  # type: ignore[no-untyped-call]
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, rm, bound


@dataclass
class Harness:
    rm: FakeResourceTracker
    nm: NodeManager
    stub: Any
    work_dir: Path
    key: bytes = KEY
    expected_exit: int = 0  # what run_nodemanager should return

    def container_token(
        self, container_id: str, *, memory_mb: int = 256, node: str | None = None, key: bytes | None = None
    ) -> str:
        fields = tokens.ContainerTokenFields(
            container_id=container_id,
            node_id=node or self.nm.node_id,
            app_id=ids.parse_container_id(container_id).app_id,
            user="alice",
            resource={"memory-mb": memory_mb, "vcores": 1},
            expires=time.time() + 600,
        )
        return tokens.container_token(key or self.key, fields)

    def nm_auth(self, attempt: str = ATTEMPT1, node: str | None = None) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {tokens.nm_token(self.key, attempt, node or self.nm.node_id)}"),)

    async def start(
        self,
        container_id: str,
        *commands: str,
        env: dict[str, str] | None = None,
        resources: dict[str, pb.LocalResource] | None = None,
        token: str | None = None,
        attempt: str = ATTEMPT1,
        memory_mb: int = 256,
    ) -> pb.StartContainersResponse:
        request = pb.StartContainersRequest(
            requests=[
                pb.StartContainerRequest(
                    container_token=token or self.container_token(container_id, memory_mb=memory_mb),
                    launch_context=pb.ContainerLaunchContext(
                        commands=list(commands), environment=env or {}, local_resources=resources or {}
                    ),
                )
            ]
        )
        response: pb.StartContainersResponse = await self.stub.StartContainers(
            request, metadata=self.nm_auth(attempt), timeout=10
        )
        return response

    def dirs(self, container_id: str) -> Any:
        return container_dirs(self.work_dir, ids.parse_container_id(container_id).app_id, container_id)

    async def http_get(self, path: str) -> tuple[int, bytes]:
        def fetch() -> tuple[int, bytes]:
            try:
                with urllib.request.urlopen(f"http://{self.nm.http_address}{path}", timeout=10) as resp:
                    return resp.status, resp.read()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read()

        return await asyncio.to_thread(fetch)


@contextlib.asynccontextmanager
async def running_nm(tmp_path: Path, *, out_of_band_gap_ms: int = 100, **overrides: Any) -> AsyncIterator[Harness]:
    server, rm, port = await start_rm()
    rm.out_of_band_gap_ms = out_of_band_gap_ms
    values: dict[str, Any] = {
        "rm_address": f"127.0.0.1:{port}",
        "port": 0,
        "http_port": 0,
        "memory_mb": 4096,
        "vcores": 4,
        "extra_resources": {"gpu": 1},
        "work_dir": tmp_path / "nm",
        "heartbeat_interval_s": 0.1,
        "stop_grace_s": 1.0,
        "use_cgroups": False,
        "allow_root_containers": True,  # pytest's tmp dirs are private: as root, containers stay root here
    }
    values.update(overrides)
    cfg = NodeManagerConfig(**values)
    stop, ready = asyncio.Event(), asyncio.Event()
    started: list[NodeManager] = []
    harness: Harness | None = None
    daemon = asyncio.create_task(run_nodemanager(cfg, ready=ready, stop=stop, on_ready=started.append))
    try:
        await asyncio.wait_for(ready.wait(), DEADLINE_S)
        nm = started[0]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{nm.port}") as channel:
            stub = pbg.ContainerManagerStub(channel)  # type: ignore[no-untyped-call]
            harness = Harness(rm=rm, nm=nm, stub=stub, work_dir=cfg.work_dir)
            yield harness
    finally:
        stop.set()
        assert await asyncio.wait_for(daemon, DEADLINE_S) == (harness.expected_exit if harness else 0)
        await server.stop(None)


async def wait_for_file(path: Path, timeout: float = DEADLINE_S) -> str:
    """Container processes write files; there is no event to wait on, so check with a deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (path.exists() and path.read_text().endswith("\n")):
        assert loop.time() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.02)
    return path.read_text()


def dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# ---------------------------------------------------------------- registration and heartbeats


@pytest.mark.asyncio
async def test_registers_and_heartbeats(tmp_path: Path) -> None:
    async with running_nm(tmp_path) as h:
        await h.rm.wait_until(lambda: len(h.rm.heartbeats) >= 3)
        reg = h.rm.registrations[0]
        assert (reg.node_id.host, reg.node_id.port) == ("127.0.0.1", h.nm.port)
        assert reg.http_address == h.nm.http_address
        assert dict(reg.capability.values) == {"memory-mb": 4096, "vcores": 4, "gpu": 1}
        assert reg.rack == "/default-rack"
        first, second, third = h.rm.heartbeats[:3]
        assert [first.response_id, second.response_id, third.response_id] == [0, 1, 2]
        assert first.health.healthy
        assert first.node_id.port == h.nm.port

        status, body = await h.http_get("/ws/v1/node/info")
        info = json.loads(body)["nodeInfo"]
        assert status == 200
        assert info["id"] == h.nm.node_id
        assert info["nodeHealthy"] is True
        assert (await h.http_get("/ws/v1/node/nope"))[0] == 404
    assert h.rm.unregistered == 1


@pytest.mark.asyncio
async def test_waits_for_a_late_resourcemanager(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = NodeManagerConfig(
        rm_address=f"127.0.0.1:{port}",
        port=0,
        http_port=0,
        memory_mb=1024,
        vcores=1,
        work_dir=tmp_path / "nm",
        allow_root_containers=True,
    )
    stop, ready = asyncio.Event(), asyncio.Event()
    daemon = asyncio.create_task(run_nodemanager(cfg, ready=ready, stop=stop))
    await asyncio.sleep(0.5)  # the RM is deliberately late
    assert not ready.is_set()
    server, rm, _ = await start_rm(port)
    try:
        await asyncio.wait_for(ready.wait(), DEADLINE_S)
        assert len(rm.registrations) == 1
    finally:
        stop.set()
        await asyncio.wait_for(daemon, DEADLINE_S)
        await server.stop(None)


# ---------------------------------------------------------------- containers


@pytest.mark.asyncio
async def test_container_runs_to_completion(tmp_path: Path) -> None:
    c = cid(2)
    async with running_nm(tmp_path) as h:
        response = await h.start(
            c, "echo hello > out.txt;", "echo done; env > env.txt", env={"LIB": "{{PWD}}/lib"}
        )
        assert list(response.succeeded) == [c]
        assert not response.failed
        status = await h.rm.completed(c)
        assert status.exit_status == 0, status.diagnostics
        assert status.finish_time_ms >= status.start_time_ms > 0
        dirs = h.dirs(c)
        assert (dirs.work / "out.txt").read_text() == "hello\n"
        assert (dirs.logs / "stdout").read_text() == "done\n"
        env = dict(
            line.split("=", 1) for line in (dirs.work / "env.txt").read_text().splitlines() if "=" in line
        )
        assert env["CONTAINER_ID"] == c
        assert env["APPLICATION_ID"] == APP1
        assert env["USER"] == "alice"
        assert env["NM_PORT"] == str(h.nm.port)
        assert env["LIB"] == f"{dirs.work}/lib"
        assert env["SHEPHERD_PYTHON"] == sys.executable

        statuses = await h.stub.GetContainerStatuses(
            pb.ContainerIdsRequest(container_ids=[c]), metadata=h.nm_auth(), timeout=10
        )
        assert [(s.container_id, s.state, s.exit_status) for s in statuses.statuses] == [
            (c, pb.CONTAINER_COMPLETE, 0)
        ]
        code, body = await h.http_get(f"/ws/v1/node/containers/{c}/logs/stdout")
        assert (code, body) == (200, b"done\n")
        assert (await h.http_get(f"/ws/v1/node/containers/{c}/logs/..%2F..%2Fx"))[0] == 404

        # Reported COMPLETE until a heartbeat carrying it succeeded, then dropped from heartbeats.
        n = len(h.rm.heartbeats)
        await h.rm.wait_until(lambda: len(h.rm.heartbeats) >= n + 2)
        assert all(s.container_id != c for s in h.rm.heartbeats[-1].container_statuses)
    assert (h.dirs(c).logs / "stdout").exists()  # logs stay after the daemon stops


@pytest.mark.asyncio
async def test_a_completed_container_is_reported_out_of_band_not_at_the_next_interval(tmp_path: Path) -> None:
    c = cid(2)
    # heartbeats a minute apart: the completion reaches the RM long before the next one is due
    async with running_nm(tmp_path, heartbeat_interval_s=60.0) as h:
        await h.rm.wait_until(lambda: len(h.rm.heartbeats) >= 1)
        assert list((await h.start(c, "true")).succeeded) == [c]
        status = await h.rm.completed(c, timeout=DEADLINE_S)
        assert status.exit_status == 0
        assert len(h.rm.heartbeats) == 2  # the first one, then the one its completion sent


@pytest.mark.asyncio
async def test_no_out_of_band_heartbeat_when_the_rm_says_so(tmp_path: Path) -> None:
    c = cid(2)
    # a busy RM: completions wait for the interval
    async with running_nm(tmp_path, heartbeat_interval_s=60.0, out_of_band_gap_ms=0) as h:
        await h.rm.wait_until(lambda: len(h.rm.heartbeats) >= 1)
        assert list((await h.start(c, "true")).succeeded) == [c]
        table = h.nm.table
        assert table is not None
        for _ in range(100):
            if (container := table.get(c)) is not None and container.state == "COMPLETE":
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # five times the gap the RM allowed before
        assert len(h.rm.heartbeats) == 1
        assert h.rm.latest(c) is None


@pytest.mark.asyncio
async def test_failing_command_reports_its_exit_code(tmp_path: Path) -> None:
    async with running_nm(tmp_path) as h:
        await h.start(cid(2), "echo oops >&2; exit 3")
        status = await h.rm.completed(cid(2))
        assert status.exit_status == 3
        assert "exit code 3" in status.diagnostics
        assert (h.dirs(cid(2)).logs / "stderr").read_text() == "oops\n"
        assert h.nm.table is not None
        assert h.nm.table.counts == {"launched": 1, "completed": 0, "failed": 1, "killed": 0}


@pytest.mark.asyncio
async def test_log_dir_expansion(tmp_path: Path) -> None:
    async with running_nm(tmp_path) as h:
        await h.start(cid(2), "echo hi > <LOG_DIR>/custom.log; echo {{CONTAINER_ID}}")
        assert (await h.rm.completed(cid(2))).exit_status == 0
        assert (h.dirs(cid(2)).logs / "custom.log").read_text() == "hi\n"
        assert (h.dirs(cid(2)).logs / "stdout").read_text() == f"{cid(2)}\n"


@pytest.mark.asyncio
async def test_archive_and_file_resources_are_localized(tmp_path: Path) -> None:
    archive = tmp_path / "pkg.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        data = b"from the archive\n"
        info = tarfile.TarInfo("lib/hello.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    plain = tmp_path / "data.txt"
    plain.write_text("plain file\n")
    resources = {
        "pkg": pb.LocalResource(url=f"file://{archive}", type="ARCHIVE"),
        "data.txt": pb.LocalResource(url=f"file://{plain}", type="FILE"),
    }
    async with running_nm(tmp_path) as h:
        await h.start(cid(2), "cat pkg/lib/hello.txt data.txt", resources=resources)
        assert (await h.rm.completed(cid(2))).exit_status == 0
        assert (h.dirs(cid(2)).logs / "stdout").read_text() == "from the archive\nplain file\n"


@pytest.mark.asyncio
async def test_bad_launch_contexts_never_crash_the_daemon(tmp_path: Path) -> None:
    async with running_nm(tmp_path) as h:
        missing = {"x": pb.LocalResource(url=f"file://{tmp_path}/missing.tgz", type="ARCHIVE")}
        assert not (await h.start(cid(2), "true", resources=missing)).failed
        status = await h.rm.completed(cid(2))
        assert status.exit_status == -1000
        assert "does not exist" in status.diagnostics

        remote = {"x": pb.LocalResource(url="hdfs://nn/x", type="FILE")}
        response = await h.start(cid(3), "true", resources=remote)
        assert [e.exception for e in response.failed] == ["org.apache.hadoop.yarn.exceptions.YarnException"]
        assert "file://" in response.failed[0].message

        assert "no command" in (await h.start(cid(4))).failed[0].message

        await h.start(cid(5), "sleep 30")
        duplicate = await h.start(cid(5), "true")
        assert "already exists" in duplicate.failed[0].message

        unknown = await h.stub.StopContainers(
            pb.ContainerIdsRequest(container_ids=[cid(99), "garbage"]), metadata=h.nm_auth(), timeout=10
        )
        assert [e.container_id for e in unknown.failed] == [cid(99), "garbage"]
        assert "not handled" in unknown.failed[0].message
        assert "Invalid ContainerId" in unknown.failed[1].message
        await h.rm.wait_until(h.rm.state_is(cid(5), pb.CONTAINER_RUNNING))


# ---------------------------------------------------------------- tokens


@pytest.mark.asyncio
async def test_bad_tokens_are_refused_and_nothing_launches(tmp_path: Path) -> None:
    invalid = "org.apache.hadoop.yarn.exceptions.InvalidToken"
    async with running_nm(tmp_path) as h:
        forged = await h.start(cid(2), "touch launched", token=h.container_token(cid(2), key=b"x" * 32))
        other_node = await h.start(
            cid(3), "touch launched", token=h.container_token(cid(3), node="10.9.9.9:7040")
        )
        other_app = await h.start(cid(4), "touch launched", attempt=ATTEMPT2)
        for response, c, words in [
            (forged, cid(2), "signature"),
            (other_node, cid(3), "10.9.9.9:7040"),
            (other_app, cid(4), ATTEMPT2),
        ]:
            assert not response.succeeded
            assert [(e.container_id, e.exception) for e in response.failed] == [(c, invalid)]
            assert words in response.failed[0].message
            assert not h.dirs(c).work.exists()

        # A running container of app 1 cannot be stopped or read with app 2's NM token.
        await h.start(cid(5), "sleep 30")
        stop = await h.stub.StopContainers(
            pb.ContainerIdsRequest(container_ids=[cid(5)]), metadata=h.nm_auth(ATTEMPT2), timeout=10
        )
        assert [e.exception for e in stop.failed] == [invalid]
        assert not stop.succeeded
        wrong_node = await h.stub.GetContainerStatuses(
            pb.ContainerIdsRequest(container_ids=[cid(5)]), metadata=h.nm_auth(node="10.9.9.9:1"), timeout=10
        )
        assert [e.exception for e in wrong_node.failed] == [invalid]

        for metadata in [(), (("authorization", "Bearer garbage"),), (("authorization", "Basic x"),)]:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await h.stub.StopContainers(pb.ContainerIdsRequest(container_ids=[cid(5)]), metadata=metadata)
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED

        await h.rm.wait_until(lambda: len(h.rm.heartbeats) >= 3)
        reported = {s.container_id for hb in h.rm.heartbeats for s in hb.container_statuses}
        assert reported == {cid(5)}
        assert not list(h.work_dir.glob("containers/*/*/launched"))


# ---------------------------------------------------------------- stopping


@pytest.mark.asyncio
async def test_stop_kills_the_whole_process_group(tmp_path: Path) -> None:
    c = cid(2)
    async with running_nm(tmp_path) as h:
        await h.start(c, "sleep 100 & echo $! > child.pid; echo $$ > shell.pid; sleep 100")
        child = int(await wait_for_file(h.dirs(c).work / "child.pid"))
        shell = int(await wait_for_file(h.dirs(c).work / "shell.pid"))
        assert not dead(child)
        assert not dead(shell)
        response = await h.stub.StopContainers(
            pb.ContainerIdsRequest(container_ids=[c]), metadata=h.nm_auth(), timeout=10
        )
        assert list(response.succeeded) == [c]
        status = await h.rm.completed(c)
        assert status.exit_status == -105
        assert "killed by the ApplicationMaster" in status.diagnostics
        assert dead(child)
        assert dead(shell)


@pytest.mark.asyncio
async def test_stop_escalates_to_sigkill(tmp_path: Path) -> None:
    c = cid(2)
    async with running_nm(tmp_path, stop_grace_s=0.5) as h:
        await h.start(c, "trap '' TERM; echo $$ > shell.pid; while true; do sleep 0.1; done")
        shell = int(await wait_for_file(h.dirs(c).work / "shell.pid"))
        await h.stub.StopContainers(
            pb.ContainerIdsRequest(container_ids=[c]), metadata=h.nm_auth(), timeout=10
        )
        status = await h.rm.completed(c)
        assert status.exit_status == -105
        assert "Exit code is 137" in status.diagnostics
        assert dead(shell)


@pytest.mark.asyncio
async def test_memory_limit_kills_the_container(tmp_path: Path) -> None:
    c = cid(2)
    hog = "import time; b = b'x' * (400 << 20); print('allocated', flush=True); time.sleep(60)"
    async with running_nm(tmp_path) as h:
        await h.start(c, f'"$SHEPHERD_PYTHON" -c "{hog}"', memory_mb=128)
        status = await h.rm.completed(c)
        assert status.exit_status == -104, status.diagnostics
        assert "is running beyond physical memory limits" in status.diagnostics
        assert "of 128 MB physical memory used" in status.diagnostics


@pytest.mark.asyncio
async def test_resourcemanager_cleanup_stops_containers(tmp_path: Path) -> None:
    async with running_nm(tmp_path) as h:
        await h.start(cid(2), "sleep 100")
        await h.start(cid(3), "sleep 100")
        await h.rm.wait_until(h.rm.state_is(cid(3), pb.CONTAINER_RUNNING))
        h.rm.containers_to_cleanup = [cid(2)]
        status = await h.rm.completed(cid(2))
        assert status.exit_status == -106
        assert h.rm.latest(cid(3)).state == pb.CONTAINER_RUNNING  # type: ignore[union-attr]

        h.rm.applications_to_cleanup = [APP1]
        assert (await h.rm.completed(cid(3))).exit_status == -107
        # Once the RM has seen the final status, the app's state and working dirs go; logs stay.
        n = len(h.rm.heartbeats)
        await h.rm.wait_until(lambda: len(h.rm.heartbeats) >= n + 3)
        assert not h.dirs(cid(3)).app.exists()
        assert (h.dirs(cid(3)).logs / "stdout").exists()
        # both are forgotten, and still counted: the counters follow what happened, not what the table holds
        assert h.nm.table is not None
        assert h.nm.table.all() == []
        code, body = await h.http_get("/metrics")
        assert code == 200
        samples = dict(line.rsplit(" ", 1) for line in body.decode().splitlines() if line.startswith("shepherd_"))
        assert float(samples["shepherd_nodemanager_containers_launched_total"]) == 2
        assert float(samples["shepherd_nodemanager_containers_killed_total"]) == 2
        assert float(samples["shepherd_nodemanager_containers_completed_total"]) == 0
        assert float(samples['shepherd_nodemanager_containers{state="running"}']) == 0


@pytest.mark.asyncio
async def test_resync_reregisters_with_running_containers(tmp_path: Path) -> None:
    async with running_nm(tmp_path) as h:
        await h.start(cid(2), "sleep 100")
        await h.rm.wait_until(h.rm.state_is(cid(2), pb.CONTAINER_RUNNING))
        h.rm.next_action = pb.NODE_ACTION_RESYNC
        await h.rm.wait_until(lambda: len(h.rm.registrations) == 2)
        again = h.rm.registrations[1]
        assert [(s.container_id, s.state) for s in again.container_statuses] == [
            (cid(2), pb.CONTAINER_RUNNING)
        ]
        n = len(h.rm.heartbeats)
        await h.rm.wait_until(lambda: len(h.rm.heartbeats) > n)
        assert h.rm.heartbeats[-1].response_id == 0


@pytest.mark.asyncio
async def test_shutdown_from_the_resourcemanager_stops_everything(tmp_path: Path) -> None:
    async with running_nm(tmp_path) as h:
        await h.start(cid(2), "echo $$ > shell.pid; exec sleep 100")
        shell = int(await wait_for_file(h.dirs(cid(2)).work / "shell.pid"))
        h.rm.next_action = pb.NODE_ACTION_SHUTDOWN
        h.expected_exit = 1
        await h.rm.wait_until(lambda: h.rm.unregistered == 1)
        assert dead(shell)
        assert h.rm.latest(cid(2)).exit_status == -106  # type: ignore[union-attr]


# ---------------------------------------------------------------- the command line


@pytest.mark.asyncio
async def test_cli_prints_ready_and_stops_containers_on_sigterm(tmp_path: Path) -> None:
    server, rm, port = await start_rm()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nodemanager", "--rm", f"127.0.0.1:{port}", "--port", "0", "--http-port", "0",
        "--allow-root-containers",
        "--memory-mb", "1024", "--vcores", "2", "--work-dir", str(tmp_path / "nm"), "--no-cgroups",
        cwd=REPO, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), DEADLINE_S)).decode()
        assert line.startswith("nodemanager ready node_id=127.0.0.1:")
        assert " http=127.0.0.1:" in line
        node_id = line.split()[2].removeprefix("node_id=")
        c = cid(2)
        fields = tokens.ContainerTokenFields(c, node_id, APP1, "bob", {"memory-mb": 128}, time.time() + 60)
        async with grpc.aio.insecure_channel(node_id) as channel:
            stub = pbg.ContainerManagerStub(channel)  # type: ignore[no-untyped-call]
            request = pb.StartContainersRequest(
                requests=[
                    pb.StartContainerRequest(
                        container_token=tokens.container_token(KEY, fields),
                        launch_context=pb.ContainerLaunchContext(
                            commands=["echo $$ > shell.pid; exec sleep 100"]
                        ),
                    )
                ]
            )
            auth = (("authorization", f"Bearer {tokens.nm_token(KEY, ATTEMPT1, node_id)}"),)
            assert list((await stub.StartContainers(request, metadata=auth, timeout=10)).succeeded) == [c]
        shell = int(await wait_for_file(container_dirs(tmp_path / "nm", APP1, c).work / "shell.pid"))
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), DEADLINE_S) == 0
        assert dead(shell)
        assert rm.unregistered == 1
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await server.stop(None)
