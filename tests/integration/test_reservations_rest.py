"""YARN's reservation REST API on a live ResourceManager (real RM and NodeManager processes on loopback):
new-reservation → submit → list with allocations → update → delete, the shapes of yarn-rest.md §2.18–2.19,
its errors, and a reservation that survives an RM restart."""

from __future__ import annotations

import getpass
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rm.local import LocalCluster
from tests.e2e.conftest import kill_strays, wait_until

R = "/ws/v1/cluster/reservation"
HOUR_MS = 3_600_000


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path / "cluster", allow_root_containers=True,
                     nodes=1, grpc_port=0, rest_port=0, ipc_client_port=0,
                     ipc_scheduler_port=0, node_memory_mb=4096, node_vcores=4)
    c.start()
    try:
        yield c
    finally:
        c.stop()
        kill_strays(tmp_path)


@pytest.fixture
def http(cluster: LocalCluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.rest_url, timeout=30.0, headers=writer(cluster)) as client:
        wait_until(lambda: client.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]["activeNodes"] == 1,
                   30, "the NodeManager to register")
        yield client


def definition(arrival: int, *, containers: int = 2, duration_ms: int = 600_000, name: str = "nightly",
               interpreter: int = 1) -> dict[str, Any]:
    return {
        "arrival": arrival,
        "deadline": arrival + HOUR_MS,
        "reservation-name": name,
        "reservation-requests": {
            "reservation-request-interpreter": interpreter,
            "reservation-request": [{"capability": {"memory": 1024, "vCores": 1}, "num-containers": containers,
                                     "min-concurrency": 1, "duration": duration_ms}],
        },
    }


def writer(cluster: LocalCluster) -> dict[str, str]:
    """The header that lets a client change anything (the secret the RM wrote into the cluster's credentials)."""
    return {"Authorization": f"Bearer {cluster.client_secret}"}


def new_id(http: httpx.Client) -> str:
    resp = http.post(f"{R}/new-reservation")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert list(body) == ["reservation-id"]
    assert re.fullmatch(r"reservation_\d+_\d+", body["reservation-id"])
    return str(body["reservation-id"])


def ok_empty(resp: httpx.Response) -> None:
    assert resp.status_code == 200, resp.text
    assert resp.content == b""


def bad_request(resp: httpx.Response) -> str:
    assert resp.status_code == 400, resp.text
    body = resp.json()["RemoteException"]
    assert body["exception"] == "BadRequestException"
    return str(body["message"])


def listed(http: httpx.Client, **params: Any) -> Any:
    resp = http.get(f"{R}/list", params={"queue": "default", **params})
    assert resp.status_code == 200, resp.text
    return resp.json()["reservations"]


