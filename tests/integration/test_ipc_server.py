"""The Hadoop IPC server against well-formed, malformed and hostile clients (in process, loopback).

Every bad packet, unknown protocol or method and bad token gets an RPC error; the connection is
closed only after a FATAL one, and the server keeps serving new connections."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import struct
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from common.hadoop import wire
from common.hadoop.client import IpcClient, RemoteError
from common.hadoop.server import CallContext, IpcServer, Method, Protocol, RpcError, TokenAuth
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp

CLIENT = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
MASTER = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
KEY = b"test-key"
Header = ipc.RpcResponseHeader


def password(identifier: bytes) -> bytes:
    return hmac.new(KEY, identifier, hashlib.sha256).digest()


def token(identifier: bytes = b"attempt-1", pw: bytes | None = None) -> ipc.Token:
    return ipc.Token(identifier=identifier, password=pw if pw is not None else password(identifier),
                     kind="YARN_AM_RM_TOKEN", service="127.0.0.1:0")


async def metrics(ctx: CallContext, req: yp.GetClusterMetricsRequest) -> yp.GetClusterMetricsResponse:
    out = yp.GetClusterMetricsResponse()
    out.cluster_metrics.num_node_managers = 1
    out.cluster_metrics.num_active_nms = 1
    return out


async def slow_kill(ctx: CallContext, req: yp.KillApplicationRequest) -> yp.KillApplicationResponse:
    await asyncio.sleep(0.3 if req.diagnostics == "slow" else 0)
    if req.diagnostics == "refuse":
        raise RpcError("org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException", "no such app")
    if req.diagnostics == "crash":
        raise RuntimeError("handler bug")
    return yp.KillApplicationResponse(is_kill_completed=req.diagnostics == "slow")


async def whoami(ctx: CallContext, req: yp.FinishApplicationMasterRequest) -> yp.FinishApplicationMasterResponse:
    assert ctx.token == b"attempt-1"
    return yp.FinishApplicationMasterResponse(is_unregistered=True)


pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def server() -> AsyncIterator[IpcServer]:
    protocols = [
        Protocol(CLIENT, {"getClusterMetrics": Method(yp.GetClusterMetricsRequest, metrics),
                          "forceKillApplication": Method(yp.KillApplicationRequest, slow_kill)}),
        Protocol(MASTER, {"finishApplicationMaster": Method(yp.FinishApplicationMasterRequest, whoami)},
                 requires_token=True),
    ]
    srv = IpcServer("test", protocols, token_auth=TokenAuth(lambda ident: [password(ident)]))
    await srv.start("127.0.0.1", 0)
    yield srv
    await srv.stop()


async def raw(server: IpcServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.port)


async def read_response(reader: asyncio.StreamReader) -> tuple[ipc.RpcResponseHeader, bytes, int]:
    size = struct.unpack(">I", await asyncio.wait_for(reader.readexactly(4), 5))[0]
    packet = await asyncio.wait_for(reader.readexactly(size), 5)
    header, pos = wire.read_delimited(packet, 0, ipc.RpcResponseHeader)
    return header, packet, pos


async def assert_closed(reader: asyncio.StreamReader) -> None:
    assert await asyncio.wait_for(reader.read(), 5) == b""


async def simple_session(server: IpcServer, protocol: str = CLIENT
                         ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    reader, writer = await raw(server)
    cid = uuid.uuid4().bytes
    writer.write(wire.preamble() + wire.context_packet(cid, protocol, "root"))
    return reader, writer, cid


async def still_serving(server: IpcServer) -> None:
    async with IpcClient("127.0.0.1", server.port, CLIENT, user="root") as c:
        out = await c.call("getClusterMetrics", yp.GetClusterMetricsRequest(), yp.GetClusterMetricsResponse)
        assert out.cluster_metrics.num_active_nms == 1


async def test_recorded_exchange_byte_for_byte(server: IpcServer) -> None:
    reader, writer = await raw(server)
    cid = bytes(range(16))
    writer.write(bytes.fromhex("68727063 09 00 DF") + bytes.fromhex("0000000E 0A0802100018412200 2801 021001"))
    size = struct.unpack(">I", await reader.readexactly(4))[0]
    negotiate = await reader.readexactly(size)
    _header, pos = wire.read_delimited(negotiate, 0, ipc.RpcResponseHeader)
    sasl_msg, _ = wire.read_delimited(negotiate, pos, ipc.RpcSasl)
    assert sasl_msg.state == ipc.RpcSasl.NEGOTIATE  # this listener offers TOKEN first, then SIMPLE
    assert [a.method for a in sasl_msg.auths] == ["TOKEN", "SIMPLE"]
    simple = ipc.RpcSasl(state=ipc.RpcSasl.INITIATE, auths=[ipc.RpcSasl.Auth(method="SIMPLE", mechanism="")])
    writer.write(wire.sasl_packet(simple) + wire.context_packet(cid, CLIENT, "root")
                 + wire.call_packet(0, cid, CLIENT, "getClusterMetrics", yp.GetClusterMetricsRequest()))
    reply = await reader.readexactly(0x24)
    assert reply == bytes.fromhex("00000020 1808001000180 93A10".replace(" ", "")) + cid + \
        bytes.fromhex("060A0408011801")
    writer.close()


async def test_simple_only_server_answers_negotiate_with_success() -> None:
    srv = IpcServer("simple", [Protocol(CLIENT, {"getClusterMetrics": Method(yp.GetClusterMetricsRequest, metrics)})])
    await srv.start("127.0.0.1", 0)
    try:
        reader, writer = await raw(srv)
        writer.write(bytes.fromhex("68727063 09 00 DF 0000000E 0A0802100018412200 2801 021001".replace(" ", "")))
        assert await reader.readexactly(18) == bytes.fromhex("0000000E0A08DFFFFFFF0F1000180902 1000".replace(" ", ""))
        writer.close()
    finally:
        await srv.stop()


async def test_unknown_protocol_and_method_are_errors_and_the_connection_stays(server: IpcServer) -> None:
    reader, writer, cid = await simple_session(server)
    writer.write(wire.call_packet(0, cid, "org.example.NoSuchProtocolPB", "x", yp.GetClusterMetricsRequest()))
    header, _, _ = await read_response(reader)
    assert header.status == Header.ERROR
    assert header.error_detail == Header.ERROR_NO_SUCH_PROTOCOL
    assert header.exception_class_name == "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
    writer.write(wire.call_packet(1, cid, CLIENT, "getDelegationToken", yp.GetClusterMetricsRequest()))
    header, _, _ = await read_response(reader)
    assert header.status == Header.ERROR
    assert header.error_detail == Header.ERROR_NO_SUCH_METHOD
    assert header.call_id == 1
    assert header.client_id == cid
    writer.write(wire.call_packet(2, cid, CLIENT, "getClusterMetrics", yp.GetClusterMetricsRequest()))
    header, _packet, _pos = await read_response(reader)
    assert header.status == Header.SUCCESS
    assert header.call_id == 2
    writer.close()


@pytest.mark.parametrize("packet", [
    wire.frame(b"\xff\xff\xff"),  # not a header
    wire.frame(b"\x02\x08\x02"),  # a header without its required fields
    wire.frame(b"\x40\x08"),  # announces 64 bytes, has 1
    b"\x00\x00\x00\x00",  # empty packet
    b"\x7f\xff\xff\xff",  # absurd length
])
async def test_malformed_packets_get_fatal_errors(server: IpcServer, packet: bytes) -> None:
    reader, writer, _ = await simple_session(server)
    writer.write(packet)
    header, _, _ = await read_response(reader)
    assert header.status == Header.FATAL
    assert header.exception_class_name
    await assert_closed(reader)
    await still_serving(server)


async def test_truncated_packet_gets_a_fatal_error(server: IpcServer) -> None:
    reader, writer, cid = await simple_session(server)
    call = wire.call_packet(0, cid, CLIENT, "getClusterMetrics", yp.GetClusterMetricsRequest())
    writer.write(call[:-10])
    writer.write_eof()
    header, _, _ = await read_response(reader)
    assert header.status == Header.FATAL
    assert "truncated" in header.error_msg
    await assert_closed(reader)
    await still_serving(server)


async def test_undecodable_request_and_bad_call_ids(server: IpcServer) -> None:
    reader, writer, cid = await simple_session(server)
    head = ipc.RequestHeader(method_name="forceKillApplication", declaring_class_protocol_name=CLIENT,
                             client_protocol_version=1)
    writer.write(wire.frame(wire.delimited(wire.request_header(0, cid), head) + b"\x05\x12\xff"))
    header, _, _ = await read_response(reader)
    assert header.status == Header.FATAL
    assert header.error_detail == Header.FATAL_DESERIALIZING_REQUEST
    await assert_closed(reader)
    reader, writer, cid = await simple_session(server)
    writer.write(wire.frame(wire.delimited(wire.request_header(-7, cid))))
    header, _, _ = await read_response(reader)
    assert header.status == Header.FATAL
    assert header.error_detail == Header.FATAL_INVALID_RPC_HEADER
    await assert_closed(reader)


async def test_calls_before_the_context_and_wrong_versions_are_refused(server: IpcServer) -> None:
    reader, writer = await raw(server)
    cid = uuid.uuid4().bytes
    writer.write(wire.preamble() + wire.call_packet(0, cid, CLIENT, "getClusterMetrics", yp.GetClusterMetricsRequest()))
    header, _, _ = await read_response(reader)
    assert header.status == Header.FATAL
    reader, writer = await raw(server)
    writer.write(b"hrpc\x07\x00\x00")
    header, _, _ = await read_response(reader)
    assert header.status == Header.FATAL
    assert header.error_detail == Header.FATAL_VERSION_MISMATCH
    reader, writer = await raw(server)
    writer.write(b"GET / HTTP/1.1\r\n\r\n")
    assert b"Hadoop IPC port" in await asyncio.wait_for(reader.read(), 5)


async def test_handler_errors_and_pipelining(server: IpcServer) -> None:
    async with IpcClient("127.0.0.1", server.port, CLIENT, user="root") as c:
        kill = yp.KillApplicationRequest

        async def call(diag: str) -> yp.KillApplicationResponse:
            return await c.call("forceKillApplication", kill(diagnostics=diag), yp.KillApplicationResponse)

        slow, fast = await asyncio.gather(call("slow"), call("fast"))  # answered out of order
        assert slow.is_kill_completed
        assert not fast.is_kill_completed
        with pytest.raises(RemoteError) as refused:
            await call("refuse")
        assert refused.value.java_class.endswith("ApplicationNotFoundException")
        assert not refused.value.fatal
        with pytest.raises(RemoteError) as crashed:
            await call("crash")
        assert crashed.value.java_class == "org.apache.hadoop.ipc.RpcServerException"
        assert (await call("fast")) is not None  # the connection survived both


async def test_ping_is_not_answered(server: IpcServer) -> None:
    reader, writer, cid = await simple_session(server)
    writer.write(wire.frame(wire.delimited(wire.request_header(wire.CALL_ID_PING, cid, -1))))
    writer.write(wire.call_packet(0, cid, CLIENT, "getClusterMetrics", yp.GetClusterMetricsRequest()))
    header, _, _ = await read_response(reader)
    assert header.call_id == 0
    assert header.status == Header.SUCCESS
    writer.close()


async def test_token_authentication(server: IpcServer) -> None:
    finish = yp.FinishApplicationMasterRequest()
    async with IpcClient("127.0.0.1", server.port, MASTER, user="am", token=token()) as c:
        assert c.auth == "TOKEN"
        out = await c.call("finishApplicationMaster", finish, yp.FinishApplicationMasterResponse)
        assert out.is_unregistered
    with pytest.raises(RemoteError) as bad:
        async with IpcClient("127.0.0.1", server.port, MASTER, user="am", token=token(pw=b"forged")) as c:
            await c.call("finishApplicationMaster", finish, yp.FinishApplicationMasterResponse)
    assert bad.value.fatal
    assert bad.value.java_class == "javax.security.sasl.SaslException"
    async with IpcClient("127.0.0.1", server.port, MASTER, user="am") as c:  # no token at all
        with pytest.raises(RemoteError) as missing:
            await c.call("finishApplicationMaster", finish, yp.FinishApplicationMasterResponse)
        assert missing.value.java_class.endswith("InvalidToken")
        assert not missing.value.fatal
    await still_serving(server)
