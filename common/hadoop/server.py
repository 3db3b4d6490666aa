"""An asyncio Hadoop IPC server: preamble, framing, SASL (SIMPLE, or TOKEN via DIGEST-MD5),
connection context, pipelined calls dispatched by (protocol, method), errors as RPC errors.

Protocol handlers are plain coroutines ``(CallContext, request) -> response``; a handler refuses a
call by raising :class:`RpcError` with the Java exception class the client should re-throw.
A malformed packet gets a FATAL response and the connection is closed; an unknown protocol or
method, or a refused call, gets an ERROR response and the connection stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import EncodeError, Message

from common.hadoop import sasl, wire
from proto.hadoop import ipc_pb2 as ipc

log = logging.getLogger("shepherd.ipc")

Header = ipc.RpcResponseHeader
READ_CHUNK = 256 * 1024
"""A packet bigger than this is read a chunk at a time into its own buffer (``_read_big``)."""
RPC_SERVER_EXCEPTION = "org.apache.hadoop.ipc.RpcServerException"
NO_SUCH_METHOD = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
NO_SUCH_PROTOCOL = "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
VERSION_MISMATCH = "org.apache.hadoop.ipc.RPC$VersionMismatch"
ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"
SASL_EXCEPTION = "javax.security.sasl.SaslException"
INVALID_TOKEN = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
HTTP_REPLY = (b"HTTP/1.1 404 Not Found\r\nContent-type: text/plain\r\nConnection: close\r\n\r\n"
              b"It looks like you are making an HTTP request to a Hadoop IPC port. This is not the port "
              b"of the web interface on this daemon.\r\n")


class RpcError(Exception):
    """A refused call: the client re-throws ``java_class`` with ``message``."""

    def __init__(self, java_class: str, message: str, detail: int = Header.ERROR_APPLICATION) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message
        self.detail = detail


class _Fatal(Exception):
    def __init__(self, call_id: int, java_class: str, message: str, detail: int) -> None:
        super().__init__(message)
        self.call_id, self.java_class, self.message, self.detail = call_id, java_class, message, detail


@dataclass(frozen=True, slots=True)
class CallContext:
    user: str  # the connection's effective user
    protocol: str
    method: str
    peer: str
    token: bytes | None = None  # the token identifier a TOKEN-authenticated connection proved


Handler = Callable[[CallContext, Any], Awaitable[Message]]


@dataclass(frozen=True, slots=True)
class Method:
    request: type[Message]
    handler: Handler
    # a check of the serialized request before it is parsed: raises RpcError to refuse the call
    precheck: Callable[[memoryview], Awaitable[None]] | None = None


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str  # the wire name, e.g. org.apache.hadoop.yarn.api.ApplicationClientProtocolPB
    methods: Mapping[str, Method]
    requires_token: bool = False  # calls need a TOKEN-authenticated connection


@dataclass(frozen=True, slots=True)
class TokenAuth:
    """How this listener checks DIGEST-MD5: the passwords an identifier may have (none if not ours)."""

    passwords_for: Callable[[bytes], Sequence[bytes]]


@dataclass
class Limits:
    max_packet: int = wire.DEFAULT_MAX_PACKET
    preamble_timeout_s: float = 30.0
    idle_timeout_s: float = 600.0
    max_in_flight: int = 64
    # after a fatal answer, how long and how many bytes of what the peer still sends are read and dropped so that
    # the answer reaches it (closing with its bytes unread would reset the connection and discard the answer)
    linger_s: float = 2.0
    linger_bytes: int = 8 * 1024 * 1024


class IpcServer:
    def __init__(self, name: str, protocols: Sequence[Protocol], *, token_auth: TokenAuth | None = None,
                 limits: Limits | None = None) -> None:
        self.name = name
        self.protocols = {p.name: p for p in protocols}
        self.token_auth = token_auth
        self.limits = limits or Limits()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._conns: set[_Connection] = set()

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self._conns):
            conn.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5.0)
        self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(self, reader, writer)
        self._conns.add(conn)
        try:
            await conn.run()
        except Exception:  # a connection's bug must never reach the loop
            log.exception("%s: connection from %s failed", self.name, conn.peer)
        finally:
            self._conns.discard(conn)
            await conn.finish()


_DROPPED = bytearray(READ_CHUNK)  # what a lingering connection still sends lands here and is never read


class _Drop(asyncio.BufferedProtocol):
    """A connection after its fatal answer: what the peer still sends is received into one shared buffer and
    dropped; ``done`` once it closes its side, the connection is lost, or ``limit`` bytes have come."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def get_buffer(self, sizehint: int) -> bytearray:
        return _DROPPED

    def buffer_updated(self, nbytes: int) -> None:
        self.left -= nbytes
        if self.left <= 0:
            self._end()

    def eof_received(self) -> bool:
        self._end()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