def test_reservation_round_trip(http: httpx.Client) -> None:
    arrival = int(time.time() * 1000) + HOUR_MS
    arrival -= arrival % 60_000
    rid = new_id(http)
    assert new_id(http) != rid
    ok_empty(http.post(f"{R}/submit", json={"queue": "default", "reservation-id": rid,
                                              "reservation-definition": definition(arrival)}))
    # the same id with the same definition again is the same reservation (200), a different one is refused
    ok_empty(http.post(f"{R}/submit", json={"queue": "default", "reservation-id": rid,
                                              "reservation-definition": definition(arrival)}))
    bad_request(http.post(f"{R}/submit", json={"queue": "default", "reservation-id": rid,
                                                 "reservation-definition": definition(arrival, containers=3)}))

    one = listed(http, **{"include-resource-allocations": "true"})
    assert isinstance(one, dict)  # one match: an object, numbers as strings ("mapped" notation)
    assert one["reservation-id"] == rid
    assert one["user"] == getpass.getuser()  # the client secret is the owner's
    assert one["acceptance-time"].isdigit()
    d = one["reservation-definition"]
    assert d["arrival"] == str(arrival)
    assert d["deadline"] == str(arrival + HOUR_MS)
    assert d["reservation-name"] == "nightly"
    req = d["reservation-requests"]["reservation-request"]
    assert isinstance(req, list)
    assert req[0]["num-containers"] == "2"
    assert req[0]["duration"] == "600000"
    allocs = one["resource-allocations"]
    booked = [a for a in allocs if a["resource"]["memory"] != "0"]
    assert booked, allocs
    for a in allocs:
        assert int(a["startTime"]) < int(a["endTime"])
        assert arrival <= int(a["startTime"])
        assert int(a["endTime"]) <= arrival + HOUR_MS
    # 2 containers × 10 minutes of 1024 MB, however the agent spreads them
    mb_ms = sum(int(a["resource"]["memory"]) * (int(a["endTime"]) - int(a["startTime"])) for a in booked)
    assert mb_ms == 2 * 1024 * 600_000
    assert "resource-allocations" not in listed(http)

    ok_empty(http.post(f"{R}/update", json={"reservation-id": rid,
                                              "reservation-definition": definition(arrival, containers=3,
                                                                                   name="bigger")}))
    one = listed(http, **{"reservation-id": rid})
    assert one["reservation-definition"]["reservation-name"] == "bigger"
    assert one["reservation-definition"]["reservation-requests"]["reservation-request"][0]["num-containers"] == "3"

    rid2 = new_id(http)
    ok_empty(http.post(f"{R}/submit", json={"queue": "default", "reservation-id": rid2,
                                              "reservation-definition": definition(arrival + 2 * HOUR_MS)}))
    both = listed(http)
    assert isinstance(both, list)
    assert [r["reservation-id"] for r in both] == sorted([rid, rid2])
    # a window filter: only the later one ends after arrival + 2h
    later = listed(http, **{"start-time": str(arrival + 2 * HOUR_MS)})
    assert isinstance(later, dict)
    assert later["reservation-id"] == rid2

    ok_empty(http.post(f"{R}/delete", json={"reservation-id": rid}))
    ok_empty(http.post(f"{R}/delete", json={"reservation-id": rid2}))
    assert listed(http) is None


def test_reservation_errors_are_yarn_400s(http: httpx.Client) -> None:
    arrival = int(time.time() * 1000) + HOUR_MS
    rid = new_id(http)
    assert "not managed by reservation system" in bad_request(http.post(f"{R}/submit", json={
        "queue": "nosuch", "reservation-id": rid, "reservation-definition": definition(arrival)}))
    too_big = definition(arrival)
    too_big["reservation-requests"]["reservation-request"][0].update({"num-containers": 40, "min-concurrency": 8,
                                                                      "duration": HOUR_MS})
    bad_request(http.post(f"{R}/submit", json={"queue": "default", "reservation-id": rid,
                                                 "reservation-definition": too_big}))
    assert "deadline" in bad_request(http.post(f"{R}/submit", json={
        "queue": "default", "reservation-id": rid, "reservation-definition": definition(1_000)}))
    assert "unknown" in bad_request(http.post(f"{R}/update", json={
        "reservation-id": "reservation_1_9999", "reservation-definition": definition(arrival)}))
    bad_request(http.post(f"{R}/delete", json={"reservation-id": "reservation_1_9999"}))
    bad_request(http.get(f"{R}/list", params={"queue": "nosuch"}))
    bad_request(http.post(f"{R}/submit", content=b"{not json"))
    assert listed(http) is None  # nothing refused was kept
    # an app may only name a reservation that exists
    app_id = http.post("/ws/v1/cluster/apps/new-application").json()["application-id"]
    resp = http.post("/ws/v1/cluster/apps", json={
        "application-id": app_id, "am-container-spec": {"commands": {"command": "sleep 1"}},
        "reservation-id": "reservation_1_9999"})
    assert "unknown" in bad_request(resp)


def test_reservation_survives_an_rm_restart(cluster: LocalCluster, http: httpx.Client) -> None:
    arrival = int(time.time() * 1000) + HOUR_MS
    rid = new_id(http)
    ok_empty(http.post(f"{R}/submit", json={"queue": "default", "reservation-id": rid,
                                              "reservation-definition": definition(arrival)}))
    before = listed(http, **{"include-resource-allocations": "true"})
    cluster.restart_rm()
    with httpx.Client(base_url=cluster.rest_url, timeout=30.0, headers=writer(cluster)) as again:
        after = listed(again, **{"include-resource-allocations": "true"})
        assert after == before  # the same bookings, nothing placed again
        # the id counter continues: ids are never handed out twice
        assert int(new_id(again).rsplit("_", 1)[1]) > int(rid.rsplit("_", 1)[1])
        ok_empty(again.post(f"{R}/delete", json={"reservation-id": rid}))
        assert listed(again) is None
