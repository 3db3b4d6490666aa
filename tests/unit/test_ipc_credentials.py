"""Hadoop token storage ("HDTS") blobs: the container_tokens file and ContainerLaunchContext.tokens."""

from __future__ import annotations

import io

import pytest

from common.hadoop import credentials
from proto.hadoop import ipc_pb2 as ipc

TOKEN = ipc.Token(identifier=b"\x0a\x02id", password=b"pw" * 10, kind="YARN_AM_RM_TOKEN", service="127.0.0.1:8030")


@pytest.mark.parametrize(("value", "encoded"), [
    (0, "00"), (5, "05"), (127, "7f"), (-112, "90"), (128, "8f80"), (255, "8fff"), (256, "8e0100"),
    (-113, "8770"), (-1000, "8603e7"), (70000, "8d011170"),
])
def test_hadoop_vints(value: int, encoded: str) -> None:
    out = io.BytesIO()
    credentials.write_vlong(out, value)
    assert out.getvalue().hex() == encoded
    assert credentials.read_vlong(io.BytesIO(bytes.fromhex(encoded))) == value


def test_empty_spark_blob() -> None:
    assert credentials.encode(credentials.Credentials()) == b"HDTS\x00\x00\x00"
    assert credentials.decode(b"HDTS\x00\x00\x00").tokens == {}
    assert credentials.decode(b"").tokens == {}


@pytest.mark.parametrize("version", [credentials.WRITABLE, credentials.PROTOBUF])
def test_round_trip_with_trailing_padding(version: int) -> None:
    creds = credentials.Credentials()
    creds.add("127.0.0.1:8030", TOKEN)
    creds.secrets["s"] = b"\x01\x02"
    blob = credentials.encode(creds, version) + b"\x00" * 64  # Spark sends its whole buffer
    back = credentials.decode(blob)
    assert back.tokens["127.0.0.1:8030"] == TOKEN
    assert back.secrets == {"s": b"\x01\x02"}


def test_writable_layout() -> None:
    creds = credentials.Credentials()
    creds.add("a", ipc.Token(identifier=b"I", password=b"P", kind="K", service="S"))
    assert credentials.encode(creds) == b"HDTS\x00" + bytes([1, 1]) + b"a" + bytes([1]) + b"I" + bytes([1]) + \
        b"P" + bytes([1]) + b"K" + bytes([1]) + b"S" + bytes([0])


@pytest.mark.parametrize("blob", [b"XXXX\x00", b"HDTS\x07", b"HDTS\x00\x05", b"HDTS\x00\x01\x7f", b"HDTS"])
def test_garbage_is_refused(blob: bytes) -> None:
    with pytest.raises(credentials.CredentialsError):
        credentials.decode(blob)
