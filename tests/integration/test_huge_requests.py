"""S19 at the doors of an in-process ResourceManager: a huge request is refused without the RM holding it for
longer than the refusal takes, or at all when its size alone says no.

* An allocate with too many asks is refused on its bytes, before one ask is built (gRPC and Hadoop IPC): asks
  that would not even parse are counted and refused for their number.
* A 100,000-ask allocate refused over gRPC is freed at once: a refusal raised with ``context.abort()`` kept the
  request (40 MB each) in a reference cycle until a full garbage collection.
* A REST body sent without a Content-Length (chunked) is refused once it passes 4 MB, not read whole first.
* A Hadoop IPC packet, like a gRPC message, over 4 MB is refused from its announced length.

The memory figures are this process's RSS, which holds the RM: the bounds leave room for the one request in
flight, and none for requests piling up.
"""

from __future__ import annotations

import asyncio
import gc
import struct
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import httpx
import psutil
import pytest
import pytest_asyncio

from common import tokens as core_tokens
from common.hadoop import tokens as hadoop_tokens
from common.hadoop import wire
from common.hadoop.client import IpcClient, RemoteError
from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.service import limits
from rm.service.config import RMConfig
from rm.service.server import ResourceManager
from tests.integration.conftest import unhealthy_node

pytestmark = pytest.mark.asyncio

MB = 1024 * 1024
ALLOCATE = "/shepherd.v1.ApplicationMaster/Allocate"
MASTER = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      ipc_client_port=0, ipc_scheduler_port=0))
    await server.start()
    try:
        await unhealthy_node(server, Resources.of(memory_mb=4096, vcores=4))
        yield server
    finally:
        await server.stop()


@contextmanager
def peak_rss() -> Iterator[list[float]]:
    """This process's RSS growth at its highest while the block runs, in MB (``[growth]`` once it is done)."""
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = [base]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            stop.wait(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out: list[float] = []
    try:
        yield out
    finally:
        stop.set()
        sampler.join()
        out.append((max(peak[0], proc.memory_info().rss) - base) / MB)


async def unmanaged_attempt(rm: ResourceManager, channel: grpc.aio.Channel) -> str:
    """An unmanaged app submitted over gRPC: its attempt's id."""
    writer = [("authorization", f"Bearer {rm.cfg.client_secret}")]
    client = pbg.ApplicationClientStub(channel)
    app_id = (await client.GetNewApplication(pb.GetNewApplicationRequest(), metadata=writer)).application_id
    await client.SubmitApplication(pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
        application_id=app_id, user="alice", unmanaged_am=True,
        am_resource=pb.Resource(values={"memory-mb": 512, "vcores": 1}))), metadata=writer)
    attempt = rm.state.apps[app_id].current  # type: ignore[index]
    assert attempt is not None
    return attempt.attempt_id


def unparsable_asks(field: int, n: int) -> bytes:
    """A serialized allocate request whose ``n`` asks (field ``field``) are each one byte that parses as nothing."""
    return (bytes([field << 3 | 2, 1, 0xFF])) * n


