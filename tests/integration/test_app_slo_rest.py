"""A deadline changed at run time and an app's SLO, over REST, on one in-process ResourceManager with the mrm
scheduler (nothing is placed: the only NodeManager is unhealthy, so apps keep the claims they bought).

A later deadline is admitted and re-lays the claim; one before the earliest feasible finish is a 409 naming
that finish and changes nothing; an unknown app is a 404, a malformed body a 400, an app that ended a 409; the
new deadline survives a restart, and so does an ended app's control trace. Under the jockey scheduler (a
healthy node) the AM hears the guarantee the RM grants it."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from common.ids import AppId
from rm.service.server import ResourceManager
from tests.integration.conftest import unmanaged_am
from tests.integration.test_deadlines_rest import SMALL, http, quote, start, submit

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = await start(tmp_path / "rm")
    try:
        yield server
    finally:
        await server.stop()


async def bought(client: httpx.AsyncClient, *, within_s: float = 7200) -> str:
    q = await quote(client, SMALL)
    r = await submit(client, SMALL, f"shepherd.quote={q['id']}", f"shepherd.deadline=+{within_s:g}")
    assert r.status_code == 202, r.text
    return str(r.app_id)  # type: ignore[attr-defined]


async def put_deadline(client: httpx.AsyncClient, app_id: str, body: object) -> httpx.Response:
    return await client.put(f"/ws/v1/shepherd/apps/{app_id}/deadline?user.name=alice", json=body)


async def test_a_later_deadline_is_admitted_and_an_infeasible_one_changes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "rm"
    server = await start(data)
    try:
        async with http(server) as client:
            app_id = await bought(client)
            app = server.state.apps[AppId(app_id)]
            first = app.terms.deadline
            assert first is not None
            slo = (await client.get(f"/ws/v1/shepherd/apps/{app_id}/slo")).json()["slo"]
            assert slo["status"] == "ON_TRACK"
            assert slo["claimed"] is True
            assert slo["deadline"] == round(first * 1000) or slo["deadline"] == int(first * 1000)
            assert slo["deadlineSource"] == "terms"
            assert slo["totalWork"] > 0
            assert slo["oracleUnits"] == math.ceil(slo["totalWork"] / (first - app.submit_time) - 1e-9)
            assert slo["predictedFinish"] <= slo["deadline"]
            assert slo["controlTrace"] == []

            # later: admitted, the claim re-laid to the new deadline, the terms changed
            before = time.time()
            r = await put_deadline(client, app_id, {"deadline": "+3h"})
            assert r.status_code == 200, r.text
            later = app.terms.deadline
            assert later is not None
            assert later == pytest.approx(before + 3 * 3600, abs=5)
            assert r.json()["slo"]["deadline"] == int(later * 1000)
            book = server.state.deadlines.books[app.queue]
            assert book.claims[app_id].deadline == later
            assert server.state.deadlines.held[AppId(app_id)].deadline == later

            # before the earliest feasible finish: 409 naming it, and nothing changed
            placed = book.claims[app_id].placed
            r = await put_deadline(client, app_id, {"deadline": int((time.time() + 2) * 1000)})
            assert r.status_code == 409, r.text
            err = r.json()["RemoteException"]
            assert err["exception"] == "ConflictException"
            assert "earliest feasible finish" in err["message"]
            earliest = float(err["message"].rsplit(" ", 1)[-1])
            assert time.time() < earliest < later
            assert app.terms.deadline == later
            assert book.claims[app_id].deadline == later
            now_placed = book.claims[app_id].placed  # the same layout (a cycle may lay the claim again, alike)
            assert now_placed.start == placed.start
            assert list(now_placed.rate) == list(placed.rate)
            assert server.state.deadlines.held[AppId(app_id)].deadline == later

            # exactly the earliest finish it named is admitted
            r = await put_deadline(client, app_id, {"deadline": math.ceil(earliest * 1000) + 1000})
            assert r.status_code == 200, r.text
            kept = app.terms.deadline
            assert kept is not None
            assert kept < later
    finally:
        await server.stop()
    again = await start(data)
    try:
        app = again.state.apps[AppId(app_id)]
        assert app.terms.deadline == kept
        assert again.state.deadlines.books[app.queue].claims[app_id].deadline == kept
    finally:
        await again.stop()


async def test_unknown_malformed_unauthenticated_and_finished(rm: ResourceManager,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="shepherd.rm.audit")
    async with http(rm) as client:
        app_id = await bought(client)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10) as anonymous:
            r = await anonymous.put(f"/ws/v1/shepherd/apps/{app_id}/deadline", json={"deadline": "+1h"})
            assert r.status_code in (401, 403), r.text
        denied = [m.getMessage() for m in caplog.records if m.name == "shepherd.rm.audit"]
        assert any("Update Application Deadline" in m and "RESULT=FAILURE" in m and app_id in m for m in denied)
        unknown = await put_deadline(client, "application_1_9999", {"deadline": "+1h"})
        assert unknown.status_code == 404
        assert unknown.json()["RemoteException"]["exception"] == "NotFoundException"
        assert (await client.get("/ws/v1/shepherd/apps/application_1_9999/slo")).status_code == 404
        deadline = rm.state.apps[AppId(app_id)].terms.deadline
        for body in ({"deadline": "soon"}, {"deadline": True}, {"when": "+1h"}, {"deadline": "+-5m"},
                     {"deadline": 1000}, [1]):
            r = await put_deadline(client, app_id, body)
            assert r.status_code == 400, (body, r.text)
            assert r.json()["RemoteException"]["exception"] == "BadRequestException"
        assert rm.state.apps[AppId(app_id)].terms.deadline == deadline

        r = await client.put(f"/ws/v1/cluster/apps/{app_id}/state?user.name=alice", json={"state": "KILLED"})
        assert r.status_code in (200, 202), r.text
        ended = await put_deadline(client, app_id, {"deadline": "+5h"})
        assert ended.status_code == 409, ended.text
        assert rm.state.apps[AppId(app_id)].terms.deadline == deadline
        slo = (await client.get(f"/ws/v1/shepherd/apps/{app_id}/slo")).json()["slo"]
        assert slo["status"] == "MISSED"  # killed: it did not succeed by its deadline
        m = samples((await client.get("/metrics")).text)
        assert m[("shepherd_deadline_outcomes_total", (("outcome", "missed"),))] == 1
        assert m[("shepherd_deadline_outcomes_total", (("outcome", "met"),))] == 0
        page = (await client.get("/ui/deadlines")).text  # the SLO page
        assert f'data-app="{app_id}" data-status="MISSED"' in page


async def test_an_app_without_a_deadline_buys_one_at_run_time(rm: ResourceManager) -> None:
    async with http(rm) as client:
        r = await submit(client, SMALL)
        assert r.status_code == 202, r.text
        app_id = str(r.app_id)  # type: ignore[attr-defined]
        slo = (await client.get(f"/ws/v1/shepherd/apps/{app_id}/slo")).json()["slo"]
        assert slo["status"] == "NONE"
        assert slo["deadline"] is None
        assert slo["oracleUnits"] is None
        assert slo["requestedGuarantee"] is None
        assert slo["grantedGuarantee"] is None  # the mrm scheduler has no guarantee stage
        # a stock submission has no job file: nothing estimates its work, so no deadline can be bought
        r = await put_deadline(client, app_id, {"deadline": "+2h"})
        assert r.status_code == 400, r.text
        assert "no estimate" in r.json()["RemoteException"]["message"]
        assert rm.state.apps[AppId(app_id)].terms.deadline is None


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def test_slo_metrics(rm: ResourceManager) -> None:
    async with http(rm) as client:
        app_id = await bought(client)
        assert (await put_deadline(client, app_id, {"deadline": "+3h"})).status_code == 200
        assert (await put_deadline(client, app_id, {"deadline": "+2s"})).status_code == 409
        m = samples((await client.get("/metrics")).text)
        assert m[("shepherd_deadline_changes_total", (("outcome", "admitted"),))] == 1
        assert m[("shepherd_deadline_changes_total", (("outcome", "infeasible"),))] == 1
        assert m[("shepherd_slo_apps", (("status", "ON_TRACK"),))] == 1
        assert m[("shepherd_slo_apps", (("status", "AT_RISK"),))] == 0
        assert m[("shepherd_slo_completion_ratio_count", ())] == 0
        # the admitted change was written before it was answered, and the write timed
        assert m[("shepherd_store_write_seconds_count", ())] >= 1
        assert m[("shepherd_store_write_records_sum", ())] >= 1

        r = await client.put(f"/ws/v1/cluster/apps/{app_id}/state?user.name=alice", json={"state": "KILLED"})
        assert r.status_code in (200, 202), r.text
        m = samples((await client.get("/metrics")).text)
        assert m[("shepherd_slo_apps", (("status", "ON_TRACK"),))] == 0
        assert m[("shepherd_slo_completion_ratio_count", ())] == 1
        assert m[("shepherd_slo_completion_ratio_bucket", (("le", "0.25"),))] == 1  # killed at once: ratio ~0


async def test_the_am_hears_the_deadline_and_its_change(rm: ResourceManager) -> None:
    import json

    import grpc

    from common import tokens
    from proto import shepherd_pb2 as pb
    from proto import shepherd_pb2_grpc as pbg

    secret = [("authorization", f"Bearer {rm.cfg.client_secret or ''}")]
    async with http(rm) as client, grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        q = await quote(client, SMALL)
        apps = pbg.ApplicationClientStub(channel)
        new = await apps.GetNewApplication(pb.GetNewApplicationRequest(), metadata=secret)
        await apps.SubmitApplication(pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
            application_id=new.application_id, name="small", queue="default", user="alice", unmanaged_am=True,
            am_resource=pb.Resource(values={"memory-mb": 512, "vcores": 1}), job_spec_json=json.dumps(SMALL),
            quote_id=q["id"], deadline=time.time() + 7200)), metadata=secret)
        app = rm.state.apps[AppId(new.application_id)]
        assert app.terms.claim is not None
        attempt = app.current
        assert attempt is not None
        amrm = [("authorization", f"Bearer {tokens.amrm_token(rm.state.amrm_key, attempt.attempt_id)}")]
        am = pbg.ApplicationMasterStub(channel)
        await am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(), metadata=amrm)
        first = await am.Allocate(pb.AllocateRequest(response_id=0), metadata=amrm)
        assert first.HasField("deadline_in_s")
        assert first.deadline_in_s == pytest.approx(7200, abs=5)
        assert (await put_deadline(client, new.application_id, {"deadline": "+3h"})).status_code == 200
        second = await am.Allocate(pb.AllocateRequest(response_id=first.response_id), metadata=amrm)
        assert second.deadline_in_s == pytest.approx(3 * 3600, abs=5)

        plain = await apps.GetNewApplication(pb.GetNewApplicationRequest(), metadata=secret)
        await apps.SubmitApplication(pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
            application_id=plain.application_id, name="plain", queue="default", user="alice", unmanaged_am=True,
            am_resource=pb.Resource(values={"memory-mb": 512, "vcores": 1}))), metadata=secret)
        other = rm.state.apps[AppId(plain.application_id)].current
        assert other is not None
        amrm = [("authorization", f"Bearer {tokens.amrm_token(rm.state.amrm_key, other.attempt_id)}")]
        await am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(), metadata=amrm)
        none = await am.Allocate(pb.AllocateRequest(response_id=0), metadata=amrm)
        assert not none.HasField("deadline_in_s")


async def test_the_requested_guarantee_survives_a_restart(tmp_path: Path) -> None:
    import grpc

    from common.resources import Resources
    from proto import shepherd_pb2 as pb

    data = tmp_path / "rm"
    server = await start(data)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            app_id, am, amrm = await unmanaged_am(server, channel, "g")
            await am.Allocate(pb.AllocateRequest(response_id=0, guarantee=pb.Resource(
                values={"memory-mb": 3072, "vcores": 3})), metadata=amrm)
        async with http(server) as client:
            slo = (await client.get(f"/ws/v1/shepherd/apps/{app_id}/slo")).json()["slo"]
        assert slo["requestedGuarantee"] == {"memory": 3072, "vCores": 3}
    finally:
        await server.stop()
    again = await start(data)
    try:
        assert again.state.apps[AppId(app_id)].terms.guarantee == Resources.of(memory_mb=3072, vcores=3)
    finally:
        await again.stop()


async def test_the_control_trace_the_am_reports(rm: ResourceManager) -> None:
    import grpc

    from common import tokens
    from proto import shepherd_pb2 as pb
    from proto import shepherd_pb2_grpc as pbg

    secret = [("authorization", f"Bearer {rm.cfg.client_secret or ''}")]
    async with http(rm) as client, grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        apps = pbg.ApplicationClientStub(channel)
        new = await apps.GetNewApplication(pb.GetNewApplicationRequest(), metadata=secret)
        await apps.SubmitApplication(pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
            application_id=new.application_id, name="c", queue="default", user="alice", unmanaged_am=True,
            am_resource=pb.Resource(values={"memory-mb": 512, "vcores": 1}))), metadata=secret)
        attempt = rm.state.apps[AppId(new.application_id)].current
        assert attempt is not None
        amrm = [("authorization", f"Bearer {tokens.amrm_token(rm.state.amrm_key, attempt.attempt_id)}")]
        am = pbg.ApplicationMasterStub(channel)
        await am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(), metadata=amrm)
        before = time.time()
        r = await am.Allocate(pb.AllocateRequest(response_id=0, control=[
            pb.ControlStep(age_s=60, progress=0.25, raw_units=6, smoothed_units=5.2, requested_units=6,
                           finish_in_s=300, status="ON_TRACK"),
            pb.ControlStep(age_s=0, progress=0.5, raw_units=9, smoothed_units=5.96, requested_units=6,
                           finish_in_s=400, status="AT_RISK", held=True, pace=1.8)], model_build_s=1.25),
            metadata=amrm)
        # nothing new; a build time that is not a positive number is not believed
        r = await am.Allocate(pb.AllocateRequest(response_id=r.response_id, model_build_s=math.nan), metadata=amrm)
        await am.Allocate(pb.AllocateRequest(response_id=r.response_id, model_build_s=-3.0), metadata=amrm)
        slo = (await client.get(f"/ws/v1/shepherd/apps/{new.application_id}/slo")).json()["slo"]
    assert slo["modelBuildSec"] == 1.25
    assert slo["workDone"] is None  # it has not ended
    trace = slo["controlTrace"]
    assert [c["rawUnits"] for c in trace] == [6, 9]
    assert [c["status"] for c in trace] == ["ON_TRACK", "AT_RISK"]
    assert trace[1]["held"] is True
    assert trace[0]["time"] == pytest.approx((before - 60) * 1000, abs=3000)
    assert trace[1]["predictedFinish"] == pytest.approx((before + 400) * 1000, abs=3000)
    assert trace[1]["smoothedUnits"] == pytest.approx(5.96)
    assert [c["pace"] for c in trace] == [1.0, 1.8]  # an AM that tells no pace (0) is on its profile's


async def test_the_am_hears_the_guarantee_the_rm_grants(tmp_path: Path) -> None:
    """Under the jockey scheduler, on one healthy 8-vcore node: an AM asking for 8 units is granted its
    queue's 0.8 of them, in its allocate answers from the first cycle after it asked; an AM asking for none
    hears no grant."""
    import grpc

    from common.resources import Resources
    from proto import shepherd_pb2 as pb
    from rm.service.config import RMConfig
    from tests.integration.conftest import grpc_node

    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      ipc_client_port=-1, ipc_scheduler_port=-1, scheduler="jockey"))
    await server.start()
    try:
        node = await grpc_node(server, Resources.of(memory_mb=8192, vcores=8), healthy=True)
        assert server.state.nodes[node].schedulable  # type: ignore[index]
        unit = pb.Resource(values={"memory-mb": 1024, "vcores": 1})
        tasks = [pb.ResourceAsk(allocation_request_id=1, priority=1, capability=unit, num_containers=10)]
        async with http(server) as client, grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            app_id, am, amrm = await unmanaged_am(server, channel, "jockey")
            plain_id, plain, plain_amrm = await unmanaged_am(server, channel, "plain")
            first = await am.Allocate(pb.AllocateRequest(response_id=0, asks=tasks, guarantee=pb.Resource(
                values={"memory-mb": 8192, "vcores": 8})), metadata=amrm)
            assert not first.HasField("granted_guarantee")  # no cycle has seen the request yet
            other = await plain.Allocate(pb.AllocateRequest(response_id=0, asks=tasks), metadata=plain_amrm)
            await server.schedule_once()
            second = await am.Allocate(pb.AllocateRequest(response_id=first.response_id), metadata=amrm)
            assert second.HasField("granted_guarantee")
            assert dict(second.granted_guarantee.values) == {"memory-mb": 6553, "vcores": 6}  # 0.8 of the node
            assert dict(second.fair_share.values) != dict(second.granted_guarantee.values)
            assert dict(second.guarantee_ceiling.values) == {"memory-mb": 6553, "vcores": 6}  # no request gets more
            none = await plain.Allocate(pb.AllocateRequest(response_id=other.response_id), metadata=plain_amrm)
            assert not none.HasField("granted_guarantee")
            assert not none.HasField("guarantee_ceiling")
            slo = (await client.get(f"/ws/v1/shepherd/apps/{app_id}/slo")).json()["slo"]
            assert slo["requestedGuarantee"] == {"memory": 8192, "vCores": 8}
            assert slo["grantedGuarantee"] == {"memory": 6553, "vCores": 6}
            assert (await client.get(f"/ws/v1/shepherd/apps/{plain_id}/slo")).json()["slo"]["grantedGuarantee"] is None
    finally:
        await server.stop()


async def test_an_ended_app_s_control_trace_survives_a_restart(tmp_path: Path) -> None:
    import grpc

    from proto import shepherd_pb2 as pb

    data = tmp_path / "rm"
    server = await start(data)
    try:
        async with http(server) as client, grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            app_id, am, amrm = await unmanaged_am(server, channel, "c")
            await am.Allocate(pb.AllocateRequest(response_id=0, control=[
                pb.ControlStep(age_s=60, progress=0.25, raw_units=6, smoothed_units=5.2, requested_units=6,
                               finish_in_s=300, status="ON_TRACK"),
                pb.ControlStep(age_s=0, progress=0.5, raw_units=9, smoothed_units=5.96, requested_units=6,
                               finish_in_s=400, status="AT_RISK", held=True)]), metadata=amrm)
            done = await am.FinishApplicationMaster(pb.FinishApplicationMasterRequest(
                final_status=pb.SUCCEEDED), metadata=amrm)
            assert done.is_unregistered
            ended = (await client.get(f"/ws/v1/shepherd/apps/{app_id}/slo")).json()["slo"]
        assert server.state.apps[AppId(app_id)].final
        assert [c["rawUnits"] for c in ended["controlTrace"]] == [6, 9]
    finally:
        await server.stop()
    again = await start(data)
    try:
        async with http(again) as client:
            slo = (await client.get(f"/ws/v1/shepherd/apps/{app_id}/slo")).json()["slo"]
        assert slo["controlTrace"] == ended["controlTrace"]  # every field, the times as they were
        assert slo["progress"] == 1.0
    finally:
        await again.stop()
