"""A recurring job's profile on one in-process ResourceManager: the first run's AM reports its stages when it
unregisters, the second run of the same job (name, queue and user) gets the profile when its AM registers, the
profile survives a restart, and ``GET /ws/v1/shepherd/jobs/{name}/profile`` and ``shepherd job profile`` show it
(404 for a job without one). A malformed report is a 400 that leaves the AM registered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import pytest_asyncio
from typer.testing import CliRunner, Result

from am.policies.jockey.profile import StageRun
from am.profile_wire import profile_from_pb, report_from_pb, report_to_pb
from common import tokens
from common.credentials import ENV_CLIENT_SECRET
from common.ids import AppId
from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.cli import app as cli
from rm.core import job_profiles
from rm.service import grpc_api, limits
from rm.service.server import ResourceManager
from rm.service.store import Store, default_sqlite_url
from tests.integration.test_deadlines_rest import http, start
from tests.integration.test_store import down_and_up

UNIT = Resources.of(memory_mb=1024, vcores=1)
REPORT = [StageRun("map", 4, (10.0, 12.0, 14.0, 16.0), attempts=5, failed_attempts=1, container=UNIT),
          StageRun("reduce", 2, (20.0, 22.0), attempts=2, parents=("map",), container=UNIT)]


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = await start(tmp_path / "rm")
    try:
        yield server
    finally:
        await server.stop()


class Run:
    """One run of a job: an unmanaged app and its AM over gRPC."""

    def __init__(self, server: ResourceManager, channel: grpc.aio.Channel) -> None:
        self.server = server
        self.apps = pbg.ApplicationClientStub(channel)
        self.am = pbg.ApplicationMasterStub(channel)
        self.secret = [("authorization", f"Bearer {server.cfg.client_secret or ''}")]
        self.app_id = ""
        self.amrm: list[tuple[str, str]] = []

    async def register(self, name: str, *, user: str = "alice") -> pb.RegisterApplicationMasterResponse:
        new = await self.apps.GetNewApplication(pb.GetNewApplicationRequest(), metadata=self.secret)
        self.app_id = new.application_id
        await self.apps.SubmitApplication(pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
            application_id=new.application_id, name=name, queue="default", user=user, unmanaged_am=True,
            am_resource=pb.Resource(values={"memory-mb": 512, "vcores": 1}))), metadata=self.secret)
        attempt = self.server.state.apps[AppId(new.application_id)].current
        assert attempt is not None
        self.amrm = [("authorization", f"Bearer {tokens.amrm_token(self.server.state.amrm_key, attempt.attempt_id)}")]
        response: pb.RegisterApplicationMasterResponse = await self.am.RegisterApplicationMaster(
            pb.RegisterApplicationMasterRequest(), metadata=self.amrm)
        return response

    async def finish(self, stages: list[pb.StageReport], status: pb.FinalStatus = pb.SUCCEEDED) -> None:
        done = await self.am.FinishApplicationMaster(
            pb.FinishApplicationMasterRequest(final_status=status, stages=stages), metadata=self.amrm)
        assert done.is_unregistered


async def run_once(server: ResourceManager, name: str, stages: list[StageRun], *, user: str = "alice",
                   status: pb.FinalStatus = pb.SUCCEEDED) -> tuple[str, pb.RegisterApplicationMasterResponse]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        run = Run(server, channel)
        reg = await run.register(name, user=user)
        await run.finish(report_to_pb(stages), status)
        return run.app_id, reg


async def settled(server: ResourceManager) -> None:
    """The background rebuild a run's end starts has ended."""
    await asyncio.wait_for(asyncio.gather(*server.profiles._tasks), timeout=10)


@pytest.mark.asyncio
async def test_the_second_run_gets_the_first_runs_profile_at_registration(tmp_path: Path) -> None:
    data = tmp_path / "rm"
    server = await start(data)
    try:
        first, reg = await run_once(server, "daily", REPORT)
        assert not reg.HasField("profile")  # nothing known of the job yet
        await settled(server)
        await run_once(server, "daily", [StageRun("map", 4, (99.0,), container=UNIT)], status=pb.FAILED)
        await settled(server)
        _, reg = await run_once(server, "daily", REPORT, user="bob")
        assert not reg.HasField("profile")  # another user's runs are another job's history
        third, reg = await run_once(server, "daily", [])
        assert reg.HasField("profile")
        assert list(reg.profile.runs) == [first]  # the failed run does not count, nor bob's
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.rest_port}", timeout=10,
                                     headers={"Authorization": f"Bearer {server.cfg.client_secret}"}) as http:
            slo = (await http.get(f"/ws/v1/shepherd/apps/{third}/slo")).json()["slo"]
            assert slo["profileRuns"] == [first]  # what its AM was handed, for the operator
            slo = (await http.get(f"/ws/v1/shepherd/apps/{first}/slo")).json()["slo"]
            assert slo["profileRuns"] == []
        profile = profile_from_pb(reg.profile)
        assert [s.name for s in profile.stages] == ["map", "reduce"]
        assert sorted(profile.stages[0].run_s) == [10.0, 12.0, 14.0, 16.0]
        assert profile.stages[0].failure_p == pytest.approx(0.2)
        assert profile.stages[1].parents == ("map",)
        assert profile.stages[0].container == UNIT
        assert not reg.profile.stages[0].init_s  # the runs measured none
    finally:
        await server.stop()
    again = await start(data)  # the reports are in the store: a restarted RM builds the same profile
    try:
        _, reg = await run_once(again, "daily", REPORT)
        assert list(reg.profile.runs) == [first]
    finally:
        await again.stop()


