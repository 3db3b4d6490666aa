"""Nothing acknowledged is lost, nothing is applied twice: the state store's write queue, its lease, and the
explicit creation of a store.

* The write queue (``rm/service/persistence.py``) over a fake store: coalescing, what a write makes durable,
  retrying, and a record the database refuses for good.
* An in-process RM on SQLite with an injected write fault: state-changing calls get 503 (REST, with
  Retry-After), UNAVAILABLE (gRPC) and RetriableException (Hadoop IPC); the queue drains by itself when the
  store is back, and a restarted RM finds every change.
* The lease, on SQLite and PostgreSQL: a second RM refuses to start, a killed RM's lease is taken over after
  the lease time, a clean shutdown releases it, and a fenced RM stops instead of writing.
* A missing store (SQLite file, or a PostgreSQL database without shepherd's tables) is refused unless creating
  it is asked for.
* Live, on PostgreSQL: real RM and NodeManager processes with the store behind a TCP proxy that the test cuts
  for 30 s while tasks end and apps are killed; after the outage and a SIGKILL restart, no finished app runs
  again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, create_engine, make_url, text

from common.errors import StoreUnavailable
from common.hadoop import tokens
from common.hadoop.client import IpcClient, RemoteError
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp
from rm.client import ClientError, RMClient
from rm.core.records import Record
from rm.faultproxy import Proxy
from rm.local import LocalCluster
from rm.service.config import RMConfig
from rm.service.persistence import StoreWriter
from rm.service.server import ResourceManager
from rm.service.store import Store, StoreError, StoreLocked, StoreMissing, default_sqlite_url
from tests.e2e.conftest import kill_strays, sleep_job, submit_job, wait_final, wait_until, write_job
from tests.integration.conftest import empty_pg_database
from tests.integration.test_store import meta, node

LEASE_S = 1.5
RETRIABLE = "org.apache.hadoop.ipc.RetriableException"
IPC_CLIENT = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
NEW_APP = "/ws/v1/cluster/apps/new-application"
SECRET = "client-secret"  # the RMs here are configured with it
AUTH = {"Authorization": f"Bearer {SECRET}"}


# -- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a store would be: a SQLite file not yet there, or an empty PostgreSQL database."""
    if request.param == "sqlite":
        yield default_sqlite_url(tmp_path / "data" / "rm")
        return
    yield from empty_pg_database(request.getfixturevalue("pg_admin"))


def config(tmp_path: Path, store_url: str | None = None, **overrides: Any) -> RMConfig:
    fields: dict[str, Any] = {"data_dir": tmp_path / "rm", "store_url": store_url, "grpc_port": 0, "rest_port": 0,
                              "ipc_client_port": 0, "ipc_scheduler_port": -1, "store_lease_s": LEASE_S,
                              "create_store": True, "client_secret": SECRET, "node_secret": "node-secret"}
    fields.update(overrides)
    return RMConfig(**fields)


@pytest_asyncio.fixture
async def started() -> AsyncIterator[list[ResourceManager]]:
    """RMs a test starts; every one still running is stopped at the end."""
    servers: list[ResourceManager] = []
    yield servers
    for server in servers:
        if not server.stopped.is_set():
            await server.stop()


async def start(servers: list[ResourceManager], cfg: RMConfig) -> ResourceManager:
    server = ResourceManager(cfg)
    servers.append(server)
    await server.start()
    return server


async def new_app(http: httpx.AsyncClient) -> httpx.Response:
    return await http.post(NEW_APP, headers={"Content-Type": "application/json"})


async def submit(http: httpx.AsyncClient) -> str:
    resp = await new_app(http)
    assert resp.status_code == 200, resp.text
    app_id = str(resp.json()["application-id"])
    body = {"application-id": app_id, "application-name": "t", "resource": {"memory": 512, "vCores": 1},
            "am-container-spec": {"commands": {"command": "sleep 60"}}}
    resp = await http.post("/ws/v1/cluster/apps", json=body)
    assert resp.status_code == 202, resp.text
    return app_id


def assert_retriable(resp: httpx.Response) -> None:
    assert resp.status_code == 503, resp.text
    assert resp.headers["retry-after"] == "1"
    body = resp.json()["RemoteException"]
    assert (body["exception"], body["javaClassName"]) == ("RetriableException", RETRIABLE)
    assert "state store" in body["message"]


def metric(text_body: str, name: str) -> float:
    for family in text_string_to_metric_families(text_body):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    raise KeyError(name)


def stored_apps(url: str) -> dict[str, str]:
    """app id -> state, read through a fresh Store."""
    store = Store(url)
    try:
        return {a.app_id: a.state for a in store.load().apps}
    finally:
        store.close()


