"""YARN's reservation JSON shapes (yarn-rest.md §2.18–2.19), against the documented examples."""

from __future__ import annotations

import json
from typing import Any

import pytest

from common.errors import BadRequest
from common.resources import Resources
from rm.core.reservation.listing import AllocationSegment, ReservationInfo
from rm.core.reservation.requests import ReservationDefinition, ReservationRequest
from rm.core.reservation.system import ReservationConfig, ReservationSystem
from rm.core.reservation.yarn import (
    LONG_MAX,
    definition_from_json,
    definition_to_json,
    parse_delete,
    parse_list_query,
    parse_submit,
    parse_update,
    render_list,
    render_new_reservation,
)

# The documented submit example (ResourceManagerRest.md), with the comma its text leaves out.
SUBMIT = json.loads("""{
  "queue" : "dedicated",
  "reservation-id":"reservation_1404198295326_0003",
  "reservation-definition" : {
     "arrival" : 1765541532000,
     "deadline" : 1765542252000,
     "reservation-name" : "res_1",
     "reservation-requests" : {
        "reservation-request-interpreter" : 0,
        "reservation-request" : [
           {"duration" : 60000, "num-containers" : 220, "min-concurrency" : 220,
            "capability" : {"memory" : 1024, "vCores" : 1}},
           {"duration" : 120000, "num-containers" : 110, "min-concurrency" : 1,
            "capability" : {"memory" : 1024, "vCores" : 1}}
        ]
     }
   }
}""")

UPDATE = json.loads("""{
  "reservation-id" : "reservation_1449259268893_0005",
  "reservation-definition" : {
     "arrival" : 1765541532000, "deadline" : 1765542252000, "reservation-name" : "res_1",
     "reservation-requests" : {
        "reservation-request-interpreter" : 2,
        "reservation-request" : [
           {"duration" : 300000, "num-containers" : 10, "min-concurrency" : 10,
            "capability" : {"memory" : 1024, "vCores" : 1}},
           {"duration" : 60000, "num-containers" : 50, "min-concurrency" : 1,
            "capability" : {"memory" : 1024, "vCores" : 1}}
        ]
     }
   }
}""")

# The documented list response: one reservation, mapped notation (numbers as strings).
LISTED: dict[str, Any] = {
    "acceptance-time": "1455160008442",
    "user": "submitter",
    "resource-allocations": [
        {"resource": {"memory": "0", "vCores": "0"}, "startTime": "1465541532000", "endTime": "1465542250000"},
        {"resource": {"memory": "1024", "vCores": "1"}, "startTime": "1465542250000", "endTime": "1465542251000"},
        {"resource": {"memory": "0", "vCores": "0"}, "startTime": "1465542251000", "endTime": "1465542252000"},
    ],
    "reservation-id": "reservation_1458852875788_0002",
    "reservation-definition": {
        "arrival": "1465541532000",
        "deadline": "1465542252000",
        "reservation-requests": {
            "reservation-request-interpreter": "0",
            "reservation-request": {
                "capability": {"memory": "1024", "vCores": "1"},
                "min-concurrency": "1", "num-containers": "1", "duration": "60",
            },
        },
        "reservation-name": "res_1",
    },
}
CORE = Resources.of(memory_mb=1024, vcores=1)


def test_submit_example_parses() -> None:
    body = parse_submit(SUBMIT)
    assert body.reservation_id == "reservation_1404198295326_0003"
    assert body.queue == "dedicated"
    d = body.definition
    assert (d.arrival_ms, d.deadline_ms, d.name, d.interpreter) == (1765541532000, 1765542252000, "res_1", "R_ANY")
    assert d.requests == (ReservationRequest(CORE, 220, 60_000, 220), ReservationRequest(CORE, 110, 120_000, 1))
    assert d.recurrence_ms == 0


def test_update_and_delete_examples_parse() -> None:
    rid, d = parse_update(UPDATE)
    assert rid == "reservation_1449259268893_0005"
    assert d.interpreter == "R_ORDER"
    assert [r.min_concurrency for r in d.requests] == [10, 1]
    assert parse_delete({"reservation-id": "reservation_1449259268893_0006"}) == "reservation_1449259268893_0006"


def test_mapped_notation_and_bare_request_read_back() -> None:
    d = definition_from_json(LISTED["reservation-definition"])
    assert d.requests == (ReservationRequest(CORE, 1, 60, 1),)
    assert d.interpreter == "R_ANY"
    again = definition_from_json(json.loads(json.dumps(definition_to_json(d))))
    assert again == d


def test_list_renders_one_reservation_as_an_object_with_strings() -> None:
    d = definition_from_json(LISTED["reservation-definition"])
    segs = tuple(
        AllocationSegment(int(a["startTime"]), int(a["endTime"]),
                          Resources.of(memory_mb=int(a["resource"]["memory"]), vcores=int(a["resource"]["vCores"])))
        for a in LISTED["resource-allocations"]
    )
    info = ReservationInfo("reservation_1458852875788_0002", "root.dedicated", "submitter",  # type: ignore[arg-type]
                           1455160008442, d, segs)
    out = render_list([info])["reservations"]
    assert isinstance(out, dict)
    assert list(out) == list(LISTED)  # key order as the real RM prints it
    for key in ("acceptance-time", "user", "resource-allocations", "reservation-id"):
        assert out[key] == LISTED[key]
    rd = out["reservation-definition"]
    assert {k: rd[k] for k in ("arrival", "deadline", "reservation-name")} == {
        k: LISTED["reservation-definition"][k] for k in ("arrival", "deadline", "reservation-name")}
    reqs = rd["reservation-requests"]
    assert reqs["reservation-request-interpreter"] == "0"
    assert reqs["reservation-request"] == [LISTED["reservation-definition"]["reservation-requests"]
                                           ["reservation-request"]]  # always an array inside (§2.19)


