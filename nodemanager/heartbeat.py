"""Registration with the RM's ResourceTracker and the heartbeat loop.

The RM may start after the NodeManager, restart, or be unreachable for a while: the loop keeps
retrying with backoff and containers keep running -- neither an unreachable RM nor a RESYNC stops a
container, unless ``stop_on_disconnect`` is set and the RM has not answered for longer than its node expiry.
A COMPLETE status is repeated in heartbeats until a heartbeat carrying it succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import shutil
import time
from pathlib import Path
from typing import Any

import grpc

from common.credentials import write_private
from nodemanager.config import NodeManagerConfig
from nodemanager.containers import KILLED_BY_RESOURCEMANAGER, Container, ContainerTable
from nodemanager.service import TokenKeys
from nodemanager.statefiles import alive_file, mark_alive
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg

log = logging.getLogger(__name__)

VERSION = "shepherd-0.1.0"
RPC_TIMEOUT_S = 10.0
MAX_BACKOFF_S = 10.0
WAITING_NOTE_S = 30.0  # how often a NodeManager waiting to register says what it waits for
NODE_SESSION = "x-shepherd-node-session"  # the RM's rm/service/grpc_api.py names it too


def _read_session(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def disk_health(work_dir: Path, max_utilization_percent: float) -> pb.NodeHealth:
    """Healthy unless the work_dir's disk is (nearly) full or unusable."""
    now_ms = int(time.time() * 1000)
    try:
        usage = shutil.disk_usage(work_dir)
    except OSError as exc:
        return pb.NodeHealth(
            healthy=False,
            health_report=f"local-dir {work_dir} unusable: {exc}",
            last_health_report_time_ms=now_ms,
        )
    used = 100.0 * (usage.total - usage.free) / usage.total if usage.total else 100.0
    if used >= max_utilization_percent or usage.free < 64 * 1024 * 1024:
        report = (
            f"1/1 local-dirs usable space is below configured utilization percentage/no more usable "
            f"space [ {work_dir} : used space above threshold of {max_utilization_percent}% ({used:.1f}% used) ]"
        )
        return pb.NodeHealth(healthy=False, health_report=report, last_health_report_time_ms=now_ms)
    return pb.NodeHealth(healthy=True, health_report="", last_health_report_time_ms=now_ms)


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds``; True when ``stop`` was set meanwhile."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        return False
    return True