async def eventually(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


# -- the write queue over a fake store ---------------------------------------------------------------


class FakeStore:
    def __init__(self) -> None:
        self.rows: dict[str, Record] = {}
        self.batches: list[list[Record]] = []
        self.fail: StoreError | None = None
        self.refuse: set[str] = set()  # node ids the "database" refuses for good
        self.gate: threading.Event | None = None  # a write waits for it (a slow write)

    def write(self, records: Sequence[Record]) -> None:
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail is not None:
            raise self.fail
        if any(getattr(r, "node_id", None) in self.refuse for r in records):
            raise StoreError("value too long", transient=False)
        self.batches.append(list(records))
        for r in records:
            self.rows[getattr(r, "node_id", "meta")] = r


def writer_over(store: FakeStore) -> StoreWriter:
    from concurrent.futures import ThreadPoolExecutor

    return StoreWriter(store, ThreadPoolExecutor(1), clock=time.monotonic,  # type: ignore[arg-type]
                       retry_first_s=0.05, retry_max_s=0.1)


@pytest.mark.asyncio
async def test_the_queue_coalesces_and_a_later_version_replaces_a_pending_one() -> None:
    store = FakeStore()
    writer = writer_over(store)
    writer.add([node("a", health_report="v1"), meta(), node("a", health_report="v2")])
    assert writer.pending == 2
    await writer.flush()
    assert [len(b) for b in store.batches] == [2]
    assert store.rows["a:45454"].health_report == "v2"  # type: ignore[attr-defined]
    assert writer.pending == 0
    await writer.flush()  # nothing new: no write
    assert len(store.batches) == 1


@pytest.mark.asyncio
async def test_each_write_that_succeeds_is_timed_with_its_record_count() -> None:
    from concurrent.futures import ThreadPoolExecutor

    store = FakeStore()
    timed: list[tuple[float, int]] = []
    writer = StoreWriter(store, ThreadPoolExecutor(1), clock=time.monotonic,  # type: ignore[arg-type]
                         on_timed=lambda seconds, records: timed.append((seconds, records)),
                         retry_first_s=0.05, retry_max_s=0.1)
    store.gate = threading.Event()
    threading.Timer(0.2, store.gate.set).start()  # the first write takes 0.2 s
    writer.add([node("a"), node("b"), meta()])
    await writer.flush()
    store.fail = StoreError("disk full", transient=True)
    writer.add([node("c")])
    with pytest.raises(StoreUnavailable):
        await writer.flush()
    assert len(timed) == 1  # the failed write is not timed
    assert timed[0][1] == 3
    assert 0.15 <= timed[0][0] < 5


@pytest.mark.asyncio
async def test_a_change_made_during_a_write_waits_for_the_next_one() -> None:
    store = FakeStore()
    writer = writer_over(store)
    store.gate = threading.Event()
    writer.add([node("a", health_report="v1")])
    first = asyncio.ensure_future(writer.flush())
    await asyncio.sleep(0.05)  # the first write is in flight, held at the gate
    writer.add([node("a", health_report="v2")])
    second = asyncio.ensure_future(writer.flush())
    store.gate.set()
    await asyncio.gather(first, second)
    assert [b[0].health_report for b in store.batches] == ["v1", "v2"]  # type: ignore[attr-defined]
    assert writer.pending == 0


@pytest.mark.asyncio
async def test_a_failed_write_keeps_its_records_and_the_retry_writes_them_unasked() -> None:
    store = FakeStore()
    writer = writer_over(store)
    store.fail = StoreError("connection refused")
    writer.add([node("a"), node("b")])
    with pytest.raises(StoreUnavailable, match="2 change"):
        await writer.flush()
    writer.add([node("a", health_report="newer")])
    with pytest.raises(StoreUnavailable):
        await writer.flush()
    assert (writer.pending, writer.outage, writer.failed_writes) == (2, True, 2)
    store.fail = None
    await eventually(lambda: writer.pending == 0, 5, "the background retry")
    assert not writer.outage
    assert store.rows["a:45454"].health_report == "newer"  # type: ignore[attr-defined]
    assert set(store.rows) == {"a:45454", "b:45454"}


@pytest.mark.asyncio
async def test_a_record_the_database_refuses_for_good_does_not_hold_the_others_back() -> None:
    store = FakeStore()
    writer = writer_over(store)
    store.refuse = {"bad:45454"}
    writer.add([node("good"), node("bad"), meta()])
    await writer.flush()
    assert set(store.rows) == {"good:45454", "meta"}
    assert (writer.pending, writer.dropped) == (0, 1)


# -- injected faults on SQLite, in process ------------------------------------------------------------


@pytest.mark.asyncio
async def test_store_faults_give_retryable_errors_at_every_door_and_nothing_is_lost(
        tmp_path: Path, started: list[ResourceManager], monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = config(tmp_path)
    server = await start(started, cfg)
    url = server.store_url
    real_write = server.store.write
    broken = {"on": False}

    def write(records: Sequence[Record]) -> None:
        if broken["on"]:
            raise StoreError("writing to the state store failed: (injected) disk I/O error")
        real_write(records)

    monkeypatch.setattr(server.store, "write", write)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.rest_port}", timeout=10, headers=AUTH) as http, \
            grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        kept = await submit(http)
        killed = await submit(http)
        broken["on"] = True

        assert_retriable(await new_app(http))
        assert_retriable(await http.put(f"/ws/v1/cluster/apps/{killed}/state", json={"state": "KILLED"}))
        with pytest.raises(grpc.aio.AioRpcError) as rpc:
            await pbg.ApplicationClientStub(channel).GetNewApplication(pb.GetNewApplicationRequest(),
                                                                       metadata=[("authorization", f"Bearer {SECRET}")])
        assert rpc.value.code() == grpc.StatusCode.UNAVAILABLE
        assert RETRIABLE in (rpc.value.details() or "")
        with pytest.raises(RemoteError) as ipc:
            async with IpcClient("127.0.0.1", server.ipc.client_port, IPC_CLIENT, user="alice",
                                 token=alice_token(SECRET, server.ipc.client_port)) as c:
                await c.call("getNewApplication", yp.GetNewApplicationRequest(), yp.GetNewApplicationResponse)
        assert ipc.value.java_class == RETRIABLE

        # reads still answer, from the state in memory, except that an end is not told before the store has it
        # (YARN's FINAL_SAVING); the scheduler and liveness loops keep running
        state = await http.get(f"/ws/v1/cluster/apps/{killed}/state")
        assert state.json() == {"state": "ACCEPTED"}
        assert server.state.apps[killed].state == "KILLED"
        scrape = (await http.get("/metrics")).text
        assert metric(scrape, "shepherd_store_pending_records") > 0
        assert metric(scrape, "shepherd_store_write_failures_total") >= 3
        assert stored_apps(url)[killed] != "KILLED"
        cycles = server.cycles

        broken["on"] = False  # nobody calls: the background retry drains the queue
        await eventually(lambda: server.writer.pending == 0, 10, "the queue to drain")
        assert metric((await http.get("/metrics")).text, "shepherd_store_pending_records") == 0
        assert (await http.get(f"/ws/v1/cluster/apps/{killed}/state")).json() == {"state": "KILLED"}
        server.kick()
        await eventually(lambda: server.cycles > cycles, 5, "a scheduling cycle after the outage")
    apps = stored_apps(url)
    assert apps[killed] == "KILLED"
    assert apps[kept] == "ACCEPTED"

    await server.stop()
    again = await start(started, dataclasses.replace(cfg, create_store=False))
    assert again.state.apps[killed].state == "KILLED"
    assert again.state.apps[kept].state == "ACCEPTED"


# -- the lease ---------------------------------------------------------------------------------------


def waited_for_lease(caplog: pytest.LogCaptureFixture) -> bool:
    """Whether a starting RM found the lease held and waited on it (timing would flake on a loaded machine)."""
    return any("waiting to see whether it is still alive" in r.getMessage() for r in caplog.records)


@pytest.mark.asyncio
async def test_a_second_rm_on_the_same_store_refuses_to_start_and_a_clean_stop_frees_the_store(
        tmp_path: Path, store_url: str, started: list[ResourceManager], caplog: pytest.LogCaptureFixture) -> None:
    first = await start(started, config(tmp_path / "a", store_url))
    began = time.monotonic()
    with pytest.raises(StoreLocked) as refused:
        await start(started, config(tmp_path / "b", store_url, create_store=False))
    assert time.monotonic() - began < 2 * LEASE_S
    message = str(refused.value)
    assert first.lease_owner in message
    assert "expires in" in message
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{first.rest_port}", timeout=10, headers=AUTH) as http:
        app_id = await submit(http)  # the first RM still writes
    assert app_id in stored_apps(store_url)

    await first.stop()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="shepherd.rm.store"):
        third = await start(started, config(tmp_path / "c", store_url, create_store=False))
    assert not waited_for_lease(caplog)  # released: taken at once, no wait for the lease time
    assert app_id in third.state.apps