def test_list_renders_many_as_an_array_and_none_as_null() -> None:
    d = definition_from_json(SUBMIT["reservation-definition"])
    infos = [ReservationInfo(f"reservation_1_000{i}", "root.default", "u", 1, d) for i in (1, 2)]  # type: ignore[arg-type]
    out = render_list(infos)["reservations"]
    assert isinstance(out, list)
    assert len(out) == 2
    assert "resource-allocations" not in out[0]
    assert render_list([]) == {"reservations": None}


def test_list_query_defaults_and_lenient_times() -> None:
    q = parse_list_query({})
    assert (q.queue, q.reservation_id, q.start_ms, q.end_ms, q.include_allocations) == (
        "default", None, 0, LONG_MAX, False)
    q = parse_list_query({"queue": "dedicated", "start-time": "abc", "end-time": "-5",
                          "include-resource-allocations": "TRUE", "reservation-id": "reservation_1_0001"})
    assert (q.queue, q.start_ms, q.end_ms, q.include_allocations, q.reservation_id) == (
        "dedicated", 0, LONG_MAX, True, "reservation_1_0001")
    with pytest.raises(BadRequest):
        parse_list_query({"queue": ""})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"queue": "default", "reservation-id": "reservation_1_0001"}, "Missing reservation definition"),
        ({"reservation-id": "reservation_1_0001", "reservation-definition": {}}, "queue is not specified"),
        ({"queue": "default", "reservation-definition": {}}, "Missing reservation id"),
        ({"queue": "default", "reservation-id": "nope", "reservation-definition": {}}, "Invalid ReservationId"),
        ({"queue": "default", "reservation-id": "reservation_1_0001", "reservation-definition": {"arrival": 1}},
         "missing deadline"),
    ],
)
def test_malformed_bodies_are_400s(body: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        parse_submit(body)


def test_bad_values_are_400s() -> None:
    base = json.loads(json.dumps(SUBMIT["reservation-definition"]))
    base["reservation-requests"]["reservation-request-interpreter"] = 7
    with pytest.raises(BadRequest, match="interpreter"):
        definition_from_json(base)
    base["reservation-requests"]["reservation-request-interpreter"] = "R_ORDER_NO_GAP"
    assert definition_from_json(base).interpreter == "R_ORDER_NO_GAP"
    base["arrival"] = "soon"
    with pytest.raises(BadRequest, match="arrival must be an integer"):
        definition_from_json(base)
    base["arrival"] = True
    with pytest.raises(BadRequest):
        definition_from_json(base)


def test_recurrence_expression_is_a_string_period() -> None:
    raw = json.loads(json.dumps(SUBMIT["reservation-definition"]))
    raw["recurrence-expression"] = "86400000"
    d = definition_from_json(raw)
    assert d.recurrence_ms == 86_400_000
    assert definition_to_json(d)["recurrence-expression"] == "86400000"


def test_rest_round_trip_through_the_system() -> None:
    s = ReservationSystem(ReservationConfig(step_s=1, window_s=86_400), cluster_ts=1404198295326)
    s.set_capacity("root.dedicated", Resources.of(memory_mb=300 * 1024, vcores=300))
    s.set_capacity("root.default", Resources.of(memory_mb=1024, vcores=1))
    now = 1765541000.0
    rid = render_new_reservation(s.new_reservation_id())["reservation-id"]
    body = dict(SUBMIT, **{"reservation-id": rid})
    sub = parse_submit(body)
    s.submit(sub.reservation_id, sub.queue, sub.definition, user="dr.who", now=now)
    s.submit(sub.reservation_id, sub.queue, sub.definition, user="dr.who", now=now)  # same again: fine
    q = parse_list_query({"queue": "dedicated", "include-resource-allocations": "true"})
    listed = render_list(s.list_reservations(q.queue, q.reservation_id, q.start_ms, q.end_ms,
                                             q.include_allocations))["reservations"]
    assert listed["reservation-id"] == rid
    assert listed["user"] == "dr.who"
    allocs = listed["resource-allocations"]
    assert allocs[0]["startTime"] == "1765541532000"
    assert allocs[-1]["endTime"] == "1765542252000"
    area = sum(int(a["resource"]["vCores"]) * (int(a["endTime"]) - int(a["startTime"])) for a in allocs)
    assert area == 110 * 120_000  # LowCost chose the cheaper alternative, stretched flat over the window
    upd = dict(UPDATE, **{"reservation-id": rid})
    urid, udef = parse_update(upd)
    s.update(urid, udef, now=now)
    assert s.reservations[urid].definition.interpreter == "R_ORDER"
    s.delete(parse_delete({"reservation-id": rid}))
    assert render_list(s.list_reservations("dedicated")) == {"reservations": None}
    assert isinstance(ReservationDefinition, type)
