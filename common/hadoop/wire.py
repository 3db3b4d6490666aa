"""Hadoop IPC version 9 on the wire: the connection preamble, length-framed packets made of
varint-delimited protobuf messages, and the special call ids.

Pure functions over bytes; the asyncio server and client are built on them.
"""

from __future__ import annotations

import struct
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from proto.hadoop import ipc_pb2 as ipc

MAGIC = b"hrpc"
IPC_VERSION = 9
SERVICE_CLASS_DEFAULT = 0
AUTH_NONE = 0x00
AUTH_SASL = 0xDF  # -33 as a signed byte
PREAMBLE_LEN = 7

CALL_ID_AUTHORIZATION_FAILED = -1
CALL_ID_INVALID = -2
CALL_ID_CONNECTION_CONTEXT = -3
CALL_ID_PING = -4
CALL_ID_SASL = -33

MAX_VARINT_BYTES = 10
DEFAULT_MAX_PACKET = 64 * 1024 * 1024  # Hadoop's ipc.maximum.data.length is 128 MiB

M = TypeVar("M", bound=Message)


class WireError(Exception):
    """Bytes that are not a well-formed Hadoop IPC packet."""


def preamble(auth: int = AUTH_NONE, service_class: int = SERVICE_CLASS_DEFAULT) -> bytes:
    return MAGIC + bytes((IPC_VERSION, service_class, auth))


def encode_varint(value: int) -> bytes:
    """Unsigned base-128 varint; negative values as their 64-bit two's complement (10 bytes)."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def decode_varint(data: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(value, position after it); raises WireError when truncated or longer than 10 bytes."""
    result = 0
    shift = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise WireError("truncated varint")
        b = data[pos + i]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos + i + 1
        shift += 7
    raise WireError("varint longer than 10 bytes")


def delimited(*messages: Message) -> bytes:
    """Each message serialized behind its varint length (an empty message is a single 00)."""
    out = bytearray()
    for m in messages:
        body = m.SerializeToString()
        out += encode_varint(len(body))
        out += body
    return bytes(out)


def delimited_bytes(data: bytes | bytearray | memoryview, pos: int) -> memoryview:
    """The serialized message behind the varint length at ``pos``, unparsed: a view of ``data``, not a copy (the
    request of a big call is megabytes, and copying it holds the event loop)."""
    size, start = decode_varint(data, pos)
    if start + size > len(data):
        raise WireError(f"{size} bytes announced, {len(data) - start} present")
    return memoryview(data)[start:start + size]


def read_delimited(data: bytes | bytearray | memoryview, pos: int, cls: type[M]) -> tuple[M, int]:
    """Parse one varint-delimited ``cls`` at ``pos``; (message, position after it). Parsed from a view of
    ``data``: no copy of the message's bytes is made first."""
    size, start = decode_varint(data, pos)
    end = start + size
    if end > len(data):
        raise WireError(f"{cls.__name__}: {size} bytes announced, {len(data) - start} present")
    msg = cls()
    try:
        msg.ParseFromString(memoryview(data)[start:end])  # type: ignore[arg-type]  # upb parses any buffer
    except (DecodeError, RuntimeWarning) as exc:
        raise WireError(f"{cls.__name__}: {exc}") from exc
    if not msg.IsInitialized():
        missing = ", ".join(msg.FindInitializationErrors())  # type: ignore[attr-defined]
        raise WireError(f"{cls.__name__}: required fields missing: {missing}")
    return msg, end


def frame(payload: bytes) -> bytes:
    """A packet: 4-byte big-endian length, then the payload."""
    return struct.pack(">I", len(payload)) + payload


def packet_length(prefix: bytes) -> int:
    (n,) = struct.unpack(">I", prefix)
    return int(n)


# ---------------------------------------------------------------- request side (clients and tests)


def request_header(call_id: int, client_id: bytes, retry_count: int = 0) -> ipc.RpcRequestHeader:
    return ipc.RpcRequestHeader(
        rpc_kind=ipc.RPC_PROTOCOL_BUFFER,
        rpc_op=ipc.RpcRequestHeader.FINAL_PACKET,
        call_id=call_id,
        client_id=client_id,
        retry_count=retry_count,
    )


def call_packet(call_id: int, client_id: bytes, protocol: str, method: str, request: Message,
                version: int = 1) -> bytes:
    head = ipc.RequestHeader(method_name=method, declaring_class_protocol_name=protocol,
                             client_protocol_version=version)
    return frame(delimited(request_header(call_id, client_id), head, request))


def context_packet(client_id: bytes, protocol: str, user: str) -> bytes:
    ctx = ipc.IpcConnectionContext(protocol=protocol, user_info=ipc.UserInformation(effective_user=user))
    return frame(delimited(request_header(CALL_ID_CONNECTION_CONTEXT, client_id, -1), ctx))


def sasl_packet(message: ipc.RpcSasl) -> bytes:
    return frame(delimited(request_header(CALL_ID_SASL, b"", -1), message))


# ---------------------------------------------------------------- response side


def response_header(
    call_id: int,
    status: int = ipc.RpcResponseHeader.SUCCESS,
    client_id: bytes = b"",
    *,
    exception: str = "",
    message: str = "",
    detail: int | None = None,
) -> ipc.RpcResponseHeader:
    head = ipc.RpcResponseHeader(call_id=call_id & 0xFFFFFFFF, status=status,  # type: ignore[arg-type]
                                 server_ipc_version_num=IPC_VERSION)
    if client_id:
        head.client_id = client_id
    if status != ipc.RpcResponseHeader.SUCCESS:
        head.exception_class_name = exception
        head.error_msg = message
        if detail is not None:
            head.error_detail = detail  # type: ignore[assignment]
    return head


def signed_call_id(raw: int) -> int:
    """A response header's uint32 call id back to the signed id the client sent."""
    return raw - (1 << 32) if raw >= 1 << 31 else raw
