"""Simulated ApplicationMasters: submitted over the ApplicationClient protocol, launched by the RM on a simulated
node (``nm_sim``), registered and heartbeating over the ApplicationMaster protocol with ``am.client.AMRMClient``
(which keeps the ask table and the response ids), starting their containers on the simulated nodes'
ContainerManager with the NM tokens the RM handed them.

Each AM holds ``backlog`` containers asked for (one ask entry, topped up as containers arrive) until it has
asked for ``total`` (None: without end), heartbeats on an open-loop schedule, gives a ``release_fraction`` of
what it gets back unused, and starts the rest as ``sleep <drawn seconds>`` (exponential with mean ``run_s``;
``true`` when 0), one StartContainers call per node and allocate answer.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio

from am.client import AMClientError, AMRMClient, node_address
from bench.load.nm_sim import AM_TOKEN_ENV, AmLaunch, NodeFleet
from bench.load.stats import Recorder
from common.exits import EXIT_ABORTED
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg

log = logging.getLogger("bench.am_sim")

ASK_ID = 1
MAX_MESSAGE = 64 * 1024 * 1024


@dataclass(frozen=True)
class AmShape:
    backlog: int = 100  # containers each AM keeps asked for
    total: int | None = None  # containers it asks for in all (None: without end)
    memory_mb: int = 1024
    vcores: int = 1
    run_s: float = 5.0  # mean container run time (exponential); 0: they complete at once
    release_fraction: float = 0.0
    interval_s: float = 1.0  # between two allocate calls
    jitter: float = 0.1  # ± this fraction of the interval

    def capability(self) -> pb.Resource:
        return pb.Resource(values={"memory-mb": self.memory_mb, "vcores": self.vcores})


class NodeChannels:
    """One channel per node address, shared by every AM of the harness (a connection pool, as the AMs of one
    process would share)."""

    def __init__(self) -> None:
        self._stubs: dict[str, Any] = {}
        self._channels: list[grpc.aio.Channel] = []

    def stub(self, node: str) -> Any:
        stub = self._stubs.get(node)
        if stub is None:
            channel = grpc.aio.insecure_channel(node)
            self._channels.append(channel)
            stub = self._stubs[node] = pbg.ContainerManagerStub(channel)  # type: ignore[no-untyped-call]
        return stub

    async def connect(self, nodes: list[str], timeout_s: float = 30.0) -> None:
        """Open the channels to ``nodes`` ahead of the load, so connection set-up is not measured."""
        for node in nodes:
            self.stub(node)
        await asyncio.wait_for(asyncio.gather(*(c.channel_ready() for c in self._channels)), timeout_s)

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close(None)


@dataclass
class AmProgress:
    app_id: str
    registered_at: float = 0.0
    first_ask_at: float = 0.0
    asked: int = 0
    delivered: int = 0
    done: int = 0  # containers that ran and completed with exit 0
    last_done_at: float = 0.0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


class SimAM:
    def __init__(self, launch: AmLaunch, rm_address: str, shape: AmShape, fleet: NodeFleet,
                 channels: NodeChannels, recorder: Recorder, rng: random.Random) -> None:
        self.launch = launch
        self.shape = shape
        self.fleet = fleet
        self.channels = channels
        self.recorder = recorder
        self.rng = rng
        self.amrm = AMRMClient(launch.environment.get("SHEPHERD_RM_ADDRESS", rm_address),
                               launch.environment[AM_TOKEN_ENV], call_timeout_s=30.0, retry_s=5.0)
        self.progress = AmProgress(launch.app_id)
        self._releases: list[str] = []
        self._released: set[str] = set()
        self._starting: set[asyncio.Task[None]] = set()
        self._in_flight = 0  # containers delivered and kept, not yet reported completed
        self.registered = asyncio.Event()
        self.finished = asyncio.Event()

    def _error(self, what: str) -> None:
        """Note an error, with when it happened relative to the window's opening."""
        at = asyncio.get_running_loop().time() - self.recorder.window.start
        self.progress.errors.append(f"[{at:+.1f} s] {what}" if math.isfinite(at) else f"[warm-up] {what}")

    def _wanted(self) -> int:
        """How many containers the ask entry should hold now: the backlog, less what the job still needs."""
        shape, p = self.shape, self.progress
        if shape.total is None:
            return shape.backlog
        return max(0, min(shape.backlog, shape.total - p.done - self._in_flight))

    def _outstanding(self) -> int:
        table = {a.allocation_request_id: a for a in self.amrm.outstanding_asks()}
        ask = table.get(ASK_ID)
        return ask.num_containers if ask is not None else 0

    def _asks(self) -> list[pb.ResourceAsk]:
        outstanding, wanted = self._outstanding(), self._wanted()
        if wanted <= outstanding:
            return []
        self.progress.asked += wanted - outstanding
        if not self.progress.first_ask_at:
            self.progress.first_ask_at = asyncio.get_running_loop().time()
        return [pb.ResourceAsk(allocation_request_id=ASK_ID, priority=1, capability=self.shape.capability(),
                               num_containers=wanted, relax_locality=True)]

    def _command(self) -> str:
        if self.shape.run_s <= 0:
            return "true"
        return f"sleep {self.rng.expovariate(1.0 / self.shape.run_s):.3f}"

    async def _start(self, node: str, containers: list[pb.Container]) -> None:
        token = self.amrm.nm_tokens.get(node)
        request = pb.StartContainersRequest(requests=[
            pb.StartContainerRequest(container_token=c.container_token,
                                     launch_context=pb.ContainerLaunchContext(commands=[self._command()]))
            for c in containers])
        loop = asyncio.get_running_loop()
        sent = loop.time()
        in_window = self.recorder.window.holds(sent)
        try:
            response = await self.channels.stub(node).StartContainers(
                request, metadata=(("authorization", f"Bearer {token or ''}"),), timeout=30.0)
        except grpc.aio.AioRpcError as exc:
            if in_window:
                self.recorder.start_errors += len(containers)
            self._error(f"StartContainers on {node}: {exc.code().name} {exc.details()}")
            return
        if in_window:
            self.recorder.start_rtt.append(loop.time() - sent)
            self.recorder.started += len(response.succeeded)
            self.recorder.start_errors += len(response.failed)
        for failed in response.failed:
            self._error(f"{failed.container_id}: {failed.message}")

    def _take(self, response: pb.AllocateResponse) -> tuple[int, int, int]:
        """Start or release what arrived, count what ended; (delivered, completed, released)."""
        loop = asyncio.get_running_loop()
        by_node: dict[str, list[pb.Container]] = defaultdict(list)
        released = 0
        for c in response.allocated_containers:
            if self.shape.release_fraction and self.rng.random() < self.shape.release_fraction:
                self._releases.append(c.container_id)
                self._released.add(c.container_id)
                released += 1
            else:
                by_node[node_address(c.node_id)].append(c)
        for node, containers in by_node.items():
            task = asyncio.create_task(self._start(node, containers))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)
        completed = 0
        for s in response.completed_container_statuses:
            if s.container_id in self._released:
                self._released.discard(s.container_id)
                continue
            completed += 1
            self._in_flight -= 1
            if s.exit_status == 0:
                self.progress.done += 1
                self.progress.last_done_at = loop.time()
            elif s.exit_status != EXIT_ABORTED:
                self.progress.failed += 1
        self._in_flight += len(response.allocated_containers) - released
        self.progress.delivered += len(response.allocated_containers)
        return len(response.allocated_containers), completed, released

    def complete(self) -> bool:
        total = self.shape.total
        return total is not None and self.progress.done >= total

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        try:
            await self.amrm.register("127.0.0.1", 0, "")
        except AMClientError as exc:
            self._error(f"register: {exc}")
            return
        self.progress.registered_at = loop.time()
        self.registered.set()
        interval, jitter = self.shape.interval_s, self.shape.jitter * self.shape.interval_s
        due = loop.time()
        while not stop.is_set() and not self.complete():
            target = due + self.rng.uniform(-jitter, jitter)
            delay = target - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if stop.is_set():
                break
            releases, self._releases = self._releases, []
            asks = self._asks()
            sent = loop.time()
            try:
                response = await self.amrm.allocate(asks, releases, progress=0.5)
            except AMClientError as exc:
                self.recorder.allocate(sent, target, loop.time(), False, 0, 0, 0)
                self._error(f"allocate: {exc}")
                self._releases = releases + self._releases
                due += interval
                continue
            done = loop.time()
            delivered, completed, released = self._take(response)
            self.recorder.allocate(sent, target, done, True, delivered, completed, released)
            due += interval
            if due < loop.time() - interval:
                due = loop.time()
        self.finished.set()

    async def finish(self) -> None:
        """Unregister (best effort) and let the AM container end."""
        if self._starting:
            await asyncio.gather(*list(self._starting), return_exceptions=True)
        try:
            if self.registered.is_set():
                await self.amrm.finish(pb.SUCCEEDED, "", attempts=5)
        except AMClientError as exc:
            self._error(f"finish: {exc}")
        finally:
            await self.amrm.close()
            self.fleet.finish_am(self.launch.app_id, self.launch.container_id)


