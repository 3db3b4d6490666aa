"""``POST /ws/v1/shepherd/plan`` in process, over a real Ledger: the answer's shape, and that neither a plan nor
a refused one changes anything."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from fastapi.testclient import TestClient

from common.resources import Resources
from rm.service.rest import build_app
from tests.integration.test_rest_api import FakeRM, remote

PLAN = "/ws/v1/shepherd/plan"
JOB = {"id": "etl", "stages": [
    {"name": "scan", "tasks": 4, "duration_s": 5, "memory_mb": 512, "command": "sleep 5"},
    {"name": "agg", "tasks": 1, "duration_s": 3, "memory_mb": 512, "parents": ["scan"], "command": "sleep 3"},
]}


def _fake(**cfg: Any) -> FakeRM:
    fake = FakeRM(**cfg)
    fake.ask_policy = "carbyne"  # type: ignore[attr-defined]
    for name in ("n1", "n2"):
        fake.state.register_node(f"{name}:7040", f"{name}:8042", "", Resources.of(memory_mb=4096, vcores=4), [],
                                 fake.clock)
    fake.state.drain_records()
    return fake


@pytest.fixture
def rm() -> FakeRM:
    return _fake()


def _state(rm: FakeRM) -> bytes:
    ledger = rm.state
    return pickle.dumps((ledger.meta, ledger.nodes, ledger.apps, ledger.containers, ledger.version))


def test_a_plan_answers_and_changes_nothing(rm: FakeRM) -> None:
    client = TestClient(build_app(rm))  # type: ignore[arg-type]
    before = _state(rm)
    resp = client.post(f"{PLAN}?user.name=ann", json={**JOB, "queue": "batch"})
    assert resp.status_code == 200, resp.text
    plan = resp.json()["plan"]
    assert plan["queue"] == "root.batch"
    assert plan["user"] == "ann"
    assert plan["scheduler"] == "mrm"  # the default scheduler
    assert plan["status"] == "SUCCEEDED"
    assert plan["amContainer"]["node"] in ("n1:7040", "n2:7040")
    assert plan["firstStage"]["name"] == "scan"
    assert sum(p["tasks"] for p in plan["firstStage"]["placements"]) == 4
    assert plan["planTime"] == round(rm.clock * 1000)
    assert plan["planTime"] < plan["predictedStartTime"] < plan["predictedFinishTime"]
    # batch may use 50% of the 8 vcores: its AM and three tasks, so scan runs in two waves (2 x 5 s), then agg's
    # 3 s, with the AM's start and the heartbeats between
    assert 14.0 < plan["predictedDurationSec"] < 19.0
    assert plan["delays"] == []
    assert _state(rm) == before
    assert rm.state.drain_records() == []
    assert client.get("/ws/v1/cluster/apps").json()["apps"] is None or \
        client.get("/ws/v1/cluster/apps").json()["apps"].get("app", []) == []


@pytest.mark.parametrize(("body", "status", "exception"), [
    ({"id": "x"}, 400, "BadRequestException"),  # no stages
    ({**JOB, "stages": [{"name": "a", "tasks": 1, "memory_mb": 1, "parents": ["a"]}]}, 400, "BadRequestException"),
    ({**JOB, "queue": "nope"}, 400, "BadRequestException"),
    ({**JOB, "stages": [{"name": "a", "tasks": 1, "memory_mb": 65_536}]}, 400, None),
])
def test_bad_jobs_are_4xx_remote_exceptions_and_change_nothing(rm: FakeRM, body: dict[str, Any], status: int,
                                                               exception: str | None) -> None:
    client = TestClient(build_app(rm))  # type: ignore[arg-type]
    before = _state(rm)
    remote(client.post(PLAN, json=body), status, exception)
    assert _state(rm) == before


def test_not_json_is_a_400(rm: FakeRM) -> None:
    client = TestClient(build_app(rm))  # type: ignore[arg-type]
    remote(client.post(PLAN, content=b"stages: []", headers={"content-type": "application/json"}), 400)


def test_a_plan_needs_the_client_secret_when_one_is_set() -> None:
    rm = _fake(client_secret="s3cret")
    client = TestClient(build_app(rm))  # type: ignore[arg-type]
    remote(client.post(PLAN, json=JOB), 401)
    remote(client.post(PLAN, json=JOB, headers={"Authorization": "Bearer wrong"}), 403)
    resp = client.post(PLAN, json=JOB, headers={"Authorization": "Bearer s3cret"})
    assert resp.status_code == 200, resp.text
