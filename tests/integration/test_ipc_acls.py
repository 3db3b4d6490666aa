"""Authorization over Hadoop IPC: every change the client and admin listeners serve, for the caller the ACLs
allow, for one they do not (``AccessControlException``, nothing changed), and for an unauthenticated (SIMPLE)
caller, against one in-process ResourceManager.

The checks are the gRPC door's: a move needs MODIFY_APP on the app and the right to submit to the target queue,
a priority change MODIFY_APP, a reservation the right to reserve in its queue, an update or delete of one the
right to administer it, a queue refresh a cluster admin; a new reservation id only an authenticated caller.
Callers prove who they are with an RM delegation token (``IpcFacade.delegation_token``), as stock clients do
with a HADOOP_TOKEN_FILE_LOCATION file.

The only NodeManager reports itself unhealthy, so nothing is placed and every app stays as submitted; its
capacity still counts for the reservation plans."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio
from google.protobuf.message import Message

from common.acl import ADMINISTER_QUEUE, SUBMIT_APPLICATIONS, AccessList, AclConfig, queue_acls
from common.hadoop import records
from common.hadoop.client import IpcClient, RemoteError
from common.resources import Resources
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.service.config import RMConfig
from rm.service.ipc.config import settings
from rm.service.server import ResourceManager
from tests.integration.conftest import unhealthy_node

pytestmark = pytest.mark.asyncio

CLIENT = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
ADMIN = "org.apache.hadoop.yarn.server.api.ResourceManagerAdministrationProtocolPB"
ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"
R = TypeVar("R", bound=Message)

QUEUES = {"default": {"capacity": 50}, "batch": {"capacity": 30}, "ops": {"capacity": 20}}
# root lets no one submit; alice and bob may submit to default, alice to batch, only carol to ops; ops' admin
# is dave; yarn.admin.acl is root-the-admin
ACLS = AclConfig(admins=AccessList.parse("admin"), queues=queue_acls({
    "root": {SUBMIT_APPLICATIONS: " "},
    "root.default": {SUBMIT_APPLICATIONS: "alice,bob"},
    "root.batch": {SUBMIT_APPLICATIONS: "alice"},
    "root.ops": {SUBMIT_APPLICATIONS: "carol", ADMINISTER_QUEUE: "dave"},
}))
NODE = Resources.of(memory_mb=8192, vcores=8)
HOUR_MS = 3_600_000


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    cfg = RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0, queues=QUEUES,
                   ipc_client_port=0, ipc_scheduler_port=-1, ipc_admin_port=0, acls=ACLS)
    server = ResourceManager(cfg, reload=lambda: cfg)  # a queue refresh reads the same tree again
    await server.start()
    try:
        assert server.cfg.client_secret
        assert server.ipc is not None
        await unhealthy_node(server, NODE)
        yield server
    finally:
        await server.stop()


async def call(rm: ResourceManager, user: str, method: str, request: Message, response: type[R], *,
               token: bool = True, protocol: str = CLIENT, port: int | None = None) -> R:
    """``method`` as ``user``: with an RM delegation token for that user, or (``token=False``) over SIMPLE
    authentication, which only claims the name; on the protocol's listener unless ``port`` says otherwise."""
    assert rm.ipc is not None
    if port is None:
        port = rm.ipc.admin_port if protocol == ADMIN else rm.ipc.client_port
    creds: ipc.Token | None = rm.ipc.delegation_token(user) if token else None
    async with IpcClient("127.0.0.1", port, protocol, user=user, token=creds) as c:
        return await c.call(method, request, response)


async def refused(rm: ResourceManager, user: str, method: str, request: Message, response: type[Any], *,
                  token: bool = True, protocol: str = CLIENT) -> str:
    """The AccessControlException's message for a call that must be refused."""
    with pytest.raises(RemoteError) as err:
        await call(rm, user, method, request, response, token=token, protocol=protocol)
    assert err.value.java_class == ACCESS_CONTROL, err.value
    return str(err.value)


