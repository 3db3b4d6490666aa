"""``shepherd.resourcemanager.authenticate-reads``: reads need a credential on every door, as writes do, the web
UI's pages and /metrics included. Off (the default), reads are open."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import pytest
import pytest_asyncio

from common.hadoop.client import IpcClient, RemoteError
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.hadoop import yarn_protocols_pb2 as yp
from rm.service import authz
from rm.service.config import RMConfig
from rm.service.server import ResourceManager

pytestmark = pytest.mark.asyncio
IPC_CLIENT = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"


@pytest_asyncio.fixture(params=[True, False], ids=["authenticated", "open"])
async def rm(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[ResourceManager]:
    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      ipc_client_port=0, ipc_scheduler_port=-1, ipc_admin_port=-1,
                                      authenticate_reads=request.param))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_reads_need_a_credential_when_configured(rm: ResourceManager) -> None:
    closed = rm.cfg.authenticate_reads
    token = authz.issue_user_token(rm.cfg.client_secret or "", "alice", now=time.time(), lifetime_s=600)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10) as http:
        anonymous = await http.get("/ws/v1/cluster/apps")
        assert anonymous.status_code == (401 if closed else 200), anonymous.text
        if closed:
            assert anonymous.json()["RemoteException"]["exception"] == "AuthorizationException"
            forged = await http.get("/ws/v1/cluster/info", headers={"Authorization": "Bearer forged"})
            assert forged.status_code == 403
        assert (await http.get("/ws/v1/cluster/apps", headers={"Authorization": f"Bearer {token}"})).status_code \
            == 200
        # /metrics and the web UI's pages (which name apps, users, queues and nodes) are reads too
        assert (await http.get("/metrics")).status_code == (401 if closed else 200)
        scraped = await http.get("/metrics", headers={"Authorization": f"Bearer {rm.cfg.client_secret}"})
        assert scraped.status_code == 200
        assert "shepherd_nodes" in scraped.text
        assert "shepherd_out_of_band_batch 0.0" in scraped.text  # an idle RM takes every completion early
        if closed:  # the sign-in cookie is for /ui: the root sends the browser there
            root = await http.get("/")
            assert (root.status_code, root.headers["location"]) == (307, "/ui")
        for path in ("/ui", "/ui/nodes", "/ui/queues", "/ui/apps", "/ui/reservations", "/ui/deadlines",
                     "/ui/apps/application_1_0001"):
            page = await http.get(path)
            assert page.status_code == (401 if closed else 200 if path != "/ui/apps/application_1_0001" else 404)
            if closed:
                assert 'id="signin"' in page.text
                assert "root.default" not in page.text
        assert (await http.get("/ui/static/ui.css")).status_code == 200  # the pages' own CSS and JS stay open
        signed = {"Cookie": f"shepherd_credential={token}"}
        assert (await http.get("/ui/queues", headers=signed)).status_code == 200
        assert "root.default" in (await http.get("/ui/queues", headers=signed)).text
        assert (await http.get("/ui/nodes", headers={"Cookie": "shepherd_credential=forged"})).status_code \
            == (401 if closed else 200)

    async with grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        stub = pbg.ApplicationClientStub(channel)
        for call, request in ((stub.GetApplications, pb.GetApplicationsRequest()),
                              (stub.GetClusterMetrics, pb.GetClusterMetricsRequest()),
                              (stub.GetClusterNodes, pb.GetClusterNodesRequest())):
            if closed:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call(request, timeout=10)
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
            else:
                await call(request, timeout=10)
            await call(request, timeout=10, metadata=[("authorization", f"Bearer {token}")])

    assert rm.ipc is not None
    port = rm.ipc.client_port
    if closed:
        with pytest.raises(RemoteError) as ipc_err:
            async with IpcClient("127.0.0.1", port, IPC_CLIENT, user="mallory") as c:
                await c.call("getApplications", yp.GetApplicationsRequest(), yp.GetApplicationsResponse)
        assert ipc_err.value.java_class == "org.apache.hadoop.security.AccessControlException"
    async with IpcClient("127.0.0.1", port, IPC_CLIENT, user="alice", token=rm.ipc.delegation_token("alice")) as c:
        await c.call("getClusterMetrics", yp.GetClusterMetricsRequest(), yp.GetClusterMetricsResponse)