@pytest.mark.asyncio
async def test_the_lease_of_a_killed_rm_is_taken_over_after_the_lease_time(
        tmp_path: Path, store_url: str, started: list[ResourceManager]) -> None:
    first = await start(started, config(tmp_path, store_url))
    await first.stop()
    ghost = Store(store_url)  # a RM that took the lease and died without a word
    taken, held = ghost.take_lease("ghost-host:4242:dead", LEASE_S)
    ghost.close()
    assert taken
    began = time.monotonic()
    server = await start(started, config(tmp_path, store_url, create_store=False))
    waited = time.monotonic() - began
    assert LEASE_S * 0.5 < waited < LEASE_S + 3
    lease = server.store.read_lease()
    assert lease is not None
    assert (lease.owner, lease.epoch) == (server.lease_owner, held.epoch + 1)


@pytest.mark.asyncio
async def test_the_lease_of_a_crashed_rm_on_this_host_is_taken_over_at_once(
        tmp_path: Path, store_url: str, started: list[ResourceManager], caplog: pytest.LogCaptureFixture) -> None:
    first = await start(started, config(tmp_path, store_url))
    await first.stop()
    dead = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await dead.wait()  # a process of this host that is gone: the holder crashed here
    ghost = Store(store_url)
    taken, held = ghost.take_lease(f"{socket.gethostname()}:{dead.pid}:dead", 3600.0)
    ghost.close()
    assert taken
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="shepherd.rm.store"):
        server = await start(started, config(tmp_path, store_url, create_store=False))
    assert not waited_for_lease(caplog)  # no wait for its hour-long lease
    assert any("a ResourceManager on this host that is gone" in r.getMessage() for r in caplog.records)
    lease = server.store.read_lease()
    assert lease is not None
    assert (lease.owner, lease.epoch) == (server.lease_owner, held.epoch + 1)


