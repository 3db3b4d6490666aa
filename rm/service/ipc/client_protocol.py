"""ApplicationClientProtocol over Hadoop IPC: the calls stock YARN clients (YarnClient, the yarn CLI,
spark-submit) make, mapped onto the same Ledger the gRPC and REST front doors use.

Each call is translated into an operation of ``rm.service.operations`` (shared with gRPC and REST, which
persists before it returns) and its answer into Hadoop's records.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from google.protobuf.message import Message

from common.acl import MODIFY_APP, VIEW_APP
from common.errors import BadRequest
from common.hadoop import records, tokens
from common.hadoop.server import CallContext, Method, Protocol, RpcError
from common.ids import app_of_attempt, parse_container_id
from common.resources import Resources
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.core.entities import App
from rm.core.reservation import yarn as reservations
from rm.core.reservation.listing import LONG_MAX, ReservationInfo
from rm.core.reservation.requests import ReservationDefinition, parse_reservation_id, reservation_id
from rm.core.state_types import SubmitSpec
from rm.service import audit, limits
from rm.service.authz import ANONYMOUS, AccessDenied, Caller
from rm.service.ipc import reports
from rm.service.ipc.errors import as_rpc_errors
from rm.service.reservations import require_reservation_stage

if TYPE_CHECKING:
    from rm.service.ipc.facade import IpcFacade

log = logging.getLogger("shepherd.ipc.client")
T = TypeVar("T")

NAME = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
HADOOP_CLC = "hadoop_clc"  # am_launch key: the submitted ContainerLaunchContext, base64
TOKEN_HINT = ("point HADOOP_TOKEN_FILE_LOCATION at the token file the RM wrote (`shepherd up` prints it, "
              "`shepherd config hadoop-client` makes one)")


def launch_from_clc(clc: yr.ContainerLaunchContext) -> dict[str, object]:
    """The AM launch record shepherd keeps for an app: readable fields plus the whole context."""
    return {
        "commands": list(clc.command),
        "environment": {e.key: e.value for e in clc.environment},
        "local_resources": {
            r.key: {"url": records.url_str(r.value.resource),
                    "type": yr.LocalResourceType.Name(r.value.type) if r.value.HasField("type") else "FILE"}
            for r in clc.local_resources
        },
        HADOOP_CLC: base64.b64encode(clc.SerializeToString()).decode("ascii"),
        **({"acls": acls} if (acls := _app_acls(clc)) else {}),
    }


def _app_acls(clc: yr.ContainerLaunchContext) -> dict[str, str]:
    """The app's own ACLs (VIEW_APP, MODIFY_APP), as common.acl reads them."""
    names = {yr.APPACCESS_VIEW_APP: VIEW_APP, yr.APPACCESS_MODIFY_APP: MODIFY_APP}
    return {names[a.access_type]: a.acl for a in clc.application_acls if a.access_type in names}


def am_resource(ctx: yr.ApplicationSubmissionContext) -> Resources | None:
    if ctx.HasField("resource"):
        return records.resources_from_pb(ctx.resource)
    for req in ctx.am_container_resource_request:
        if req.resource_name in ("*", "") and req.HasField("capability"):
            return records.resources_from_pb(req.capability)
    return None


AccessControl = AccessDenied


def _app_id(msg: yr.ApplicationId) -> str:
    """The id for the audit line ("" if it is not a valid one)."""
    try:
        return records.app_id_str(msg)
    except ValueError:
        return ""


def _reservation_id_pb(rid: str) -> yr.ReservationId:
    ts, seq = parse_reservation_id(rid)
    return yr.ReservationId(id=seq, cluster_timestamp=ts)


def _reservation_id_str(req: Message, field: str) -> str | None:
    """The request's reservation id as shepherd spells it (``reservation_<ts>_<seq>``); None if it gives none."""
    if not req.HasField(field):
        return None
    msg: yr.ReservationId = getattr(req, field)
    return str(reservation_id(msg.cluster_timestamp, msg.id))


