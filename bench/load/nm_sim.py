"""K simulated NodeManagers in one asyncio process, speaking the real protocols.

Each node registers with the RM's ResourceTracker (node secret as bearer, the session from the registration's
trailing metadata on every later call, as ``nodemanager/heartbeat.py`` does) and heartbeats at a fixed rate
with jitter. The heartbeat schedule is open loop: every node has a phase and is due at ``phase + k * interval``
(± jitter); latency is recorded both from the send and from the due time, so a slow answer that delays the
next beat is not hidden (coordinated omission).

One ContainerManager gRPC server serves every node. Nodes are ``127.0.x.y:<port>`` (loopback addresses, one
per node, all reaching the one listener), so the RM's AM launches and the AMs' container starts arrive there;
NM tokens and container tokens are checked with the keys the RM hands out (``nodemanager.service.TokenKeys``),
and a token for one node is refused on another. Nothing is executed: a container whose command is
``sleep <s>`` runs for ``s`` seconds, any other completes at once (exit 0); both are reported in the node's
next heartbeat, RUNNING until then COMPLETE, and a COMPLETE status is repeated until a heartbeat carrying it
succeeds. As the real NodeManager does, a node whose container ends heartbeats out of band, as soon as the
gap the RM named in its last answer has passed since its last heartbeat, outside its schedule
(``out_of_band=False`` turns this off); such a beat's latency is counted from when it was sent. An AM
container (its environment has ``SHEPHERD_AMRM_TOKEN``) runs until its app is cleaned up and is handed to
``on_am_launch``, which plays the AM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio

from bench.load.stats import Recorder
from common import tokens
from common.exits import (
    EXIT_KILLED_AFTER_APP_COMPLETION,
    EXIT_KILLED_BY_APPMASTER,
    EXIT_KILLED_BY_RESOURCEMANAGER,
)
from nodemanager.heartbeat import NODE_SESSION, RPC_TIMEOUT_S, VERSION
from nodemanager.service import INVALID_TOKEN, YARN_EXCEPTION, TokenKeys
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg

log = logging.getLogger("bench.nm_sim")

AM_TOKEN_ENV = "SHEPHERD_AMRM_TOKEN"
MAX_NODES = 254 * 256  # 127.0.x.y with y in 1..254


def node_host(index: int) -> str:
    """The loopback address of simulated node ``index``."""
    if not 0 <= index < MAX_NODES:
        raise ValueError(f"node index {index} out of range (at most {MAX_NODES} nodes)")
    return f"127.0.{index // 254}.{index % 254 + 1}"


def run_seconds(launch: pb.ContainerLaunchContext) -> float:
    """How long a simulated container runs: ``sleep S`` runs S seconds, anything else ends at once."""
    command = " ".join(launch.commands).split()
    if len(command) == 2 and command[0] == "sleep":
        with contextlib.suppress(ValueError):
            return max(0.0, float(command[1]))
    return 0.0


@dataclass(slots=True)
class SimContainer:
    container_id: str
    app_id: str
    started_ms: int
    ends_at: float | None  # loop time; None: runs until stopped (an AM)
    is_am: bool = False


@dataclass
class AmLaunch:
    """An AM container the RM started on a simulated node: what the AM needs to run."""

    app_id: str
    container_id: str
    node_id: str
    environment: dict[str, str]


@dataclass
class SimNode:
    index: int
    node_id: pb.NodeId
    key: str  # "host:port", the RM's node id
    phase: float
    session: str = ""
    registered: bool = False
    running: dict[str, SimContainer] = field(default_factory=dict)
    completed: dict[str, pb.ContainerStatus] = field(default_factory=dict)  # reported until a heartbeat succeeds
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # a container ended since the last report
    last_beat: float = 0.0  # loop time its last heartbeat ended
    out_of_band_gap: float = 0.0  # the RM's latest out-of-band gap (0: report at the interval)

    def complete(self, container_id: str, exit_status: int, diagnostics: str = "") -> None:
        c = self.running.pop(container_id, None)
        if c is None:
            return
        self.completed[container_id] = pb.ContainerStatus(
            container_id=container_id, state=pb.CONTAINER_COMPLETE, exit_status=exit_status,
            diagnostics=diagnostics, start_time_ms=c.started_ms, finish_time_ms=int(time.time() * 1000))
        self.ended.set()

    def statuses(self, now: float) -> list[pb.ContainerStatus]:
        """This heartbeat's report: finished containers become COMPLETE; the rest RUNNING."""
        for c in [c for c in self.running.values() if c.ends_at is not None and c.ends_at <= now]:
            self.complete(c.container_id, 0)
        out = [pb.ContainerStatus(container_id=c.container_id, state=pb.CONTAINER_RUNNING,
                                  start_time_ms=c.started_ms) for c in self.running.values()]
        out.extend(self.completed.values())
        return out


