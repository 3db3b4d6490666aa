"""VIEW_APP on every door: an app's owner, a cluster admin, an administrator of its queue and the users of the
app's own VIEW_APP ACL read its full report; anyone else (another user, the anonymous ``dr.who``, a Hadoop IPC
caller whose SIMPLE name proves nothing) still finds the app in lists and by id, with YARN's restricted report,
and is refused (AccessControlException) its attempts, containers and the other details of its run, on Hadoop
IPC as on REST and gRPC.

alice submits over REST with ``application-acls`` naming carol a viewer, then kills her app over Hadoop IPC
with a diagnostic only a viewer may read. The only NodeManager reports itself unhealthy, so nothing runs."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import grpc
import httpx
import pytest
import pytest_asyncio

from common import ids
from common.acl import ADMINISTER_QUEUE, SUBMIT_APPLICATIONS, AccessList, AclConfig, queue_acls
from common.hadoop import records
from common.hadoop.client import IpcClient, RemoteError
from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.service import authz
from rm.service.config import RMConfig
from rm.service.server import ResourceManager
from rm.service.ui import COOKIE
from tests.integration.conftest import unhealthy_node

pytestmark = pytest.mark.asyncio

IPC_CLIENT = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"
SECRET_REASON = "the password is swordfish"
QUEUES = {"default": {"capacity": 50}, "ops": {"capacity": 50}}
ACLS = AclConfig(admins=AccessList.parse("admin"), queues=queue_acls({
    "root": {SUBMIT_APPLICATIONS: "*"},
    "root.default": {ADMINISTER_QUEUE: "dave"},  # dave administers alice's queue
    "root.ops": {ADMINISTER_QUEUE: "erin"},  # erin administers another one
}))
VIEWERS = ("alice", "admin", "dave", "carol")  # owner, cluster admin, queue admin, the app's VIEW_APP ACL
OTHERS = ("bob", "erin")


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      queues=QUEUES, acls=ACLS, ipc_client_port=0, ipc_scheduler_port=-1,
                                      ipc_admin_port=-1))
    await server.start()
    try:
        await unhealthy_node(server, Resources.of(memory_mb=8192, vcores=8))
        yield server
    finally:
        await server.stop()


def token(rm: ResourceManager, user: str) -> str:
    return authz.issue_user_token(rm.cfg.client_secret or "", user, now=time.time(), lifetime_s=600)


def as_user(rm: ResourceManager, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(rm, user)}"}


async def ipc(rm: ResourceManager, user: str, method: str, request: Any, response: Any, *,
              with_token: bool = True) -> Any:
    assert rm.ipc is not None
    creds = rm.ipc.delegation_token(user) if with_token else None
    async with IpcClient("127.0.0.1", rm.ipc.client_port, IPC_CLIENT, user=user, token=creds) as c:
        return await c.call(method, request, response)


@pytest_asyncio.fixture
async def app_id(rm: ResourceManager) -> str:
    """alice's app, killed with a diagnostic only its viewers may read."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10) as http:
        new = await http.post("/ws/v1/cluster/apps/new-application", headers=as_user(rm, "alice"))
        assert new.status_code == 200, new.text
        app = str(new.json()["application-id"])
        body = {"application-id": app, "application-name": "private", "queue": "default",
                "resource": {"memory": 256, "vCores": 1},
                "am-container-spec": {"commands": {"command": "sleep 60"},
                                      "application-acls": {"entry": [{"key": "VIEW_APP", "value": "carol"}]}}}
        resp = await http.post("/ws/v1/cluster/apps", json=body, headers=as_user(rm, "alice"))
        assert resp.status_code == 202, resp.text
    await ipc(rm, "alice", "forceKillApplication",
              yp.KillApplicationRequest(application_id=records.app_id_pb(app), diagnostics=SECRET_REASON),
              yp.KillApplicationResponse)
    assert SECRET_REASON in rm.state.apps[app].report_diagnostics()  # type: ignore[index]
    return app


