"""The bounds every door applies (rm/service/limits.py): nesting depth, counting asks without parsing them, cut
strings and error details."""

from __future__ import annotations

import pytest

from common.errors import BadRequest
from proto import shepherd_pb2 as pb
from rm.service import limits


def nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_json_depth_counts_lists_and_objects_not_scalars() -> None:
    assert limits.json_depth("text") == 0
    assert limits.json_depth(7) == 0
    assert limits.json_depth([]) == 1
    assert limits.json_depth({"a": 1, "b": "x"}) == 1
    assert limits.json_depth({"a": [1, {"b": []}], "c": {}}) == 4
    assert limits.json_depth(nested(limits.MAX_JSON_DEPTH)) == limits.MAX_JSON_DEPTH
    assert limits.json_depth({"tags": [f"t{i}" for i in range(100_000)]}) == 2  # wide is not deep


def test_json_depth_stops_once_past_the_bound() -> None:
    assert limits.json_depth(nested(10_000)) == limits.MAX_JSON_DEPTH + 1


def test_allocate_precheck_counts_asks_and_releases_on_the_wire() -> None:
    check = limits.allocate_precheck(pb.AllocateRequest, "asks", "releases")
    ask = pb.ResourceAsk(priority=1, num_containers=1, capability=pb.Resource(values={"memory-mb": 128}))
    check(pb.AllocateRequest(asks=[ask] * limits.MAX_ASKS_PER_ALLOCATE).SerializeToString())
    with pytest.raises(BadRequest, match="at most 10000 asks, not 10001"):
        check(pb.AllocateRequest(asks=[ask] * (limits.MAX_ASKS_PER_ALLOCATE + 1)).SerializeToString())
    with pytest.raises(BadRequest, match="release at most"):
        check(pb.AllocateRequest(releases=["c"] * (limits.MAX_RELEASES_PER_ALLOCATE + 1)).SerializeToString())
    check(b"\xff\xff\xff")  # bytes that do not parse are left to the parse that follows


def test_the_largest_allocate_the_bounds_allow_fits_the_message_bound() -> None:
    releases = [f"container_1764062400000_{i // 1000:04d}_01_{i % 1000:06d}"
                for i in range(limits.MAX_RELEASES_PER_ALLOCATE)]
    assert len(pb.AllocateRequest(releases=releases).SerializeToString()) < limits.MAX_MESSAGE


def test_error_details_are_cut_to_their_byte_bound() -> None:
    assert limits.error_detail("short") == "short"
    cut = limits.error_detail("é" * 5000)
    assert len(cut.encode()) <= limits.MAX_ERROR_DETAIL + 40
    assert cut.endswith("(5000 characters in all)")