async def submit_app(rm: ResourceManager, user: str, queue: str = "default") -> str:
    new = await call(rm, user, "getNewApplication", yp.GetNewApplicationRequest(), yp.GetNewApplicationResponse)
    ctx = yr.ApplicationSubmissionContext(
        application_id=new.application_id, application_name="acl", queue=queue, application_type="YARN",
        resource=records.resource_pb(Resources.of(memory_mb=512, vcores=1)),
        am_container_spec=yr.ContainerLaunchContext(command=["sleep 60"]))
    await call(rm, user, "submitApplication", yp.SubmitApplicationRequest(application_submission_context=ctx),
               yp.SubmitApplicationResponse)
    return str(records.app_id_str(new.application_id))


def move(app_id: str, queue: str) -> yp.MoveApplicationAcrossQueuesRequest:
    return yp.MoveApplicationAcrossQueuesRequest(application_id=records.app_id_pb(app_id), target_queue=queue)


def priority(app_id: str, value: int) -> yp.UpdateApplicationPriorityRequest:
    return yp.UpdateApplicationPriorityRequest(application_id=records.app_id_pb(app_id),
                                               application_priority=yr.Priority(priority=value))


def definition(rm: ResourceManager, *, containers: int = 2,
               interpreter: yr.ReservationRequestInterpreter = yr.R_ALL) -> yr.ReservationDefinition:
    arrival = int(rm.now() * 1000) + 60_000
    return yr.ReservationDefinition(
        arrival=arrival, deadline=arrival + HOUR_MS, reservation_name="nightly", recurrence_expression="0",
        priority=yr.Priority(priority=0),
        reservation_requests=yr.ReservationRequests(interpreter=interpreter, reservation_resources=[
            yr.ReservationRequest(capability=records.resource_pb(Resources.of(memory_mb=1024, vcores=1)),
                                  num_containers=containers, concurrency=1, duration=600_000)]))


async def new_reservation(rm: ResourceManager, user: str) -> yr.ReservationId:
    resp = await call(rm, user, "getNewReservation", yp.GetNewReservationRequest(), yp.GetNewReservationResponse)
    assert resp.HasField("reservation_id")
    return resp.reservation_id


def rid_str(rid: yr.ReservationId) -> str:
    return f"reservation_{rid.cluster_timestamp}_{rid.id:04d}"


# ------------------------------------------------------------------------------------------------ apps


async def test_move_needs_modify_app_and_the_right_to_submit_to_the_target(rm: ResourceManager) -> None:
    app_id = await submit_app(rm, "alice")
    msg = await refused(rm, "bob", "moveApplicationAcrossQueues", move(app_id, "batch"),
                        yp.MoveApplicationAcrossQueuesResponse)
    assert "User bob cannot perform operation MODIFY_APP" in msg
    msg = await refused(rm, "alice", "moveApplicationAcrossQueues", move(app_id, "ops"),
                        yp.MoveApplicationAcrossQueuesResponse)
    assert "target queue root.ops" in msg
    await refused(rm, "alice", "moveApplicationAcrossQueues", move(app_id, "batch"),
                  yp.MoveApplicationAcrossQueuesResponse, token=False)
    assert str(rm.state.apps[app_id].queue) == "root.default"  # type: ignore[index]
    await call(rm, "alice", "moveApplicationAcrossQueues", move(app_id, "batch"),
               yp.MoveApplicationAcrossQueuesResponse)
    assert str(rm.state.apps[app_id].queue) == "root.batch"  # type: ignore[index]
    # a queue admin may modify any app in its queue, and an admin may submit anywhere
    other = await submit_app(rm, "bob")
    await call(rm, "admin", "moveApplicationAcrossQueues", move(other, "ops"), yp.MoveApplicationAcrossQueuesResponse)
    await call(rm, "dave", "moveApplicationAcrossQueues", move(other, "ops"), yp.MoveApplicationAcrossQueuesResponse)
    assert str(rm.state.apps[other].queue) == "root.ops"  # type: ignore[index]


async def test_moving_an_unknown_app_or_to_an_unknown_queue_is_yarns_error(rm: ResourceManager) -> None:
    app_id = await submit_app(rm, "alice")
    with pytest.raises(RemoteError) as err:
        await call(rm, "alice", "moveApplicationAcrossQueues", move(f"{app_id[:-4]}9999", "batch"),
                   yp.MoveApplicationAcrossQueuesResponse)
    assert err.value.java_class == "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"
    with pytest.raises(RemoteError) as err:
        await call(rm, "admin", "moveApplicationAcrossQueues", move(app_id, "nowhere"),
                   yp.MoveApplicationAcrossQueuesResponse)
    assert err.value.java_class == "org.apache.hadoop.yarn.exceptions.YarnException"