async def test_rest_gives_viewers_the_full_report_and_others_the_restricted_one(rm: ResourceManager,
                                                                               app_id: str) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10) as http:
        for user in (*VIEWERS, *OTHERS, None):
            headers = as_user(rm, user) if user else {}
            one = await http.get(f"/ws/v1/cluster/apps/{app_id}", headers=headers)
            assert one.status_code == 200, one.text
            listed = await http.get("/ws/v1/cluster/apps", headers=headers)
            assert [a["id"] for a in listed.json()["apps"]["app"]] == [app_id]  # listed for everyone
            for app in (one.json()["app"], listed.json()["apps"]["app"][0]):
                assert (app["user"], app["name"], app["queue"], app["state"]) == \
                    ("alice", "private", "root.default", "KILLED")
                if user in VIEWERS:
                    assert SECRET_REASON in app["diagnostics"], user
                    assert app["allocatedMB"] == -1  # ended: nothing held, as YARN reports it
                    assert "pendingMB" in app
                else:
                    assert app["diagnostics"] == "N/A", user
                    assert "trackingUrl" not in app
                    assert "amContainerLogs" not in app
                    assert app["resourceRequests"] == []
                    assert app["progress"] == 0.0
            attempts = await http.get(f"/ws/v1/cluster/apps/{app_id}/appattempts", headers=headers)
            explained = await http.get(f"/ws/v1/shepherd/apps/{app_id}/estimate", headers=headers)
            if user in VIEWERS:
                assert attempts.status_code == 200, attempts.text
                assert explained.status_code == 200, explained.text
            else:
                for refused in (attempts, explained):
                    assert refused.status_code == 403, refused.text
                    error = refused.json()["RemoteException"]
                    assert error["exception"] == "AccessControlException"
                    assert f"User {user or 'dr.who'} does not have privilege to see this application" \
                        in error["message"]
        # a wrong credential is refused, not read as the anonymous user
        forged = await http.get(f"/ws/v1/cluster/apps/{app_id}", headers={"Authorization": "Bearer forged"})
        assert forged.status_code == 403
        # the owner's client secret acting for bob reads as bob
        owner = {"Authorization": f"Bearer {rm.cfg.client_secret}"}
        for_bob = await http.get(f"/ws/v1/cluster/apps/{app_id}", headers=owner, params={"doAs": "bob"})
        assert for_bob.json()["app"]["diagnostics"] == "N/A"


async def test_grpc_restricts_reports_and_refuses_attempts_and_containers(rm: ResourceManager,
                                                                           app_id: str) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        stub = pbg.ApplicationClientStub(channel)
        for user in (*VIEWERS, *OTHERS, None):
            md = [("authorization", f"Bearer {token(rm, user)}")] if user else []
            one = (await stub.GetApplicationReport(pb.GetApplicationReportRequest(
                application_id=app_id, rest_shape=True), metadata=md, timeout=10)).report
            listed = (await stub.GetApplications(pb.GetApplicationsRequest(rest_shape=True), metadata=md,
                                                 timeout=10)).applications
            assert [a.application_id for a in listed] == [app_id]
            for report in (one, listed[0]):
                assert (report.user, report.name, report.state) == ("alice", "private", "KILLED")
                if user in VIEWERS:
                    assert SECRET_REASON in report.diagnostics
                    assert SECRET_REASON in report.rest_json
                else:
                    assert (report.diagnostics, report.host, report.rpc_port) == ("N/A", "N/A", -1)
                    assert not report.current_attempt_id
                    assert SECRET_REASON not in report.rest_json
            for call, request in ((stub.GetApplicationAttempts, pb.GetApplicationAttemptsRequest(
                    application_id=app_id)), (stub.GetContainers, pb.GetContainersRequest(application_id=app_id))):
                if user in VIEWERS:
                    await call(request, metadata=md, timeout=10)
                    continue
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call(request, metadata=md, timeout=10)
                assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
                assert (err.value.details() or "").startswith(ACCESS_CONTROL)


async def test_hadoop_ipc_restricts_reports_as_yarn_does(rm: ResourceManager, app_id: str) -> None:
    request = yp.GetApplicationReportRequest(application_id=records.app_id_pb(app_id))
    for user in (*VIEWERS, *OTHERS):
        report = (await ipc(rm, user, "getApplicationReport", request,
                            yp.GetApplicationReportResponse)).application_report
        listed = (await ipc(rm, user, "getApplications", yp.GetApplicationsRequest(),
                            yp.GetApplicationsResponse)).applications
        queue = (await ipc(rm, user, "getQueueInfo", yp.GetQueueInfoRequest(
            queue_name="default", include_applications=True), yp.GetQueueInfoResponse)).queue_info
        assert [records.app_id_str(a.application_id) for a in listed] == [app_id]
        assert [records.app_id_str(a.application_id) for a in queue.applications] == [app_id]
        for r in (report, listed[0], queue.applications[0]):
            assert (r.user, r.name) == ("alice", "private")
            if user in VIEWERS:
                assert SECRET_REASON in r.diagnostics, user
                assert r.current_application_attempt_id.attempt_id == 1
                assert r.app_resource_usage.num_used_containers == 0
            else:
                assert (r.diagnostics, r.host, r.rpc_port, r.tracking_url) == ("N/A", "N/A", -1, "N/A"), user
                assert r.current_application_attempt_id.attempt_id == -1
                assert r.app_resource_usage.num_used_containers == -1
                assert r.app_resource_usage.used_resources.memory == -1
                assert r.progress == 0.0
    # SIMPLE authentication only claims a name: claiming to be alice reads as the anonymous user
    claimed = (await ipc(rm, "alice", "getApplicationReport", request, yp.GetApplicationReportResponse,
                         with_token=False)).application_report
    assert claimed.diagnostics == "N/A"