@pytest.mark.asyncio
async def test_a_fenced_rm_stops_instead_of_writing(tmp_path: Path, store_url: str,
                                                    started: list[ResourceManager]) -> None:
    server = await start(started, config(tmp_path, store_url))
    usurper = create_engine(make_url(store_url))
    with usurper.begin() as conn:  # another RM took the store over (its lease, its epoch)
        conn.execute(text("UPDATE store_lease SET owner = 'usurper:1:x', epoch = epoch + 1, expires_at = :t"),
                     {"t": time.time() + 3600})
    usurper.dispose()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.rest_port}", timeout=10, headers=AUTH) as http:
        resp = await new_app(http)
    assert resp.status_code == 503, resp.text
    await eventually(server.halted.is_set, 5, "the fenced RM to halt")
    assert server.writer.fenced is not None
    assert "usurper:1:x" in str(server.writer.fenced)
    with pytest.raises(StoreUnavailable, match="no longer writes"):
        await server.persist()
    reader = Store(store_url)
    lease = reader.read_lease()
    reader.close()
    assert lease is not None
    assert lease.owner == "usurper:1:x"  # it wrote nothing, not even a renewal


# -- creating a store is explicit ---------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_missing_store_is_refused_unless_creating_it_is_asked_for(
        tmp_path: Path, store_url: str, started: list[ResourceManager]) -> None:
    with pytest.raises(StoreMissing, match="--create-store"):
        await start(started, config(tmp_path, store_url, create_store=False))
    assert not (tmp_path / "data").exists()  # nothing was made on the way
    assert not (tmp_path / "rm").exists()
    created = await start(started, config(tmp_path, store_url))
    await created.stop()
    reopened = await start(started, config(tmp_path, store_url, create_store=False))  # an existing store
    assert reopened.state.meta.cluster_timestamp == created.state.meta.cluster_timestamp


