"""ApplicationClientProtocol over Hadoop IPC: the calls stock YARN clients (YarnClient, the yarn CLI,
spark-submit) make, mapped onto the same Ledger the gRPC and REST front doors use.

Each call is translated into an operation of ``rm.service.operations`` (shared with gRPC and REST, which
persists before it returns) and its answer into Hadoop's records.
"""

from __future__ import annotations

import base64
import logging
from typing import TYPE_CHECKING

from common.errors import BadRequest, Forbidden
from common.hadoop import records
from common.hadoop.server import CallContext, Method, Protocol
from common.resources import Resources
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.core.entities import App
from rm.core.reservation.requests import reservation_id
from rm.core.state_types import SubmitSpec
from rm.service.ipc import reports
from rm.service.ipc.errors import as_rpc_errors

if TYPE_CHECKING:
    from rm.service.ipc.facade import IpcFacade

log = logging.getLogger("shepherd.ipc.client")

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

    def _may_mutate(self, ctx: CallContext) -> None:
        """Hadoop IPC in SIMPLE mode cannot prove who the caller is: off loopback, refuse changes
        unless the operator allowed it."""
        if not self.facade.settings.allow_simple_writes:
            raise Forbidden(f"{ctx.method} over Hadoop IPC with SIMPLE authentication is refused: the RM "
                            "listens beyond loopback (allow it with "
                            "yarn.resourcemanager.ipc.allow-simple-writes)")

    def _report(self, app: App, caller: str = "") -> yr.ApplicationReport:
        # the AMRMToken of an unmanaged AM goes to its submitter; a SIMPLE user name proves nothing
        # beyond loopback, so there it goes nowhere unless the operator allowed SIMPLE writes
        trusted = caller if self.facade.settings.allow_simple_writes else ""
        return reports.app_report(self.rm.state, app, scheduler_address=self.facade.scheduler_address,
                                  web_url=self.facade.web_url, caller=trusted)

    async def get_new_application(self, ctx: CallContext, req: yp.GetNewApplicationRequest
                                  ) -> yp.GetNewApplicationResponse:
        with as_rpc_errors():
            self._may_mutate(ctx)
            new = await self.ops.new_application()
            return yp.GetNewApplicationResponse(application_id=records.app_id_pb(new.app_id),
                                                maximum_capability=records.resource_pb(
                                                    reports.max_allocation(self.rm.state)))

    async def submit_application(self, ctx: CallContext, req: yp.SubmitApplicationRequest
                                 ) -> yp.SubmitApplicationResponse:
        with as_rpc_errors():
            self._may_mutate(ctx)
            sub = req.application_submission_context
            if not sub.HasField("application_id"):
                raise BadRequest("the submission context has no application id")
            app_id = records.app_id_str(sub.application_id)
            res = am_resource(sub)
            extra = {"am_resource": res} if res is not None else {}
            rid = ""
            if sub.HasField("reservation_id"):
                rid = reservation_id(sub.reservation_id.cluster_timestamp, sub.reservation_id.id)
            spec = SubmitSpec(
                app_id=app_id, name=sub.application_name, queue=sub.queue, user=ctx.user,
                app_type=sub.application_type, priority=sub.priority.priority,
                am_launch=launch_from_clc(sub.am_container_spec) if not sub.unmanaged_am else {},
                max_attempts=sub.max_app_attempts, tags=tuple(sub.application_tags), unmanaged=sub.unmanaged_am,
                reservation_id=rid, **extra,  # type: ignore[arg-type]
            )
            await self.ops.submit(spec)  # a known id is answered as accepted, as by every door
            return yp.SubmitApplicationResponse()

    async def get_application_report(self, ctx: CallContext, req: yp.GetApplicationReportRequest
                                     ) -> yp.GetApplicationReportResponse:
        with as_rpc_errors():
            app = self.ops.app(records.app_id_str(req.application_id))
            return yp.GetApplicationReportResponse(application_report=self._report(app, ctx.user))

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
            out.append(self._report(app, ctx.user))
        if req.limit > 0:
            out = out[-req.limit:]
        return yp.GetApplicationsResponse(applications=out)

    async def force_kill_application(self, ctx: CallContext, req: yp.KillApplicationRequest
                                     ) -> yp.KillApplicationResponse:
        with as_rpc_errors():
            self._may_mutate(ctx)
            await self.ops.kill(records.app_id_str(req.application_id), req.diagnostics, ctx.user)
            return yp.KillApplicationResponse(is_kill_completed=True)

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
                apps=req.include_applications, scheduler_address=self.facade.scheduler_address,
                web_url=self.facade.web_url))
