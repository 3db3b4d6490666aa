"""A dry run's plan token: a submission carrying it is accepted while the plan holds (the same job on the same
apps, nodes and queues) and refused otherwise, with nothing changed."""

from __future__ import annotations

import json

import pytest

from am.jobspec import parse_job
from common.errors import BadRequest, Conflict
from rm.core.harness import Harness
from rm.core.plan_token import make_token
from rm.core.state_types import SubmitSpec

JOB = {"id": "etl", "stages": [{"name": "map", "tasks": 4, "duration_s": 5, "memory_mb": 512},
                               {"name": "reduce", "tasks": 1, "duration_s": 5, "memory_mb": 512,
                                "parents": ["map"]}]}


def harness() -> Harness:
    h = Harness()
    h.node("n1")
    return h


def spec(h: Harness, token: str = "", job: dict[str, object] | None = None) -> SubmitSpec:
    app_id = h.ledger.new_application(0.0)
    body = job if job is not None else {**JOB, "env": {"OUTPUT_DIR": f"/tmp/{app_id}"}}  # env does not count
    return SubmitSpec(app_id=app_id, am_launch={"commands": ["am"]}, job_spec_json=json.dumps(body),
                      plan_token=token)


def test_a_submission_is_accepted_while_its_plan_holds() -> None:
    h = harness()
    token = make_token(parse_job(JOB), h.ledger.plan_basis())
    app = h.ledger.submit(spec(h, token), 1.0)
    assert app.app_id in h.ledger.apps


def test_an_app_submitted_since_the_plan_makes_it_stale_and_is_named() -> None:
    h = harness()
    token = make_token(parse_job(JOB), h.ledger.plan_basis())
    h.ledger.submit(spec(h), 1.0)
    before = set(h.ledger.apps)
    with pytest.raises(Conflict, match="submitted since: application_1_0001"):
        h.ledger.submit(spec(h, token), 2.0)
    assert set(h.ledger.apps) == before


def test_a_node_joining_or_another_job_invalidates_the_token() -> None:
    h = harness()
    token = make_token(parse_job(JOB), h.ledger.plan_basis())
    h.node("n2")
    with pytest.raises(Conflict, match="the nodes or queues changed"):
        h.ledger.submit(spec(h, token), 1.0)
    token = make_token(parse_job(JOB), h.ledger.plan_basis())
    wider = {**JOB, "stages": [{**JOB["stages"][0], "tasks": 5}, JOB["stages"][1]]}  # type: ignore[index]
    with pytest.raises(BadRequest, match="the job differs from the one planned"):
        h.ledger.submit(spec(h, token, job=wider), 1.0)
    with pytest.raises(BadRequest, match="malformed"):
        h.ledger.submit(spec(h, "not-a-token"), 1.0)
    with pytest.raises(BadRequest, match="goes with a DAG job file"):
        h.ledger.submit(SubmitSpec(app_id=h.ledger.new_application(0.0), am_launch={"commands": ["am"]},
                                   plan_token=token), 1.0)
    assert not h.ledger.apps