async def test_priority_needs_modify_app(rm: ResourceManager) -> None:
    app_id = await submit_app(rm, "alice")
    msg = await refused(rm, "bob", "updateApplicationPriority", priority(app_id, 3),
                        yp.UpdateApplicationPriorityResponse)
    assert "MODIFY_APP" in msg
    await refused(rm, "alice", "updateApplicationPriority", priority(app_id, 3), yp.UpdateApplicationPriorityResponse,
                  token=False)
    assert rm.state.apps[app_id].priority == 0  # type: ignore[index]
    resp = await call(rm, "alice", "updateApplicationPriority", priority(app_id, 3),
                      yp.UpdateApplicationPriorityResponse)
    assert resp.application_priority.priority == 3 == rm.state.apps[app_id].priority  # type: ignore[index]
    capped = await call(rm, "admin", "updateApplicationPriority", priority(app_id, 10_000),
                        yp.UpdateApplicationPriorityResponse)
    assert capped.application_priority.priority == rm.cfg.max_priority  # the priority in force, as YARN answers


# ------------------------------------------------------------------------------------------------ reservations


async def test_a_new_reservation_id_needs_only_authentication(rm: ResourceManager) -> None:
    first = await new_reservation(rm, "mallory")  # no ACL names mallory; ids are free, as on gRPC and REST
    second = await new_reservation(rm, "alice")
    assert (second.cluster_timestamp, second.id) == (first.cluster_timestamp, first.id + 1)
    assert first.cluster_timestamp == rm.state.meta.cluster_timestamp
    await refused(rm, "alice", "getNewReservation", yp.GetNewReservationRequest(), yp.GetNewReservationResponse,
                  token=False)


async def test_submit_reservation_needs_the_right_to_reserve_in_the_queue(rm: ResourceManager) -> None:
    rid = await new_reservation(rm, "alice")
    submission = yp.ReservationSubmissionRequest(queue="default", reservation_id=rid,
                                                 reservation_definition=definition(rm))
    msg = await refused(rm, "carol", "submitReservation", submission, yp.ReservationSubmissionResponse)
    assert "submit reservations to queue root.default" in msg
    await refused(rm, "alice", "submitReservation", submission, yp.ReservationSubmissionResponse, token=False)
    assert rid_str(rid) not in rm.state.reservation_plan().reservations
    await call(rm, "alice", "submitReservation", submission, yp.ReservationSubmissionResponse)
    res = rm.state.reservation_plan().get(rid_str(rid))
    assert (res.user, str(res.queue), res.definition.name) == ("alice", "root.default", "nightly")
    assert res.definition.interpreter == "R_ALL"
    assert [(r.num_containers, r.duration_ms, r.capability) for r in res.definition.requests] == \
        [(2, 600_000, Resources.of(memory_mb=1024, vcores=1))]
    assert res.definition.deadline_ms - res.definition.arrival_ms == HOUR_MS


async def test_a_reservation_is_read_with_the_rest_apis_rules(rm: ResourceManager) -> None:
    """Hadoop's ReservationDefinition goes through the REST API's reader: its defaults and refusals."""
    rid = await new_reservation(rm, "alice")
    ordered = definition(rm, interpreter=yr.R_ORDER_NO_GAP)
    ordered.reservation_requests.reservation_resources[0].ClearField("concurrency")  # Hadoop's default: 1
    await call(rm, "alice", "submitReservation",
               yp.ReservationSubmissionRequest(queue="default", reservation_id=rid, reservation_definition=ordered),
               yp.ReservationSubmissionResponse)
    res = rm.state.reservation_plan().get(rid_str(rid))
    assert (res.definition.interpreter, res.definition.requests[0].min_concurrency) == ("R_ORDER_NO_GAP", 1)
    cases: list[tuple[yp.ReservationSubmissionRequest, str]] = [
        (yp.ReservationSubmissionRequest(queue="default", reservation_definition=definition(rm)),
         "Missing reservation id"),
        (yp.ReservationSubmissionRequest(queue="default", reservation_id=await new_reservation(rm, "alice")),
         "Missing reservation definition"),
        (yp.ReservationSubmissionRequest(reservation_id=await new_reservation(rm, "alice"),
                                         reservation_definition=definition(rm)), "The queue is not specified"),
    ]
    no_arrival = definition(rm)
    no_arrival.ClearField("arrival")
    cases.append((yp.ReservationSubmissionRequest(queue="default", reservation_id=await new_reservation(rm, "alice"),
                                                  reservation_definition=no_arrival), "missing arrival"))
    for request, said in cases:
        with pytest.raises(RemoteError) as err:
            await call(rm, "alice", "submitReservation", request, yp.ReservationSubmissionResponse)
        assert err.value.java_class == "org.apache.hadoop.yarn.exceptions.YarnException"
        assert said in str(err.value)


