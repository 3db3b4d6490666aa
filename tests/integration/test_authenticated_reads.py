"""``shepherd.resourcemanager.authenticate-reads``: reads need a credential on every door, as writes do, the web
UI's pages and /metrics included, and the NodeManagers' pages and /metrics too. Off (the default), reads are
open."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import pytest
import pytest_asyncio

from common.hadoop.client import IpcClient, RemoteError
from nodemanager.config import NodeManagerConfig
from nodemanager.daemon import NodeManager, run_nodemanager
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


async def test_a_nodes_pages_need_the_client_secret_when_configured(rm: ResourceManager, tmp_path: Path) -> None:
    """The RM hands its nodes a digest of the client secret at registration; the node's pages and /metrics then
    take the secret as a bearer token or a Basic password, and nothing else: not a user token, not a forgery."""
    closed = rm.cfg.authenticate_reads
    secret = rm.cfg.client_secret or ""
    cfg = NodeManagerConfig(rm_address=f"127.0.0.1:{rm.grpc_port}", node_secret=rm.cfg.node_secret, port=0,
                            http_port=0, ipc_port=0, memory_mb=2048, vcores=2, work_dir=tmp_path / "nm",
                            heartbeat_interval_s=0.2, use_cgroups=False,
                            allow_root_containers=True)  # pytest's tmp dirs are private: no container runs here
    stop, ready = asyncio.Event(), asyncio.Event()
    started: list[NodeManager] = []
    daemon = asyncio.create_task(run_nodemanager(cfg, ready=ready, stop=stop, on_ready=started.append))
    try:
        await asyncio.wait_for(ready.wait(), 30)
        nm = started[0]
        assert bool(nm.keys.reads_verifier) is closed
        assert secret.encode() not in nm.keys.reads_verifier  # the secret itself never reaches the node
        token = authz.issue_user_token(secret, "alice", now=time.time(), lifetime_s=600)
        basic = base64.b64encode(f"anyone:{secret}".encode()).decode()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{nm.http_port}", timeout=10) as http:
            for path in ("/", "/node", "/metrics", "/ws/v1/node/info", "/ws/v1/node/containers"):
                anonymous = await http.get(path)
                assert anonymous.status_code == (401 if closed else 200), (path, anonymous.text)
                verifier = [f"Bearer {nm.keys.reads_verifier.hex()}"] if closed else []
                for wrong in ("Bearer forged", f"Bearer {token}", *verifier, "Basic !!!",
                              f"Basic {base64.b64encode(b'anyone:forged').decode()}"):
                    got = await http.get(path, headers={"Authorization": wrong})
                    assert got.status_code == (401 if closed else 200), (path, wrong)
                for right in (f"Bearer {secret}", f"Basic {basic}"):
                    assert (await http.get(path, headers={"Authorization": right})).status_code == 200, path
            if closed:  # a browser is asked for the secret as a password
                challenge = await http.get("/node")
                assert 'Basic realm="shepherd node"' in challenge.headers["www-authenticate"]
                assert challenge.json()["RemoteException"]["exception"] == "AuthorizationException"
            scraped = await http.get("/metrics", headers={"Authorization": f"Bearer {secret}"})
            assert "shepherd_nodemanager" in scraped.text
    finally:
        stop.set()
        await asyncio.wait_for(daemon, 30)
