"""Hadoop's token storage format ("HDTS"), as in the ``container_tokens`` file of a container and
``ContainerLaunchContext.tokens``.

Version 0 (Writable): Hadoop VInt token count; per token a Text alias, then the token (VInt +
identifier, VInt + password, Text kind, Text service); then a VInt secret count and per secret a
Text alias and VInt + bytes. Version 1: one varint-delimited ``Credentials`` message. Readers
accept both and ignore trailing bytes (Spark sends its whole buffer, zero padding included).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from common.hadoop.wire import WireError, decode_varint, encode_varint
from proto.hadoop import ipc_pb2 as ipc

MAGIC = b"HDTS"
WRITABLE = 0
PROTOBUF = 1
MAX_ENTRIES = 10_000
MAX_FIELD = 1 << 20


class CredentialsError(Exception):
    pass


@dataclass
class Credentials:
    tokens: dict[str, ipc.Token] = field(default_factory=dict)  # alias -> token
    secrets: dict[str, bytes] = field(default_factory=dict)

    def add(self, alias: str, token: ipc.Token) -> None:
        self.tokens[alias] = token

    def merge(self, other: Credentials) -> None:
        self.tokens.update(other.tokens)
        self.secrets.update(other.secrets)


# ---------------------------------------------------------------- Hadoop VInt / Text


def write_vlong(out: io.BytesIO, value: int) -> None:
    if -112 <= value <= 127:
        out.write((value & 0xFF).to_bytes(1, "big"))
        return
    length = -112
    if value < 0:
        value ^= -1
        length = -120
    tmp = value
    while tmp:
        tmp >>= 8
        length -= 1
    out.write((length & 0xFF).to_bytes(1, "big"))
    n = -(length + 120) if length < -120 else -(length + 112)
    out.write(value.to_bytes(n, "big"))


def read_vlong(buf: io.BytesIO) -> int:
    first_raw = buf.read(1)
    if not first_raw:
        raise CredentialsError("truncated VInt")
    first = int.from_bytes(first_raw, "big", signed=True)
    if first >= -112:
        return first
    n = (-119 - first) if first < -120 else (-111 - first)
    data = buf.read(n - 1)
    if len(data) != n - 1:
        raise CredentialsError("truncated VInt")
    value = int.from_bytes(data, "big")
    return value ^ -1 if first < -120 else value


def _write_bytes(out: io.BytesIO, data: bytes) -> None:
    write_vlong(out, len(data))
    out.write(data)


def _read_bytes(buf: io.BytesIO) -> bytes:
    n = read_vlong(buf)
    if n < 0 or n > MAX_FIELD:
        raise CredentialsError(f"field length {n} out of range")
    data = buf.read(n)
    if len(data) != n:
        raise CredentialsError("truncated field")
    return data


def _read_text(buf: io.BytesIO) -> str:
    try:
        return _read_bytes(buf).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CredentialsError("text is not UTF-8") from exc


# ---------------------------------------------------------------- encode / decode


def encode(creds: Credentials, version: int = WRITABLE) -> bytes:
    out = io.BytesIO()
    out.write(MAGIC)
    out.write(bytes((version,)))
    if version == PROTOBUF:
        msg = ipc.Credentials(
            tokens=[ipc.CredentialsEntry(alias=a, token=t) for a, t in creds.tokens.items()],
            secrets=[ipc.CredentialsEntry(alias=a, secret=s) for a, s in creds.secrets.items()],
        )
        body = msg.SerializeToString()
        out.write(encode_varint(len(body)) + body)
        return out.getvalue()
    write_vlong(out, len(creds.tokens))
    for alias, tok in creds.tokens.items():
        _write_bytes(out, alias.encode())
        _write_bytes(out, tok.identifier)
        _write_bytes(out, tok.password)
        _write_bytes(out, tok.kind.encode())
        _write_bytes(out, tok.service.encode())
    write_vlong(out, len(creds.secrets))
    for alias, secret in creds.secrets.items():
        _write_bytes(out, alias.encode())
        _write_bytes(out, secret)
    return out.getvalue()


def decode(data: bytes) -> Credentials:
    """Parse an HDTS blob; an empty blob is empty credentials."""
    if not data:
        return Credentials()
    if data[:4] != MAGIC or len(data) < 5:
        raise CredentialsError("not a Hadoop token storage blob (no HDTS magic)")
    version = data[4]
    if version == PROTOBUF:
        try:
            size, start = decode_varint(data, 5)
            msg = ipc.Credentials()
            msg.ParseFromString(data[start:start + size])
        except (WireError, DecodeError) as exc:
            raise CredentialsError(f"bad credentials message: {exc}") from exc
        out = Credentials()
        for e in msg.tokens:
            out.tokens[e.alias] = e.token
        for e in msg.secrets:
            out.secrets[e.alias] = e.secret
        return out
    if version != WRITABLE:
        raise CredentialsError(f"unknown token storage version {version}")
    buf = io.BytesIO(data[5:])
    out = Credentials()
    count = read_vlong(buf)
    if not 0 <= count <= MAX_ENTRIES:
        raise CredentialsError(f"token count {count} out of range")
    for _ in range(count):
        alias = _read_text(buf)
        identifier, password = _read_bytes(buf), _read_bytes(buf)
        kind, service = _read_text(buf), _read_text(buf)
        out.tokens[alias] = ipc.Token(identifier=identifier, password=password, kind=kind, service=service)
    count = read_vlong(buf)
    if not 0 <= count <= MAX_ENTRIES:
        raise CredentialsError(f"secret count {count} out of range")
    for _ in range(count):
        alias = _read_text(buf)
        out.secrets[alias] = _read_bytes(buf)
    return out
