"""YARN's ask table (absolute counts keyed by priority, capability and allocation request id, one
entry per location) turned into shepherd asks."""

from __future__ import annotations

import pytest

from common.errors import BadRequest
from common.hadoop import records
from common.resources import Resources
from proto.hadoop import yarn_records_pb2 as yr
from rm.service.ipc.am_protocol import AskTable

CAP = records.resource_pb(Resources.of(memory_mb=896, vcores=1))


def req(name: str, n: int, priority: int = 0, relax: bool = True, rid: int = -1) -> yr.ResourceRequest:
    return yr.ResourceRequest(priority=yr.Priority(priority=priority), resource_name=name, capability=CAP,
                              num_containers=n, relax_locality=relax, allocation_request_id=rid)


def test_any_count_with_locality() -> None:
    table = AskTable()
    (ask,) = table.update([req("*", 3), req("host-a", 2), req("/rack1", 3)])
    assert ask.num_containers == 3
    assert ask.nodes == ("host-a",)
    assert ask.racks == ("/rack1",)
    assert ask.capability == Resources.of(memory_mb=896, vcores=1)
    assert ask.relax_locality


def test_counts_replace_and_unchanged_keys_are_not_resent() -> None:
    table = AskTable()
    first = table.update([req("*", 2, priority=0), req("*", 1, priority=1)])
    assert sorted(a.num_containers for a in first) == [1, 2]
    (update,) = table.update([req("*", 0, priority=0)])
    assert update.num_containers == 0
    assert update.allocation_request_id == first[0].allocation_request_id
    assert table.update([]) == []


def test_priorities_map_to_distinct_asks_and_back() -> None:
    table = AskTable()
    asks = table.update([req("*", 1, priority=5, rid=9), req("*", 1, priority=6)])
    ids = {a.priority: a.allocation_request_id for a in asks}
    assert ids[5] != ids[6]
    assert table.by_core_id[ids[5]].hadoop_request_id == 9
    assert table.by_core_id[ids[6]].hadoop_request_id == -1


def test_host_entry_going_to_zero_drops_the_preference() -> None:
    table = AskTable()
    table.update([req("*", 2), req("host-a", 2)])
    (ask,) = table.update([req("host-a", 0), req("*", 1)])
    assert ask.nodes == ()
    assert ask.num_containers == 1


def test_negative_counts_are_refused() -> None:
    with pytest.raises(BadRequest):
        AskTable().update([req("*", -1)])