def attempt_requests(attempt_id: str, container_id: str) -> list[tuple[str, Any, Any]]:
    """The client protocol's attempt and container reads, for an attempt and a container of it."""
    return [
        ("getApplicationAttempts", yp.GetApplicationAttemptsRequest(
            application_id=records.app_id_pb(ids.app_of_attempt(attempt_id))), yp.GetApplicationAttemptsResponse),
        ("getApplicationAttemptReport", yp.GetApplicationAttemptReportRequest(
            application_attempt_id=records.attempt_id_pb(attempt_id)), yp.GetApplicationAttemptReportResponse),
        ("getContainers", yp.GetContainersRequest(application_attempt_id=records.attempt_id_pb(attempt_id)),
         yp.GetContainersResponse),
        ("getContainerReport", yp.GetContainerReportRequest(container_id=records.container_id_pb(container_id)),
         yp.GetContainerReportResponse),
    ]


async def test_hadoop_ipc_gives_attempts_and_containers_only_to_viewers(rm: ResourceManager, app_id: str) -> None:
    (attempt,) = rm.state.apps[app_id].attempts  # type: ignore[index]
    never = ids.container_id(attempt.attempt_id, 1)  # nothing was ever placed
    before = rm.state.apps[app_id].record()  # type: ignore[index]
    for user in (*VIEWERS, *OTHERS):
        attempts, one, containers, container = attempt_requests(attempt.attempt_id, never)
        if user in VIEWERS:
            (listed,) = (await ipc(rm, user, *attempts)).application_attempts
            report = (await ipc(rm, user, *one)).application_attempt_report
            assert listed == report
            assert records.attempt_id_str(report.application_attempt_id) == attempt.attempt_id
            assert report.yarn_application_attempt_state == yr.APP_ATTEMPT_KILLED
            assert SECRET_REASON in report.diagnostics
            assert (report.host, report.rpc_port, report.original_tracking_url) == ("N/A", -1, "N/A")
            assert report.tracking_url.endswith(f"/cluster/app/{app_id}")
            assert not report.HasField("am_container_id")  # no AM container was ever allocated
            assert report.start_time == int(attempt.start_time * 1000) > 0
            assert report.finish_time == int(attempt.finish_time * 1000) > 0
            assert list((await ipc(rm, user, *containers)).containers) == []
            with pytest.raises(RemoteError) as missing:
                await ipc(rm, user, *container)
            assert missing.value.java_class == "org.apache.hadoop.yarn.exceptions.ContainerNotFoundException"
            assert f"Container with id '{never}' doesn't exist in RM." in str(missing.value)
            continue
        for method, request, response in (attempts, one, containers, container):
            with pytest.raises(RemoteError) as err:
                await ipc(rm, user, method, request, response)
            assert err.value.java_class == ACCESS_CONTROL, method
            assert f"User {user} does not have privilege to see this application {app_id}" in str(err.value)
    # SIMPLE authentication only claims a name: claiming to be alice reads as the anonymous user, and is refused
    for method, request, response in attempt_requests(attempt.attempt_id, never):
        with pytest.raises(RemoteError) as err:
            await ipc(rm, "alice", method, request, response, with_token=False)
        assert err.value.java_class == ACCESS_CONTROL, method
        assert "User dr.who does not have privilege" in str(err.value)
    assert rm.state.apps[app_id].record() == before  # type: ignore[index]