async def test_update_and_delete_need_the_right_to_administer_the_reservation(rm: ResourceManager) -> None:
    rid = await new_reservation(rm, "alice")
    await call(rm, "alice", "submitReservation",
               yp.ReservationSubmissionRequest(queue="default", reservation_id=rid,
                                               reservation_definition=definition(rm)),
               yp.ReservationSubmissionResponse)
    update = yp.ReservationUpdateRequest(reservation_id=rid, reservation_definition=definition(rm, containers=3))
    delete = yp.ReservationDeleteRequest(reservation_id=rid)
    msg = await refused(rm, "bob", "updateReservation", update, yp.ReservationUpdateResponse)
    assert f"cannot change reservation {rid_str(rid)}" in msg
    await refused(rm, "bob", "deleteReservation", delete, yp.ReservationDeleteResponse)
    await refused(rm, "alice", "deleteReservation", delete, yp.ReservationDeleteResponse, token=False)
    assert rm.state.reservation_plan().get(rid_str(rid)).definition.requests[0].num_containers == 2
    await call(rm, "alice", "updateReservation", update, yp.ReservationUpdateResponse)
    assert rm.state.reservation_plan().get(rid_str(rid)).definition.requests[0].num_containers == 3
    await call(rm, "alice", "deleteReservation", delete, yp.ReservationDeleteResponse)
    assert rid_str(rid) not in rm.state.reservation_plan().reservations
    with pytest.raises(RemoteError) as err:  # gone: the same answer the operation gives on every door
        await call(rm, "admin", "deleteReservation", delete, yp.ReservationDeleteResponse)
    assert err.value.java_class != ACCESS_CONTROL


async def test_list_reservations_answers_with_hadoops_records(rm: ResourceManager) -> None:
    first, second = await new_reservation(rm, "alice"), await new_reservation(rm, "bob")
    for user, rid, containers in (("alice", first, 2), ("bob", second, 3)):
        await call(rm, user, "submitReservation",
                   yp.ReservationSubmissionRequest(queue="default", reservation_id=rid,
                                                   reservation_definition=definition(rm, containers=containers)),
                   yp.ReservationSubmissionResponse)
    listed = await call(rm, "carol", "listReservations", yp.ReservationListRequest(queue="default"),
                        yp.ReservationListResponse)  # a read: any authenticated user
    assert [(rid_str(r.reservation_id), r.user) for r in listed.reservations] == \
        [(rid_str(first), "alice"), (rid_str(second), "bob")]
    mine = listed.reservations[0]
    held = rm.state.reservation_plan().get(rid_str(first))
    assert mine.acceptance_time == held.acceptance_ms
    d = mine.reservation_definition
    assert (d.reservation_name, d.reservation_requests.interpreter, d.recurrence_expression) == \
        ("nightly", yr.R_ALL, "0")
    assert [(r.num_containers, r.duration, r.concurrency, r.capability.memory) for r in
            d.reservation_requests.reservation_resources] == [(2, 600_000, 1, 1024)]
    assert d.deadline - d.arrival == HOUR_MS
    assert d.arrival <= mine.start_time < mine.end_time <= d.deadline  # where the plan holds it
    assert not mine.contains_gangs
    assert not mine.allocation_requests  # only when asked for

    one = await call(rm, "alice", "listReservations", yp.ReservationListRequest(
        queue="default", reservation_id=rid_str(second), include_resource_allocations=True),
        yp.ReservationListResponse)
    [only] = one.reservations
    assert rid_str(only.reservation_id) == rid_str(second)
    segments = [(a.start_time, a.end_time, a.resource.memory, a.resource.virtual_cores)
                for a in only.allocation_requests]
    [plan] = rm.state.reservation_plan().list_reservations("default", rid_str(second), include_allocations=True)
    assert plan.allocations  # the runs REST's resource-allocations print, here as ResourceAllocationRequests
    assert segments == [(s.start_ms, s.end_ms, s.resource.memory_mb, s.resource.vcores) for s in plan.allocations]
    assert max(memory for _, _, memory, _ in segments) >= 1024

    after = await call(rm, "alice", "listReservations", yp.ReservationListRequest(
        queue="default", start_time=only.end_time + HOUR_MS * 24, end_time=-1), yp.ReservationListResponse)
    assert not after.reservations  # nothing held that late; -1 is Long.MAX_VALUE, as in Hadoop
    elsewhere = await call(rm, "alice", "listReservations", yp.ReservationListRequest(queue="batch"),
                           yp.ReservationListResponse)
    assert not elsewhere.reservations