def _definition_json(req: Message, field: str) -> dict[str, object] | None:
    """Hadoop's ReservationDefinition in the REST API's JSON shape, so both doors read a definition with the same
    rules (``rm.core.reservation.yarn.definition_from_json``); a field the request leaves out stays out, and is
    refused or defaulted there as on REST."""
    if not req.HasField(field):
        return None
    d: yr.ReservationDefinition = getattr(req, field)
    requests = d.reservation_requests
    out: dict[str, object] = {
        "reservation-requests": {
            "reservation-request-interpreter": requests.interpreter,
            "reservation-request": [
                {"capability": reservations.resource_json(records.resources_from_pb(r.capability))
                 if r.HasField("capability") else {},
                 "num-containers": r.num_containers, "min-concurrency": r.concurrency, "duration": r.duration}
                for r in requests.reservation_resources],
        },
        "reservation-name": d.reservation_name,
        "recurrence-expression": d.recurrence_expression,
        "priority": d.priority.priority,
    }
    if d.HasField("arrival"):
        out["arrival"] = d.arrival
    if d.HasField("deadline"):
        out["deadline"] = d.deadline
    return out


def _definition_pb(d: ReservationDefinition) -> yr.ReservationDefinition:
    """A reservation's definition as Hadoop's record (the inverse of ``_definition_json``'s reading)."""
    return yr.ReservationDefinition(
        arrival=d.arrival_ms, deadline=d.deadline_ms, reservation_name=d.name,
        recurrence_expression=str(d.recurrence_ms), priority=yr.Priority(priority=d.priority),
        reservation_requests=yr.ReservationRequests(
            interpreter=d.interpreter,
            reservation_resources=[
                yr.ReservationRequest(capability=records.resource_pb(r.capability), num_containers=r.num_containers,
                                      concurrency=r.min_concurrency, duration=r.duration_ms)
                for r in d.requests]))


def _allocation_state(info: ReservationInfo) -> yr.ReservationAllocationState:
    """One reservation of a list, as Hadoop's ReservationAllocationState."""
    return yr.ReservationAllocationState(
        reservation_id=_reservation_id_pb(info.reservation_id), reservation_definition=_definition_pb(info.definition),
        user=info.user, acceptance_time=info.acceptance_ms, start_time=info.start_ms, end_time=info.end_ms,
        contains_gangs=any(r.min_concurrency > 1 for r in info.definition.requests),
        allocation_requests=[
            yr.ResourceAllocationRequest(start_time=s.start_ms, end_time=s.end_ms,
                                         resource=records.resource_pb(s.resource))
            for s in info.allocations or ()])