def test_shepherd_rm_names_the_missing_store_and_the_flag(tmp_path: Path) -> None:
    data = tmp_path / "nowhere"
    done = subprocess.run([sys.executable, "-m", "rm.cli", "rm", "--data-dir", str(data), "--grpc-port", "0",
                           "--rest-port", "0", "--ipc-client-port", "-1", "--ipc-scheduler-port", "-1"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "no state store" in done.stderr
    assert "--create-store" in done.stderr
    assert not data.exists()


# -- live: PostgreSQL behind a proxy the test cuts -----------------------------------------------------


def alice_token(secret: str, port: int) -> ipc.Token:
    return tokens.issue_rm_delegation(secret, "alice", f"127.0.0.1:{port}", now_ms=int(time.time() * 1000))


def _ipc_new_app(port: int, secret: str) -> RemoteError | None:
    async def call() -> RemoteError | None:
        try:
            async with IpcClient("127.0.0.1", port, IPC_CLIENT, user="alice", token=alice_token(secret, port)) as c:
                await c.call("getNewApplication", yp.GetNewApplicationRequest(), yp.GetNewApplicationResponse)
        except RemoteError as e:
            return e
        return None

    return asyncio.run(call())


@pytest.mark.postgres
def test_postgresql_unreachable_for_30_s_loses_nothing_and_no_finished_app_runs_again(
        tmp_path: Path, pg_admin: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHEPHERD_STORE_LEASE_MS", "2000")
    databases = empty_pg_database(pg_admin)
    url = make_url(next(databases))
    try:
        with Proxy(url.host or "127.0.0.1", url.port or 5432) as proxy:
            through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
            cluster = LocalCluster(tmp_path / "cluster", allow_root_containers=True,
                                   nodes=1, grpc_port=0, rest_port=0, ipc_client_port=0,
                                   ipc_scheduler_port=-1, store_url=through, node_memory_mb=4096, node_vcores=4)
            try:
                cluster.start()
                _outage_and_restart(cluster, proxy, tmp_path)
            finally:
                cluster.stop()
                kill_strays(tmp_path)
    finally:
        next(databases, None)  # drops the database


def _outage_and_restart(cluster: LocalCluster, proxy: Proxy, tmp_path: Path) -> None:
    rm = cluster.rm
    assert rm is not None
    finishing = submit_job(cluster, write_job(tmp_path, sleep_job("finishes-in-outage", 10, tasks=2)), tmp_path)
    killing = submit_job(cluster, write_job(tmp_path, sleep_job("killed-in-outage", 600, tasks=1)), tmp_path)
    with RMClient(cluster.rm_address) as client, httpx.Client(base_url=cluster.rest_url, timeout=20,
                                                             headers={"Authorization": f"Bearer {cluster.client_secret}"}) as http:
        # both jobs run all their containers (the scheduler places nothing new while the store is away)
        wait_until(lambda: len([c for c in client.containers(finishing) if c.state == "RUNNING"]) == 3, 60,
                   "the finishing job's AM and two tasks to run")
        wait_until(lambda: client.app(killing).state == "RUNNING", 60, "the killed job's AM to run")

        proxy.cut()
        cut_at = time.monotonic()
        assert_retriable(http.post(NEW_APP))
        with pytest.raises(ClientError) as refused:
            client.new_application()
        assert refused.value.code == "UNAVAILABLE"
        error = _ipc_new_app(int(cluster.ipc_client_address.rsplit(":", 1)[1]), cluster.client_secret)
        assert error is not None
        assert error.java_class == RETRIABLE
        assert_retriable(http.put(f"/ws/v1/cluster/apps/{killing}/state", json={"state": "KILLED"}))
        # the kill is in memory, but not told before the store has it (YARN's FINAL_SAVING)
        assert http.get(f"/ws/v1/cluster/apps/{killing}/state").json() == {"state": "RUNNING"}
        # the tasks end during the outage; their AM hears of it only from an allocate answer, and no answer
        # that changed state goes out before the change is in the store, so the job ends once it is back
        assert metric(http.get("/metrics").text, "shepherd_store_pending_records") > 0
        wait_until(lambda: time.monotonic() - cut_at >= 30, 31, "30 s of outage", interval=0.5)
        assert rm.alive()

        proxy.restore()
        wait_until(lambda: metric(http.get("/metrics").text, "shepherd_store_pending_records") == 0, 30,
                   "the queue to drain")
        report = wait_final(client, finishing, 60)
        assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED"), report.diagnostics
        attempts = [a.attempt_id for a in client.attempts(finishing)]
        containers = {c.container_id for c in client.containers(finishing)}

    # the RM dies without a word; the restarted one takes the store over once the killed one's lease expires
    rm.signal(signal.SIGKILL)
    assert rm.proc is not None
    rm.proc.wait(10)
    began = time.monotonic()
    cluster.start_rm()
    assert time.monotonic() - began < 20
    with RMClient(cluster.rm_address) as client:
        wait_until(lambda: [n for n in client.nodes() if n.state == "RUNNING"], 30, "the NodeManager to come back")
        assert client.app(killing).state == "KILLED"
        report = client.app(finishing)
        assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED")
        assert [a.attempt_id for a in client.attempts(finishing)] == attempts
        assert {c.container_id for c in client.containers(finishing)} <= containers
        assert [a.app_id for a in client.apps(states=["RUNNING", "ACCEPTED"])] == []
