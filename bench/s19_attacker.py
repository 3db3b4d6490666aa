"""The S19 attacker of ``bench/security_bounded.py``: a cluster user with an AM of its own (so authentication does
not stop it) that sends the catalogue of huge and invalid requests, each built once beforehand, phase after phase
as the benchmark tells it on its standard input, and reports what each request got.

    python -m bench.s19_attacker SPEC_JSON      # started by bench/security_bounded.py, not by hand
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import httpx

from bench.load.stats import quantile
from bench.security_bounded import (
    APPS,
    CLIENT,
    MASTER,
    MB,
    NODE_MEMORY_MB,
    amrm_metadata,
    split,
    token_dumping_am,
)
from common.hadoop import credentials as hadoop_credentials
from common.hadoop import records, wire
from common.hadoop.client import IpcClient, RemoteError
from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr


@dataclass
class Tally:
    answers: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seconds: list[float] = field(default_factory=list)
    spans: list[tuple[float, float]] = field(default_factory=list)  # (monotonic start, end) of each request


class Attacker:
    """The catalogue, each request built once; :meth:`phase` sends them in turn for a while."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.rest = spec["rest"]
        self.secret = spec["secret"]
        self.writer = {"Authorization": f"Bearer {self.secret}"}
        self.delegation: ipc.Token = next(t for t in hadoop_credentials.decode(
            Path(spec["hadoop_token"]).read_bytes()).tokens.values() if t.kind == "RM_DELEGATION_TOKEN")
        self.tallies: dict[str, Tally] = defaultdict(Tally)
        self.finished_apps: list[str] = []  # apps whose AM finished with 1 MB of diagnostics
        self.response_id = 0  # the attacker's gRPC AM keeps its allocate sequence (a stale one gets a replay)
        self.interval = float(spec.get("interval", 0.0))  # seconds between two requests (0: back to back)
        self.killed_app = ""

    # --- setup: the attacker's own AMs and apps, the payloads
    async def setup(self) -> None:
        work = Path(self.spec["work"])
        token_file = work / "attacker.amrm"
        await asyncio.to_thread(token_dumping_am, self.rest, self.secret, token_file, "mallory")
        self.amrm = amrm_metadata(token_file)
        self.channel = grpc.aio.insecure_channel(self.spec["grpc"], options=[
            ("grpc.max_send_message_length", 64 * MB), ("grpc.max_receive_message_length", 64 * MB)])
        self.am = pbg.ApplicationMasterStub(self.channel)
        self.client = pbg.ApplicationClientStub(self.channel)
        await self.am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(host="attacker"),
                                                metadata=self.amrm)
        self.raw_allocate = self.channel.unary_unary("/shepherd.v1.ApplicationMaster/Allocate")
        self.raw_submit = self.channel.unary_unary("/shepherd.v1.ApplicationClient/SubmitApplication")
        self.raw_kill = self.channel.unary_unary("/shepherd.v1.ApplicationClient/KillApplication")
        self.http = httpx.AsyncClient(base_url=self.rest, timeout=60)
        # the Hadoop IPC AM: an unmanaged app, submitted with the RM delegation token the RM wrote
        self.ipc_am, _ = await self.unmanaged_ipc_am("mallory-ipc")
        # the ids the submissions go to (a known id is answered as accepted: each submission is received,
        # parsed and cut in full, and no app piles up)
        self.ids = {k: (await self.http.post(f"{APPS}/new-application", headers=self.writer)).json()[
            "application-id"] for k in ("grpc-name", "grpc-tags", "rest-tags", "rest-name", "rest-nan",
                                        "rest-negative", "rest-huge")}
        self.ipc_name_id = await self.ipc_new_app()
        # killed with 1 MB of diagnostics: the app the gRPC submission of 100,000 tags makes (taken, tags cut), sent
        # just before the kill in each round (a 10 MB name is over the 4 MB message bound and makes no app)
        self.killed_app = self.ids["grpc-tags"]
        self.sink_payload = bytes(6 * MB)
        self.build()

    async def ipc_new_app(self) -> yr.ApplicationId:
        async with IpcClient(*split(self.spec["ipc_client"]), CLIENT, user="root", token=self.delegation) as c:
            new = await c.call("getNewApplication", yp.GetNewApplicationRequest(), yp.GetNewApplicationResponse)
            return new.application_id

    async def unmanaged_ipc_am(self, name: str) -> tuple[IpcClient, str]:
        """A registered unmanaged AM over Hadoop IPC (its connection) and its app's id."""
        app = await self.ipc_new_app()
        async with IpcClient(*split(self.spec["ipc_client"]), CLIENT, user="root", token=self.delegation) as c:
            await c.call("submitApplication", yp.SubmitApplicationRequest(
                application_submission_context=yr.ApplicationSubmissionContext(
                    application_id=app, application_name=name, unmanaged_am=True,
                    resource=records.resource_pb(Resources.of(memory_mb=256, vcores=1)))),
                yp.SubmitApplicationResponse)
            report = await c.call("getApplicationReport", yp.GetApplicationReportRequest(application_id=app),
                                  yp.GetApplicationReportResponse)
        am = IpcClient(*split(self.spec["ipc_scheduler"]), MASTER, user="root",
                       token=report.application_report.am_rm_token)
        await am.connect()
        await am.call("registerApplicationMaster", yp.RegisterApplicationMasterRequest(host="attacker"),
                      yp.RegisterApplicationMasterResponse)
        return am, records.app_id_str(app)

    def build(self) -> None:
        def mem(mb: int) -> pb.Resource:
            return pb.Resource(values={"memory-mb": mb, "vcores": 1})

        def ask(i: int, n: int = 1, r: pb.Resource | None = None) -> pb.ResourceAsk:
            return pb.ResourceAsk(allocation_request_id=i, priority=1, num_containers=n, capability=r or mem(128))

        def allocate(*asks: pb.ResourceAsk, **kw: Any) -> bytes:
            return pb.AllocateRequest(response_id=0, asks=list(asks), **kw).SerializeToString()

        ten_mb = "n" * (10 * MB)
        self.grpc_allocates = {
            "grpc allocate 100,000 asks": allocate(*(ask(i) for i in range(100_000))),
            "grpc allocate 100,001 releases": allocate(releases=[f"container_1_0001_01_{i:06d}"
                                                                 for i in range(100_001)]),
            "grpc allocate 1 ask of 1,000,001 containers": allocate(ask(1, 1_000_001)),
            "grpc allocate 1 ask of 1,000,000 node-sized containers": allocate(ask(2, 1_000_000,
                                                                                     mem(NODE_MEMORY_MB))),
            "grpc allocate resource above the maximum": allocate(ask(3, 1, mem(10**9))),
            "grpc allocate negative containers": allocate(ask(4, -1)),
            "grpc allocate negative memory": allocate(ask(5, 1, mem(-512))),
            "grpc allocate int64-max memory": allocate(ask(6, 1, mem(2**63 - 1))),
            "grpc allocate 10 MB checkpoint": allocate(checkpoint=ten_mb),
        }

        def submission(app_id: str, **kw: Any) -> bytes:
            return pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
                application_id=app_id, queue="default", user="mallory", unmanaged_am=True,
                am_resource=mem(256), **kw)).SerializeToString()

        self.grpc_submits = {
            "grpc submit 10 MB name": submission(self.ids["grpc-name"], name=ten_mb),
            "grpc submit 100,000 tags": submission(self.ids["grpc-tags"], name="tags",
                                                   tags=[f"t{i}" for i in range(100_000)]),
            "grpc 50 MB message": submission(self.ids["grpc-name"], name="n" * (50 * MB)),
        }
        self.grpc_kill = pb.KillApplicationRequest(application_id=self.killed_app,
                                                   diagnostics="d" * MB).SerializeToString()

        def rest_body(app_id: str, *, managed: bool = False) -> dict[str, Any]:
            """A submission; ``managed``: with an AM container, so that its resource counts."""
            return {"application-id": app_id, "application-name": "x", "unmanaged-AM": not managed,
                    "resource": {"memory": 256, "vCores": 1},
                    "am-container-spec": {"commands": {"command": "true"}}}

        self.rest_bodies: dict[str, bytes] = {
            "rest submit 10 MB name": json.dumps(rest_body(self.ids["rest-name"]) | {
                "application-name": ten_mb}).encode(),
            "rest submit 100,000 tags": json.dumps(rest_body(self.ids["rest-tags"]) | {
                "application-tags": {"tag": [f"t{i}" for i in range(100_000)]}}).encode(),
            "rest submit NaN resources": json.dumps(rest_body(self.ids["rest-nan"], managed=True) | {
                "resource": {"memory": float("nan"), "vCores": 1}}).encode(),
            "rest submit negative resources": json.dumps(rest_body(self.ids["rest-negative"], managed=True) | {
                "resource": {"memory": -512, "vCores": -1}}).encode(),
            "rest submit 2^64 memory": json.dumps(rest_body(self.ids["rest-huge"], managed=True) | {
                "resource": {"memory": 2**64, "vCores": 1}}).encode(),
            "rest nested JSON 100,000 deep": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
            "rest 50 MB body with Content-Length": b"x" * (50 * MB),
        }
        self.chunk = b"x" * MB  # the 50 MB chunked body: 50 of these, no Content-Length
        ipc_ask = yr.ResourceRequest(priority=yr.Priority(priority=1), resource_name="*", num_containers=1,
                                     capability=records.resource_pb(Resources.of(memory_mb=128, vcores=1)))
        self.ipc_allocate = yp.AllocateRequest(response_id=0, ask=[ipc_ask] * 100_000).SerializeToString()
        self.ipc_name = yp.SubmitApplicationRequest(application_submission_context=yr.ApplicationSubmissionContext(
            application_id=self.ipc_name_id, application_name=ten_mb, unmanaged_am=True,
            resource=records.resource_pb(Resources.of(memory_mb=256, vcores=1)))).SerializeToString()
        self.ipc_big = yp.GetApplicationsRequest(application_types=["t" * 1000] * (50 * 1024)).SerializeToString()
        self.diagnostics = "d" * MB

    # --- the requests
    async def grpc_raw(self, method: Any, payload: bytes, metadata: list[tuple[str, str]]) -> str:
        try:
            await method(payload, metadata=metadata, timeout=60)
            return "OK"
        except grpc.aio.AioRpcError as err:
            return err.code().name

    async def grpc_allocate(self, payload: bytes) -> str:
        """An allocate built beforehand, with the current response id appended (the last value of a field wins)."""
        suffix = pb.AllocateRequest(response_id=self.response_id).SerializeToString()
        try:
            raw = await self.raw_allocate(payload + suffix, metadata=self.amrm, timeout=60)
        except grpc.aio.AioRpcError as err:
            return err.code().name
        self.response_id = pb.AllocateResponse.FromString(raw).response_id
        return "OK"

    async def rest_post(self, body: bytes | None = None, chunked: bool = False) -> str:
        content: Any = body
        if chunked:
            async def chunks() -> Any:
                for _ in range(50):
                    yield self.chunk
            content = chunks()
        try:
            resp = await self.http.post(APPS, content=content, headers={**self.writer,
                                                                         "Content-Type": "application/json"})
            return str(resp.status_code)
        except httpx.HTTPError as err:
            return f"connection ended ({type(err).__name__})"

    @staticmethod
    async def ipc_raw(client: IpcClient, method: str, payload: bytes, response: type[Any]) -> str:
        """A call whose request is already serialized (the client's own serialization, skipped)."""
        if client._writer is None:
            await client.connect()
        call_id = client._next_id
        client._next_id += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        client._pending[call_id] = fut
        head = ipc.RequestHeader(method_name=method, declaring_class_protocol_name=client.protocol,
                                 client_protocol_version=1)
        packet = wire.delimited(wire.request_header(call_id, client.client_id), head)
        assert client._writer is not None
        try:
            client._writer.write(wire.frame(packet + wire.encode_varint(len(payload)) + payload))
            await client._writer.drain()
        except ConnectionError:  # the server closed the connection while the call was still going out
            await asyncio.sleep(0.1)
            refusal = fut.exception() if fut.done() else None
            if isinstance(refusal, RemoteError):  # the fatal answer that closed it
                return f"fatal {refusal.java_class.rsplit('.', 1)[-1]}"
            raise
        header, _, _ = await asyncio.wait_for(fut, 60)
        if header.status != ipc.RpcResponseHeader.SUCCESS:
            return header.exception_class_name.rsplit(".", 1)[-1]
        return "OK"

    async def ipc_am_allocate(self) -> str:
        """The attacker's AM allocating with 100,000 asks over Hadoop IPC, on a new connection each time: the RM
        answers a packet over its bound fatally and closes the connection, as Hadoop's server does."""
        am = self.ipc_am
        async with IpcClient(am.host, am.port, MASTER, user=am.user, token=am.token) as c:
            try:
                return await self.ipc_raw(c, "allocate", self.ipc_allocate, yp.AllocateResponse)
            except RemoteError as err:
                return f"fatal {err.java_class.rsplit('.', 1)[-1]}" if err.fatal else \
                    err.java_class.rsplit(".", 1)[-1]

    async def ipc_simple_big(self) -> str:
        try:
            async with IpcClient(*split(self.spec["ipc_client"]), CLIENT, user="dr.who", timeout=60) as c:
                return await self.ipc_raw(c, "getApplications", self.ipc_big, yp.GetApplicationsResponse)
        except (RemoteError, ConnectionError, asyncio.IncompleteReadError) as err:
            return f"connection ended ({type(err).__name__})"

    async def ipc_name_submit(self) -> str:
        async with IpcClient(*split(self.spec["ipc_client"]), CLIENT, user="root", token=self.delegation) as c:
            return await self.ipc_raw(c, "submitApplication", self.ipc_name, yp.SubmitApplicationResponse)

    async def ipc_finish(self) -> str:
        """A fresh unmanaged AM that finishes with 1 MB of diagnostics (an attempt finishes once)."""
        am, app_id = await self.unmanaged_ipc_am("mallory-finish")
        try:
            done = await am.call("finishApplicationMaster", yp.FinishApplicationMasterRequest(
                diagnostics=self.diagnostics, final_application_status=yr.APP_SUCCEEDED),
                yp.FinishApplicationMasterResponse)
            self.finished_apps.append(app_id)
            return "OK" if done.is_unregistered else "not unregistered"
        except RemoteError as err:
            return err.java_class.rsplit(".", 1)[-1]
        finally:
            await am.close()

    def catalogue(self) -> list[tuple[str, Callable[[], Awaitable[str]]]]:
        items: list[tuple[str, Callable[[], Awaitable[str]]]] = []
        for kind, payload in self.grpc_allocates.items():
            items.append((kind, partial(self.grpc_allocate, payload)))
        for kind, payload in self.grpc_submits.items():
            items.append((kind, partial(self.grpc_raw, self.raw_submit, payload, self.writer_md)))
        items.append(("grpc kill with 1 MB diagnostics",
                      partial(self.grpc_raw, self.raw_kill, self.grpc_kill, self.writer_md)))
        items.append(("ipc allocate 100,000 asks", self.ipc_am_allocate))
        items.append(("ipc submit 10 MB name", self.ipc_name_submit))
        items.append(("ipc 50 MB call, SIMPLE, no credentials", self.ipc_simple_big))
        for kind, body in self.rest_bodies.items():
            items.append((kind, partial(self.rest_post, body)))
        items.append(("rest 50 MB body, chunked", partial(self.rest_post, chunked=True)))
        return items

    @property
    def writer_md(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.secret}")]

    def controls(self) -> list[tuple[str, Callable[[], Awaitable[str]]]]:
        """Not requests to the RM: the same bytes as the 100,000-ask allocates (4.0 and 5.6 MB, a new connection
        each), sent to a sink process that reads and drops them. What these cost the callers is this machine's
        share of any attack of that size (the kernel's loopback copies, the caches they flush, the cores), with
        nothing of the RM's in it. Sent only when named in ``only``."""
        return [(f"control {mb} MB to a sink, not the RM", partial(self.to_sink, int(mb * MB)))
                for mb in (4.0, 5.6)]

    async def to_sink(self, size: int) -> str:
        reader, writer = await asyncio.open_connection(*split(self.spec["sink"]))
        try:
            writer.write(self.sink_payload[:size])
            await writer.drain()
            writer.write_eof()
            return "sink read " + (await reader.read()).decode()
        finally:
            writer.close()

    async def phase(self, seconds: float, only: list[str]) -> None:
        """The catalogue in a loop for ``seconds`` (``only``: those kinds alone)."""
        finish = "ipc AM finish with 1 MB diagnostics"
        items = [(k, f) for k, f in self.catalogue() if k in only or not only]
        items += [(k, f) for k, f in self.controls() if k in only]
        if not only or finish in only:  # an attempt finishes once: one fresh AM per phase
            started = time.monotonic()
            answer = await self.ipc_finish()
            self.record(finish, answer, started)
        if only == [finish]:
            await asyncio.sleep(seconds)
            return
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for kind, send in items:
                if time.monotonic() >= end:
                    break
                started = time.monotonic()
                try:
                    answer = await send()
                except (grpc.aio.AioRpcError, httpx.HTTPError, RemoteError, OSError, EOFError, TimeoutError,
                        wire.WireError) as err:  # a door that broke the connection: what happened, not a crash
                    answer = f"error ({type(err).__name__}: {str(err)[:80]})"
                self.record(kind, answer, started)
                if self.interval:  # paced: one request per interval, as an AM's heartbeat would send it
                    await asyncio.sleep(max(0.0, min(self.interval, end - time.monotonic())))

    def record(self, kind: str, answer: str, started: float) -> None:
        end = time.monotonic()
        self.tallies[kind].answers[answer] += 1
        self.tallies[kind].seconds.append(end - started)
        self.tallies[kind].spans.append((started, end))

    def report(self) -> dict[str, Any]:
        return {"kinds": {k: {"answers": dict(t.answers), "n": len(t.seconds),
                              "p50_s": quantile(t.seconds, 0.5), "max_s": max(t.seconds, default=math.nan)}
                          for k, t in self.tallies.items()},
                "spans": sorted(span for t in self.tallies.values() for span in t.spans),
                "finished_apps": self.finished_apps, "killed_app": self.killed_app}


async def attacker_main(spec: dict[str, Any]) -> None:
    attacker = Attacker(spec)
    await attacker.setup()
    print("ready " + json.dumps([k for k, _ in attacker.catalogue()]), flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line or line == "quit":
            break
        _, seconds, *only = line.split(" ", 2)
        await attacker.phase(float(seconds), only[0].split("|") if only else [])
        print("done", flush=True)
    print(json.dumps(attacker.report()), flush=True)


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    if spec.get("idle"):  # before any thread starts: they inherit it
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    asyncio.run(attacker_main(spec))
