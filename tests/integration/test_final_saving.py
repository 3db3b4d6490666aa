"""An app's end is reported only once the store holds it (YARN's FINAL_SAVING): until then every door shows the
app as it was before it ended, so that no client acts on an end a restart would undo."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import pytest
import pytest_asyncio

from common.ids import AppId
from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.core.ledger import Ledger
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig, SubmitSpec
from rm.service.config import RMConfig
from rm.service.server import ResourceManager
from tests.integration.conftest import unmanaged_am

pytestmark = pytest.mark.asyncio


def _killed(durable: bool) -> tuple[Ledger, AppId]:
    st = Ledger(Ledger.fresh_meta(1_700_000_000_000), build_queues(), CoreConfig(durable=durable))
    app_id = st.new_application(1.0)
    st.submit(SubmitSpec(app_id=app_id, name="a", queue="default", user="u",
                         am_resource=Resources.of(memory_mb=256, vcores=1), unmanaged=True), 1.0)
    st.kill(app_id, "stop", 2.0)
    return st, app_id


@pytest.mark.filterwarnings("ignore::pytest.PytestWarning")
def test_the_ledger_reports_an_end_once_it_is_stored() -> None:
    st, app_id = _killed(durable=True)
    app = st.apps[app_id]
    assert app.state == "KILLED"
    assert st.reported_state(app) == ("ACCEPTED", "UNDEFINED")  # the end is not stored yet
    records = st.drain_records()
    assert st.reported_state(app) == ("ACCEPTED", "UNDEFINED")  # drained is not stored
    st.stored(records)
    assert st.reported_state(app) == ("KILLED", "KILLED")
    # a ledger without a store (the simulator) reports an end at once
    sim, sim_app = _killed(durable=False)
    assert sim.reported_state(sim.apps[sim_app])[0] == "KILLED"


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      ipc_client_port=-1, ipc_scheduler_port=-1))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_a_finished_app_shows_running_until_its_end_is_stored(rm: ResourceManager) -> None:
    secret = [("authorization", f"Bearer {rm.cfg.client_secret or ''}")]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10) as http:
        app_id, am, amrm = await unmanaged_am(rm, channel, "held")
        apps = pbg.ApplicationClientStub(channel)

        # the store's one thread is busy: nothing is written until it is let go
        release = threading.Event()
        rm.store_executor.submit(release.wait, 30)
        finish = asyncio.ensure_future(am.FinishApplicationMaster(pb.FinishApplicationMasterRequest(
            final_status=pb.SUCCEEDED), metadata=amrm))
        for _ in range(100):
            await asyncio.sleep(0.02)
            if rm.state.apps[AppId(app_id)].final:
                break
        assert rm.state.apps[AppId(app_id)].state == "FINISHED"  # in memory, not yet stored
        assert not finish.done()  # the AM's answer waits for the store
        rest = (await http.get(f"/ws/v1/cluster/apps/{app_id}")).json()["app"]
        assert (rest["state"], rest["finalStatus"]) == ("RUNNING", "UNDEFINED")
        assert (await http.get(f"/ws/v1/cluster/apps/{app_id}/state")).json() == {"state": "RUNNING"}
        listed = (await http.get("/ws/v1/cluster/apps", params={"states": "FINISHED"})).json()["apps"]
        assert not (listed or {}).get("app")
        report = (await apps.GetApplicationReport(pb.GetApplicationReportRequest(
            application_id=app_id), metadata=secret)).report
        assert (report.state, report.final_status) == ("RUNNING", "UNDEFINED")

        release.set()
        done = await asyncio.wait_for(finish, 10)
        assert done.is_unregistered
        rest = (await http.get(f"/ws/v1/cluster/apps/{app_id}")).json()["app"]
        assert (rest["state"], rest["finalStatus"]) == ("FINISHED", "SUCCEEDED")
        report = (await apps.GetApplicationReport(pb.GetApplicationReportRequest(
            application_id=app_id), metadata=secret)).report
        assert report.state == "FINISHED"