class Raw:
    """Bytes that pass for a serialized message (the IPC client serializes what it is given)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def SerializeToString(self) -> bytes:  # protobuf's name
        return self.data


async def test_too_many_asks_are_refused_before_any_is_built(rm: ResourceManager) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        attempt = await unmanaged_attempt(rm, channel)
        amrm = [("authorization", f"Bearer {core_tokens.amrm_token(rm.state.amrm_key, attempt)}")]
        am = pbg.ApplicationMasterStub(channel)
        await am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(), metadata=amrm)
        raw = channel.unary_unary(ALLOCATE)
        with pytest.raises(grpc.aio.AioRpcError) as refused:  # counted, though not one of them parses
            await raw(unparsable_asks(2, limits.MAX_ASKS_PER_ALLOCATE + 1), metadata=amrm, timeout=30)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "may carry at most 10000 asks, not 10001" in (refused.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as malformed:  # as many as allowed: then they are parsed
            await raw(unparsable_asks(2, 3), metadata=amrm, timeout=30)
        assert "malformed request" in (malformed.value.details() or "")
        assert (await am.Allocate(pb.AllocateRequest(response_id=0), metadata=amrm)).response_id == 1

    # the same over Hadoop IPC's ApplicationMasterProtocol, with the attempt's AMRMToken
    token = hadoop_tokens.amrm_token(rm.state.amrm_key, attempt, f"127.0.0.1:{rm.ipc.scheduler_port}")
    async with IpcClient("127.0.0.1", rm.ipc.scheduler_port, MASTER, user="alice", token=token) as ipc_am:
        with pytest.raises(RemoteError) as refused_ipc:
            await ipc_am.call("allocate", Raw(unparsable_asks(1, limits.MAX_ASKS_PER_ALLOCATE + 1)),  # type: ignore[arg-type]
                              yp.AllocateResponse)
        assert refused_ipc.value.java_class == "org.apache.hadoop.yarn.exceptions.YarnException"
        assert "may carry at most 10000 asks, not 10001" in refused_ipc.value.message
        assert not refused_ipc.value.fatal  # an answer to the call; the connection serves on
        # a packet over 256 KB is read a chunk at a time and counted in the helper process from a view of it
        # (no copy on the loop): 100,001 releases are refused, and 10,000 asks of 0 containers on racks of long
        # names (the most allowed) are taken
        with pytest.raises(RemoteError) as releases:
            await ipc_am.call("allocate", Raw(unparsable_asks(2, limits.MAX_RELEASES_PER_ALLOCATE + 1)),  # type: ignore[arg-type]
                              yp.AllocateResponse)
        assert "may release at most 100000 containers" in releases.value.message
        assert not releases.value.fatal
        big = yp.AllocateRequest(response_id=1, ask=[
            yr.ResourceRequest(priority=yr.Priority(priority=1), resource_name=f"/rack-{k:040d}", num_containers=0,
                               capability=yr.Resource(memory=128, virtual_cores=1))
            for k in range(limits.MAX_ASKS_PER_ALLOCATE)])
        assert len(big.SerializeToString()) > 256 * 1024
        answer = await ipc_am.call("allocate", big, yp.AllocateResponse)
        assert answer.response_id == 2
        # a call over the packet bound, sent whole: the fatal answer reaches the caller (the RM reads and drops the
        # rest of the packet before it closes), not a reset connection
        with pytest.raises(RemoteError) as too_big:
            await ipc_am.call("allocate", Raw(unparsable_asks(1, limits.MAX_MESSAGE // 2)),  # type: ignore[arg-type]
                              yp.AllocateResponse)
        assert too_big.value.fatal
        assert too_big.value.java_class == "org.apache.hadoop.ipc.RpcServerException"
        assert f"is not in (0, {limits.MAX_MESSAGE}]" in too_big.value.message


async def test_a_refused_huge_allocate_is_not_kept(rm: ResourceManager) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}",
                                         options=[("grpc.max_send_message_length", 64 * MB)]) as channel:
        client = pbg.ApplicationClientStub(channel)
        attempt = await unmanaged_attempt(rm, channel)
        amrm = [("authorization", f"Bearer {core_tokens.amrm_token(rm.state.amrm_key, attempt)}")]
        am = pbg.ApplicationMasterStub(channel)
        await am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(), metadata=amrm)
        huge = pb.AllocateRequest(asks=[pb.ResourceAsk(
            allocation_request_id=i, priority=1, num_containers=1,
            capability=pb.Resource(values={"memory-mb": 128, "vcores": 1})) for i in range(100_000)]
        ).SerializeToString()
        raw = channel.unary_unary(ALLOCATE)
        gc.collect()
        gc.disable()  # what a refusal leaves must go with the request, not wait for a collection
        try:
            with peak_rss() as growth:
                for _ in range(8):  # ~40 MB each while it is parsed
                    with pytest.raises(grpc.aio.AioRpcError) as refused:
                        await raw(huge, metadata=amrm, timeout=60)
                    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                    assert (refused.value.details() or "").startswith(
                        "org.apache.hadoop.yarn.webapp.BadRequestException: an allocate call may carry at most")
        finally:
            gc.enable()
        assert growth[0] < 150, f"the RM grew {growth[0]:.0f} MB over 8 refused allocates"
        ok = await am.Allocate(pb.AllocateRequest(response_id=0), metadata=amrm)  # the AM carries on
        assert ok.response_id == 1
        # a refusal for want of credentials is a status as before
        with pytest.raises(grpc.aio.AioRpcError) as anonymous:
            await client.GetNewApplication(pb.GetNewApplicationRequest())
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_chunked_body_is_refused_once_it_passes_the_limit(rm: ResourceManager) -> None:
    sent = [0]

    async def body() -> AsyncIterator[bytes]:  # no Content-Length: the middleware cannot judge it up front
        chunk = b"x" * MB
        for _ in range(64):
            sent[0] += 1
            yield chunk

    headers = {"Authorization": f"Bearer {rm.cfg.client_secret}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=60) as http:
        with peak_rss() as growth:
            resp = await http.post("/ws/v1/cluster/apps", content=body(), headers=headers)
        assert resp.status_code == 413, resp.text
        assert resp.json()["RemoteException"]["message"] == \
            f"the request body is larger than {4 * MB} bytes"
        assert growth[0] < 40, f"the RM grew {growth[0]:.0f} MB on a refused 64 MB body"
        assert (await http.get("/ws/v1/cluster/apps")).status_code == 200


async def test_oversized_messages_are_refused_from_their_announced_length(rm: ResourceManager) -> None:
    # Hadoop IPC, SIMPLE and no credentials: the length prefix of a 50 MB call, and nothing after it
    reader, writer = await asyncio.open_connection("127.0.0.1", rm.ipc.client_port)
    client_id = b"0123456789abcdef"
    writer.write(wire.preamble(wire.AUTH_NONE))
    writer.write(wire.context_packet(client_id, "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB", "dr.who"))
    writer.write(struct.pack(">I", 50 * MB))
    await writer.drain()
    size = wire.packet_length(await asyncio.wait_for(reader.readexactly(4), 10))
    header, _ = wire.read_delimited(await reader.readexactly(size), 0, ipc.RpcResponseHeader)
    assert header.status == ipc.RpcResponseHeader.FATAL
    assert header.error_msg == f"RPC data length {50 * MB} is not in (0, {limits.MAX_MESSAGE}]"
    assert await asyncio.wait_for(reader.read(), 10) == b""  # and the connection is closed
    writer.close()
    # gRPC: the same bound
    async with grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}",
                                         options=[("grpc.max_send_message_length", 64 * MB)]) as channel:
        big = pb.GetApplicationsRequest(states=["t" * 1000] * (17 * 1024)).SerializeToString()
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await channel.unary_unary("/shepherd.v1.ApplicationClient/GetApplications")(big, timeout=60)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
