"""S17: three users × three queues × every change an ACL governs, through every door, each user with credentials
of its own (a user token on REST and gRPC, an RM delegation token on Hadoop IPC, the client and admin
listeners). Each cell's answer must be the
one the table below gives for the configured ACLs, written out by hand, not computed by the code under test.

The ACLs (yarn.admin.acl = carol,dave; dave is the operator who stages what the cells act on):

    queue   acl_submit_applications  acl_administer_queue  acl_submit_reservations
    root    (no one)                 (no one)
    root.a  alice,bob                bob
    root.b  bob                                            alice
    root.c                           alice
    root.d  *                                              (where users' own apps are staged)
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

import grpc
import httpx
import pytest
import pytest_asyncio
from google.protobuf.message import Message

from common.acl import AccessList, AclConfig, queue_acls
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
from tests.integration.conftest import grpc_node

pytestmark = pytest.mark.asyncio

QUEUES = {q: {"capacity": 25} for q in "abcd"}
ACLS = AclConfig(admins=AccessList.parse("carol,dave"), queues=queue_acls({
    "root": {"acl_submit_applications": " ", "acl_administer_queue": " "},
    "root.a": {"acl_submit_applications": "alice,bob", "acl_administer_queue": "bob"},
    "root.b": {"acl_submit_applications": "bob", "acl_submit_reservations": "alice"},
    "root.c": {"acl_submit_applications": " ", "acl_administer_queue": "alice"},
    "root.d": {"acl_submit_applications": "*"},
}))
USERS = ("alice", "bob", "carol")
OPERATIONS = ("submit", "kill own", "kill other's", "move", "priority", "reservation create",
              "reservation delete", "admin refresh")
Y, N = True, False
# EXPECTED[operation][user] = (queue a, queue b, queue c): allowed?
EXPECTED: dict[str, dict[str, tuple[bool, bool, bool]]] = {
    "submit": {"alice": (Y, N, Y), "bob": (Y, Y, N), "carol": (Y, Y, Y)},
    "kill own": {"alice": (Y, Y, Y), "bob": (Y, Y, Y), "carol": (Y, Y, Y)},
    "kill other's": {"alice": (N, N, Y), "bob": (Y, N, N), "carol": (Y, Y, Y)},
    "move": {"alice": (Y, N, Y), "bob": (Y, Y, N), "carol": (Y, Y, Y)},  # one's own app, from d into the queue
    "priority": {"alice": (N, N, Y), "bob": (Y, N, N), "carol": (Y, Y, Y)},  # another's app in the queue
    "reservation create": {"alice": (Y, Y, Y), "bob": (Y, N, N), "carol": (Y, Y, Y)},
    "reservation delete": {"alice": (N, N, Y), "bob": (Y, N, N), "carol": (Y, Y, Y)},  # another's
    "admin refresh": {"alice": (N, N, N), "bob": (N, N, N), "carol": (Y, Y, Y)},
}
HOUR_MS = 3_600_000
IPC_CLIENT = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
IPC_ADMIN = "org.apache.hadoop.yarn.server.api.ResourceManagerAdministrationProtocolPB"


def definition() -> dict[str, Any]:
    arrival = int(time.time() * 1000) + 60_000
    return {"arrival": arrival, "deadline": arrival + HOUR_MS, "reservation-name": "nightly",
            "reservation-requests": {"reservation-request-interpreter": 0, "reservation-request": [
                {"capability": {"memory": 512, "vCores": 1}, "num-containers": 1, "min-concurrency": 1,
                 "duration": 60_000}]}}


class Door(Protocol):
    name: str

    async def submit(self, user: str, queue: str) -> str | None: ...  # the app id, None: refused

    async def kill(self, user: str, app_id: str) -> bool: ...

    async def move(self, user: str, app_id: str, queue: str) -> bool: ...

    async def priority(self, user: str, app_id: str) -> bool: ...

    async def reserve(self, user: str, queue: str) -> str | None: ...

    async def unreserve(self, user: str, rid: str) -> bool: ...

    async def refresh(self, user: str) -> bool: ...


class Rest:
    name = "rest"

    def __init__(self, http: httpx.AsyncClient, tokens: dict[str, str]) -> None:
        self.http = http
        self.tokens = tokens

    def _as(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[user]}"}

    @staticmethod
    def _ok(resp: httpx.Response) -> bool:
        if resp.status_code < 300:
            return True
        assert resp.status_code == 403, resp.text
        assert resp.json()["RemoteException"]["exception"] == "AccessControlException", resp.text
        return False

    async def submit(self, user: str, queue: str) -> str | None:
        new = await self.http.post("/ws/v1/cluster/apps/new-application", headers=self._as(user))
        assert new.status_code == 200, new.text
        app_id = str(new.json()["application-id"])
        body = {"application-id": app_id, "application-name": "acl", "queue": queue, "unmanaged-AM": True,
                "resource": {"memory": 256, "vCores": 1}, "am-container-spec": {"commands": {"command": "true"}}}
        # a name in the query is ignored: the token says who calls
        resp = await self.http.post("/ws/v1/cluster/apps", json=body, headers=self._as(user),
                                    params={"user.name": "dave"})
        return app_id if self._ok(resp) else None

    async def kill(self, user: str, app_id: str) -> bool:
        return self._ok(await self.http.put(f"/ws/v1/cluster/apps/{app_id}/state", json={"state": "KILLED"},
                                            headers=self._as(user)))

    async def move(self, user: str, app_id: str, queue: str) -> bool:
        return self._ok(await self.http.put(f"/ws/v1/cluster/apps/{app_id}/queue", json={"queue": queue},
                                            headers=self._as(user)))

    async def priority(self, user: str, app_id: str) -> bool:
        return self._ok(await self.http.put(f"/ws/v1/cluster/apps/{app_id}/priority", json={"priority": 3},
                                            headers=self._as(user)))

    async def reserve(self, user: str, queue: str) -> str | None:
        new = await self.http.post("/ws/v1/cluster/reservation/new-reservation", headers=self._as(user))
        assert new.status_code == 200, new.text
        rid = str(new.json()["reservation-id"])
        resp = await self.http.post("/ws/v1/cluster/reservation/submit", headers=self._as(user), json={
            "reservation-id": rid, "queue": queue, "reservation-definition": definition()})
        return rid if self._ok(resp) else None

    async def unreserve(self, user: str, rid: str) -> bool:
        return self._ok(await self.http.post("/ws/v1/cluster/reservation/delete", headers=self._as(user),
                                             json={"reservation-id": rid}))

    async def refresh(self, user: str) -> bool:
        return self._ok(await self.http.post("/ws/v1/shepherd/admin/refresh-queues", headers=self._as(user),
                                             params={"dryRun": "true"}))


class Grpc:
    name = "grpc"

    def __init__(self, stub: pbg.ApplicationClientStub, tokens: dict[str, str]) -> None:
        self.stub = stub
        self.tokens = tokens

    async def _call(self, user: str, method: str, request: Any) -> Any:
        """The answer, or None when refused with AccessControlException."""
        try:
            return await getattr(self.stub, method)(request, timeout=10,
                                                    metadata=[("authorization", f"Bearer {self.tokens[user]}")])
        except grpc.aio.AioRpcError as exc:
            refusal = (exc.code(), (exc.details() or "").split(":", 1)[0])
        assert refusal == (grpc.StatusCode.PERMISSION_DENIED, "org.apache.hadoop.security.AccessControlException")
        return None

    async def submit(self, user: str, queue: str) -> str | None:
        new = await self._call(user, "GetNewApplication", pb.GetNewApplicationRequest())
        ctx = pb.ApplicationSubmissionContext(
            application_id=new.application_id, name="acl", queue=queue, user="dave", unmanaged_am=True,
            am_resource=pb.Resource(values=Resources.of(memory_mb=256, vcores=1).to_dict()))
        done = await self._call(user, "SubmitApplication", pb.SubmitApplicationRequest(context=ctx))
        return None if done is None else str(new.application_id)

    async def kill(self, user: str, app_id: str) -> bool:
        return await self._call(user, "KillApplication", pb.KillApplicationRequest(application_id=app_id)) \
            is not None

    async def move(self, user: str, app_id: str, queue: str) -> bool:
        return await self._call(user, "MoveApplication",
                                pb.MoveApplicationRequest(application_id=app_id, queue=queue)) is not None

    async def priority(self, user: str, app_id: str) -> bool:
        return await self._call(user, "UpdateApplicationPriority", pb.UpdateApplicationPriorityRequest(
            application_id=app_id, priority=3)) is not None

    async def reserve(self, user: str, queue: str) -> str | None:
        new = await self._call(user, "NewReservation", pb.NewReservationRequest())
        done = await self._call(user, "SubmitReservation", pb.SubmitReservationRequest(
            reservation_id=new.reservation_id, queue=queue, definition_json=json.dumps(definition())))
        return None if done is None else str(new.reservation_id)

    async def unreserve(self, user: str, rid: str) -> bool:
        return await self._call(user, "DeleteReservation", pb.DeleteReservationRequest(reservation_id=rid)) \
            is not None

    async def refresh(self, user: str) -> bool:
        return await self._call(user, "RefreshQueues", pb.RefreshQueuesRequest(dry_run=True)) is not None


class Ipc:
    name = "ipc"

    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm

    async def _call(self, user: str, method: str, request: Message, response: type[Any], *,
                    admin: bool = False) -> Any:
        """The answer, or None when refused with AccessControlException."""
        ipc = self.rm.ipc
        assert ipc is not None
        port, protocol = (ipc.admin_port, IPC_ADMIN) if admin else (ipc.client_port, IPC_CLIENT)
        try:
            async with IpcClient("127.0.0.1", port, protocol, user=user, token=ipc.delegation_token(user)) as c:
                return await c.call(method, request, response)
        except RemoteError as exc:
            refusal = exc.java_class
        assert refusal == "org.apache.hadoop.security.AccessControlException"
        return None

    async def submit(self, user: str, queue: str) -> str | None:
        new = await self._call(user, "getNewApplication", yp.GetNewApplicationRequest(),
                               yp.GetNewApplicationResponse)
        ctx = yr.ApplicationSubmissionContext(
            application_id=new.application_id, application_name="acl", queue=queue, unmanaged_am=True,
            resource=records.resource_pb(Resources.of(memory_mb=256, vcores=1)))
        done = await self._call(user, "submitApplication",
                                yp.SubmitApplicationRequest(application_submission_context=ctx),
                                yp.SubmitApplicationResponse)
        return None if done is None else str(records.app_id_str(new.application_id))

    async def kill(self, user: str, app_id: str) -> bool:
        return await self._call(user, "forceKillApplication",
                                yp.KillApplicationRequest(application_id=records.app_id_pb(app_id)),
                                yp.KillApplicationResponse) is not None

    async def move(self, user: str, app_id: str, queue: str) -> bool:
        return await self._call(user, "moveApplicationAcrossQueues", yp.MoveApplicationAcrossQueuesRequest(
            application_id=records.app_id_pb(app_id), target_queue=queue),
            yp.MoveApplicationAcrossQueuesResponse) is not None

    async def priority(self, user: str, app_id: str) -> bool:
        return await self._call(user, "updateApplicationPriority", yp.UpdateApplicationPriorityRequest(
            application_id=records.app_id_pb(app_id), application_priority=yr.Priority(priority=3)),
            yp.UpdateApplicationPriorityResponse) is not None

    async def reserve(self, user: str, queue: str) -> str | None:
        new = await self._call(user, "getNewReservation", yp.GetNewReservationRequest(),
                               yp.GetNewReservationResponse)
        d = definition()
        request = d["reservation-requests"]["reservation-request"][0]
        proto = yr.ReservationDefinition(
            arrival=d["arrival"], deadline=d["deadline"], reservation_name=d["reservation-name"],
            reservation_requests=yr.ReservationRequests(interpreter=yr.R_ANY, reservation_resources=[
                yr.ReservationRequest(capability=records.resource_pb(Resources.of(memory_mb=512, vcores=1)),
                                      num_containers=request["num-containers"], concurrency=1,
                                      duration=request["duration"])]))
        done = await self._call(user, "submitReservation", yp.ReservationSubmissionRequest(
            queue=queue, reservation_id=new.reservation_id, reservation_definition=proto),
            yp.ReservationSubmissionResponse)
        rid = new.reservation_id
        return None if done is None else f"reservation_{rid.cluster_timestamp}_{rid.id:04d}"

    async def unreserve(self, user: str, rid: str) -> bool:
        _, stamp, seq = rid.split("_")
        return await self._call(user, "deleteReservation", yp.ReservationDeleteRequest(
            reservation_id=yr.ReservationId(cluster_timestamp=int(stamp), id=int(seq))),
            yp.ReservationDeleteResponse) is not None

    async def refresh(self, user: str) -> bool:
        return await self._call(user, "refreshQueues", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse,
                                admin=True) is not None


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      queues=QUEUES, acls=ACLS, ipc_client_port=0, ipc_scheduler_port=-1,
                                      ipc_admin_port=0),
                             reload=lambda: RMConfig(queues=QUEUES, acls=ACLS))
    await server.start()
    try:
        await grpc_node(server, Resources.of(memory_mb=64 * 1024, vcores=64), healthy=True)
        yield server
    finally:
        await server.stop()


def user_tokens(rm: ResourceManager) -> dict[str, str]:
    secret = rm.cfg.client_secret or ""
    return {u: authz.issue_user_token(secret, u, now=time.time(), lifetime_s=3600) for u in (*USERS, "dave")}


@pytest_asyncio.fixture
async def doors(rm: ResourceManager) -> AsyncIterator[list[Door]]:
    tokens = user_tokens(rm)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10) as http, \
            grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        yield [Rest(http, tokens), Grpc(pbg.ApplicationClientStub(channel), tokens), Ipc(rm)]


async def cell(door: Door, rm: ResourceManager, op: str, user: str, queue: str) -> bool:
    """Stage what the operation acts on (as dave, the operator), then let ``user`` try it on ``queue``."""
    if op == "submit":
        return await door.submit(user, queue) is not None
    if op == "kill own":
        app = await door.submit(user, "d")
        assert app is not None
        assert await door.move("dave", app, queue)
        return await door.kill(user, app)
    if op in ("kill other's", "priority"):
        app = await door.submit("dave", queue)
        assert app is not None
        return await (door.kill(user, app) if op == "kill other's" else door.priority(user, app))
    if op == "move":
        app = await door.submit(user, "d")
        assert app is not None
        return await door.move(user, app, queue)
    if op == "reservation create":
        return await door.reserve(user, queue) is not None
    if op == "reservation delete":
        rid = await door.reserve("dave", queue)
        assert rid is not None
        return await door.unreserve(user, rid)
    assert op == "admin refresh"
    return await door.refresh(user)


async def test_every_cell_of_the_acl_matrix_matches_the_configured_acls(rm: ResourceManager,
                                                                        doors: list[Door]) -> None:
    wrong: list[str] = []
    cells = 0
    for door in doors:
        for op in OPERATIONS:
            for user in USERS:
                for queue, want in zip("abc", EXPECTED[op][user], strict=True):
                    got = await cell(door, rm, op, user, queue)
                    cells += 1
                    if got != want:
                        wrong.append(f"{door.name}: {user} {op} in {queue}: {'allowed' if got else 'refused'}")
    assert cells == len(doors) * len(OPERATIONS) * len(USERS) * 3
    assert not wrong, wrong


async def test_a_refusal_changes_nothing_and_is_audited(rm: ResourceManager, doors: list[Door],
                                                        caplog: pytest.LogCaptureFixture) -> None:
    rest = doors[0]
    own = await rest.submit("alice", "a")
    other = await rest.submit("bob", "b")
    assert own is not None
    assert other is not None
    before = rm.state.apps[other].state  # type: ignore[index]
    with caplog.at_level("WARNING", logger="shepherd.rm.audit"):
        assert not await rest.kill("alice", other)
    assert rm.state.apps[other].state == before  # type: ignore[index]
    denial = [r.getMessage() for r in caplog.records if "RESULT=FAILURE" in r.getMessage()]
    assert any("USER=alice" in d and "Kill Application" in d and other in d for d in denial), denial
    assert await rest.kill("alice", own)  # her own, in a queue she administers not