async def test_unknown_attempts_and_containers_are_yarns_exceptions(rm: ResourceManager, app_id: str) -> None:
    """ClientRMService's order: the app (ApplicationNotFoundException, for everyone), then VIEW_APP, then the
    attempt (ApplicationAttemptNotFoundException), then the container (ContainerNotFoundException)."""
    not_found = "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"
    no_attempt = "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException"
    before = rm.state.apps[app_id].record()  # type: ignore[index]
    unknown_app = ids.attempt_id(ids.AppId(f"{app_id[:-4]}9999"), 1)
    for user in ("alice", "bob"):
        for method, request, response in attempt_requests(unknown_app, ids.container_id(unknown_app, 1)):
            with pytest.raises(RemoteError) as err:
                await ipc(rm, user, method, request, response)
            assert err.value.java_class == not_found, method
    second = ids.attempt_id(ids.AppId(app_id), 2)  # alice's app never had a second attempt
    _, one, containers, container = attempt_requests(second, ids.container_id(second, 1))
    for method, request, response in (one, containers, container):
        with pytest.raises(RemoteError) as err:
            await ipc(rm, "alice", method, request, response)
        assert err.value.java_class == no_attempt, method
        assert f"ApplicationAttempt with id '{second}' doesn't exist in RM." in str(err.value)
        with pytest.raises(RemoteError) as err:
            await ipc(rm, "bob", method, request, response)
        assert err.value.java_class == ACCESS_CONTROL, method  # whether the attempt exists is not told to bob
    # an id that is no id (attempt number 0) is YARN's generic refusal, not a failure of the RM
    with pytest.raises(RemoteError) as err:
        await ipc(rm, "alice", "getContainers", yp.GetContainersRequest(application_attempt_id=yr.ApplicationAttemptId(
            application_id=records.app_id_pb(app_id), attempt_id=0)), yp.GetContainersResponse)
    assert err.value.java_class == "org.apache.hadoop.yarn.exceptions.YarnException"
    assert rm.state.apps[app_id].record() == before  # type: ignore[index]
    assert len(rm.state.apps[app_id].attempts) == 1  # type: ignore[index]


async def test_a_view_acl_of_the_submission_must_name_a_known_access_type(rm: ResourceManager) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10) as http:
        new = await http.post("/ws/v1/cluster/apps/new-application", headers=as_user(rm, "alice"))
        app = str(new.json()["application-id"])
        body = {"application-id": app, "queue": "default", "resource": {"memory": 256, "vCores": 1},
                "am-container-spec": {"commands": {"command": "true"},
                                      "application-acls": {"entry": [{"key": "READ_APP", "value": "carol"}]}}}
        resp = await http.post("/ws/v1/cluster/apps", json=body, headers=as_user(rm, "alice"))
        assert resp.status_code == 400, resp.text
        assert "unknown application ACL 'READ_APP'" in resp.json()["RemoteException"]["message"]
        assert app not in rm.state.apps


async def test_an_unknown_app_is_not_found_before_any_access_check(rm: ResourceManager, app_id: str) -> None:
    """An unknown id is still YARN's ApplicationNotFoundException for everyone, before any access check."""
    missing = records.app_id_pb(f"{app_id[:-4]}9999")
    with pytest.raises(RemoteError) as err:
        await ipc(rm, "bob", "getApplicationReport", yp.GetApplicationReportRequest(application_id=missing),
                  yp.GetApplicationReportResponse)
    assert err.value.java_class == "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"


async def test_the_web_ui_shows_the_details_only_to_viewers(rm: ResourceManager, app_id: str) -> None:
    """The UI's pages read as the user of the browser's credential (header, or the sign-in cookie), else dr.who."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10) as http:
        for user in (*VIEWERS, *OTHERS, None):
            http.cookies.clear()
            if user:
                http.cookies.set(COOKIE, quote(token(rm, user)))
            page = await http.get(f"/ui/apps/{app_id}")
            listing = await http.get("/ui/apps")
            assert page.status_code == listing.status_code == 200
            assert f'data-user="{user or "dr.who"}"' in page.text
            assert "private" in page.text
            assert "alice" in page.text
            if user in VIEWERS:
                assert SECRET_REASON in page.text, user
                assert 'id="restricted"' not in page.text
                assert "Attempts" in page.text
            else:
                assert SECRET_REASON not in page.text, user
                assert f"User {user or 'dr.who'} may not see the details" in page.text
                assert "Attempts" not in page.text
                assert 'id="containers"' not in page.text
                # a way to read as someone who may: sign in, or out and in again as another user
                assert ('id="signout"' if user else 'id="signin"') in page.text
        http.cookies.clear()
        as_header = await http.get(f"/ui/apps/{app_id}", headers=as_user(rm, "carol"))
        assert SECRET_REASON in as_header.text
        http.cookies.set(COOKIE, "forged")
        forged = await http.get(f"/ui/apps/{app_id}")
        assert forged.status_code == 200
        assert SECRET_REASON not in forged.text
        assert 'id="signin-refused"' in forged.text  # says why it reads as dr.who
