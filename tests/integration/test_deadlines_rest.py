"""Deadlines you can buy (MRM) through the RM's doors, on one in-process ResourceManager with the mrm
scheduler: quotes over REST and gRPC, buying a quote (application tag or gRPC field), a deadline before the
earliest finish refused with 409 and no app, jumping ahead costs more, the EDF listing, and bought deadlines
and their claims unchanged after an RM restart.

The only NodeManager reports itself unhealthy, so nothing is placed: apps keep the claims they bought."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import pytest_asyncio

from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.service.config import RMConfig
from rm.service.server import ResourceManager
from tests.integration.conftest import unhealthy_node

pytestmark = pytest.mark.asyncio

NODE = Resources.of(memory_mb=8192, vcores=8)
SMALL = {"id": "small", "stages": [{"name": "s", "tasks": 4, "duration_s": 10, "memory_mb": 1024,
                                    "command": "sleep 10"}]}
BIG = {"id": "big", "stages": [{"name": "s", "tasks": 6, "duration_s": 600, "memory_mb": 1024,
                                "command": "sleep 600"}]}


async def start(data_dir: Path) -> ResourceManager:
    server = ResourceManager(RMConfig(data_dir=data_dir, create_store=True, grpc_port=0, rest_port=0,
                                      ipc_client_port=-1, ipc_scheduler_port=-1, scheduler="mrm"))
    await server.start()
    node = await unhealthy_node(server, NODE)
    assert server.state.nodes[node].state == "UNHEALTHY"  # type: ignore[index]  # nothing placed
    return server


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = await start(tmp_path / "rm")
    try:
        yield server
    finally:
        await server.stop()


def http(rm: ResourceManager) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10,
                             headers={"Authorization": f"Bearer {rm.cfg.client_secret or ''}"})


async def quote(client: httpx.AsyncClient, job: dict[str, Any]) -> dict[str, Any]:
    r = await client.post("/ws/v1/shepherd/quotes?user.name=alice", json={"queue": "default", "job": job})
    assert r.status_code == 200, r.text
    return dict(r.json()["quote"])


async def submit(client: httpx.AsyncClient, job: dict[str, Any], *tags: str) -> httpx.Response:
    """A stock YARN REST submission (no job file): its deadline comes with it in application tags."""
    new = (await client.post("/ws/v1/cluster/apps/new-application?user.name=alice")).json()
    body = {"application-id": new["application-id"], "application-name": job["id"], "application-type": "SHEPHERD",
            "queue": "default", "application-tags": {"tag": list(tags)},
            "am-container-spec": {"commands": {"command": "true"}},
            "resource": {"memory": 256, "vCores": 1}}
    r = await client.post("/ws/v1/cluster/apps?user.name=alice", json=body)
    r.app_id = new["application-id"]  # type: ignore[attr-defined]
    return r


async def test_quote_buy_refuse_and_list_over_rest(rm: ResourceManager) -> None:
    async with http(rm) as client:
        before = time.time()
        q0 = await quote(client, SMALL)
        assert q0["estimate"]["method"] == "declared"
        assert q0["earliestFinish"] >= (before + q0["criticalPath"]) * 1000 - 1
        assert q0["criticalPath"] >= 10.0  # the job's 10 s tasks: never faster than one task
        prices = [p["price"] for p in q0["curve"]]
        assert prices == sorted(prices, reverse=True)
        assert prices[0] > prices[-1]

        # a deadline before the earliest finish: 409 with the earliest finish, and no app
        apps_before = len((await client.get("/ws/v1/cluster/apps")).json()["apps"] or {})
        early = await submit(client, SMALL, f"shepherd.quote={q0['id']}", f"shepherd.deadline={before + 1:.3f}")
        assert early.status_code == 409, early.text
        assert early.json()["RemoteException"]["exception"] == "ConflictException"
        assert "earliest feasible finish" in early.json()["RemoteException"]["message"]
        assert (await client.get(f"/ws/v1/cluster/apps/{early.app_id}")).status_code == 404  # type: ignore[attr-defined]
        assert len((await client.get("/ws/v1/cluster/apps")).json()["apps"] or {}) == apps_before

        # a big job with a far deadline; the small job would now jump ahead of it, so it costs more
        qb = await quote(client, BIG)
        big = await submit(client, BIG, f"shepherd.quote={qb['id']}", "shepherd.deadline=+7200")
        assert big.status_code == 202, big.text
        q1 = await quote(client, SMALL)
        assert q1["curve"][0]["price"] > q0["curve"][0]["price"]

        bought = await submit(client, SMALL, f"shepherd.quote={q1['id']}")
        assert bought.status_code == 202, bought.text
        app = (await client.get(f"/ws/v1/cluster/apps/{bought.app_id}")).json()["app"]  # type: ignore[attr-defined]
        assert app["deadline"]["deadline"] == q1["earliestFinish"]
        assert app["deadline"]["price"] == pytest.approx(q1["curve"][0]["price"], rel=0.05)
        assert app["deadline"]["status"] in ("ON_TRACK", "AT_RISK")

        why = (await client.get(f"/ws/v1/shepherd/apps/{bought.app_id}/explain")).json()["explanation"]  # type: ignore[attr-defined]
        assert why["deadline"]["deadline"] == q1["earliestFinish"]
        assert why["deadline"]["remainingWork"] > 0
        listing = (await client.get("/ws/v1/shepherd/deadlines")).json()["deadlines"]["deadline"]
        assert [d["id"] for d in listing] == [bought.app_id, big.app_id]  # type: ignore[attr-defined]
        assert listing[0]["deadline"] <= listing[1]["deadline"]

        estimate = (await client.get(f"/ws/v1/shepherd/apps/{bought.app_id}/estimate")).json()["estimate"]  # type: ignore[attr-defined]
        assert estimate["state"] in ("UNKNOWN", "DECLARED")  # nothing ran: the RM has measured nothing yet
        assert (await client.get("/ws/v1/shepherd/apps/application_1_9999/estimate")).status_code == 404
        unknown = await client.get("/ws/v1/shepherd/quotes/quote_0_0000")
        assert unknown.status_code == 404


async def test_quote_and_buy_over_grpc_and_keep_it_across_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "rm"
    server = await start(data)
    try:
        secret = [("authorization", f"Bearer {server.cfg.client_secret or ''}")]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            client = pbg.ApplicationClientStub(channel)

            q = await client.QuoteDeadline(pb.QuoteDeadlineRequest(queue="default", user="bob", name="small",
                                                                   job_spec_json=json.dumps(SMALL)), metadata=secret)
            assert q.earliest_finish > time.time()
            assert len(q.curve) > 3
            new = await client.GetNewApplication(pb.GetNewApplicationRequest(), metadata=secret)
            await client.SubmitApplication(pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
                application_id=new.application_id, name="small", queue="default", user="bob",
                am_container_spec=pb.ContainerLaunchContext(commands=["true"]), job_spec_json=json.dumps(SMALL),
                quote_id=q.quote_id)), metadata=secret)
            report = (await client.GetApplicationReport(pb.GetApplicationReportRequest(
                application_id=new.application_id), metadata=secret)).report
            assert report.deadline.deadline == pytest.approx(q.earliest_finish)
            assert report.deadline.status in ("ON_TRACK", "AT_RISK")
        app_id = new.application_id
        claim = server.state.apps[app_id].terms.claim
        deadline = server.state.apps[app_id].terms.deadline
        assert claim is not None
    finally:
        await server.stop()
    again = await start(data)
    try:
        app = again.state.apps[app_id]  # type: ignore[index]
        assert app.terms.claim == claim
        assert app.terms.deadline == deadline
        assert app_id in again.state.deadlines.held
        book = again.state.deadlines.books[app.queue]
        assert book.claims[app_id].deadline == deadline
    finally:
        await again.stop()


async def test_no_capacity_huge_jobs_and_far_deadlines_are_refused_not_a_500(tmp_path: Path) -> None:
    """Found by bench/fuzz_rest.py: with no NodeManager registered a quote laid the job out one step a second
    until it would fit (a 3 TB array: MemoryError, a 500); a job of decades of work or a deadline decades ahead
    did the same (GBs, which the RM may get). Each is a refusal now, and nothing changes."""
    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      ipc_client_port=-1, ipc_scheduler_port=-1, scheduler="mrm"))
    await server.start()
    try:
        async with http(server) as client:
            r = await client.post("/ws/v1/shepherd/quotes?user.name=alice", json={"queue": "default", "job": SMALL})
            assert r.status_code == 409, r.text
            assert r.json()["RemoteException"]["exception"] == "ConflictException"
            assert "no capacity" in r.json()["RemoteException"]["message"]

            await unhealthy_node(server, NODE)
            decades = {"id": "decades", "stages": [{"name": "s", "tasks": 1, "duration_s": 10**9, "memory_mb": 1024,
                                                    "command": "true"}]}
            r = await client.post("/ws/v1/shepherd/quotes?user.name=alice", json={"queue": "default", "job": decades})
            assert r.status_code == 409, r.text
            assert "cannot finish within" in r.json()["RemoteException"]["message"]

            q = await quote(client, SMALL)
            far = time.time() + 10 * 365 * 86_400
            refused = await submit(client, SMALL, f"shepherd.quote={q['id']}", f"shepherd.deadline={far:.3f}")
            assert refused.status_code == 400, refused.text
            assert "days ahead" in refused.json()["RemoteException"]["message"]
            assert (await client.get(f"/ws/v1/cluster/apps/{refused.app_id}")).status_code == 404  # type: ignore[attr-defined]

            bought = await submit(client, SMALL, f"shepherd.quote={q['id']}")
            assert bought.status_code == 202, bought.text
            path = f"/ws/v1/shepherd/apps/{bought.app_id}/deadline?user.name=alice"  # type: ignore[attr-defined]
            before = (await client.get(f"/ws/v1/cluster/apps/{bought.app_id}")).json()["app"]["deadline"]  # type: ignore[attr-defined]
            moved = await client.put(path, json={"deadline": int(far * 1000)})
            assert moved.status_code == 400, moved.text
            after = (await client.get(f"/ws/v1/cluster/apps/{bought.app_id}")).json()["app"]["deadline"]  # type: ignore[attr-defined]
            assert after["deadline"] == before["deadline"]
    finally:
        await server.stop()