@dataclass(frozen=True)
class NodeShape:
    memory_mb: int = 32_768
    vcores: int = 16
    rack: str = "/default-rack"

    def capability(self) -> pb.Resource:
        return pb.Resource(values={"memory-mb": self.memory_mb, "vcores": self.vcores})


class _ContainerManager(pbg.ContainerManagerServicer):
    """The ContainerManager of every simulated node."""

    def __init__(self, fleet: NodeFleet) -> None:
        self._fleet = fleet

    async def _caller(self, context: grpc.aio.ServicerContext[Any, Any]) -> tuple[str, str]:
        auth = dict(context.invocation_metadata() or ()).get("authorization", "")
        scheme, _, token = str(auth).partition(" ")
        if scheme.lower() != "bearer" or not token:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "an NMToken is required")
        try:
            return self._fleet.keys.read_nm_token(token.strip())
        except (tokens.InvalidToken, ValueError) as exc:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, f"invalid NMToken: {exc}")
        raise AssertionError("unreachable")

    async def StartContainers(self, request: pb.StartContainersRequest,
                              context: grpc.aio.ServicerContext[Any, Any]) -> pb.StartContainersResponse:
        _attempt, node_id = await self._caller(context)
        response = pb.StartContainersResponse()
        now = time.time()
        for item in request.requests:
            try:
                token = self._fleet.keys.read_container_token(item.container_token, now=now)
            except tokens.InvalidToken as exc:
                response.failed.append(pb.ContainerError(exception=INVALID_TOKEN, message=str(exc)))
                continue
            if token.node_id != node_id:
                response.failed.append(pb.ContainerError(
                    container_id=token.container_id, exception=INVALID_TOKEN,
                    message=f"container token for {token.node_id} presented with an NM token for {node_id}"))
                continue
            error = self._fleet.start(token, item.launch_context)
            if error:
                response.failed.append(pb.ContainerError(container_id=token.container_id,
                                                         exception=YARN_EXCEPTION, message=error))
            else:
                response.succeeded.append(token.container_id)
        return response

    async def StopContainers(self, request: pb.ContainerIdsRequest,
                             context: grpc.aio.ServicerContext[Any, Any]) -> pb.StopContainersResponse:
        _attempt, node_id = await self._caller(context)
        node = self._fleet.by_key.get(node_id)
        response = pb.StopContainersResponse()
        for cid in request.container_ids:
            if node is not None and cid in node.running:
                node.complete(cid, EXIT_KILLED_BY_APPMASTER, "Container killed by the ApplicationMaster.")
                response.succeeded.append(cid)
            else:
                response.failed.append(pb.ContainerError(container_id=cid, exception=YARN_EXCEPTION,
                                                         message=f"unknown container {cid}"))
        return response

    async def GetContainerStatuses(self, request: pb.ContainerIdsRequest,
                                   context: grpc.aio.ServicerContext[Any, Any]) -> pb.GetContainerStatusesResponse:
        _attempt, node_id = await self._caller(context)
        node = self._fleet.by_key.get(node_id)
        response = pb.GetContainerStatusesResponse()
        now = asyncio.get_running_loop().time()
        known = {s.container_id: s for s in node.statuses(now)} if node is not None else {}
        for cid in request.container_ids:
            if cid in known:
                response.statuses.append(known[cid])
            else:
                response.failed.append(pb.ContainerError(container_id=cid, exception=YARN_EXCEPTION,
                                                         message=f"unknown container {cid}"))
        return response


