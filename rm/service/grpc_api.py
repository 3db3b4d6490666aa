"""gRPC front door: protobuf requests translated into the operations of ``rm.service.operations``
(which validate, apply in the core, persist and wake the scheduler) and their answers into protobuf.

Refused requests end with a gRPC status whose details start with YARN's Java exception class name.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar, cast

import grpc

from am.profile_wire import profile_to_pb, report_from_pb
from common import credentials
from common.errors import BadRequest, Forbidden, InvalidToken, YarnError
from common.ids import ContainerId, NodeId
from common.terms import NO_TERMS, AppTerms
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.core import job_profiles
from rm.core.reservation import yarn as reservations
from rm.core.state_types import NodeStatus, SubmitSpec
from rm.service import audit, authz, convert, limits
from rm.service.authz import Authorizer, Caller
from rm.service.heartbeat_pace import OutOfBandPace
from rm.service.operations import Operations
from rm.service.reservations import require_reservation_stage
from rm.service.rest import render
from rm.service.stages import app_stages

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

log = logging.getLogger("shepherd.rm.grpc")
NODE_SESSION = "x-shepherd-node-session"  # metadata: the session of a NodeManager's registration
T = TypeVar("T")

_STATUS = {400: grpc.StatusCode.INVALID_ARGUMENT, 401: grpc.StatusCode.UNAUTHENTICATED, 403: grpc.StatusCode.PERMISSION_DENIED,
           404: grpc.StatusCode.NOT_FOUND, 409: grpc.StatusCode.FAILED_PRECONDITION,
           503: grpc.StatusCode.UNAVAILABLE}
_NODE_ACTIONS = {"NORMAL": pb.NODE_ACTION_NORMAL, "RESYNC": pb.NODE_ACTION_RESYNC,
                 "SHUTDOWN": pb.NODE_ACTION_SHUTDOWN}


def _metadata(context: grpc.aio.ServicerContext, name: str) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == name and isinstance(value, str):
            return value
    return ""


def bearer(context: grpc.aio.ServicerContext) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and isinstance(value, str) and value.startswith("Bearer "):
            return value[len("Bearer "):].strip()
    return ""


def _refuse(context: grpc.aio.ServicerContext, err: YarnError) -> None:
    code = grpc.StatusCode.UNAUTHENTICATED if isinstance(err, InvalidToken) else \
        _STATUS.get(err.status, grpc.StatusCode.INVALID_ARGUMENT)
    context.set_code(code)
    context.set_details(f"{err.java_class}: {limits.error_detail(err.message)}")


async def guarded(context: grpc.aio.ServicerContext, fn: Callable[[], Awaitable[T]]) -> T:
    """``fn()``, or the refusal it raised as the call's status (and no message).

    The status is set on the context, not raised with ``context.abort()``: the exception that raises would hold
    the handler's frames, and so the request, in a reference cycle through the context until a full garbage
    collection, which a request that was refused for being huge may not wait for (S19)."""
    try:
        return await fn()
    except YarnError as err:
        _refuse(context, err)
    return cast(T, None)


class NoCredentials(Forbidden):
    status = 401


def _check_secret(expected: str | None, context: grpc.aio.ServicerContext, who: str) -> None:
    if not expected:
        return
    given = bearer(context)
    if not given:
        raise NoCredentials(f"{who} must present the cluster's {who} secret (authorization: Bearer <secret>)")
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise Forbidden(f"the {who} secret does not match")


async def audited(context: grpc.aio.ServicerContext, operation: str, target: str, user: str, app_id: str,
                  fn: Callable[[], Awaitable[T]]) -> T:
    """``fn()``, with its audit line: SUCCESS, or FAILURE with the refusal."""
    ip = audit.peer_ip(context.peer() or "")
    try:
        out = await fn()
    except YarnError as err:
        audit.record(user=user, ip=ip, operation=operation, target=target, ok=False, app_id=app_id,
                     description=f"{err.exception}: {err.message}")
        raise
    audit.record(user=user, ip=ip, operation=operation, target=target, ok=True,
                 app_id=app_id or getattr(out, "application_id", ""))
    return out


class ResourceTrackerServicer(pbg.ResourceTrackerServicer):
    """NodeManagers prove they hold the node secret on every call, and each registration gets a session
    (``x-shepherd-node-session`` in the answer's trailing metadata) that the node's heartbeats, its
    unregistration and a re-registration while it is alive must present: a NodeManager cannot register as,
    heartbeat for or report the containers of another live node. The RM keeps a hash of each node's session
    with the node in its store, so that holds across an RM restart too. Every answer hands the node the
    container-token keys it is to accept (they roll)."""

    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm
        self.ops = Operations(rm)
        self.pace = OutOfBandPace(rm.cfg.heartbeat_interval_s)
        if rm.metrics is not None:
            rm.metrics.out_of_band_batch.set_function(lambda: self.pace.batch)

    @staticmethod
    def session_hash(session: str) -> str:
        return hashlib.sha256(session.encode()).hexdigest()

    def _holds_session(self, node_id: str, context: grpc.aio.ServicerContext) -> bool:
        node = self.rm.state.nodes.get(NodeId(node_id))
        given = _metadata(context, NODE_SESSION)
        if node is None or not node.session_hash or not given:
            return False
        return hmac.compare_digest(self.session_hash(given).encode(), node.session_hash.encode())

    def _alive(self, node_id: str) -> bool:
        """Registered with a session and heartbeating: a NodeManager that stopped may be replaced, a live one
        not. A node an RM restart brought back (NEW) counts as alive until its NodeManager registers again or
        the node is LOST at the expiry: until then nobody knows that it stopped."""
        node = self.rm.state.nodes.get(NodeId(node_id))
        if node is None or not node.session_hash:
            return False
        if node.state == "NEW":
            return True
        if node.state not in ("RUNNING", "UNHEALTHY", "DECOMMISSIONING"):
            return False
        return self.rm.now() - node.last_heartbeat < max(3 * self.rm.cfg.heartbeat_interval_s, 5.0)

    def _token_keys(self) -> list[pb.TokenKey]:
        return [pb.TokenKey(key_id=k.key_id, key=k.key) for k in self.rm.state.container_keys.accepted()]

    def _reads_verifier(self) -> bytes:
        """With authenticate-reads, what the node checks its readers' credentials against (the client secret's
        digest: the secret itself never goes to a node); nothing, and its pages are open, otherwise."""
        cfg = self.rm.cfg
        return credentials.reads_verifier(cfg.client_secret) if cfg.authenticate_reads and cfg.client_secret else b""

    def _own_containers(self, node_id: str, statuses: list[NodeStatus]) -> None:
        for s in statuses:
            c = self.rm.state.containers.get(ContainerId(s.container_id))
            if c is not None and c.node_id != node_id:
                raise Forbidden(f"node {node_id} reported container {s.container_id}, which runs on {c.node_id}")

    async def RegisterNodeManager(self, request: pb.RegisterNodeRequest,
                                  context: grpc.aio.ServicerContext) -> pb.RegisterNodeResponse:
        async def register() -> pb.RegisterNodeResponse:
            _check_secret(self.rm.cfg.node_secret, context, "node")
            st = self.rm.state
            node_id = convert.node_id_str(request.node_id)
            if self._alive(node_id) and not self._holds_session(node_id, context):
                raise Forbidden(f"node {node_id} is registered and alive: another NodeManager cannot register "
                                "as it (a restarted NodeManager presents its session, or waits until the old "
                                "one stops heartbeating)")
            refused = self.ops.node_refusal(node_id)
            if refused:  # YARN answers a disallowed NodeManager with SHUTDOWN
                return pb.RegisterNodeResponse(action=pb.NODE_ACTION_SHUTDOWN, diagnostics=refused)
            statuses = [convert.node_status_from_pb(s) for s in request.container_statuses]
            self._own_containers(node_id, statuses)
            session = secrets.token_urlsafe(32)  # stored (its hash) with the registration, before the answer
            await self.ops.register_node(
                node_id, request.http_address, request.rack, convert.resources_from_pb(request.capability),
                statuses, ipc_port=request.ipc_port, session_hash=self.session_hash(session),
            )
            context.set_trailing_metadata(((NODE_SESSION, session),))
            return pb.RegisterNodeResponse(
                action=pb.NODE_ACTION_NORMAL, container_token_key=st.container_key, key_id=st.container_key_id,
                heartbeat_interval_ms=int(self.rm.cfg.heartbeat_interval_s * 1000),
                rm_identifier=st.meta.cluster_timestamp, nm_expiry_ms=int(self.rm.cfg.nm_expiry_s * 1000),
                container_token_keys=self._token_keys(), reads_verifier=self._reads_verifier(),
            )

        async def run() -> pb.RegisterNodeResponse:
            return await audited(context, audit.REGISTER_NODE, audit.RESOURCE_TRACKER,
                                 convert.node_id_str(request.node_id), "", register)
        return await guarded(context, run)

    async def NodeHeartbeat(self, request: pb.NodeHeartbeatRequest,
                            context: grpc.aio.ServicerContext) -> pb.NodeHeartbeatResponse:
        async def run() -> pb.NodeHeartbeatResponse:
            _check_secret(self.rm.cfg.node_secret, context, "node")
            started = self.rm.now()
            node_id = convert.node_id_str(request.node_id)
            if not self._holds_session(node_id, context):  # not this node's NodeManager, or an RM restart
                return pb.NodeHeartbeatResponse(action=pb.NODE_ACTION_RESYNC, diagnostics=(
                    f"no registration of {node_id} with this session: register (again), then present the "
                    f"{NODE_SESSION} metadata the registration answered with"))
            statuses = [convert.node_status_from_pb(s) for s in request.container_statuses]
            completed = sum(1 for s in request.container_statuses if s.state == pb.CONTAINER_COMPLETE)
            self._own_containers(node_id, statuses)
            res = await self.ops.node_heartbeat(
                node_id, request.response_id, statuses,
                request.health.healthy if request.HasField("health") else True, request.health.health_report,
            )
            if self.rm.metrics is not None:
                self.rm.metrics.observe_heartbeat(self.rm.now() - started)
            return pb.NodeHeartbeatResponse(
                response_id=res.response_id, action=_NODE_ACTIONS[res.action],
                containers_to_cleanup=list(res.containers_to_cleanup),
                applications_to_cleanup=list(res.apps_to_cleanup),
                next_heartbeat_interval_ms=int(self.rm.cfg.heartbeat_interval_s * 1000),
                out_of_band_gap_ms=int(1000 * self.pace.gap_s(node_id, completed, time.monotonic())),
                diagnostics=res.diagnostics, container_token_keys=self._token_keys(),
            )
        return await guarded(context, run)

    async def UnregisterNodeManager(self, request: pb.UnregisterNodeRequest,
                                    context: grpc.aio.ServicerContext) -> pb.UnregisterNodeResponse:
        async def run() -> pb.UnregisterNodeResponse:
            _check_secret(self.rm.cfg.node_secret, context, "node")
            if not self._holds_session(convert.node_id_str(request.node_id), context):
                raise Forbidden("only the NodeManager registered as this node may unregister it")
            await self.ops.unregister_node(convert.node_id_str(request.node_id))
            self.pace.forget(convert.node_id_str(request.node_id))
            return pb.UnregisterNodeResponse()
        return await guarded(context, run)


class ApplicationMasterServicer(pbg.ApplicationMasterServicer):
    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm
        self.ops = Operations(rm)
        # an allocate's asks and releases are counted on its bytes, and too many refused before one ask is built
        self.prechecks = {"Allocate": self._count_allocate}

    async def _count_allocate(self, raw: bytes) -> str | None:
        try:
            await self.rm.bounds.check("grpc-allocate", raw)
        except YarnError as err:
            return f"{err.java_class}: {err.message}"
        return None

    async def RegisterApplicationMaster(self, request: pb.RegisterApplicationMasterRequest,
                                        context: grpc.aio.ServicerContext
                                        ) -> pb.RegisterApplicationMasterResponse:
        async def run() -> pb.RegisterApplicationMasterResponse:
            reg = await self.ops.am_register(bearer(context), request.host, request.rpc_port,
                                             request.tracking_url, with_profile=True)
            mx = reg.max_allocation
            sp = reg.profile
            return pb.RegisterApplicationMasterResponse(
                maximum_capability=convert.resources_to_pb(mx) if mx else None, queue=reg.app.queue,
                application_id=reg.app.app_id, attempt_id=reg.attempt.attempt_id,
                containers_from_previous_attempts=[convert.container_to_pb(c) for c in reg.inherited],
                checkpoint=reg.app.am_checkpoint,
                profile=None if sp is None else profile_to_pb(sp.profile, sp.runs, sp.init_measured),
            )
        return await guarded(context, run)

    async def Allocate(self, request: pb.AllocateRequest,
                       context: grpc.aio.ServicerContext) -> pb.AllocateResponse:
        async def run() -> pb.AllocateResponse:
            limits.check_allocate(len(request.asks), len(request.releases))
            res = await self.ops.am_allocate(
                bearer(context), request.response_id, convert.asks_from_pb(request.asks),
                request.releases, request.progress, request.blacklist_additions, request.blacklist_removals,
                signals=convert.signals_from_pb(request),
                checkpoint=request.checkpoint if request.HasField("checkpoint") else None,
            )
            return convert.allocate_response_to_pb(res, self.ops.rm.now())
        return await guarded(context, run)

    async def FinishApplicationMaster(self, request: pb.FinishApplicationMasterRequest,
                                      context: grpc.aio.ServicerContext) -> pb.FinishApplicationMasterResponse:
        async def run() -> pb.FinishApplicationMasterResponse:
            job_profiles.check_report_size(request.stages)  # before any stage is built
            done = await self.ops.am_finish(
                bearer(context), convert.FINAL_STATUS_NAMES.get(request.final_status, "UNDEFINED"),
                limits.cut(request.diagnostics, limits.MAX_DIAGNOSTICS), limits.cut(request.tracking_url, limits.MAX_NAME),
                stages=report_from_pb(request.stages),
            )
            return pb.FinishApplicationMasterResponse(is_unregistered=done)
        return await guarded(context, run)


class ApplicationClientServicer(pbg.ApplicationClientServicer):
    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm
        self.ops = Operations(rm)
        self.authz = Authorizer(rm)

    async def _write(self, context: grpc.aio.ServicerContext, operation: str, acting_for: str, app_id: str,
                     fn: Callable[[Caller], Awaitable[T]]) -> T:
        """``fn(caller)`` for the caller the credential proves (:mod:`rm.service.authz`), with its audit line.
        ``acting_for``: the user the request names, which only the cluster's owner may act for."""
        ip = audit.peer_ip(context.peer() or "")

        async def run() -> T:
            try:
                who = authz.caller(self.rm.cfg.client_secret, bearer(context), acting_for)
            except YarnError as err:
                audit.record(user=acting_for or authz.ANONYMOUS, ip=ip, operation=operation,
                             target=audit.CLIENT_SERVICE, ok=False, app_id=app_id,
                             description=f"{err.exception}: {err.message}")
                raise NoCredentials(err.message) if err.status == 401 else err from None
            return await audited(context, operation, audit.CLIENT_SERVICE, who.user, app_id, lambda: fn(who))
        return await guarded(context, run)

    async def _read(self, context: grpc.aio.ServicerContext, fn: Callable[[], Awaitable[T]]) -> T:
        """``fn()``; with ``authenticate_reads``, only for a caller with a credential (any user)."""
        async def run() -> T:
            if self.rm.cfg.authenticate_reads:
                try:
                    authz.caller(self.rm.cfg.client_secret, bearer(context))
                except YarnError as err:
                    raise NoCredentials(err.message) if err.status == 401 else err from None
            return await fn()
        return await guarded(context, run)

    def _viewer(self, context: grpc.aio.ServicerContext) -> Caller:
        """Who reads: the credential's user, or without one the anonymous ``dr.who`` (:func:`authz.viewer`)."""
        return authz.viewer(self.rm.cfg.client_secret, bearer(context))

    async def GetNewApplication(self, request: pb.GetNewApplicationRequest,
                                context: grpc.aio.ServicerContext) -> pb.GetNewApplicationResponse:
        async def run(who: Caller) -> pb.GetNewApplicationResponse:
            new = await self.ops.new_application()
            mx = new.max_allocation
            return pb.GetNewApplicationResponse(
                application_id=new.app_id, maximum_capability=convert.resources_to_pb(mx) if mx else None)
        return await self._write(context, audit.NEW_APP, "", "", run)

    async def SubmitApplication(self, request: pb.SubmitApplicationRequest,
                                context: grpc.aio.ServicerContext) -> pb.SubmitApplicationResponse:
        async def run(who: Caller) -> pb.SubmitApplicationResponse:
            c = request.context
            spec = c.am_container_spec
            am_launch = {
                "commands": list(spec.commands),
                "environment": dict(spec.environment),
                "local_resources": {k: {"url": v.url, "type": v.type or "FILE"}
                                    for k, v in spec.local_resources.items()},
            }
            kwargs = {"am_resource": convert.resources_from_pb(c.am_resource)} if c.HasField("am_resource") else {}
            sub = SubmitSpec(
                app_id=c.application_id, name=c.name, queue=c.queue, user=who.user,
                app_type=c.application_type, priority=c.priority, am_launch=am_launch,
                max_attempts=c.max_app_attempts, tags=limits.first_tags(c.tags), unmanaged=c.unmanaged_am,
                job_spec_json=c.job_spec_json, reservation_id=c.reservation_id.strip(),
                inputs=tuple(c.inputs), outputs=tuple(c.outputs),
                keep_containers=c.keep_containers_across_application_attempts, plan_token=c.plan_token.strip(),
                terms=_terms(c), **kwargs,  # type: ignore[arg-type]
            )
            self.authz.submit(who, sub.queue, sub.app_id)
            await self.ops.submit(limits.bounded_submission(sub))  # a known id is answered as accepted
            return pb.SubmitApplicationResponse()
        return await self._write(context, audit.SUBMIT_APP, request.context.user,
                                 request.context.application_id, run)

    async def QuoteDeadline(self, request: pb.QuoteDeadlineRequest,
                            context: grpc.aio.ServicerContext) -> pb.QuoteDeadlineResponse:
        async def run(who: Caller) -> pb.QuoteDeadlineResponse:
            q = self.ops.quote(queue=request.queue, user=who.user,
                               name=request.name or "N/A", app_type=request.application_type or "SHEPHERD",
                               job_spec_json=request.job_spec_json, tags=limits.first_tags(request.tags))
            est = q.estimate
            return pb.QuoteDeadlineResponse(
                quote_id=q.quote_id, expires=q.expires, mean=est.mean, stddev=est.std, pi_upper=est.upper,
                z=est.z, method=est.method, runs=est.runs, critical_path=q.price.critical_path,
                earliest_finish=q.price.earliest,
                curve=[pb.PricePoint(deadline=p.deadline, price=p.price) for p in q.price.curve])
        return await self._write(context, "Quote Deadline", request.user, "", run)

    async def GetApplicationReport(self, request: pb.GetApplicationReportRequest,
                                   context: grpc.aio.ServicerContext) -> pb.GetApplicationReportResponse:
        async def run() -> pb.GetApplicationReportResponse:
            app = self.ops.app(request.application_id)
            if not self.authz.may_view(self._viewer(context), app):
                report = convert.restricted_app_report(self.rm.state, app)
                if request.rest_shape:
                    report.rest_json = json.dumps(render.app_json(self.rm, app, full=False))
                return pb.GetApplicationReportResponse(report=report)
            report = convert.app_report(self.rm.state, app, self.rm.now())
            report.stages.extend(pb.StageProgress(name=s.name, tasks=s.tasks, done=s.done, running=s.running,
                                                  waiting=s.waiting, failed=s.failed, state=s.state)
                                 for s in app_stages(app, self.rm.state.containers.values()))
            if request.rest_shape:
                report.rest_json = json.dumps(render.app_json(self.rm, app))
            return pb.GetApplicationReportResponse(report=report)
        return await self._read(context, run)

    async def GetApplications(self, request: pb.GetApplicationsRequest,
                              context: grpc.aio.ServicerContext) -> pb.GetApplicationsResponse:
        async def run() -> pb.GetApplicationsResponse:
            st = self.rm.state
            who = self._viewer(context)
            states = {s.upper() for s in request.states}
            out = []
            for app in st.apps.values():
                if states and st.reported_state(app)[0] not in states:
                    continue
                if request.queue and app.queue not in (request.queue, f"root.{request.queue}"):
                    continue
                if request.user and app.user != request.user:
                    continue
                full = self.authz.may_view(who, app)
                report = convert.app_report(st, app, self.rm.now()) if full else \
                    convert.restricted_app_report(st, app)
                if request.rest_shape:
                    report.rest_json = json.dumps(render.app_json(self.rm, app, full=full))
                out.append(report)
            if request.limit > 0:
                out = out[-request.limit:]
            return pb.GetApplicationsResponse(applications=out)
        return await self._read(context, run)

    async def GetApplicationAttempts(self, request: pb.GetApplicationAttemptsRequest,
                                     context: grpc.aio.ServicerContext) -> pb.GetApplicationAttemptsResponse:
        async def run() -> pb.GetApplicationAttemptsResponse:
            st = self.rm.state
            app = self.ops.app(request.application_id)
            self.authz.view(self._viewer(context), app)
            return pb.GetApplicationAttemptsResponse(attempts=[
                pb.ApplicationAttemptReport(
                    attempt_id=a.attempt_id, state=a.state, am_container_id=a.am_container_id or "",
                    node_id=a.node_id or "",
                    node_http_address=st.nodes[a.node_id].http_address if a.node_id in st.nodes else "",
                    start_time_ms=int(a.start_time * 1000), finish_time_ms=int(a.finish_time * 1000),
                    diagnostics=a.diagnostics,
                ) for a in app.attempts
            ])
        return await self._read(context, run)

    async def GetContainers(self, request: pb.GetContainersRequest,
                            context: grpc.aio.ServicerContext) -> pb.GetContainersResponse:
        async def run() -> pb.GetContainersResponse:
            st = self.rm.state
            self.authz.view(self._viewer(context), self.ops.app(request.application_id))
            out = []
            for c in self.ops.containers(request.application_id):
                node = st.nodes.get(c.node_id)
                http = node.http_address if node else ""
                out.append(pb.ContainerReport(
                    container_id=c.container_id, node_id=c.node_id, node_http_address=http,
                    resource=convert.resources_to_pb(c.resource), state=c.state, exit_status=c.exit_status,
                    diagnostics=c.diagnostics, start_time_ms=int(c.start_time * 1000),
                    finish_time_ms=int(c.finish_time * 1000),
                    log_url=f"http://{http}/ws/v1/node/containers/{c.container_id}/logs" if http else "",
                ))
            return pb.GetContainersResponse(containers=out)
        return await self._read(context, run)

    async def KillApplication(self, request: pb.KillApplicationRequest,
                              context: grpc.aio.ServicerContext) -> pb.KillApplicationResponse:
        async def run(who: Caller) -> pb.KillApplicationResponse:
            self.authz.modify(who, self.ops.app(request.application_id))
            await self.ops.kill(request.application_id,  # an ended app: done already
                                limits.cut(request.diagnostics, limits.MAX_DIAGNOSTICS), who.user)
            return pb.KillApplicationResponse(is_kill_completed=True)
        return await self._write(context, audit.KILL_APP, request.user, request.application_id, run)

    async def MoveApplication(self, request: pb.MoveApplicationRequest,
                              context: grpc.aio.ServicerContext) -> pb.MoveApplicationResponse:
        async def run(who: Caller) -> pb.MoveApplicationResponse:
            self.authz.move(who, self.ops.app(request.application_id), request.queue)
            return pb.MoveApplicationResponse(queue=str((await self.ops.move(request.application_id,
                                                                             request.queue)).queue))
        return await self._write(context, audit.MOVE_APP, request.user, request.application_id, run)

    async def UpdateApplicationPriority(self, request: pb.UpdateApplicationPriorityRequest,
                                        context: grpc.aio.ServicerContext) -> pb.UpdateApplicationPriorityResponse:
        async def run(who: Caller) -> pb.UpdateApplicationPriorityResponse:
            self.authz.modify(who, self.ops.app(request.application_id))
            app = await self.ops.set_priority(request.application_id, request.priority)
            return pb.UpdateApplicationPriorityResponse(priority=app.priority)
        return await self._write(context, audit.UPDATE_PRIORITY, request.user, request.application_id, run)

    async def NewReservation(self, request: pb.NewReservationRequest,
                             context: grpc.aio.ServicerContext) -> pb.NewReservationResponse:
        async def run(who: Caller) -> pb.NewReservationResponse:
            return pb.NewReservationResponse(reservation_id=await self.ops.new_reservation())
        return await self._write(context, audit.NEW_RESERVATION, request.user, "", run)

    async def SubmitReservation(self, request: pb.SubmitReservationRequest,
                                context: grpc.aio.ServicerContext) -> pb.SubmitReservationResponse:
        async def run(who: Caller) -> pb.SubmitReservationResponse:
            require_reservation_stage(self.rm)
            try:
                definition = json.loads(request.definition_json or "null")
            except ValueError as exc:
                raise BadRequest(f"definition_json is not JSON: {exc}") from None
            body = reservations.parse_submit({"reservation-id": request.reservation_id, "queue": request.queue,
                                              "reservation-definition": definition})
            self.authz.reserve(who, body.queue)
            await self.ops.submit_reservation(body.reservation_id, body.queue, body.definition, who.user)
            return pb.SubmitReservationResponse()
        return await self._write(context, audit.SUBMIT_RESERVATION, request.user, "", run)

    async def DeleteReservation(self, request: pb.DeleteReservationRequest,
                                context: grpc.aio.ServicerContext) -> pb.DeleteReservationResponse:
        async def run(who: Caller) -> pb.DeleteReservationResponse:
            self.authz.change_reservation(who, request.reservation_id)
            await self.ops.delete_reservation(request.reservation_id)
            return pb.DeleteReservationResponse()
        return await self._write(context, audit.DELETE_RESERVATION, request.user, "", run)

    async def RefreshQueues(self, request: pb.RefreshQueuesRequest,
                            context: grpc.aio.ServicerContext) -> pb.RefreshQueuesResponse:
        async def run(who: Caller) -> pb.RefreshQueuesResponse:
            self.authz.admin(who, "refreshQueues")
            return pb.RefreshQueuesResponse(queues=await self.rm.refresh_queues(dry_run=request.dry_run))
        return await self._write(context, audit.REFRESH_QUEUES, request.user, "", run)

    async def GetClusterMetrics(self, request: pb.GetClusterMetricsRequest,
                                context: grpc.aio.ServicerContext) -> pb.GetClusterMetricsResponse:
        from rm.service.views import cluster_metrics

        async def run() -> pb.GetClusterMetricsResponse:
            m = cluster_metrics(self.rm.state)
            r = convert.resources_to_pb
            return pb.GetClusterMetricsResponse(metrics=pb.ClusterMetrics(
                apps_submitted=m.apps_submitted, apps_pending=m.apps_pending, apps_running=m.apps_running,
                apps_completed=m.apps_completed, apps_failed=m.apps_failed, apps_killed=m.apps_killed,
                total=r(m.total), allocated=r(m.allocated), available=r(m.available), pending=r(m.pending),
                containers_allocated=m.containers_allocated, containers_pending=m.containers_pending,
                active_nodes=m.nodes.get("RUNNING", 0), lost_nodes=m.nodes.get("LOST", 0),
                unhealthy_nodes=m.nodes.get("UNHEALTHY", 0),
                decommissioned_nodes=m.nodes.get("DECOMMISSIONED", 0), shutdown_nodes=m.nodes.get("SHUTDOWN", 0),
                cluster_timestamp=self.rm.state.meta.cluster_timestamp,
            ))
        return await self._read(context, run)

    async def GetClusterNodes(self, request: pb.GetClusterNodesRequest,
                              context: grpc.aio.ServicerContext) -> pb.GetClusterNodesResponse:
        async def run() -> pb.GetClusterNodesResponse:
            states = {s.upper() for s in request.states}
            return pb.GetClusterNodesResponse(nodes=[
                convert.node_report(n) for n in self.rm.state.nodes.values() if not states or n.state in states])
        return await self._read(context, run)

    async def GetQueueInfo(self, request: pb.GetQueueInfoRequest,
                           context: grpc.aio.ServicerContext) -> pb.GetQueueInfoResponse:
        async def run() -> pb.GetQueueInfoResponse:
            from rm.service.views import queue_usage

            st = self.rm.state
            usage = queue_usage(st)
            path = self.ops.queue_path(request.queue)

            def build(p: str) -> pb.QueueInfo:
                q = st.queues[p]  # type: ignore[index]
                used, napps = usage.get(p, (None, 0))
                return pb.QueueInfo(
                    path=q.path, name=q.path.rsplit(".", 1)[-1], capacity=q.capacity * 100,
                    max_capacity=q.max_capacity * 100, absolute_capacity=q.abs_capacity * 100, weight=q.weight,
                    used=convert.resources_to_pb(used) if used is not None else None, num_applications=napps,
                    children=[build(c) for c in q.children], state="RUNNING" if q.running else "STOPPED",
                )
            return pb.GetQueueInfoResponse(queue=build(path))
        return await self._read(context, run)


__all__ = ["ApplicationClientServicer", "ApplicationMasterServicer", "BadRequest", "ResourceTrackerServicer"]


def _terms(c: pb.ApplicationSubmissionContext) -> AppTerms:
    """A submission's deadline terms: a deadline, a quote to buy, a price to buy the earliest deadline at."""
    if not (c.deadline or c.quote_id or c.max_price):
        return NO_TERMS
    return AppTerms(deadline=c.deadline or None, quote_id=c.quote_id or None, max_price=c.max_price or None)
