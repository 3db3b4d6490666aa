"""Hadoop IPC framing against the byte vectors recorded from the Hadoop 3.5.0 client (research §1.9)."""

from __future__ import annotations

import pytest

from common.hadoop import wire
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp

UUID = bytes(range(0x10, 0x20))
CLIENT_PROTOCOL = b"org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def test_preambles() -> None:
    assert wire.preamble(wire.AUTH_NONE) == h("68 72 70 63 09 00 00")
    assert wire.preamble(wire.AUTH_SASL) == h("68 72 70 63 09 00 DF")


def test_sasl_negotiate_packet_matches_the_java_client() -> None:
    packet = wire.sasl_packet(ipc.RpcSasl(state=ipc.RpcSasl.NEGOTIATE))
    assert packet == h("00 00 00 0E  0A 08 02 10 00 18 41 22 00 28 01  02 10 01")
    header, _pos = wire.read_delimited(packet[4:], 0, ipc.RpcRequestHeader)
    assert header.call_id == wire.CALL_ID_SASL
    assert header.retry_count == -1
    assert header.client_id == b""


def test_sasl_success_reply_is_the_accepted_bytes() -> None:
    reply = wire.frame(wire.delimited(wire.response_header(wire.CALL_ID_SASL),
                                      ipc.RpcSasl(state=ipc.RpcSasl.SUCCESS)))
    assert reply == h("00 00 00 0E  0A 08 DF FF FF FF 0F 10 00 18 09  02 10 00")


def test_connection_context_packet() -> None:
    packet = wire.context_packet(UUID, CLIENT_PROTOCOL.decode(), "root")
    expected = (h("00 00 00 5C  1A 08 02 10 00 18 05 22 10") + UUID + h("28 01  40 12 06 0A 04") + b"root"
                + h("1A 36") + CLIENT_PROTOCOL)
    assert packet == expected
    header, pos = wire.read_delimited(packet[4:], 0, ipc.RpcRequestHeader)
    ctx, end = wire.read_delimited(packet[4:], pos, ipc.IpcConnectionContext)
    assert header.call_id == wire.CALL_ID_CONNECTION_CONTEXT
    assert ctx.user_info.effective_user == "root"
    assert ctx.protocol == CLIENT_PROTOCOL.decode()
    assert end == len(packet) - 4


def test_get_cluster_metrics_call_and_reply() -> None:
    call = wire.call_packet(0, UUID, CLIENT_PROTOCOL.decode(), "getClusterMetrics", yp.GetClusterMetricsRequest())
    expected = (h("00 00 00 6A  1A 08 02 10 00 18 00 22 10") + UUID + h("28 00  4D 0A 11") + b"getClusterMetrics"
                + h("12 36") + CLIENT_PROTOCOL + h("18 01  00"))
    assert call == expected
    response = yp.GetClusterMetricsResponse()
    response.cluster_metrics.num_node_managers = 1
    response.cluster_metrics.num_active_nms = 1
    reply = wire.frame(wire.delimited(wire.response_header(0, client_id=UUID), response))
    assert reply == h("00 00 00 20  18 08 00 10 00 18 09 3A 10") + UUID + h("06 0A 04 08 01 18 01")


@pytest.mark.parametrize(("value", "encoded"), [
    (0, "00"), (1, "01"), (127, "7F"), (128, "80 01"), (300, "AC 02"),
    (-1, "FF FF FF FF FF FF FF FF FF 01"),
])
def test_varints(value: int, encoded: str) -> None:
    assert wire.encode_varint(value) == h(encoded)
    decoded, end = wire.decode_varint(h(encoded), 0)
    assert end == len(h(encoded))
    assert decoded == (value if value >= 0 else value + (1 << 64))


def test_malformed_input_raises_wire_errors() -> None:
    with pytest.raises(wire.WireError):
        wire.decode_varint(h("80 80"), 0)  # truncated
    with pytest.raises(wire.WireError):
        wire.decode_varint(b"\xff" * 11, 0)  # too long
    with pytest.raises(wire.WireError):
        wire.read_delimited(h("05 08 02"), 0, ipc.RpcRequestHeader)  # announces 5 bytes, has 2
    with pytest.raises(wire.WireError):
        wire.read_delimited(h("02 08 02"), 0, ipc.RpcRequestHeader)  # call_id and client_id missing


def test_negative_call_ids_round_trip_through_uint32() -> None:
    for call_id in (wire.CALL_ID_SASL, wire.CALL_ID_PING, -1, 0, 7):
        head = wire.response_header(call_id)
        assert wire.signed_call_id(head.call_id) == call_id