class NodeFleet:
    """K simulated NodeManagers: one ContainerManager server, one heartbeat task per node."""

    def __init__(self, rm_address: str, node_secret: str, count: int, *, shape: NodeShape = NodeShape(),
                 interval_s: float = 1.0, jitter: float = 0.1, nodes_per_channel: int = 1,
                 recorder: Recorder | None = None, on_am_launch: Callable[[AmLaunch], None] | None = None,
                 seed: int = 1, out_of_band: bool = True) -> None:
        if count < 1:
            raise ValueError("at least one node")
        self.rm_address = rm_address
        self.shape = shape
        self.interval_s = interval_s
        self.jitter = jitter * interval_s  # ± this many seconds around each due time
        self.out_of_band = out_of_band
        self.out_of_band_beats = 0
        self.recorder = recorder or Recorder()
        self.on_am_launch = on_am_launch
        self.keys = TokenKeys()
        self.rng = random.Random(seed)
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {node_secret}"),) if node_secret else ())
        self._count = count
        self._per_channel = max(1, nodes_per_channel)
        self._channels: list[grpc.aio.Channel] = []
        self._stubs: list[Any] = []
        self._server: grpc.aio.Server | None = None
        self.port = 0
        self.nodes: list[SimNode] = []
        self.by_key: dict[str, SimNode] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.resyncs = 0

    # ------------------------------------------------------------------ set-up

    async def start_server(self) -> None:
        """Listen for ContainerManager calls on every loopback address (one port for all nodes)."""
        self._server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
        pbg.add_ContainerManagerServicer_to_server(_ContainerManager(self), self._server)  # type: ignore[no-untyped-call]
        self.port = self._server.add_insecure_port("0.0.0.0:0")
        await self._server.start()
        for i in range(self._count):
            host = node_host(i)
            node = SimNode(index=i, node_id=pb.NodeId(host=host, port=self.port), key=f"{host}:{self.port}",
                           phase=self.rng.random() * self.interval_s)
            self.nodes.append(node)
            self.by_key[node.key] = node
        for _ in range((self._count + self._per_channel - 1) // self._per_channel):
            channel = grpc.aio.insecure_channel(self.rm_address)
            self._channels.append(channel)
            self._stubs.append(pbg.ResourceTrackerStub(channel))  # type: ignore[no-untyped-call]

    def _stub(self, node: SimNode) -> Any:
        return self._stubs[node.index // self._per_channel]

    def _with_session(self, node: SimNode) -> tuple[tuple[str, str], ...]:
        return (*self._metadata, (NODE_SESSION, node.session)) if node.session else self._metadata

    async def register(self, node: SimNode) -> None:
        request = pb.RegisterNodeRequest(
            node_id=node.node_id, http_address=f"{node.node_id.host}:0", capability=self.shape.capability(),
            rack=self.shape.rack, container_statuses=node.statuses(asyncio.get_running_loop().time()),
            version=VERSION)
        call = self._stub(node).RegisterNodeManager(request, metadata=self._with_session(node),
                                                    timeout=RPC_TIMEOUT_S)
        response = await call
        if response.action != pb.NODE_ACTION_NORMAL:
            raise RuntimeError(f"node {node.key} refused: {response.diagnostics}")
        for key, value in await call.trailing_metadata() or ():
            if key == NODE_SESSION:
                node.session = str(value)
        self._take_keys(response.container_token_keys)
        node.completed.clear()
        node.registered = True

    async def register_all(self, concurrency: int = 32) -> float:
        """Register every node, ``concurrency`` at a time; the seconds it took."""
        started = time.perf_counter()
        gate = asyncio.Semaphore(concurrency)

        async def one(node: SimNode) -> None:
            async with gate:
                await self.register(node)

        await asyncio.gather(*(one(n) for n in self.nodes))
        return time.perf_counter() - started

    def _take_keys(self, keys: Iterable[pb.TokenKey]) -> None:
        given = [(k.key_id, k.key) for k in keys]
        if given and tuple(sorted(i for i, _ in given)) != tuple(sorted(self.keys.ids())):
            self.keys.replace(given)

    # ------------------------------------------------------------------ containers

    def start(self, token: tokens.ContainerTokenFields, launch: pb.ContainerLaunchContext) -> str:
        """Start a container on its node; an error message, or ""."""
        node = self.by_key.get(token.node_id)
        if node is None:
            return f"no simulated node {token.node_id}"
        if token.container_id in node.running or token.container_id in node.completed:
            return f"container {token.container_id} already exists on this node"
        now = asyncio.get_running_loop().time()
        env = dict(launch.environment)
        is_am = AM_TOKEN_ENV in env
        ends_at = None if is_am else now + run_seconds(launch)
        node.running[token.container_id] = SimContainer(token.container_id, token.app_id,
                                                        int(time.time() * 1000), ends_at, is_am)
        if ends_at is not None and self.out_of_band:  # its end wakes the node for an out-of-band heartbeat
            asyncio.get_running_loop().call_at(ends_at, node.ended.set)
        if is_am and self.on_am_launch is not None:
            self.on_am_launch(AmLaunch(token.app_id, token.container_id, node.key, env))
        return ""

    def finish_am(self, app_id: str, container_id: str) -> None:
        """The AM process of ``app_id`` exited (exit 0): its container completes."""
        for node in self.nodes:
            if container_id in node.running:
                node.complete(container_id, 0)
                return

    def _clean_app(self, node: SimNode, app_id: str) -> None:
        for c in [c for c in node.running.values() if c.app_id == app_id]:
            node.complete(c.container_id, 0 if c.is_am else EXIT_KILLED_AFTER_APP_COMPLETION,
                          "" if c.is_am else "Container killed on application completion.")

    # ------------------------------------------------------------------ heartbeats

    async def heartbeat(self, node: SimNode) -> bool:
        """One heartbeat of ``node``; False when the RM could not be reached or refused it."""
        loop = asyncio.get_running_loop()
        statuses = node.statuses(loop.time())
        node.ended.clear()  # what ends from now on is for the next heartbeat
        reported = [s.container_id for s in statuses if s.state == pb.CONTAINER_COMPLETE]
        request = pb.NodeHeartbeatRequest(node_id=node.node_id, container_statuses=statuses,
                                          health=pb.NodeHealth(healthy=True))
        try:
            response = await self._stub(node).NodeHeartbeat(request, metadata=self._with_session(node),
                                                            timeout=RPC_TIMEOUT_S)
        except grpc.aio.AioRpcError as exc:
            log.debug("heartbeat of %s failed: %s", node.key, exc.code().name)
            return False
        if response.action == pb.NODE_ACTION_RESYNC:
            self.resyncs += 1
            node.registered = False
            with contextlib.suppress(grpc.aio.AioRpcError, RuntimeError):
                await self.register(node)
            return False
        if response.action == pb.NODE_ACTION_SHUTDOWN:
            node.registered = False
            return False
        for cid in reported:
            node.completed.pop(cid, None)
        node.out_of_band_gap = response.out_of_band_gap_ms / 1000.0
        for cid in response.containers_to_cleanup:
            node.complete(cid, EXIT_KILLED_BY_RESOURCEMANAGER, "Container killed by the ResourceManager.")
        for app_id in response.applications_to_cleanup:
            self._clean_app(node, app_id)
        self._take_keys(response.container_token_keys)
        return True

    async def _beat(self, node: SimNode, first_due: float, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        due = first_due + node.phase
        target = due + self.rng.uniform(-self.jitter, self.jitter)
        while not stop.is_set():
            early = await self._until(node, target)
            if stop.is_set():
                return
            sent = loop.time()
            ok = node.registered and await self.heartbeat(node)
            node.last_beat = loop.time()
            self.recorder.heartbeat(sent, sent if early else target, node.last_beat, ok)
            if early:  # out of band: the schedule stays
                self.out_of_band_beats += 1
                continue
            due += self.interval_s
            if due < loop.time() - self.interval_s:  # more than a period behind: skip the missed beats
                due = loop.time()
            target = due + self.rng.uniform(-self.jitter, self.jitter)

    async def _until(self, node: SimNode, target: float) -> bool:
        """Wait for the scheduled beat at ``target`` (False) or, once a container ends, for an out-of-band
        beat the RM's gap after the last one (True)."""
        loop = asyncio.get_running_loop()
        delay = target - loop.time()
        if delay <= 0:
            return False
        if not self.out_of_band or node.out_of_band_gap <= 0:
            await asyncio.sleep(delay)
            return False
        try:
            await asyncio.wait_for(node.ended.wait(), delay)
        except TimeoutError:
            return False
        wake = max(loop.time(), node.last_beat + node.out_of_band_gap)
        if wake >= target:
            await asyncio.sleep(target - loop.time())
            return False
        await asyncio.sleep(wake - loop.time())
        return True

    def run(self, stop: asyncio.Event) -> None:
        """Start every node's heartbeat loop (they end when ``stop`` is set)."""
        first = asyncio.get_running_loop().time()
        self._tasks = [asyncio.create_task(self._beat(n, first, stop)) for n in self.nodes]

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for channel in self._channels:
            await channel.close(None)
        if self._server is not None:
            await self._server.stop(0.5)

    # ------------------------------------------------------------------ views

    def running_containers(self) -> int:
        return sum(len(n.running) for n in self.nodes)