class ApplicationClient:
    def __init__(self, facade: IpcFacade) -> None:
        self.facade = facade
        self.rm = facade.rm
        self.ops = facade.ops

    def protocol(self) -> Protocol:
        return Protocol(NAME, {
            "getNewApplication": Method(yp.GetNewApplicationRequest, self.get_new_application),
            "submitApplication": Method(yp.SubmitApplicationRequest, self.submit_application),
            "getApplicationReport": Method(yp.GetApplicationReportRequest, self.get_application_report),
            "getApplications": Method(yp.GetApplicationsRequest, self.get_applications),
            "getApplicationAttemptReport": Method(yp.GetApplicationAttemptReportRequest, self.get_attempt_report),
            "getApplicationAttempts": Method(yp.GetApplicationAttemptsRequest, self.get_attempts),
            "getContainerReport": Method(yp.GetContainerReportRequest, self.get_container_report),
            "getContainers": Method(yp.GetContainersRequest, self.get_containers),
            "forceKillApplication": Method(yp.KillApplicationRequest, self.force_kill_application),
            "getClusterMetrics": Method(yp.GetClusterMetricsRequest, self.get_cluster_metrics),
            "getClusterNodes": Method(yp.GetClusterNodesRequest, self.get_cluster_nodes),
            "getQueueInfo": Method(yp.GetQueueInfoRequest, self.get_queue_info),
            "moveApplicationAcrossQueues": Method(yp.MoveApplicationAcrossQueuesRequest, self.move_application),
            "updateApplicationPriority": Method(yp.UpdateApplicationPriorityRequest, self.update_priority),
            "getNewReservation": Method(yp.GetNewReservationRequest, self.get_new_reservation),
            "submitReservation": Method(yp.ReservationSubmissionRequest, self.submit_reservation),
            "updateReservation": Method(yp.ReservationUpdateRequest, self.update_reservation),
            "deleteReservation": Method(yp.ReservationDeleteRequest, self.delete_reservation),
            "listReservations": Method(yp.ReservationListRequest, self.list_reservations),
        })

    def passwords_for(self, identifier: bytes) -> list[bytes]:
        """DIGEST-MD5 on the client listener: an unexpired RM delegation token signed with this RM's key."""
        secret = self.rm.cfg.client_secret
        if not secret:
            return []
        pw = tokens.rm_delegation_password(tokens.rm_delegation_key(secret), identifier,
                                           now_ms=int(self.rm.now() * 1000))
        return [pw] if pw is not None else []

    @staticmethod
    def principal(ctx: CallContext) -> str | None:
        """The user the connection proved it acts for (an RM delegation token's owner); None: unproven."""
        if ctx.token is None:
            return None
        try:
            return tokens.read_rm_delegation(ctx.token).owner
        except tokens.TokenError:
            return None

    def _writer(self, ctx: CallContext, hint: str) -> Caller:
        """Whom a change is made for: the token's owner. SIMPLE authentication proves nothing, so it may
        change nothing unless the RM is insecure or the operator allowed it."""
        owner = self.principal(ctx)
        if owner is not None:
            return Caller(owner)
        if not self.rm.cfg.client_secret or self.facade.settings.allow_simple_writes:
            return Caller(ctx.user or ANONYMOUS, authenticated=False)
        raise AccessControl(f"{ctx.method} over Hadoop IPC needs an RM delegation token (SIMPLE authentication "
                            f"proves nothing): {hint}")

    async def audited(self, ctx: CallContext, operation: str, app_id: str,
                      change: Callable[[Caller], Awaitable[T]], *, target: str = audit.CLIENT_SERVICE,
                      hint: str = TOKEN_HINT) -> T:
        """``change(caller)`` after the write check, with its audit line (also for the admin listener, whose
        callers authenticate the same way). ``hint``: how to get a token, for a SIMPLE caller refused."""
        ip = audit.peer_ip(ctx.peer)
        user = self.principal(ctx) or ctx.user
        try:
            with as_rpc_errors():
                out = await change(self._writer(ctx, hint))
        except RpcError as err:
            audit.record(user=user, ip=ip, operation=operation, target=target, ok=False,
                         app_id=app_id, description=f"{err.java_class.rsplit('.', 1)[-1]}: {err}")
            raise
        audit.record(user=user, ip=ip, operation=operation, target=target, ok=True, app_id=app_id)
        return out

    def _trusted(self, ctx: CallContext) -> str:
        """The caller's name where it is believed: a token's owner, or the SIMPLE name where the RM is insecure
        or the operator allowed SIMPLE writes; "" otherwise (a SIMPLE user name proves nothing)."""
        trusted = self.principal(ctx)
        if trusted is None and (not self.rm.cfg.client_secret or self.facade.settings.allow_simple_writes):
            trusted = ctx.user
        return trusted or ""

    def _viewer(self, ctx: CallContext) -> Caller:
        """Whom a read is answered for; an unproven caller reads as ``dr.who``."""
        return Caller(self._trusted(ctx) or ANONYMOUS)

    def _may_view(self, ctx: CallContext) -> Callable[[App], bool]:
        """Whether the caller sees an app in full (VIEW_APP)."""
        who = self._viewer(ctx)
        return lambda app: self.facade.authz.may_view(who, app)

    def _viewed(self, ctx: CallContext, app_id: str) -> App:
        """The app, for a caller that may view it (VIEW_APP, as its full report needs): its attempts and containers
        are refused to the others (``AccessControlException``), as on REST and gRPC. An unknown app is
        ``ApplicationNotFoundException`` for everyone, before any access check."""
        app = self.ops.app(app_id)
        self.facade.authz.view(self._viewer(ctx), app)
        return app

    def _report(self, app: App, ctx: CallContext) -> yr.ApplicationReport:
        # the AMRMToken of an unmanaged AM goes to its submitter, never to a caller whose name is unproven
        return reports.app_report(self.rm.state, app, scheduler_address=self.facade.amrm_service,
                                  web_url=self.facade.web_url, caller=self._trusted(ctx),
                                  full=self._may_view(ctx)(app))

    async def get_new_application(self, ctx: CallContext, req: yp.GetNewApplicationRequest
                                  ) -> yp.GetNewApplicationResponse:
        async def change(who: Caller) -> yp.GetNewApplicationResponse:
            new = await self.ops.new_application()
            return yp.GetNewApplicationResponse(application_id=records.app_id_pb(new.app_id),
                                                maximum_capability=records.resource_pb(
                                                    reports.max_allocation(self.rm.state)))
        return await self.audited(ctx, audit.NEW_APP, "", change)

    async def submit_application(self, ctx: CallContext, req: yp.SubmitApplicationRequest
                                 ) -> yp.SubmitApplicationResponse:
        sub = req.application_submission_context

        async def change(who: Caller) -> yp.SubmitApplicationResponse:
            if not sub.HasField("application_id"):
                raise BadRequest("the submission context has no application id")
            app_id = records.app_id_str(sub.application_id)
            res = am_resource(sub)
            extra = {"am_resource": res} if res is not None else {}
            rid = ""
            if sub.HasField("reservation_id"):
                rid = reservation_id(sub.reservation_id.cluster_timestamp, sub.reservation_id.id)
            spec = SubmitSpec(
                app_id=app_id, name=sub.application_name, queue=sub.queue, user=who.user,
                app_type=sub.application_type, priority=sub.priority.priority,
                am_launch=launch_from_clc(sub.am_container_spec) if not sub.unmanaged_am else {},
                max_attempts=sub.max_app_attempts, tags=limits.first_tags(sub.application_tags), unmanaged=sub.unmanaged_am,
                reservation_id=rid, keep_containers=sub.keep_containers_across_application_attempts,
                **extra,  # type: ignore[arg-type]
            )
            self.facade.authz.submit(who, spec.queue, app_id)
            await self.ops.submit(limits.bounded_submission(spec))  # a known id is answered as accepted
            return yp.SubmitApplicationResponse()
        return await self.audited(ctx, audit.SUBMIT_APP, _app_id(sub.application_id), change)

    def _reader(self, ctx: CallContext) -> None:
        """With ``authenticate_reads``, a read needs what a write needs: an RM delegation token (or SIMPLE writes
        allowed)."""
        if self.rm.cfg.authenticate_reads:
            with as_rpc_errors():
                self._writer(ctx, TOKEN_HINT)

    async def get_application_report(self, ctx: CallContext, req: yp.GetApplicationReportRequest
                                     ) -> yp.GetApplicationReportResponse:
        self._reader(ctx)
        with as_rpc_errors():
            app = self.ops.app(records.app_id_str(req.application_id))
            return yp.GetApplicationReportResponse(application_report=self._report(app, ctx))

    async def get_applications(self, ctx: CallContext, req: yp.GetApplicationsRequest
                               ) -> yp.GetApplicationsResponse:
        self._reader(ctx)
        states = {reports.APP_STATE_NAMES[s] for s in req.application_states if s in reports.APP_STATE_NAMES}
        types = {t.lower() for t in req.application_types}
        users, queues, tags = set(req.users), set(req.queues), {t.lower() for t in req.application_tags}
        out = []
        for app in sorted(self.rm.state.apps.values(), key=lambda a: (a.submit_time, a.app_id)):
            if (states and self.rm.state.reported_state(app)[0] not in states) or (types and app.app_type.lower() not in types):
                continue
            if users and app.user not in users:
                continue
            if queues and app.queue not in queues and reports.queue_leaf(app.queue) not in queues:
                continue
            if tags and not tags & {t.lower() for t in app.tags}:
                continue
            if req.name and app.name != req.name:
                continue
            start, finish = int(app.start_time * 1000), int(app.finish_time * 1000)
            if (req.start_begin and start < req.start_begin) or (req.start_end and start > req.start_end):
                continue
            if (req.finish_begin and finish < req.finish_begin) or (req.finish_end and finish > req.finish_end):
                continue
            out.append(self._report(app, ctx))
        if req.limit > 0:
            out = out[-req.limit:]
        return yp.GetApplicationsResponse(applications=out)

    async def get_attempt_report(self, ctx: CallContext, req: yp.GetApplicationAttemptReportRequest
                                 ) -> yp.GetApplicationAttemptReportResponse:
        self._reader(ctx)
        with as_rpc_errors():
            attempt_id = records.attempt_id_str(req.application_attempt_id)
            self._viewed(ctx, app_of_attempt(attempt_id))
            return yp.GetApplicationAttemptReportResponse(application_attempt_report=reports.attempt_report(
                self.ops.attempt(attempt_id), web_url=self.facade.web_url))

    async def get_attempts(self, ctx: CallContext, req: yp.GetApplicationAttemptsRequest
                           ) -> yp.GetApplicationAttemptsResponse:
        self._reader(ctx)
        with as_rpc_errors():
            app = self._viewed(ctx, records.app_id_str(req.application_id))
            return yp.GetApplicationAttemptsResponse(application_attempts=[
                reports.attempt_report(att, web_url=self.facade.web_url) for att in app.attempts])

    async def get_container_report(self, ctx: CallContext, req: yp.GetContainerReportRequest
                                   ) -> yp.GetContainerReportResponse:
        self._reader(ctx)
        with as_rpc_errors():
            container_id = records.container_id_str(req.container_id)
            self._viewed(ctx, parse_container_id(container_id).app_id)
            return yp.GetContainerReportResponse(
                container_report=reports.container_report(self.rm.state, self.ops.container(container_id)))

    async def get_containers(self, ctx: CallContext, req: yp.GetContainersRequest) -> yp.GetContainersResponse:
        """The containers of an attempt the RM still holds, running and completed (YARN's RM answers only the
        running ones and leaves the others to its timeline server, which shepherd does not have)."""
        self._reader(ctx)
        with as_rpc_errors():
            attempt_id = records.attempt_id_str(req.application_attempt_id)
            self._viewed(ctx, app_of_attempt(attempt_id))
            return yp.GetContainersResponse(containers=[
                reports.container_report(self.rm.state, c) for c in self.ops.attempt_containers(attempt_id)])

    async def force_kill_application(self, ctx: CallContext, req: yp.KillApplicationRequest
                                     ) -> yp.KillApplicationResponse:
        async def change(who: Caller) -> yp.KillApplicationResponse:
            self.facade.authz.modify(who, self.ops.app(records.app_id_str(req.application_id)))
            await self.ops.kill(records.app_id_str(req.application_id),
                                limits.cut(req.diagnostics, limits.MAX_DIAGNOSTICS), who.user)
            return yp.KillApplicationResponse(is_kill_completed=True)
        return await self.audited(ctx, audit.KILL_APP, _app_id(req.application_id), change)

    async def move_application(self, ctx: CallContext, req: yp.MoveApplicationAcrossQueuesRequest
                               ) -> yp.MoveApplicationAcrossQueuesResponse:
        """Move an unfinished app to another leaf queue: the caller may modify the app and submit to the target."""
        async def change(who: Caller) -> yp.MoveApplicationAcrossQueuesResponse:
            app_id = records.app_id_str(req.application_id)
            self.facade.authz.move(who, self.ops.app(app_id), req.target_queue)
            await self.ops.move(app_id, req.target_queue)
            return yp.MoveApplicationAcrossQueuesResponse()
        return await self.audited(ctx, audit.MOVE_APP, _app_id(req.application_id), change)

    async def update_priority(self, ctx: CallContext, req: yp.UpdateApplicationPriorityRequest
                              ) -> yp.UpdateApplicationPriorityResponse:
        """Change an unfinished app's priority; the answer is the priority in force (capped at the maximum)."""
        async def change(who: Caller) -> yp.UpdateApplicationPriorityResponse:
            app_id = records.app_id_str(req.application_id)
            self.facade.authz.modify(who, self.ops.app(app_id))
            if not req.HasField("application_priority"):
                raise BadRequest("the request gives no priority")
            app = await self.ops.set_priority(app_id, req.application_priority.priority)
            return yp.UpdateApplicationPriorityResponse(application_priority=yr.Priority(priority=app.priority))
        return await self.audited(ctx, audit.UPDATE_PRIORITY, _app_id(req.application_id), change)

    async def get_new_reservation(self, ctx: CallContext, req: yp.GetNewReservationRequest
                                  ) -> yp.GetNewReservationResponse:
        async def change(who: Caller) -> yp.GetNewReservationResponse:
            return yp.GetNewReservationResponse(reservation_id=_reservation_id_pb(await self.ops.new_reservation()))
        return await self.audited(ctx, audit.NEW_RESERVATION, "", change)

    async def submit_reservation(self, ctx: CallContext, req: yp.ReservationSubmissionRequest
                                 ) -> yp.ReservationSubmissionResponse:
        """Admit a reservation, or refuse it (the plan has no room): the caller may reserve in the queue."""
        async def change(who: Caller) -> yp.ReservationSubmissionResponse:
            require_reservation_stage(self.rm)
            body = reservations.parse_submit({
                "queue": req.queue, "reservation-id": _reservation_id_str(req, "reservation_id"),
                "reservation-definition": _definition_json(req, "reservation_definition")})
            self.facade.authz.reserve(who, body.queue)
            await self.ops.submit_reservation(body.reservation_id, body.queue, body.definition, who.user)
            return yp.ReservationSubmissionResponse()
        return await self.audited(ctx, audit.SUBMIT_RESERVATION, "", change)

    async def update_reservation(self, ctx: CallContext, req: yp.ReservationUpdateRequest
                                 ) -> yp.ReservationUpdateResponse:
        """Replace a reservation's definition (the old one stays if the new one does not fit): the caller
        may administer the reservation."""
        async def change(who: Caller) -> yp.ReservationUpdateResponse:
            rid, definition = reservations.parse_update({
                "reservation-id": _reservation_id_str(req, "reservation_id"),
                "reservation-definition": _definition_json(req, "reservation_definition")})
            self.facade.authz.change_reservation(who, rid)
            await self.ops.update_reservation(rid, definition)
            return yp.ReservationUpdateResponse()
        return await self.audited(ctx, audit.UPDATE_RESERVATION, "", change)

    async def delete_reservation(self, ctx: CallContext, req: yp.ReservationDeleteRequest
                                 ) -> yp.ReservationDeleteResponse:
        """Delete a reservation: the caller may administer it."""
        async def change(who: Caller) -> yp.ReservationDeleteResponse:
            rid = reservations.parse_delete({"reservation-id": _reservation_id_str(req, "reservation_id")})
            self.facade.authz.change_reservation(who, rid)
            await self.ops.delete_reservation(rid)
            return yp.ReservationDeleteResponse()
        return await self.audited(ctx, audit.DELETE_RESERVATION, "", change)

    async def list_reservations(self, ctx: CallContext, req: yp.ReservationListRequest
                                ) -> yp.ReservationListResponse:
        """A queue's reservations whose allocation overlaps [start_time, end_time] (a negative or unset start
        is 0, end Long.MAX_VALUE), or the one reservation_id names; a read, as on REST."""
        self._reader(ctx)
        with as_rpc_errors():
            if not req.queue.strip():
                raise BadRequest("The queue is not specified. Please try again with a valid reservable queue.")
            start = max(req.start_time, 0)
            end = req.end_time if req.HasField("end_time") and req.end_time >= 0 else LONG_MAX
            infos = self.ops.list_reservations(req.queue, req.reservation_id.strip() or None, start, end,
                                               req.include_resource_allocations)
            return yp.ReservationListResponse(reservations=[_allocation_state(i) for i in infos])

    async def get_cluster_metrics(self, ctx: CallContext, req: yp.GetClusterMetricsRequest
                                  ) -> yp.GetClusterMetricsResponse:
        self._reader(ctx)
        return yp.GetClusterMetricsResponse(cluster_metrics=reports.cluster_metrics(self.rm.state))

    async def get_cluster_nodes(self, ctx: CallContext, req: yp.GetClusterNodesRequest
                                ) -> yp.GetClusterNodesResponse:
        self._reader(ctx)
        states = {reports.NODE_STATE_NAMES[s] for s in req.node_states if s in reports.NODE_STATE_NAMES}
        nodes = sorted(self.rm.state.nodes.values(), key=lambda n: n.node_id)
        return yp.GetClusterNodesResponse(
            node_reports=[reports.node_report(n) for n in nodes if not states or n.state in states])

    async def get_queue_info(self, ctx: CallContext, req: yp.GetQueueInfoRequest) -> yp.GetQueueInfoResponse:
        self._reader(ctx)
        with as_rpc_errors():
            st = self.rm.state
            path = self.ops.queue_path(req.queue_name)
            return yp.GetQueueInfoResponse(queue_info=reports.queue_info(
                st, path, children=req.include_child_queues, recursive=req.recursive,
                apps=req.include_applications, scheduler_address=self.facade.amrm_service,
                web_url=self.facade.web_url, may_view=self._may_view(ctx)))
