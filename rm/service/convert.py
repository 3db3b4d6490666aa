"""Conversions between protobuf messages and the core's domain types."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from common.resources import Resources
from common.terms import NO_SIGNALS, AmSignals, ControlStep, SizeEstimate
from proto import shepherd_pb2 as pb
from rm.core.entities import App, Ask, CompletedStatus, Node
from rm.core.ledger import Ledger
from rm.core.model import AskType
from rm.core.state_types import AllocatedContainer, AllocateResult, NodeStatus
from rm.service.deadline_report import deadline_report

CONTROL_STEPS_PER_CALL = 100  # of an AM's control decisions in one allocate call, the newest are kept
FINAL_STATUS_NAMES = {
    pb.FINAL_STATUS_UNDEFINED: "UNDEFINED",
    pb.SUCCEEDED: "SUCCEEDED",
    pb.FAILED: "FAILED",
    pb.KILLED: "KILLED",
}
EXEC_STATE_NAMES = {pb.CONTAINER_NEW: "NEW", pb.CONTAINER_RUNNING: "RUNNING", pb.CONTAINER_COMPLETE: "COMPLETE"}


def resources_from_pb(msg: pb.Resource) -> Resources:
    return Resources(dict(msg.values))


def resources_to_pb(r: Resources) -> pb.Resource:
    return pb.Resource(values=r.to_dict())


def node_id_str(msg: pb.NodeId) -> str:
    return f"{msg.host}:{msg.port}"


def node_id_pb(node_id: str) -> pb.NodeId:
    host, _, port = node_id.rpartition(":")
    return pb.NodeId(host=host, port=int(port or 0))


def node_status_from_pb(s: pb.ContainerStatus) -> NodeStatus:
    return NodeStatus(
        container_id=s.container_id,
        state=EXEC_STATE_NAMES.get(s.state, "NEW"),
        exit_status=s.exit_status,
        diagnostics=s.diagnostics,
        start_time=s.start_time_ms / 1000.0,
        finish_time=s.finish_time_ms / 1000.0,
    )


def ask_from_pb(a: pb.ResourceAsk, capability: Resources | None = None) -> Ask:
    """The ask; ``capability``: its capability, already converted."""
    ask_type: AskType = "ALTRUISTIC" if a.ask_type == pb.ALTRUISTIC else "DEFAULT"
    return Ask(
        allocation_request_id=a.allocation_request_id,
        priority=a.priority,
        capability=resources_from_pb(a.capability) if capability is None else capability,
        num_containers=a.num_containers,
        nodes=(nodes := tuple(a.nodes)),
        racks=(racks := tuple(a.racks)),
        relax_locality=a.relax_locality or not (nodes or racks),
        ask_type=ask_type,
        remaining_work_s=a.remaining_work_s,
        stage=a.stage,
    )


def asks_from_pb(asks: Iterable[pb.ResourceAsk]) -> list[Ask]:
    """The asks of one allocate call. They repeat a few container sizes, so each distinct capability is converted
    once and its ``Resources`` shared: fewer objects to build, check and keep in the ask table."""
    shapes: dict[bytes, Resources] = {}
    out = []
    for a in asks:
        key = a.capability.SerializeToString()  # equal bytes, equal amounts (unequal bytes: just converted again)
        capability = shapes.get(key)
        if capability is None:
            capability = shapes[key] = resources_from_pb(a.capability)
        out.append(ask_from_pb(a, capability))
    return out


AM_COMMANDS = {"NONE": pb.AM_COMMAND_NONE, "RESYNC": pb.AM_RESYNC, "SHUTDOWN": pb.AM_SHUTDOWN}


def allocate_response_to_pb(res: AllocateResult, now: float) -> pb.AllocateResponse:
    """The answer to an allocate call (``now``: the RM's clock, for the deadline as seconds from now)."""
    return pb.AllocateResponse(
        response_id=res.response_id, am_command=AM_COMMANDS[res.command],
        allocated_containers=[container_to_pb(c) for c in res.allocated],
        completed_container_statuses=[completed_to_pb(s) for s in res.completed],
        fair_share=resources_to_pb(res.fair_share),
        available_resources=resources_to_pb(res.headroom),
        num_cluster_nodes=res.num_nodes,
        nm_tokens=[pb.NMToken(node_id=node_id_pb(n), token=t) for n, t in res.nm_tokens],
        deadline_in_s=None if res.deadline is None else res.deadline - now,
        granted_guarantee=granted_pb(res),
        guarantee_ceiling=None if res.guarantee_ceiling is None else resources_to_pb(res.guarantee_ceiling),
    )


def container_to_pb(c: AllocatedContainer) -> pb.Container:
    return pb.Container(
        container_id=c.container_id,
        node_id=node_id_pb(c.node_id),
        node_http_address=c.node_http_address,
        resource=resources_to_pb(c.resource),
        priority=c.priority,
        allocation_request_id=c.allocation_request_id,
        container_token=c.token,
        ask_type=pb.ALTRUISTIC if c.ask_type == "ALTRUISTIC" else pb.DEFAULT,
        from_leftover=c.from_leftover,
    )


def completed_to_pb(s: CompletedStatus) -> pb.ContainerStatus:
    return pb.ContainerStatus(
        container_id=s.container_id,
        state=pb.CONTAINER_COMPLETE,
        exit_status=s.exit_status,
        diagnostics=s.diagnostics,
        start_time_ms=int(s.start_time * 1000),
        finish_time_ms=int(s.finish_time * 1000),
    )


def node_report(n: Node) -> pb.NodeReport:
    return pb.NodeReport(
        node_id=node_id_pb(n.node_id),
        http_address=n.http_address,
        rack=n.rack,
        state=n.state,
        capability=resources_to_pb(n.capability),
        used=resources_to_pb(n.allocated),
        num_containers=len(n.containers),
        health_report=n.health_report,
        last_health_update_ms=int(n.last_health_update * 1000),
    )


def app_report(st: Ledger, app: App, now: float = 0.0) -> pb.ApplicationReport:
    att = app.current
    _, _, pend_default, pend_alt = st.pending_of(app)
    capacity = st.cluster_capacity()
    am_container_id = att.am_container_id if att and att.am_container_id else ""
    am_node_http = ""
    if att and att.node_id and att.node_id in st.nodes:
        am_node_http = st.nodes[att.node_id].http_address
    state, final_status = st.reported_state(app)
    return pb.ApplicationReport(
        application_id=app.app_id,
        current_attempt_id=att.attempt_id if att else "",
        user=app.user,
        queue=app.queue,
        name=app.name,
        host=att.host if att else "",
        rpc_port=att.rpc_port if att else 0,
        state=state,
        final_status=final_status,
        diagnostics=app.report_diagnostics(),
        tracking_url=app.tracking_url,
        start_time_ms=int(app.start_time * 1000),
        finish_time_ms=int(app.finish_time * 1000),
        progress=app.progress,
        application_type=app.app_type,
        tags=list(app.tags),
        priority=app.priority,
        used=resources_to_pb(app.used),
        fair_share=resources_to_pb(app.fair_share),
        dominant_share=app.used.dominant_share(capacity) if not capacity.is_zero() else 0.0,
        running_containers=len(app.containers),
        pending_asks=pend_default + pend_alt,
        am_container_id=am_container_id,
        am_node_http_address=am_node_http,
        submit_time_ms=int(app.submit_time * 1000),
        launch_time_ms=int(app.launch_time * 1000),
        attempts=len(app.attempts),
        memory_seconds=int(app.memory_seconds),
        vcore_seconds=int(app.vcore_seconds),
        pending_default_asks=pend_default,
        pending_altruistic_asks=pend_alt,
        leftover_containers=app.leftover_containers,
        deadline=_deadline_pb(st, app, now),
    )


def restricted_app_report(st: Ledger, app: App) -> pb.ApplicationReport:
    """The report of an app for a caller without VIEW_APP on it (YARN's ``createAndGetApplicationReport`` with
    access refused): who, what and where it is, its state and times; its diagnostics and AM host unavailable,
    no tracking URL, AM container, usage, attempt id or deadline terms."""
    state, final_status = st.reported_state(app)
    return pb.ApplicationReport(
        application_id=app.app_id, user=app.user, queue=app.queue, name=app.name, host="N/A", rpc_port=-1,
        state=state, final_status=final_status, diagnostics="N/A", start_time_ms=int(app.start_time * 1000),
        finish_time_ms=int(app.finish_time * 1000), application_type=app.app_type, tags=list(app.tags),
        priority=app.priority, submit_time_ms=int(app.submit_time * 1000),
        launch_time_ms=int(app.launch_time * 1000), attempts=len(app.attempts))


def launch_context_pb(launch: Mapping[str, object], extra_env: Mapping[str, str]) -> pb.ContainerLaunchContext:
    commands = [str(c) for c in launch.get("commands", []) or []]  # type: ignore[union-attr]
    env_raw = launch.get("environment", {}) or {}
    env = {str(k): str(v) for k, v in env_raw.items()}  # type: ignore[union-attr]
    env.update(extra_env)
    ctx = pb.ContainerLaunchContext(commands=commands, environment=env)
    local = launch.get("local_resources", {}) or {}
    for name, spec in local.items():  # type: ignore[union-attr]
        ctx.local_resources[str(name)].url = str(spec.get("url", ""))
        ctx.local_resources[str(name)].type = str(spec.get("type", "FILE"))
    return ctx


MAX_MODEL_BUILD_S = 86_400.0
"""A model build time above a day (or not a positive number) is not believed: the RM keeps none."""


def signals_from_pb(request: pb.AllocateRequest) -> AmSignals:
    """What an AM's allocate call says besides its asks. An AM can only declare its size."""
    size = SizeEstimate(remaining_s=max(0.0, request.size.remaining_s), source="declared",
                        total_s=request.size.total_s or None) if request.HasField("size") else None
    guarantee = resources_from_pb(request.guarantee) if request.HasField("guarantee") else None
    control = tuple(ControlStep(age_s=max(0.0, c.age_s), progress=min(1.0, max(0.0, c.progress)),
                                raw_units=c.raw_units, smoothed_units=c.smoothed_units,
                                requested_units=c.requested_units, finish_in_s=c.finish_in_s,
                                status=c.status[:16], held=c.held, pace=c.pace if c.pace > 0 else 1.0)
                    for c in request.control[-CONTROL_STEPS_PER_CALL:])
    built = request.model_build_s
    model_build_s = built if math.isfinite(built) and 0.0 < built <= MAX_MODEL_BUILD_S else None
    if size is None and guarantee is None and not control and model_build_s is None:
        return NO_SIGNALS
    return AmSignals(size=size, guarantee=guarantee, control=control, model_build_s=model_build_s)


def granted_pb(result: AllocateResult) -> pb.Resource | None:
    """The allocate answer's granted guarantee (unset when the RM grants the app none)."""
    return None if result.granted_guarantee is None else resources_to_pb(result.granted_guarantee)


def _deadline_pb(st: Ledger, app: App, now: float) -> pb.DeadlineReport | None:
    if app.terms.claim is None:
        return None
    d = deadline_report(app, st.deadlines, now)
    if d is None:
        return None
    return pb.DeadlineReport(deadline=d.deadline, price=d.price, earliest_finish=d.earliest, mean=d.mean,
                             stddev=d.std, pi_upper=d.upper, method=d.method, runs=d.runs,
                             remaining_work=d.remaining, laxity=-1.0 if d.laxity is None else d.laxity,
                             status=d.status)