async def test_list_reservations_refuses_a_bad_request_with_yarns_error(rm: ResourceManager) -> None:
    cases = [(yp.ReservationListRequest(), "The queue is not specified"),
             (yp.ReservationListRequest(queue="default", start_time=HOUR_MS, end_time=1),
              "end time must be greater than the specified start time"),
             (yp.ReservationListRequest(queue="default", reservation_id="reservation_garbage"), "")]
    for request, said in cases:
        with pytest.raises(RemoteError) as err:
            await call(rm, "alice", "listReservations", request, yp.ReservationListResponse)
        assert err.value.java_class == "org.apache.hadoop.yarn.exceptions.YarnException", err.value
        assert said in str(err.value)


# ------------------------------------------------------------------------------------------------ rmadmin


async def test_refresh_admin_acls_reads_the_admin_acl_again(tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """The admin ACL in force decides who may refresh it; after the call the files' one is in force, and
    nothing else changed (the queues and their ACLs stay)."""
    files = {"admins": "admin"}

    def reload() -> RMConfig:  # what the configuration files say now
        return RMConfig(queues=QUEUES, acls=AclConfig(admins=AccessList.parse(files["admins"])))

    cfg = RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0, queues=QUEUES,
                   ipc_client_port=0, ipc_scheduler_port=-1, ipc_admin_port=0, acls=ACLS)
    server = ResourceManager(cfg, reload=reload)
    await server.start()
    caplog.set_level(logging.INFO, logger="shepherd.rm.audit")
    try:
        files["admins"] = "alice"
        request = yp.RefreshAdminAclsRequest()
        msg = await refused(server, "alice", "refreshAdminAcls", request, yp.RefreshAdminAclsResponse,
                            protocol=ADMIN)  # not yet an admin: the ACL in force is still the old one
        assert "User alice doesn't have permission to call 'refreshAdminAcls'" in msg
        await refused(server, "admin", "refreshAdminAcls", request, yp.RefreshAdminAclsResponse, token=False,
                      protocol=ADMIN)
        assert server.cfg.acl_config.is_admin("admin")
        await call(server, "admin", "refreshAdminAcls", request, yp.RefreshAdminAclsResponse, protocol=ADMIN)
        assert server.cfg.acl_config.is_admin("alice")
        assert not server.cfg.acl_config.is_admin("admin")
        assert server.cfg.acl_config.queues == ACLS.queues  # the queues' ACLs stay
        await call(server, "alice", "refreshQueues", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse,
                   protocol=ADMIN)
        await refused(server, "admin", "refreshQueues", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse,
                      protocol=ADMIN)
        lines = [r.getMessage() for r in caplog.records if r.name == "shepherd.rm.audit"]
        assert any(line.startswith("USER=admin\t") and "OPERATION=Refresh Admin ACLs\tTARGET=AdminService\t"
                   "RESULT=SUCCESS" in line for line in lines), lines
        assert sum("OPERATION=Refresh Admin ACLs\tTARGET=AdminService\tRESULT=FAILURE" in line
                   for line in lines) == 2
    finally:
        await server.stop()