@dataclass(eq=False)
class _Connection:
    server: IpcServer
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    peer: str = ""
    sasl_wanted: bool = False
    auth: str = ""  # "" until authenticated, then SIMPLE or TOKEN
    token: bytes | None = None
    nonce: str = ""
    user: str = ""
    has_context: bool = False
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    slots: asyncio.Semaphore | None = None

    def __post_init__(self) -> None:
        peer = self.writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.slots = asyncio.Semaphore(self.server.limits.max_in_flight)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()

    async def finish(self) -> None:
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=10.0)
        self.close()

    async def run(self) -> None:
        try:
            if not await self._preamble():
                return
            while True:
                packet = await self._read_packet()
                if packet is None:
                    return
                if not await self._dispatch(packet):
                    return
        except _Fatal as f:
            log.info("%s: closing %s: %s", self.server.name, self.peer, f.message)
            await self._respond(wire.response_header(f.call_id, Header.FATAL, exception=f.java_class,
                                                     message=f.message, detail=f.detail))
            await self._linger()

    async def _linger(self) -> None:
        """Let the peer read a fatal answer: end our side of the stream, then read and drop what it still sends
        (the rest of a refused packet) until it closes, for at most ``linger_s`` and ``linger_bytes``."""
        limits = self.server.limits
        with contextlib.suppress(Exception):
            if self.writer.can_write_eof():
                self.writer.write_eof()
            # the rest goes to a protocol that receives into one reused buffer and keeps nothing: a refused 5 MB
            # packet costs the loop a few receives, not a copy into the stream's buffer and another out of it
            transport = self.writer.transport
            assert isinstance(transport, asyncio.Transport)  # a stream socket's: it reads as well as writes
            drop = _Drop(limits.linger_bytes)
            transport.set_protocol(drop)
            if not transport.is_reading():  # the stream had paused it, its buffer full
                transport.resume_reading()
            async with asyncio.timeout(limits.linger_s):
                await drop.done

    # ------------------------------------------------------------ reading

    async def _preamble(self) -> bool:
        try:
            head = await asyncio.wait_for(self.reader.readexactly(wire.PREAMBLE_LEN),
                                          self.server.limits.preamble_timeout_s)
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            return False
        if head[:4] in (b"GET ", b"POST", b"HEAD", b"PUT "):
            await self._write(HTTP_REPLY)
            return False
        if head[:4] != wire.MAGIC:
            return False
        if head[4] != wire.IPC_VERSION:
            raise _Fatal(-1, VERSION_MISMATCH, f"Server IPC version {wire.IPC_VERSION} cannot communicate "
                         f"with client version {head[4]}", Header.FATAL_VERSION_MISMATCH)
        if head[6] == wire.AUTH_SASL:
            self.sasl_wanted = True
        elif head[6] == wire.AUTH_NONE:
            self.auth = sasl.METHOD_SIMPLE
        else:
            raise _Fatal(-1, ACCESS_CONTROL, f"unsupported auth protocol {head[6]}", Header.FATAL_UNAUTHORIZED)
        return True

    async def _read_packet(self) -> bytes | bytearray | None:
        try:
            prefix = await asyncio.wait_for(self.reader.readexactly(4), self.server.limits.idle_timeout_s)
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise _Fatal(-1, RPC_SERVER_EXCEPTION, "truncated packet length",
                             Header.FATAL_INVALID_RPC_HEADER) from exc
            return None
        except (TimeoutError, ConnectionError):
            return None
        size = wire.packet_length(prefix)
        if size <= 0 or size > self.server.limits.max_packet:
            raise _Fatal(-1, RPC_SERVER_EXCEPTION, f"RPC data length {size} is not in (0, "
                         f"{self.server.limits.max_packet}]", Header.FATAL_INVALID_RPC_HEADER)
        try:
            if size <= READ_CHUNK:
                return await asyncio.wait_for(self.reader.readexactly(size), self.server.limits.idle_timeout_s)
            return await asyncio.wait_for(self._read_big(size), self.server.limits.idle_timeout_s)
        except asyncio.IncompleteReadError as exc:
            raise _Fatal(-1, RPC_SERVER_EXCEPTION, f"truncated packet: {len(exc.partial)} of {size} bytes",
                         Header.FATAL_INVALID_RPC_HEADER) from exc
        except (TimeoutError, ConnectionError):
            return None

    async def _read_big(self, size: int) -> bytearray:
        """A packet of ``size`` bytes read a chunk at a time into one buffer: ``readexactly`` would gather it
        and then copy it whole in one go, holding the event loop for as long as megabytes take to copy."""
        packet = bytearray(size)
        view = memoryview(packet)
        got = 0
        while got < size:
            chunk = await self.reader.read(min(READ_CHUNK, size - got))
            if not chunk:
                raise asyncio.IncompleteReadError(bytes(view[:got]), size)
            view[got:got + len(chunk)] = chunk
            got += len(chunk)
        return packet

    # ------------------------------------------------------------ dispatch

    async def _dispatch(self, packet: bytes | bytearray) -> bool:
        """Handle one packet; False when the connection should close."""
        try:
            header, pos = wire.read_delimited(packet, 0, ipc.RpcRequestHeader)
        except wire.WireError as exc:
            raise _Fatal(-1, RPC_SERVER_EXCEPTION, f"invalid RPC header: {exc}",
                         Header.FATAL_INVALID_RPC_HEADER) from exc
        call_id = header.call_id
        if header.HasField("rpc_kind") and header.rpc_kind != ipc.RPC_PROTOCOL_BUFFER:
            raise _Fatal(call_id, RPC_SERVER_EXCEPTION, f"unsupported RPC kind {header.rpc_kind}",
                         Header.FATAL_UNSUPPORTED_SERIALIZATION)
        if header.rpc_op == ipc.RpcRequestHeader.CLOSE_CONNECTION:
            return False
        if call_id == wire.CALL_ID_PING:
            return True
        if call_id == wire.CALL_ID_SASL:
            await self._sasl(packet, pos)
            return True
        if not self.auth:
            raise _Fatal(call_id, ACCESS_CONTROL, "SASL negotiation has not completed",
                         Header.FATAL_UNAUTHORIZED)
        if call_id == wire.CALL_ID_CONNECTION_CONTEXT:
            self._context(packet, pos)
            return True
        if call_id < 0:
            raise _Fatal(call_id, RPC_SERVER_EXCEPTION, f"invalid call id {call_id}",
                         Header.FATAL_INVALID_RPC_HEADER)
        if not self.has_context:
            raise _Fatal(call_id, RPC_SERVER_EXCEPTION, "Connection context not established",
                         Header.FATAL_INVALID_RPC_HEADER)
        try:
            head, pos = wire.read_delimited(packet, pos, ipc.RequestHeader)
        except wire.WireError as exc:
            raise _Fatal(call_id, RPC_SERVER_EXCEPTION, f"invalid request header: {exc}",
                         Header.FATAL_DESERIALIZING_REQUEST) from exc
        protocol = self.server.protocols.get(head.declaring_class_protocol_name)
        method = protocol.methods.get(head.method_name) if protocol is not None else None
        error: RpcError | None = None
        if protocol is None:
            error = RpcError(NO_SUCH_PROTOCOL, f"Unknown protocol: {head.declaring_class_protocol_name}",
                             Header.ERROR_NO_SUCH_PROTOCOL)
        elif method is None:
            error = RpcError(NO_SUCH_METHOD, f"Unknown method {head.method_name} called on {protocol.name} "
                             "protocol.", Header.ERROR_NO_SUCH_METHOD)
        elif protocol.requires_token and self.token is None:
            error = RpcError(INVALID_TOKEN, f"{protocol.name} needs TOKEN authentication; the connection "
                             f"authenticated as {self.auth}")
        if error is not None or method is None or protocol is None:
            await self._error(call_id, header.client_id, error or RpcError(RPC_SERVER_EXCEPTION, "no method"))
            return True
        if method.precheck is not None:
            try:
                await method.precheck(wire.delimited_bytes(packet, pos))
            except wire.WireError:
                pass  # the parse below says what is wrong
            except RpcError as err:
                await self._error(call_id, header.client_id, err)
                return True
        try:
            request, _ = wire.read_delimited(packet, pos, method.request)
        except wire.WireError as exc:
            raise _Fatal(call_id, RPC_SERVER_EXCEPTION, f"cannot decode {head.method_name} request: {exc}",
                         Header.FATAL_DESERIALIZING_REQUEST) from exc
        ctx = CallContext(user=self.user, protocol=protocol.name, method=head.method_name, peer=self.peer,
                          token=self.token)
        assert self.slots is not None
        await self.slots.acquire()
        task = asyncio.create_task(self._call(method, ctx, request, call_id, header.client_id))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    def _context(self, packet: bytes | bytearray, pos: int) -> None:
        if self.has_context:
            raise _Fatal(wire.CALL_ID_CONNECTION_CONTEXT, RPC_SERVER_EXCEPTION, "Connection context already "
                         "processed", Header.FATAL_INVALID_RPC_HEADER)
        try:
            ctx, _ = wire.read_delimited(packet, pos, ipc.IpcConnectionContext)
        except wire.WireError as exc:
            raise _Fatal(wire.CALL_ID_CONNECTION_CONTEXT, RPC_SERVER_EXCEPTION, f"invalid connection context: "
                         f"{exc}", Header.FATAL_DESERIALIZING_REQUEST) from exc
        self.user = ctx.user_info.effective_user or ctx.user_info.real_user or "dr.who"
        self.has_context = True

    async def _sasl(self, packet: bytes | bytearray, pos: int) -> None:
        sid = wire.CALL_ID_SASL
        if not self.sasl_wanted or self.auth:
            raise _Fatal(sid, ACCESS_CONTROL, "unexpected SASL message", Header.FATAL_UNAUTHORIZED)
        try:
            msg, _ = wire.read_delimited(packet, pos, ipc.RpcSasl)
        except wire.WireError as exc:
            raise _Fatal(sid, SASL_EXCEPTION, f"invalid SASL message: {exc}",
                         Header.FATAL_UNAUTHORIZED) from exc
        auth = self.server.token_auth
        if msg.state == ipc.RpcSasl.NEGOTIATE:
            if auth is None:  # SIMPLE only: tell the client to go ahead without SASL
                self.auth = sasl.METHOD_SIMPLE
                await self._respond(wire.response_header(sid), ipc.RpcSasl(state=ipc.RpcSasl.SUCCESS))
                return
            self.nonce = sasl.new_nonce()
            reply = ipc.RpcSasl(state=ipc.RpcSasl.NEGOTIATE)
            reply.auths.add(method=sasl.METHOD_TOKEN, mechanism=sasl.MECHANISM, protocol=sasl.SASL_PROTOCOL,
                            server_id=sasl.SERVER_ID, challenge=sasl.server_challenge(self.nonce))
            reply.auths.add(method=sasl.METHOD_SIMPLE, mechanism="")
            await self._respond(wire.response_header(sid), reply)
            return
        if msg.state != ipc.RpcSasl.INITIATE or not msg.auths or not self.nonce:
            raise _Fatal(-1, SASL_EXCEPTION, f"unexpected SASL state {msg.state}", Header.FATAL_UNAUTHORIZED)
        chosen = msg.auths[0]
        if chosen.method == sasl.METHOD_SIMPLE:
            self.auth = sasl.METHOD_SIMPLE  # the client switched to SIMPLE; nothing is answered
            return
        if chosen.method != sasl.METHOD_TOKEN or chosen.mechanism != sasl.MECHANISM or auth is None:
            raise _Fatal(-1, ACCESS_CONTROL, f"{chosen.method} authentication is not enabled. "
                         "Available:[TOKEN, SIMPLE]", Header.FATAL_UNAUTHORIZED)
        try:
            outcome = sasl.verify_response(msg.token, self.nonce, auth.passwords_for)
        except sasl.SaslError as exc:
            raise _Fatal(-1, SASL_EXCEPTION, str(exc), Header.FATAL_UNAUTHORIZED) from exc
        self.auth, self.token = sasl.METHOD_TOKEN, outcome.identifier
        await self._respond(wire.response_header(sid),
                            ipc.RpcSasl(state=ipc.RpcSasl.SUCCESS, token=outcome.rspauth))

    # ------------------------------------------------------------ calls and writing

    async def _call(self, method: Method, ctx: CallContext, request: Message, call_id: int,
                    client_id: bytes) -> None:
        try:
            try:
                response = await method.handler(ctx, request)
            except RpcError as err:
                await self._error(call_id, client_id, err)
                return
            except Exception as exc:
                log.exception("%s: %s.%s failed", self.server.name, ctx.protocol, ctx.method)
                await self._error(call_id, client_id, RpcError(RPC_SERVER_EXCEPTION, f"server error: {exc}",
                                                               Header.ERROR_RPC_SERVER))
                return
            try:
                body = wire.delimited(wire.response_header(call_id, client_id=client_id), response)
            except EncodeError as exc:
                log.error("%s: %s.%s built an invalid response: %s", self.server.name, ctx.protocol,
                          ctx.method, exc)
                await self._error(call_id, client_id, RpcError(RPC_SERVER_EXCEPTION, f"cannot serialize the "
                                                               f"response: {exc}",
                                                               Header.ERROR_SERIALIZING_RESPONSE))
                return
            await self._write(wire.frame(body))
        finally:
            assert self.slots is not None
            self.slots.release()

    async def _error(self, call_id: int, client_id: bytes, err: RpcError) -> None:
        await self._respond(wire.response_header(call_id, Header.ERROR, client_id, exception=err.java_class,
                                                 message=err.message, detail=err.detail))

    async def _respond(self, header: ipc.RpcResponseHeader, body: Message | None = None) -> None:
        parts = (header,) if body is None else (header, body)
        await self._write(wire.frame(wire.delimited(*parts)))

    async def _write(self, data: bytes) -> None:
        async with self.lock:
            try:
                self.writer.write(data)
                await self.writer.drain()
            except (ConnectionError, RuntimeError):
                pass
