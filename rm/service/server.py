"""The ResourceManager process: one asyncio loop owning the Ledger, with the state store,
the scheduling loop, liveness checks, AM launching, and the gRPC and HTTP front doors."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from random import Random
from typing import Any

import grpc
import uvicorn

from common.errors import BadRequest, StoreUnavailable
from common.settings import SettingsError
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.limits import MAX_RESPONSE
from proto.serve import add_health_and_reflection, add_servicer
from rm.core.cycle import run_cycle
from rm.core.ledger import Ledger
from rm.core.policies.gs import size_setup
from rm.core.policies.registry import make_admission, named_pipeline, scheduler
from rm.core.queues import QueueConfigError, build_queues
from rm.core.reservation import dra
from rm.core.state_types import LaunchAM
from rm.service import convert, limits
from rm.service.bounds_worker import BoundsChecks
from rm.service.config import RMConfig
from rm.service.job_profiles import ProfileService
from rm.service.operations import Operations
from rm.service.persistence import LeaseKeeper, StoreWriter, lease_owner, open_store
from rm.service.slo import SloService
from rm.service.store import LeaseLost, Store, StoreError, default_sqlite_url

log = logging.getLogger("shepherd.rm")
HADOOP_TOKEN_FILE = "hadoop.token"


STOP_GRACE_S = 5.0  # what a stop waits for the REST server's open requests, and (twice that) for every task


class _Uvicorn(uvicorn.Server):
    """uvicorn inside our loop: the RM, not uvicorn, handles process signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class ResourceManager:
    def __init__(self, cfg: RMConfig, *, reload: Callable[[], RMConfig] | None = None) -> None:
        cfg.validate()
        self.cfg = cfg
        self._reload = reload  # the configuration read again from its files (queue refresh); None: no files
        self.credentials_file: Any = None  # the file local clients find the secrets in (set at start), or None
        self.queues = build_queues(cfg.queues)
        self.store_url = cfg.store_url or default_sqlite_url(cfg.data_dir)
        self.store = Store(self.store_url)
        self.store_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")
        # the scheduling cycle's thread, and the lock of what a cycle reads besides its snapshot (the node
        # layout memo, the policies' state): held from the snapshot to the plan's application, and by whoever
        # else takes a snapshot or asks the pipeline's order (explanations, the dry run's fork)
        self.cycle_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cycle")
        self.cycle_lock = asyncio.Lock()
        self.writer = StoreWriter(self.store, self.store_executor, clock=self.now, on_fenced=self._lost_store,
                                  on_written=lambda records: self.state.stored(records),
                                  on_timed=self._store_write_timed)
        self.lease_owner = lease_owner()  # host:pid:random, this RM's name in the store lease
        self.halted = asyncio.Event()  # set when the RM stops itself: another RM took its state store over
        self.state: Ledger
        self.pipeline, self.shares = named_pipeline(cfg.scheduler, cfg.leftover_cap)
        self.admission = make_admission(cfg.admission or scheduler(cfg.scheduler).admission)
        self.ask_policy = scheduler(cfg.scheduler).ask_policy  # DAG AMs' default: the scheduler's AM policy
        self._shares_at = -float("inf")
        self._dra_at = -float("inf")
        self._rolled_step = -1
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self._grpc: grpc.aio.Server | None = None
        self._http: _Uvicorn | None = None
        self.grpc_port = cfg.grpc_port
        self.rest_port = cfg.rest_port
        self.cycles = 0
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        self.metrics: Any = None
        self.ipc: Any = None  # the Hadoop IPC facade (rm/service/ipc)
        self.bounds = BoundsChecks()  # big requests' bounds checked off the event loop (S19)
        self.slo: SloService  # SLO inference from run history (Morpheus)
        self.profiles: ProfileService  # recurring jobs' profiles from their stage reports (Jockey)

    # ------------------------------------------------------------------ clock and persistence

    @staticmethod
    def now() -> float:
        return time.time()

    async def persist(self) -> None:
        """Return once every record changed so far is in the store, before anyone is told about it.

        Raises StoreUnavailable (503, retriable) while the store cannot take them; they stay queued and are
        retried (rm/service/persistence.py), and the in-memory state is not rolled back.
        """
        self.writer.add(self.state.drain_records())
        await self.writer.flush()

    def _store_write_timed(self, seconds: float, records: int) -> None:
        if self.metrics is not None:
            self.metrics.observe_store_write(seconds, records)

    def _lost_store(self, error: LeaseLost) -> None:
        self.halted.set()

    def kick(self) -> None:
        """Ask for a scheduling cycle soon."""
        self._wake.set()

    @property
    def advertised_host(self) -> str:
        host = self.cfg.host
        if host in ("0.0.0.0", "::", ""):
            return socket.getfqdn()
        return host

    @property
    def grpc_address(self) -> str:
        return f"{self.advertised_host}:{self.grpc_port}"

    @property
    def rest_url(self) -> str:
        """The REST API's base URL (yarn.resourcemanager.webapp.address)."""
        host = self.cfg.http_host
        if host in ("0.0.0.0", "::", ""):
            host = socket.getfqdn()
        return f"http://{host}:{self.rest_port}"

    # ------------------------------------------------------------------ lifecycle

    async def refresh_queues(self, *, dry_run: bool = False) -> list[str]:
        """Read the queue tree again from the configuration files and apply it (YARN's refreshQueues, also on
        SIGHUP). An invalid tree, or one that strands unfinished apps, is refused and the old one kept. The leaf
        queues now in force; with ``dry_run``, the leaf queues it would put in force, nothing applied."""
        if self._reload is None:
            raise BadRequest("this ResourceManager was not started from configuration files; nothing to reload")
        try:
            cfg = self._reload()
            queues = build_queues(cfg.queues)
        except (SettingsError, QueueConfigError, OSError, ValueError) as exc:
            raise BadRequest(f"the queues were not changed: {exc}") from None
        if dry_run:
            self.state.check_queues(queues)
            return sorted(str(p) for p, q in queues.items() if q.is_leaf)
        self.state.refresh_queues(queues)
        self.queues = queues
        self.cfg = dataclasses.replace(self.cfg, queues=cfg.queues, acls=cfg.acls)
        self.kick()
        leaves = sorted(str(p) for p, q in queues.items() if q.is_leaf)
        log.info("queues refreshed: %s", ", ".join(leaves))
        return leaves

    async def refresh_admin_acls(self) -> str:
        """Read ``yarn.admin.acl`` again from the configuration files and put it in force (YARN's
        refreshAdminAcls); the queues and their ACLs stay as they are. The admin ACL now in force."""
        if self._reload is None:
            raise BadRequest("this ResourceManager was not started from configuration files; nothing to reload")
        try:
            admins = self._reload().acl_config.admins
        except (SettingsError, OSError, ValueError) as exc:
            raise BadRequest(f"the admin ACL was not changed: {exc}") from None
        self.cfg = dataclasses.replace(self.cfg, acls=dataclasses.replace(self.cfg.acl_config, admins=admins))
        log.info("admin ACL refreshed: yarn.admin.acl = %r", str(admins))
        return str(admins)

    def in_store(self, fn: Any, *args: Any) -> Any:
        """Run a blocking store call on the store's thread."""
        return asyncio.get_running_loop().run_in_executor(self.store_executor, fn, *args)

    async def start(self) -> None:
        """Take the store and serve. With HA (``yarn.resourcemanager.ha.enabled``) and another RM active, this
        stands by first — serving only a redirecting web port — until that RM stops renewing the lease."""
        loop = asyncio.get_running_loop()
        in_store = self.in_store
        standby = await self._start_standby_http() if self.cfg.ha_enabled else None
        try:
            await open_store(self.store, in_store, owner=self.lease_owner, lease_s=self.cfg.store_lease_s,
                             create=self.cfg.create_store, clock=self.now, standby=self.cfg.ha_enabled)
        finally:
            if standby is not None:
                standby.should_exit = True
                serving = [t for t in self._tasks if t.get_name() == "standby-http"]
                self._tasks = [t for t in self._tasks if t not in serving]
                await asyncio.gather(*serving, return_exceptions=True)  # the standby lets go of the port
        try:
            await self._start_holding_the_lease(loop)
        except BaseException:  # a start that fails lets a restarted RM take the store at once
            for t in self._tasks:
                t.cancel()
            with contextlib.suppress(StoreError):
                await in_store(self.store.release_lease)
            raise

    async def _start_holding_the_lease(self, loop: asyncio.AbstractEventLoop) -> None:
        self._tasks.append(asyncio.create_task(
            LeaseKeeper(self.store, self.writer, self.store_executor, self.cfg.store_lease_s).run(),
            name="store-lease"))
        self.cfg.data_dir.mkdir(parents=True, exist_ok=True)
        # secrets not configured come from the credentials file, created now (not before the store is known)
        self.cfg, self.credentials_file = self.cfg.with_secrets()
        stored = await loop.run_in_executor(self.store_executor, self.store.load)
        now = self.now()
        if stored.meta is None:
            self.state = Ledger.fresh(self.queues, self.cfg.core(), now=now, admission=self.admission)
        else:
            self.state = Ledger.recover(stored, self.queues, self.cfg.core(), now=now, admission=self.admission)
        self.state.deadlines.background_fit = True  # the estimator is fitted in a worker thread (liveness loop)
        # SLearn's gate, and the estimate a GS pipeline orders by
        self.state.sizes.sampling, self.state.sizes.mode = size_setup(self.pipeline)
        await self.persist()
        self.slo = SloService(self)
        pruned = await loop.run_in_executor(self.store_executor, self.slo.prune)
        if pruned:
            log.info("pruned %d old run(s) from the run history", pruned)
        self.profiles = ProfileService(self)
        pruned = await loop.run_in_executor(self.store_executor, self.profiles.prune)
        if pruned:
            log.info("pruned %d old stage report(s) from the jobs' profiles", pruned)
        from rm.service.metrics import RMMetrics

        self.metrics = RMMetrics(self)
        await self._start_grpc()
        await self._start_http()
        from rm.service.ipc import start_ipc

        self.ipc = await start_ipc(self)
        # where this RM serves, for standbys to redirect clients to
        await self.in_store(self.store.advertise, {"grpc": self.grpc_address, "rest": self.rest_url,
                                                   "ipc": self.ipc.client_address or ""})
        self._tasks.append(asyncio.create_task(self._scheduler_loop(), name="scheduler"))
        self._tasks.append(asyncio.create_task(self._liveness_loop(), name="liveness"))
        self._tasks.append(asyncio.create_task(self._lag_probe(), name="loop-lag"))
        log.info("ResourceManager started: gRPC %s, REST %s, store %s, cluster %d",
                 self.grpc_address, self.rest_url, _safe_url(self.store_url),
                 self.state.meta.cluster_timestamp)
        open_doors = [what for what, secret in (("client writes", self.cfg.client_secret),
                                                 ("node registrations", self.cfg.node_secret)) if not secret]
        if open_doors:
            log.warning("INSECURE (shepherd.resourcemanager.insecure): %s need no secret; anyone who can reach "
                        "%s can start processes on its NodeManagers", " and ".join(open_doors), self.grpc_address)
        self._register_credentials(True)
        self.started.set()

    def _addresses(self) -> list[str]:
        ipc = [self.ipc.client_address, self.ipc.scheduler_address] if self.ipc is not None else []
        return [self.grpc_address, self.rest_url, *ipc]

    def _write_hadoop_token(self) -> None:
        """Stock Hadoop clients of this user authenticate to the client listener with an RM delegation token
        from ``hadoop.token`` beside the credentials file (export HADOOP_TOKEN_FILE_LOCATION)."""
        if self.credentials_file is None or self.ipc is None or not self.ipc.client_address:
            return
        import getpass

        path = self.credentials_file.parent / HADOOP_TOKEN_FILE
        self.ipc.write_token_file(path, getpass.getuser())
        log.info("Hadoop clients: export HADOOP_TOKEN_FILE_LOCATION=%s", path)

    def _register_credentials(self, on: bool) -> None:
        """On loopback, tell this user's clients where the credentials file is (common/credentials.py)."""
        if self.credentials_file is None or not self.cfg.loopback:
            return
        from common import credentials

        try:
            if on:
                credentials.register(self._addresses(), self.credentials_file)
                self._write_hadoop_token()
            else:
                credentials.unregister(self._addresses(), self.credentials_file)
        except OSError as exc:
            log.warning("cannot record the cluster's credentials file for local clients in %s: %s",
                        credentials.home() / "clusters", exc)

    async def _start_grpc(self) -> None:
        from rm.service.grpc_api import (
            ApplicationClientServicer,
            ApplicationMasterServicer,
            ResourceTrackerServicer,
        )

        # reads are bounded (S19: no huge requests); responses may be large (an allocate call handing over
        # thousands of containers) up to what the ApplicationMaster client reads (proto.limits)
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", limits.MAX_MESSAGE),
                                          ("grpc.max_send_message_length", MAX_RESPONSE)])
        add_servicer(server, "ResourceTracker", ResourceTrackerServicer(self))
        add_servicer(server, "ApplicationMaster", ApplicationMasterServicer(self))
        add_servicer(server, "ApplicationClient", ApplicationClientServicer(self))
        checks = add_health_and_reflection(server, ["ResourceTracker", "ApplicationMaster", "ApplicationClient"])
        bind = f"[{self.cfg.host}]:{self.cfg.grpc_port}" if ":" in self.cfg.host else \
            f"{self.cfg.host}:{self.cfg.grpc_port}"
        self.grpc_port = server.add_insecure_port(bind)
        if self.grpc_port == 0:
            raise OSError(f"cannot bind gRPC to {bind}")
        await server.start()
        await checks.set_serving()
        self._grpc = server

    async def _start_http(self) -> None:
        from rm.service.rest import build_app

        self._http = await self._serve_http(build_app(self), "http")

    async def _start_standby_http(self) -> _Uvicorn:
        from rm.service.standby import build_standby_app

        server = await self._serve_http(build_standby_app(self), "standby-http")
        log.info("standing by: serving %s (info, metrics, redirects to the active ResourceManager)",
                 self.rest_url)
        return server

    async def _serve_http(self, app: Any, name: str) -> _Uvicorn:
        host = self.cfg.http_host
        # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose proto says TCP, and an
        # accepted connection inherits this one's; with Nagle on, a response whose body is written after its
        # headers waits for the client's delayed ACK, some 40 ms on every keep-alive request
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM,
                             socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, self.rest_port))  # the port bound before, if any (a standby becoming active)
        self.rest_port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False,
                                log_config=None,  # uvicorn logs through the daemon's handler (JSON lines)
                                timeout_graceful_shutdown=STOP_GRACE_S)  # a request still running is cut then
        server = _Uvicorn(config)
        self._tasks.append(asyncio.create_task(server.serve(sockets=[sock]), name=name))
        while not server.started:
            await asyncio.sleep(0.01)
        return server

    async def stop(self) -> None:
        if self.started.is_set():
            self._register_credentials(False)
        for t in self._tasks:
            if t.get_name() != "http":
                t.cancel()
        if self._http is not None:
            self._http.should_exit = True
        if self._grpc is not None:  # a fenced RM stops answering at once: another RM is active
            await self._grpc.stop(grace=0 if self.halted.is_set() else 1.0)
        if self.ipc is not None:
            await self.ipc.stop()
        await self.bounds.close()
        if self._tasks:  # a task that does not end within the grace is cancelled: a stop never hangs
            _, late = await asyncio.wait(self._tasks, timeout=2 * STOP_GRACE_S)
            for t in late:
                log.warning("task %s did not stop within %.0f s; cancelled", t.get_name(), 2 * STOP_GRACE_S)
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if hasattr(self, "state"):
            self.writer.add(self.state.drain_records())
        await self.writer.close(timeout=5.0)
        if self.writer.fenced is None:  # a clean shutdown releases the lease, so a restart need not wait
            with contextlib.suppress(StoreError):
                await asyncio.get_running_loop().run_in_executor(self.store_executor, self.store.release_lease)
        if hasattr(self, "slo"):
            self.slo.close()
        if hasattr(self, "profiles"):
            await self.profiles.close()
        self.store_executor.submit(self.store.close).result()
        self.store_executor.shutdown(wait=True)
        self.cycle_executor.shutdown(wait=True)  # a cycle its task's cancellation left running ends first
        self.stopped.set()

    async def start_unless(self, stop: asyncio.Event) -> bool:
        """``start``, unless ``stop`` is set first (a standby asked to stop before it became active): False."""
        starting = asyncio.ensure_future(self.start())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([starting, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if starting.done():
            starting.result()  # raises what start raised
            return True
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        return False

    async def wait(self, stop: asyncio.Event) -> None:
        """Until ``stop`` is set or the RM halts itself (another RM took its state store over)."""
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.halted.wait())]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    async def serve_forever(self, stop: asyncio.Event) -> None:
        if not await self.start_unless(stop):
            await self.stop()
            return
        try:
            await self.wait(stop)
        finally:
            await self.stop()

    # ------------------------------------------------------------------ scheduling

    async def _scheduler_loop(self) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=1.0)
            self._wake.clear()
            try:
                await self.schedule_once()
            except Exception:  # a policy bug must not stop the RM
                log.exception("scheduling cycle failed")
            await asyncio.sleep(self.cfg.scheduling_interval_s)

    async def schedule_once(self) -> None:
        if self.writer.outage:  # decide nothing new while the store cannot take it; the writer retries
            return
        started = time.perf_counter()
        async with self.cycle_lock:
            now = self.now()
            self._tend_reservations(now)
            snap = self.state.snapshot(now)
            self.cycles += 1
            # fair shares are for the AMs (and explanations); like Carbyne's RM, refresh them periodically
            shares = None
            if now - self._shares_at >= self.cfg.share_interval_s:
                shares, self._shares_at = self.shares, now
            rng = Random(self.cycles)
            if self.cfg.cycle_off_loop:
                # The snapshot is immutable and the plan is checked against the ledger as it is applied (an app
                # that ended meanwhile, an ask withdrawn, a node that filled or left is skipped), so the loop
                # goes on answering heartbeats and calls while the pipeline decides; with the GIL, it gets the
                # interpreter back within the switch interval (1 ms, as the RM sets it) whenever a call comes in.
                plan = await asyncio.get_running_loop().run_in_executor(
                    self.cycle_executor, lambda: run_cycle(snap, self.pipeline, shares=shares, now=now, rng=rng))
            else:
                plan = run_cycle(snap, self.pipeline, shares=shares, now=now, rng=rng)
            applied = self.state.apply_plan(plan, now)
        try:
            await self.persist()
        except StoreUnavailable:  # queued and retried (the writer logs the outage once)
            return  # AM containers are launched once their allocation is in the store
        if self.metrics is not None:
            self.metrics.observe_cycle(time.perf_counter() - started, plan)
            for p in applied:
                app = self.state.apps.get(p.app_id)
                if p.is_am and app is not None and app.current is not None:
                    self.metrics.observe_queue_wait(app.queue, now - app.current.start_time)
        for launch in self.state.drain_launches():
            self._tasks.append(asyncio.create_task(self._launch_am(launch)))
        self._tasks = [t for t in self._tasks if not t.done()]

    def _tend_reservations(self, now: float) -> None:
        """Roll the reservation plans forward once per plan step (expire, place upcoming instances) and, every
        DRA period, stretch reservations whose apps fall behind (Morpheus §7). The cycle's persist() writes
        the changes."""
        system = self.state.reservation_plan()
        if not system.reservations:
            return
        step = int(now // system.config.step_s)
        if step != self._rolled_step:  # the plan moves in steps: once per step is enough
            self._rolled_step = step
            report = system.roll(now)
            for rid in report.expired:
                log.info("reservation %s is over and was removed", rid)
            for rid, k in report.missed:
                log.warning("reservation %s: instance %d found no room in the plan", rid, k)
        if now - self._dra_at >= dra.DraConfig().period_s:
            self._dra_at = now
            decisions = self.state.reprovision(now)
            for d in decisions.decisions:
                if d.granted:
                    log.info("reservation %s extended by %d container(s) until %.0f", d.reservation_id,
                             d.granted, d.until)

    async def _launch_am(self, launch: LaunchAM) -> None:
        if self.ipc is not None and self.ipc.handles(launch):  # submitted over Hadoop IPC
            await self.ipc.launch_am(launch)
            return
        node = self.state.nodes.get(launch.node_id)
        if node is None:
            return
        env = {
            "SHEPHERD_RM_ADDRESS": ",".join(self.cfg.ha_addresses) or self.grpc_address,  # every RM, with HA
            "SHEPHERD_AMRM_TOKEN": launch.amrm_token,
            "APPLICATION_ID": launch.app_id,
            "SHEPHERD_APP_ATTEMPT_ID": launch.attempt_id,
            "SHEPHERD_AM_POLICY": self.ask_policy,
        }
        if launch.job_spec_json:
            # base64: launch scripts expand "$" in environment values, as YARN's do
            env["SHEPHERD_JOB_JSON_B64"] = base64.b64encode(launch.job_spec_json.encode()).decode("ascii")
        ctx = convert.launch_context_pb(launch.launch, env)
        request = pb.StartContainersRequest(
            requests=[pb.StartContainerRequest(container_token=launch.container_token, launch_context=ctx)]
        )
        error = ""
        try:
            async with grpc.aio.insecure_channel(f"{node.host}:{node.port}") as channel:
                stub = pbg.ContainerManagerStub(channel)
                resp = await stub.StartContainers(
                    request, metadata=[("authorization", f"Bearer {launch.nm_token}")], timeout=15.0
                )
            if resp.failed:
                error = f"{resp.failed[0].exception}: {resp.failed[0].message}"
        except grpc.aio.AioRpcError as exc:
            error = f"{exc.code().name}: {exc.details()}"
        if error:
            log.warning("launching AM container %s failed: %s", launch.container_id, error)
            with contextlib.suppress(StoreUnavailable):  # queued and retried; the writer logs the outage
                await Operations(self).am_launch_failed(launch.container_id, error)
        else:
            log.info("launched AM container %s for %s on %s", launch.container_id, launch.app_id, node.node_id)

    async def _lag_probe(self) -> None:
        """Sample how late the event loop runs a timer: the time it spent on other work (a long cycle, a
        blocking call) that every request and heartbeat waited behind."""
        from rm.service.metrics import LAG_PROBE_S

        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + LAG_PROBE_S
            await asyncio.sleep(LAG_PROBE_S)
            self.metrics.observe_loop_lag(loop.time() - due)

    async def _liveness_loop(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.cfg.nm_expiry_s / 4, self.cfg.am_expiry_s / 4))
            try:
                events = self.state.check_liveness(self.now())
                for e in events:
                    log.warning("%s", e)
                rolled = self.state.roll_container_keys(self.now())  # container-token keys
                for e in rolled:
                    log.info("%s", e)
                if events:
                    self.kick()
                if events or rolled:
                    with contextlib.suppress(StoreUnavailable):  # queued and retried; the writer logs the outage
                        await self.persist()
                self.state.forget_completed_containers()
                await self._refit_deadline_estimator()
            except Exception:
                log.exception("liveness check failed")

    async def _refit_deadline_estimator(self) -> None:
        """Fit the deadline estimator on the recorded runs in a worker thread, off the event loop."""
        system = self.state.deadlines
        if not system.stale:
            return
        estimator, runs, seen = system.refit()
        await asyncio.to_thread(estimator.fit, runs)
        system.install(estimator, seen)


def _safe_url(url: str) -> str:
    """The store URL without a password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}@{host}"
    return url


async def run_resourcemanager(cfg: RMConfig, stop: asyncio.Event) -> None:
    rm = ResourceManager(cfg)
    await rm.serve_forever(stop)