async def test_refresh_queues_needs_a_cluster_admin(rm: ResourceManager, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="shepherd.rm.audit")
    msg = await refused(rm, "alice", "refreshQueues", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse,
                        protocol=ADMIN)
    assert "User alice doesn't have permission to call 'refreshQueues'" in msg
    # SIMPLE proves nothing, so claiming to be the admin changes nothing either
    msg = await refused(rm, "admin", "refreshQueues", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse,
                        token=False, protocol=ADMIN)
    assert "needs an RM delegation token" in msg
    assert "yarn rmadmin" in msg
    version = rm.state.version
    await call(rm, "admin", "refreshQueues", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse, protocol=ADMIN)
    assert rm.state.version > version  # the tree was read again and put in force
    lines = [r.getMessage() for r in caplog.records if r.name == "shepherd.rm.audit"]
    assert sum("OPERATION=Refresh Queues\tTARGET=AdminService\tRESULT=FAILURE" in line for line in lines) == 2
    assert any(line.startswith("USER=admin\t") and "OPERATION=Refresh Queues\tTARGET=AdminService\tRESULT=SUCCESS"
               in line for line in lines)


async def test_refresh_nodes_needs_a_cluster_admin_and_has_nothing_to_read(rm: ResourceManager) -> None:
    nodes = dict(rm.state.nodes)
    await refused(rm, "alice", "refreshNodes", yp.RefreshNodesRequest(), yp.RefreshNodesResponse, protocol=ADMIN)
    await refused(rm, "admin", "refreshNodes", yp.RefreshNodesRequest(), yp.RefreshNodesResponse, token=False,
                  protocol=ADMIN)
    await call(rm, "admin", "refreshNodes", yp.RefreshNodesRequest(decommission_type=yp.GRACEFUL),
               yp.RefreshNodesResponse, protocol=ADMIN)
    assert {n: v.state for n, v in rm.state.nodes.items()} == {n: v.state for n, v in nodes.items()}


async def test_the_admin_listener_serves_only_the_admin_protocol(rm: ResourceManager) -> None:
    assert rm.ipc is not None
    assert rm.ipc.admin_port not in (-1, rm.ipc.client_port)
    with pytest.raises(RemoteError) as err:
        await call(rm, "admin", "refreshQueues", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse,
                   protocol=ADMIN, port=rm.ipc.client_port)
    assert err.value.java_class.endswith("RpcNoSuchProtocolException")
    with pytest.raises(RemoteError) as err:
        await call(rm, "admin", "refreshServiceAcls", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse,
                   protocol=ADMIN)
    assert err.value.java_class.endswith("RpcNoSuchMethodException")


async def test_simple_writes_allowed_believe_the_name_and_still_check_it(tmp_path: Path) -> None:
    """With yarn.resourcemanager.ipc.allow-simple-writes (what the stock `yarn rmadmin`, which never sends a
    token, needs) the claimed user is believed, and the ACLs are checked for it."""
    site = tmp_path / "yarn-site.xml"
    site.write_text("<configuration><property><name>yarn.resourcemanager.ipc.allow-simple-writes</name>"
                    "<value>true</value></property></configuration>")
    cfg = RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0, queues=QUEUES,
                   ipc_client_port=-1, ipc_scheduler_port=-1, ipc_admin_port=0, acls=ACLS, yarn_site=site)
    server = ResourceManager(cfg, reload=lambda: cfg)
    await server.start()
    try:
        assert server.ipc is not None
        assert server.ipc.client_port == -1
        await refused(server, "alice", "refreshQueues", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse,
                      token=False, protocol=ADMIN)
        await call(server, "admin", "refreshQueues", yp.RefreshQueuesRequest(), yp.RefreshQueuesResponse,
                   token=False, protocol=ADMIN)
    finally:
        await server.stop()


# ------------------------------------------------------------------------------------------------ where


async def test_the_admin_listener_port() -> None:
    """Flag, else yarn-site.xml, else YARN's 8033; an RM given its client port but not its admin port follows
    it for 0 (any free port) and otherwise opens none (RMs sharing a host do not contend for 8033)."""
    def admin(**ports: int | None) -> int:
        return settings(RMConfig(**ports), env={}).admin_port  # type: ignore[arg-type]

    assert admin() == 8033
    assert admin(ipc_admin_port=18033) == 18033
    assert admin(ipc_client_port=0) == 0
    assert admin(ipc_client_port=-1) == -1
    assert admin(ipc_client_port=18032) == -1
    assert admin(ipc_client_port=18032, ipc_admin_port=0) == 0