class AmPool:
    """Submits apps and plays the AM of each when the RM launches it on a simulated node."""

    def __init__(self, rm_address: str, client_secret: str, fleet: NodeFleet, recorder: Recorder,
                 shape: AmShape, *, seed: int = 7, user: str = "bench", queue: str = "default") -> None:
        self.rm_address = rm_address
        self.fleet = fleet
        self.recorder = recorder
        self.shape = shape
        self.user = user
        self.queue = queue
        self.rng = random.Random(seed)
        self._metadata = (("authorization", f"Bearer {client_secret}"),) if client_secret else ()
        self._channel = grpc.aio.insecure_channel(rm_address)
        self._client: Any = pbg.ApplicationClientStub(self._channel)  # type: ignore[no-untyped-call]
        self.channels = NodeChannels()
        self.ams: dict[str, SimAM] = {}
        self.submitted: list[str] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._stop: asyncio.Event | None = None
        self.all_registered = asyncio.Event()
        self.expected = 0
        fleet.on_am_launch = self._launched

    def _launched(self, launch: AmLaunch) -> None:
        if launch.app_id in self.ams or self._stop is None:
            return
        am = SimAM(launch, self.rm_address, self.shape, self.fleet, self.channels, self.recorder,
                   random.Random(self.rng.random()))
        self.ams[launch.app_id] = am
        self._tasks.append(asyncio.create_task(self._run(am, self._stop)))

    async def _run(self, am: SimAM, stop: asyncio.Event) -> None:
        waiter = asyncio.create_task(am.registered.wait())
        runner = asyncio.create_task(am.run(stop))
        await asyncio.wait({waiter, runner}, return_when=asyncio.FIRST_COMPLETED)
        if sum(1 for a in self.ams.values() if a.registered.is_set()) >= self.expected:
            self.all_registered.set()
        await runner
        waiter.cancel()

    async def submit(self, name: str) -> str:
        new = await self._client.GetNewApplication(pb.GetNewApplicationRequest(), metadata=self._metadata,
                                                   timeout=30.0)
        context = pb.ApplicationSubmissionContext(
            application_id=new.application_id, name=name, queue=self.queue, user=self.user,
            application_type="SHEPHERD-BENCH", am_resource=self.shape.capability(),
            am_container_spec=pb.ContainerLaunchContext(commands=["true"]), max_app_attempts=1)
        await self._client.SubmitApplication(pb.SubmitApplicationRequest(context=context), metadata=self._metadata,
                                             timeout=30.0)
        self.submitted.append(str(new.application_id))
        return str(new.application_id)

    async def submit_all(self, count: int, stop: asyncio.Event, *, ramp_s: float = 0.0) -> float:
        """Submit ``count`` apps, arriving as a Poisson process over ``ramp_s`` seconds (open loop: a slow
        answer does not delay the next arrival); the seconds it took."""
        self._stop = stop
        self.expected = count
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        rate = count / ramp_s if ramp_s > 0 else 0.0
        at = loop.time()
        calls = []
        for i in range(count):
            if rate:
                at += self.rng.expovariate(rate)
                delay = at - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            calls.append(asyncio.create_task(self.submit(f"bench-{i}")))
        await asyncio.gather(*calls)
        return time.perf_counter() - started

    def progress(self) -> list[AmProgress]:
        return [am.progress for am in self.ams.values()]

    async def finish_all(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(am.finish() for am in self.ams.values()), return_exceptions=True)

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        await self.channels.close()
        await self._channel.close(None)