@pytest.mark.asyncio
async def test_a_malformed_report_is_refused_and_changes_nothing(rm: ResourceManager) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        run = Run(rm, channel)
        await run.register("daily")
        bad = report_to_pb([StageRun("map", 4, (1.0,), parents=("nowhere",))])
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await run.finish(bad)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "nowhere" in (refused.value.details() or "")
        assert not rm.state.apps[AppId(run.app_id)].final
        await run.finish(report_to_pb(REPORT))
    assert rm.state.apps[AppId(run.app_id)].final


@pytest.mark.asyncio
async def test_an_oversized_report_is_refused_on_its_counts(rm: ResourceManager,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4 MB report of a million empty stages (what a fuzzer sent) held the event loop for tens of seconds while
    each stage became an object, before the stage bound refused it: it is refused on its counts, unconverted."""
    converted: list[int] = []

    def counting(msgs: Any) -> Any:
        converted.append(len(msgs))
        return report_from_pb(msgs)
    monkeypatch.setattr(grpc_api, "report_from_pb", counting)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        run = Run(rm, channel)
        await run.register("daily")
        huge = [pb.StageReport()] * 1_000_000
        assert len(pb.FinishApplicationMasterRequest(stages=huge).SerializeToString()) < limits.MAX_MESSAGE
        many_parents = [pb.StageReport(name="map", tasks=1, parents=["map"] * (job_profiles.MAX_STAGES + 1))]
        for bad in (huge, many_parents):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await run.finish(bad)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert f"at most {job_profiles.MAX_STAGES}" in (refused.value.details() or "")
            assert not rm.state.apps[AppId(run.app_id)].final
        assert converted == []
        await run.finish(report_to_pb(REPORT))
    assert converted == [len(REPORT)]
    assert rm.state.apps[AppId(run.app_id)].final


async def profile_json(server: ResourceManager, name: str, query: str = "") -> tuple[int, Any]:
    async with http(server) as client:
        r = await client.get(f"/ws/v1/shepherd/jobs/{name}/profile{query}")
    return r.status_code, r.json()


async def shepherd(server: ResourceManager, *args: str) -> Result:
    runner = CliRunner(env={ENV_CLIENT_SECRET: server.cfg.client_secret or ""})
    rest = ["--rest", f"http://127.0.0.1:{server.rest_port}"]
    return await asyncio.to_thread(lambda: runner.invoke(cli, [*args, *rest]))


@pytest.mark.asyncio
async def test_the_profile_over_rest_and_the_cli(rm: ResourceManager) -> None:
    status, body = await profile_json(rm, "daily")
    assert status == 404
    assert body["RemoteException"]["exception"] == "NotFoundException"
    assert "daily" in body["RemoteException"]["message"]

    first, _ = await run_once(rm, "daily", REPORT)
    bobs, _ = await run_once(rm, "daily", [StageRun("map", 1, (5.0,), container=UNIT)], user="bob")
    await settled(rm)
    status, body = await profile_json(rm, "daily")  # the newest successful run's queue and user: bob's
    assert status == 200, body
    assert (body["jobProfile"]["user"], body["jobProfile"]["runs"]) == ("bob", [bobs])
    status, body = await profile_json(rm, "daily", "?user=alice")
    assert status == 200, body
    p = body["jobProfile"]
    assert (p["job"], p["queue"], p["user"], p["runs"], p["totalTasks"]) == ("daily", "root.default", "alice",
                                                                               [first], 6)
    m, r = p["stages"]
    assert (m["name"], m["tasks"], m["meanTaskTime"], m["p90TaskTime"]) == ("map", 4, 13_000, 16_000)
    assert (m["attempts"], m["failedAttempts"], m["failureProbability"]) == (5, 1, 0.2)
    assert (r["name"], r["parents"], r["initTime"]) == ("reduce", ["map"], None)
    assert (await profile_json(rm, "daily", "?user=carol"))[0] == 404

    shown = await shepherd(rm, "job", "profile", "daily", "--user", "alice")
    assert shown.exit_code == 0, shown.output
    for text in ("daily", first, "map", "reduce", "13.00", "16.00", "1/5"):
        assert text in shown.output
    as_json = await shepherd(rm, "job", "profile", "daily", "--user", "alice", "-o", "json")
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["runs"] == [first]
    missing = await shepherd(rm, "job", "profile", "weekly")
    assert missing.exit_code == 2, missing.output  # not found: a usage error
    assert "weekly" in missing.output


def test_stage_reports_are_stored_pruned_and_go_with_their_migration(tmp_path: Path) -> None:
    store_url = default_sqlite_url(tmp_path / "data" / "rm")
    store = Store(store_url)
    store.migrate()
    def rec(app: int, job: str = "daily") -> job_profiles.StageRunsRecord:
        return job_profiles.record_of(f"application_1_{app:04d}", job, "root.default", "alice", 1000.0 + app, True,
                                      job_profiles.check_report(REPORT))

    store.write([rec(1), rec(3), rec(2), rec(4, "weekly")])
    assert [r.app_id[-1] for r in store.stage_runs("daily")] == ["1", "2", "3"]  # oldest first
    assert [r.app_id[-1] for r in store.stage_runs("daily", limit=2)] == ["2", "3"]
    assert store.stage_runs("daily")[0] == rec(1)  # every field, the stages as written
    assert store.prune_stage_runs(2) == 1
    assert [r.app_id[-1] for r in store.stage_runs("daily")] == ["2", "3"]
    assert len(store.stage_runs("weekly")) == 1
    down_and_up(store_url, "0014")  # the table goes, and comes back empty
    assert store.stage_runs("daily") == []
    store.close()
