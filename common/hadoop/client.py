"""A small asyncio Hadoop IPC client: the RM uses it to start AM containers on NodeManagers, and
the tests use it to talk to shepherd the way Java clients do (SIMPLE, or TOKEN via DIGEST-MD5)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Self, TypeVar

from google.protobuf.message import Message

from common.hadoop import sasl, wire
from proto.hadoop import ipc_pb2 as ipc

R = TypeVar("R", bound=Message)


class RemoteError(Exception):
    """An ERROR or FATAL response: the Java exception class and message the server sent."""

    def __init__(self, java_class: str, message: str, *, fatal: bool = False, detail: int = 0) -> None:
        super().__init__(f"{java_class}: {message}")
        self.java_class = java_class
        self.message = message
        self.fatal = fatal
        self.detail = detail


class IpcClient:
    def __init__(self, host: str, port: int, protocol: str, *, user: str = "shepherd",
                 token: ipc.Token | None = None, timeout: float = 30.0) -> None:
        self.host, self.port, self.protocol, self.user = host, port, protocol, user
        self.token = token
        self.timeout = timeout
        self.client_id = uuid.uuid4().bytes
        self.auth = ""
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[tuple[ipc.RpcResponseHeader, bytes, int]]] = {}
        self._pump: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), self.timeout)
        self._reader, self._writer = reader, writer
        use_sasl = self.token is not None
        writer.write(wire.preamble(wire.AUTH_SASL if use_sasl else wire.AUTH_NONE))
        if use_sasl:
            await asyncio.wait_for(self._negotiate(), self.timeout)
        else:
            self.auth = sasl.METHOD_SIMPLE
        writer.write(wire.context_packet(self.client_id, self.protocol, self.user))
        await writer.drain()
        self._pump = asyncio.create_task(self._read_responses())

    async def _negotiate(self) -> None:
        assert self._writer is not None
        self._writer.write(wire.sasl_packet(ipc.RpcSasl(state=ipc.RpcSasl.NEGOTIATE)))
        await self._writer.drain()
        reply = await self._read_sasl()
        if reply.state == ipc.RpcSasl.SUCCESS:
            self.auth = sasl.METHOD_SIMPLE
            return
        offered = {a.method: a for a in reply.auths}
        token_auth = offered.get(sasl.METHOD_TOKEN)
        if token_auth is not None and self.token is not None and token_auth.mechanism == sasl.MECHANISM:
            step = sasl.client_response(token_auth.challenge, self.token.identifier, self.token.password)
            chosen = ipc.RpcSasl.Auth()
            chosen.CopyFrom(token_auth)
            chosen.ClearField("challenge")
            self._writer.write(wire.sasl_packet(ipc.RpcSasl(state=ipc.RpcSasl.INITIATE, token=step.response,
                                                            auths=[chosen])))
            await self._writer.drain()
            done = await self._read_sasl()
            if done.state != ipc.RpcSasl.SUCCESS or done.token != step.expected_rspauth:
                raise RemoteError(sasl.MECHANISM, "the server did not prove it knows the token password")
            self.auth = sasl.METHOD_TOKEN
            return
        if sasl.METHOD_SIMPLE in offered:
            simple = ipc.RpcSasl.Auth(method=sasl.METHOD_SIMPLE, mechanism="")
            self._writer.write(wire.sasl_packet(ipc.RpcSasl(state=ipc.RpcSasl.INITIATE, auths=[simple])))
            self.auth = sasl.METHOD_SIMPLE
            return
        raise RemoteError("org.apache.hadoop.security.AccessControlException",
                          f"Client cannot authenticate via:{sorted(offered)}")

    async def _read_packet(self) -> bytes:
        assert self._reader is not None
        size = wire.packet_length(await self._reader.readexactly(4))
        return await self._reader.readexactly(size)

    async def _read_sasl(self) -> ipc.RpcSasl:
        packet = await self._read_packet()
        header, pos = wire.read_delimited(packet, 0, ipc.RpcResponseHeader)
        if header.status != ipc.RpcResponseHeader.SUCCESS:
            raise RemoteError(header.exception_class_name, header.error_msg, fatal=True,
                              detail=header.error_detail)
        msg, _ = wire.read_delimited(packet, pos, ipc.RpcSasl)
        return msg

    async def _read_responses(self) -> None:
        error: BaseException = ConnectionError("connection closed")
        try:
            while True:
                packet = await self._read_packet()
                header, pos = wire.read_delimited(packet, 0, ipc.RpcResponseHeader)
                call_id = wire.signed_call_id(header.call_id)
                fut = self._pending.pop(call_id, None)
                if fut is not None and not fut.done():
                    fut.set_result((header, packet, pos))
                elif header.status == ipc.RpcResponseHeader.FATAL:
                    error = RemoteError(header.exception_class_name, header.error_msg, fatal=True,
                                        detail=header.error_detail)
                    break
        except (asyncio.IncompleteReadError, ConnectionError, wire.WireError) as exc:
            error = exc
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(error)
        self._pending.clear()

    async def call(self, method: str, request: Message, response_type: type[R]) -> R:
        if self._writer is None or self._pump is None or self._pump.done():
            raise ConnectionError("not connected")
        call_id = self._next_id
        self._next_id += 1
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[ipc.RpcResponseHeader, bytes, int]] = loop.create_future()
        self._pending[call_id] = fut
        self._writer.write(wire.call_packet(call_id, self.client_id, self.protocol, method, request))
        await self._writer.drain()
        header, packet, pos = await asyncio.wait_for(fut, self.timeout)
        if header.status != ipc.RpcResponseHeader.SUCCESS:
            raise RemoteError(header.exception_class_name, header.error_msg,
                              fatal=header.status == ipc.RpcResponseHeader.FATAL, detail=header.error_detail)
        response, _ = wire.read_delimited(packet, pos, response_type)
        return response

    async def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
                await self._writer.wait_closed()
        self._writer = None
