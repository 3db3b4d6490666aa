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

from common.errors import BadRequest, Forbidden
from common.hadoop import records, tokens
from common.hadoop.server import CallContext, Method, Protocol, RpcError
from common.resources import Resources
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.core.entities import App
from rm.core.reservation.requests import reservation_id
from rm.core.state_types import SubmitSpec
from rm.service import audit, limits
from rm.service.ipc import reports
from rm.service.ipc.errors import as_rpc_errors

if TYPE_CHECKING:
    from rm.service.ipc.facade import IpcFacade

log = logging.getLogger("shepherd.ipc.client")
T = TypeVar("T")

NAME = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
HADOOP_CLC = "hadoop_clc"  # am_launch key: the submitted ContainerLaunchContext, base64


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
    }


def am_resource(ctx: yr.ApplicationSubmissionContext) -> Resources | None:
    if ctx.HasField("resource"):
        return records.resources_from_pb(ctx.resource)
    for req in ctx.am_container_resource_request:
        if req.resource_name in ("*", "") and req.HasField("capability"):
            return records.resources_from_pb(req.capability)
    return None


class AccessControl(Forbidden):
    exception = "AccessControlException"
    java_class = "org.apache.hadoop.security.AccessControlException"


def _app_id(msg: yr.ApplicationId) -> str:
    """The id for the audit line ("" if it is not a valid one)."""
    try:
        return records.app_id_str(msg)
    except ValueError:
        return ""


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
            "forceKillApplication": Method(yp.KillApplicationRequest, self.force_kill_application),
            "getClusterMetrics": Method(yp.GetClusterMetricsRequest, self.get_cluster_metrics),
            "getClusterNodes": Method(yp.GetClusterNodesRequest, self.get_cluster_nodes),
            "getQueueInfo": Method(yp.GetQueueInfoRequest, self.get_queue_info),
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

    def _writer(self, ctx: CallContext) -> str:
        """The user a change is made for: the token's owner. SIMPLE authentication proves nothing, so it may
        change nothing unless the RM is insecure or the operator allowed it."""
        owner = self.principal(ctx)
        if owner is not None:
            return owner
        if not self.rm.cfg.client_secret or self.facade.settings.allow_simple_writes:
            return ctx.user
        raise AccessControl(f"{ctx.method} over Hadoop IPC needs an RM delegation token (SIMPLE authentication "
                        "proves nothing): point HADOOP_TOKEN_FILE_LOCATION at the token file the RM wrote "
                        "(`shepherd up` prints it)")

    async def _audited(self, ctx: CallContext, operation: str, app_id: str,
                       change: Callable[[str], Awaitable[T]]) -> T:
        """``change(user)`` after the write check, with its audit line."""
        ip = audit.peer_ip(ctx.peer)
        user = self.principal(ctx) or ctx.user
        try:
            with as_rpc_errors():
                out = await change(self._writer(ctx))
        except RpcError as err:
            audit.record(user=user, ip=ip, operation=operation, target=audit.CLIENT_SERVICE, ok=False,
                         app_id=app_id, description=f"{err.java_class.rsplit('.', 1)[-1]}: {err}")
            raise
        audit.record(user=user, ip=ip, operation=operation, target=audit.CLIENT_SERVICE, ok=True, app_id=app_id)
        return out

    def _report(self, app: App, ctx: CallContext) -> yr.ApplicationReport:
        # the AMRMToken of an unmanaged AM goes to its submitter; a SIMPLE user name proves nothing, so
        # there it goes nowhere unless the RM is insecure or the operator allowed SIMPLE writes
        trusted = self.principal(ctx)
        if trusted is None and (not self.rm.cfg.client_secret or self.facade.settings.allow_simple_writes):
            trusted = ctx.user
        return reports.app_report(self.rm.state, app, scheduler_address=self.facade.amrm_service,
                                  web_url=self.facade.web_url, caller=trusted or "")

    async def get_new_application(self, ctx: CallContext, req: yp.GetNewApplicationRequest
                                  ) -> yp.GetNewApplicationResponse:
        async def change(user: str) -> yp.GetNewApplicationResponse:
            new = await self.ops.new_application()
            return yp.GetNewApplicationResponse(application_id=records.app_id_pb(new.app_id),
                                                maximum_capability=records.resource_pb(
                                                    reports.max_allocation(self.rm.state)))
        return await self._audited(ctx, audit.NEW_APP, "", change)

    async def submit_application(self, ctx: CallContext, req: yp.SubmitApplicationRequest
                                 ) -> yp.SubmitApplicationResponse:
        sub = req.application_submission_context

        async def change(user: str) -> yp.SubmitApplicationResponse:
            if not sub.HasField("application_id"):
                raise BadRequest("the submission context has no application id")
            app_id = records.app_id_str(sub.application_id)
            res = am_resource(sub)
            extra = {"am_resource": res} if res is not None else {}
            rid = ""
            if sub.HasField("reservation_id"):
                rid = reservation_id(sub.reservation_id.cluster_timestamp, sub.reservation_id.id)
            spec = SubmitSpec(
                app_id=app_id, name=sub.application_name, queue=sub.queue, user=user,
                app_type=sub.application_type, priority=sub.priority.priority,
                am_launch=launch_from_clc(sub.am_container_spec) if not sub.unmanaged_am else {},
                max_attempts=sub.max_app_attempts, tags=tuple(sub.application_tags), unmanaged=sub.unmanaged_am,
                reservation_id=rid, keep_containers=sub.keep_containers_across_application_attempts,
                **extra,  # type: ignore[arg-type]
            )
            await self.ops.submit(limits.bounded_submission(spec))  # a known id is answered as accepted
            return yp.SubmitApplicationResponse()
        return await self._audited(ctx, audit.SUBMIT_APP, _app_id(sub.application_id), change)

    async def get_application_report(self, ctx: CallContext, req: yp.GetApplicationReportRequest
                                     ) -> yp.GetApplicationReportResponse:
        with as_rpc_errors():
            app = self.ops.app(records.app_id_str(req.application_id))
            return yp.GetApplicationReportResponse(application_report=self._report(app, ctx))

    async def get_applications(self, ctx: CallContext, req: yp.GetApplicationsRequest
                               ) -> yp.GetApplicationsResponse:
        states = {reports.APP_STATE_NAMES[s] for s in req.application_states if s in reports.APP_STATE_NAMES}
        types = {t.lower() for t in req.application_types}
        users, queues, tags = set(req.users), set(req.queues), {t.lower() for t in req.application_tags}
        out = []
        for app in sorted(self.rm.state.apps.values(), key=lambda a: (a.submit_time, a.app_id)):
            if (states and app.state not in states) or (types and app.app_type.lower() not in types):
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

    async def force_kill_application(self, ctx: CallContext, req: yp.KillApplicationRequest
                                     ) -> yp.KillApplicationResponse:
        async def change(user: str) -> yp.KillApplicationResponse:
            app = self.ops.app(records.app_id_str(req.application_id))
            if app.user != user and not self.facade.settings.is_admin(user):  # YARN's MODIFY_APP check
                raise AccessControl(f"User {user} cannot perform operation MODIFY_APP on {app.app_id}")
            await self.ops.kill(records.app_id_str(req.application_id),
                                limits.cut(req.diagnostics, limits.MAX_DIAGNOSTICS), user)
            return yp.KillApplicationResponse(is_kill_completed=True)
        return await self._audited(ctx, audit.KILL_APP, _app_id(req.application_id), change)

    async def get_cluster_metrics(self, ctx: CallContext, req: yp.GetClusterMetricsRequest
                                  ) -> yp.GetClusterMetricsResponse:
        return yp.GetClusterMetricsResponse(cluster_metrics=reports.cluster_metrics(self.rm.state))

    async def get_cluster_nodes(self, ctx: CallContext, req: yp.GetClusterNodesRequest
                                ) -> yp.GetClusterNodesResponse:
        states = {reports.NODE_STATE_NAMES[s] for s in req.node_states if s in reports.NODE_STATE_NAMES}
        nodes = sorted(self.rm.state.nodes.values(), key=lambda n: n.node_id)
        return yp.GetClusterNodesResponse(
            node_reports=[reports.node_report(n) for n in nodes if not states or n.state in states])

    async def get_queue_info(self, ctx: CallContext, req: yp.GetQueueInfoRequest) -> yp.GetQueueInfoResponse:
        with as_rpc_errors():
            st = self.rm.state
            path = self.ops.queue_path(req.queue_name)
            return yp.GetQueueInfoResponse(queue_info=reports.queue_info(
                st, path, children=req.include_child_queues, recursive=req.recursive,
                apps=req.include_applications, scheduler_address=self.facade.amrm_service,
                web_url=self.facade.web_url))