class NodeStatusUpdater:
    """Registers this node and heartbeats until stopped or told to shut down."""

    def __init__(
        self,
        cfg: NodeManagerConfig,
        *,
        node_id: pb.NodeId,
        http_address: str,
        capability: dict[str, int],
        table: ContainerTable,
        keys: TokenKeys,
        ipc_port: int = 0,
    ) -> None:
        self._cfg = cfg
        self._node_id = node_id
        self._http_address = http_address
        self._capability = capability
        self._table = table
        self._keys = keys
        self._ipc_port = ipc_port  # the Hadoop-IPC ContainerManagement listener (0: none)
        # the RM's address, or every RM of an active/standby pair, comma-separated: followed on failover
        self._rms = [a.strip() for a in cfg.rm_address.split(",") if a.strip()] or [cfg.rm_address]
        self._rm = self._rms[0]
        self._channel = grpc.aio.insecure_channel(self._rm)
        self._stub = pbg.ResourceTrackerStub(self._channel)  # type: ignore[no-untyped-call]
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {cfg.node_secret}"),) if cfg.node_secret else ()
        )
        # the session of this node's registration: presented on every later call, and kept in the work dir
        # (0600) so a restarted NodeManager may take its node id back while the RM still thinks it alive
        self._session_file = cfg.work_dir / "node-session"
        self._session = _read_session(self._session_file)
        self._interval = cfg.heartbeat_interval_s
        self._last_beat = 0.0  # loop time the last heartbeat ended (answered or failed)
        self.out_of_band = 0  # heartbeats sent early, for a container that completed
        # a container's completion is reported out of band (YARN's sendOutofBandHeartBeat), this long after the
        # last heartbeat: its resources go back to the scheduler without waiting for the interval, and a burst
        # of completions makes one heartbeat. The RM names the gap in each answer, wider when it is busy; 0: off
        self._out_of_band_gap = 0.0
        self._response_id = 0
        self._rm_ok: bool | None = None  # None until the first answer or failure
        self._down_since: float | None = None  # monotonic time of the first failed heartbeat in a row
        self._last_note = 0.0
        self._closing: set[asyncio.Future[None]] = set()  # channels to RMs that stopped answering, closing
        self._alive = alive_file(cfg.work_dir)  # touched while this daemon runs (containers' supervisors watch it)
        self._expiry_s: float | None = None  # the RM's node expiry, once registered
        self.registered = asyncio.Event()
        self.shutdown_reason: str | None = None  # set when the RM told this node to shut down
        self.heartbeats = 0  # successful heartbeats since start

    async def run(self, stop: asyncio.Event) -> None:
        """Register, heartbeat, re-register on RESYNC; return on ``stop`` or an RM SHUTDOWN."""
        keeper = asyncio.create_task(self._keep_alive(stop))
        try:
            while not stop.is_set():
                registered = await self._register(stop)
                if not registered:
                    return
                action = await self._heartbeat_loop(stop)
                if action == pb.NODE_ACTION_SHUTDOWN or action is None:
                    return
                log.warning("ResourceManager asked for a resync; registering again")
        finally:
            keeper.cancel()

    async def _keep_alive(self, stop: asyncio.Event) -> None:
        """Touch the alive file every heartbeat period on a timer of its own, so that a call to an unreachable RM
        (which may wait longer than the node expiry) is never taken for this daemon being gone."""
        self._mark_alive()
        while not await _sleep_or_stop(stop, self._interval):
            self._mark_alive()

    # ------------------------------------------------------------ registration

    def _register_request(self) -> pb.RegisterNodeRequest:
        return pb.RegisterNodeRequest(
            node_id=self._node_id,
            http_address=self._http_address,
            capability=pb.Resource(values=self._capability),
            rack=self._cfg.rack,
            container_statuses=[c.status() for c in self._table.to_report()],
            version=VERSION,
            ipc_port=self._ipc_port,
        )

    async def _register(self, stop: asyncio.Event) -> bool:
        """Register until the RM accepts (True) or refuses this node, or ``stop`` (False). Containers keep
        running meanwhile; retries back off exponentially with jitter, so that many NodeManagers restarted
        together do not call the RM in step."""
        backoff = 0.2
        attempts = 0
        last_note = -WAITING_NOTE_S
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            attempts += 1
            request = self._register_request()
            reported = [
                s.container_id for s in request.container_statuses if s.state == pb.CONTAINER_COMPLETE
            ]
            try:
                call = self._stub.RegisterNodeManager(request, metadata=self._with_session(), timeout=RPC_TIMEOUT_S)
                response = await call
                self._keep_session(await call.trailing_metadata())
            except grpc.aio.AioRpcError as exc:
                self._rm_down(f"cannot register with the ResourceManager at {self._rm}", exc)
            else:
                if response.action == pb.NODE_ACTION_SHUTDOWN:
                    self.shutdown_reason = response.diagnostics or "the ResourceManager refused this node"
                    log.error("registration refused: %s", self.shutdown_reason)
                    return False
                if response.action == pb.NODE_ACTION_NORMAL:
                    self._take_keys(response.container_token_keys, response.container_token_key, response.key_id)
                    self._keys.reads_verifier = response.reads_verifier
                    self._expiry_s = response.nm_expiry_ms / 1000.0 if response.nm_expiry_ms > 0 else None
                    self._mark_alive(answered=True)
                    self._table.acknowledge(reported)
                    if response.heartbeat_interval_ms > 0:
                        self._interval = response.heartbeat_interval_ms / 1000.0
                    self._response_id = 0
                    self._rm_ok = True
                    log.info(
                        "registered with the ResourceManager at %s as %s:%d, capability %s",
                        self._rm,
                        self._node_id.host,
                        self._node_id.port,
                        self._capability,
                    )
                    self.registered.set()
                    return True
                log.warning("registration answered with %s; retrying", pb.NodeAction.Name(response.action))
            delay = random.uniform(backoff / 2, backoff)
            if loop.time() - last_note >= WAITING_NOTE_S:
                last_note = loop.time()
                running = sum(1 for s in request.container_statuses if s.state == pb.CONTAINER_RUNNING)
                log.info(
                    "waiting for the ResourceManager at %s to accept this node (attempt %d, next in %.1f s); "
                    "%d container(s) keep running, %d completion(s) wait to be reported",
                    self._rm, attempts, delay, running, len(reported),
                )
            if await _sleep_or_stop(stop, delay):
                return False
            backoff = min(backoff * 2, MAX_BACKOFF_S)
        return False

    def _take_keys(self, keys: Any, single: bytes = b"", single_id: int = 0) -> None:
        """The container-token keys the RM handed out: accepted from now on, and only these (an RM that names one
        key only: it, and the one this node had before)."""
        if keys:
            before = self._keys.ids()
            self._keys.replace((k.key_id, k.key) for k in keys)
            if self._keys.ids() != before:
                log.info("container-token keys accepted: %s", ", ".join(str(i) for i in self._keys.ids()))
        elif single:
            self._keys.update(single, single_id)

    def _with_session(self) -> tuple[tuple[str, str], ...]:
        return (*self._metadata, (NODE_SESSION, self._session)) if self._session else self._metadata

    def _keep_session(self, trailing: Any) -> None:
        for key, value in trailing or ():
            if key == NODE_SESSION and isinstance(value, str) and value != self._session:
                self._session = value
                with contextlib.suppress(OSError):
                    write_private(self._session_file, value)

    def _note_waiting(self, reported: list[Container]) -> None:
        """Every WAITING_NOTE_S while heartbeats fail: how long, and what keeps running meanwhile."""
        now = time.monotonic()
        if self._down_since is None:
            self._down_since, self._last_note = now, now
            return
        if now - self._last_note >= WAITING_NOTE_S:
            self._last_note = now
            log.info(
                "ResourceManager at %s unreachable for %.0f s (retrying); %d container(s) keep running, "
                "%d completion(s) wait to be reported",
                self._rm, now - self._down_since,
                sum(1 for c in reported if c.state != "COMPLETE"), sum(1 for c in reported if c.state == "COMPLETE"),
            )

    def _rm_down(self, what: str, exc: grpc.aio.AioRpcError) -> None:
        """Log when the RM becomes unreachable, then quietly until it is back; with several RMs (active and
        standby) the next call goes to the next one."""
        level = logging.WARNING if self._rm_ok is not False else logging.DEBUG
        log.log(level, "%s: %s %s (retrying)", what, exc.code().name, exc.details())
        self._rm_ok = False
        if exc.code() == grpc.StatusCode.UNAVAILABLE and len(self._rms) > 1:
            old = self._channel
            self._rm = self._rms[(self._rms.index(self._rm) + 1) % len(self._rms)]
            self._channel = grpc.aio.insecure_channel(self._rm)
            self._stub = pbg.ResourceTrackerStub(self._channel)  # type: ignore[no-untyped-call]
            self._closing.add(asyncio.ensure_future(old.close()))
            self._closing = {f for f in self._closing if not f.done()}

    # ------------------------------------------------------------ heartbeats

    async def _heartbeat_loop(self, stop: asyncio.Event) -> int | None:
        """Heartbeat until stopped (None) or the RM answers RESYNC or SHUTDOWN (that action)."""
        while not stop.is_set():
            try:
                action = await self.heartbeat()
            except Exception:  # a bug here must not stop the heartbeats; containers depend on them
                log.exception("heartbeat failed")
                action = None
            self._last_beat = asyncio.get_running_loop().time()
            if action == pb.NODE_ACTION_RESYNC:
                return action
            if action == pb.NODE_ACTION_SHUTDOWN:
                return action
            if await self._until_next(stop):
                return None
        return None

    async def _until_next(self, stop: asyncio.Event) -> bool:
        """Wait for the next heartbeat: the interval after the last one ended, or, when a container completes
        meanwhile and the RM allows it, the out-of-band gap after it. True when ``stop`` was set."""
        loop = asyncio.get_running_loop()
        gap = self._out_of_band_gap
        if gap <= 0:
            return await _sleep_or_stop(stop, max(0.0, self._last_beat + self._interval - loop.time()))
        completed = self._table.completed
        waits = {asyncio.ensure_future(stop.wait()), asyncio.ensure_future(completed.wait())}
        try:
            await asyncio.wait(waits, timeout=max(0.0, self._last_beat + self._interval - loop.time()),
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if stop.is_set():
            return True
        if completed.is_set() and loop.time() < self._last_beat + self._interval:
            self.out_of_band += 1
            return await _sleep_or_stop(stop, max(0.0, self._last_beat + gap - loop.time()))
        return False

    def _mark_alive(self, *, answered: bool = False) -> None:
        """Supervisors stop their tasks once this file is older than the RM's node expiry: normally only when
        this daemon is gone; with stop-on-disconnect also when the RM has not answered (``answered``) that long."""
        if self._cfg.stop_on_disconnect and not answered:
            return
        with contextlib.suppress(OSError):
            mark_alive(self._alive, self._expiry_s)

    async def heartbeat(self, timeout_s: float = RPC_TIMEOUT_S) -> int | None:
        """One heartbeat; the RM's action, or None when the RM could not be reached."""
        self._table.completed.clear()  # what completes from now on is for the next heartbeat
        reported = self._table.to_report()
        completed = [c.container_id for c in reported if c.state == "COMPLETE"]
        health = await asyncio.to_thread(
            disk_health, self._cfg.work_dir, self._cfg.max_disk_utilization_percent
        )
        request = pb.NodeHeartbeatRequest(
            node_id=self._node_id,
            response_id=self._response_id,
            container_statuses=[c.status() for c in reported],
            health=health,
            used=pb.Resource(values=self._table.used()),
        )
        try:
            response = await self._stub.NodeHeartbeat(request, metadata=self._with_session(), timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            self._rm_down("heartbeat to the ResourceManager failed", exc)
            self._note_waiting(reported)
            return None
        if self._rm_ok is False:
            log.info("ResourceManager at %s reachable again", self._rm)
            self._rm_ok = True
        self._down_since = None
        self._mark_alive(answered=True)
        if response.action == pb.NODE_ACTION_SHUTDOWN:
            self.shutdown_reason = response.diagnostics or "the ResourceManager asked this node to shut down"
            log.error("ResourceManager asked this node to shut down: %s", self.shutdown_reason)
            return int(response.action)
        # containers the RM gave up on (a node it had marked LOST, say) are stopped at once, even on a RESYNC;
        # a RESYNC by itself stops nothing: the node registers again reporting what runs
        for cid in response.containers_to_cleanup:
            self._table.request_stop(
                cid, KILLED_BY_RESOURCEMANAGER, "Container killed by the ResourceManager."
            )
        if response.action == pb.NODE_ACTION_RESYNC:
            return int(response.action)
        self.heartbeats += 1
        self._take_keys(response.container_token_keys)
        self._table.acknowledge(completed)
        self._response_id = response.response_id
        if response.next_heartbeat_interval_ms > 0:
            self._interval = response.next_heartbeat_interval_ms / 1000.0
        self._out_of_band_gap = max(0, response.out_of_band_gap_ms) / 1000.0
        for app_id in response.applications_to_cleanup:
            self._table.finish_app(app_id)
        await self._table.purge()
        return int(response.action)

    # ------------------------------------------------------------ shutdown

    async def goodbye(self) -> None:
        """Report final statuses and unregister (best effort, the RM may be gone)."""
        if not self.registered.is_set():
            return
        await self.heartbeat(timeout_s=2.0)
        try:
            await self._stub.UnregisterNodeManager(
                pb.UnregisterNodeRequest(node_id=self._node_id), metadata=self._with_session(), timeout=2.0
            )
        except grpc.aio.AioRpcError as exc:
            log.info("could not unregister: %s", exc.code().name)

    async def close(self) -> None:
        await self._channel.close(None)
