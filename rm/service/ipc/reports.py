"""Hadoop records describing the RM's state: application, attempt, container, node and queue reports, cluster
metrics.

Node ids: Hadoop clients must see the address of a NodeManager's Hadoop-IPC ContainerManagement
listener, since that is where an AM's NMClient connects. A node that registered one is reported as
``host:ipc_port``; a node without one keeps its shepherd node id.
"""

from __future__ import annotations

from collections.abc import Callable

from common.hadoop import records, tokens
from common.resources import Resources
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_records_pb2 as yr
from rm.core.entities import App, Attempt, Container, Node
from rm.core.ledger import Ledger
from rm.service.rest.render import logs_url

APP_STATES = {
    "NEW": yr.NEW, "NEW_SAVING": yr.NEW_SAVING, "SUBMITTED": yr.SUBMITTED, "ACCEPTED": yr.ACCEPTED,
    "RUNNING": yr.RUNNING, "FINISHED": yr.FINISHED, "FAILED": yr.FAILED, "KILLED": yr.KILLED,
}
APP_STATE_NAMES = {v: k for k, v in APP_STATES.items()}
FINAL_STATUSES = {"UNDEFINED": yr.APP_UNDEFINED, "SUCCEEDED": yr.APP_SUCCEEDED, "FAILED": yr.APP_FAILED,
                  "KILLED": yr.APP_KILLED, "ENDED": yr.APP_ENDED}
FINAL_STATUS_NAMES = {v: k for k, v in FINAL_STATUSES.items()}
ATTEMPT_STATES = {  # shepherd's attempt states are RMAppAttemptState names, as YarnApplicationAttemptState has them
    "NEW": yr.APP_ATTEMPT_NEW, "SUBMITTED": yr.APP_ATTEMPT_SUBMITTED, "SCHEDULED": yr.APP_ATTEMPT_SCHEDULED,
    "ALLOCATED_SAVING": yr.APP_ATTEMPT_ALLOCATED_SAVING, "ALLOCATED": yr.APP_ATTEMPT_ALLOCATED,
    "LAUNCHED": yr.APP_ATTEMPT_LAUNCHED, "FAILED": yr.APP_ATTEMPT_FAILED, "RUNNING": yr.APP_ATTEMPT_RUNNING,
    "FINISHING": yr.APP_ATTEMPT_FINISHING, "FINISHED": yr.APP_ATTEMPT_FINISHED, "KILLED": yr.APP_ATTEMPT_KILLED,
}
NODE_STATES = {
    "NEW": yr.NS_NEW, "RUNNING": yr.NS_RUNNING, "UNHEALTHY": yr.NS_UNHEALTHY,
    "DECOMMISSIONED": yr.NS_DECOMMISSIONED, "LOST": yr.NS_LOST, "REBOOTED": yr.NS_REBOOTED,
    "DECOMMISSIONING": yr.NS_DECOMMISSIONING, "SHUTDOWN": yr.NS_SHUTDOWN,
}
NODE_STATE_NAMES = {v: k for k, v in NODE_STATES.items()}
INACTIVE_NODE_STATES = ("LOST", "SHUTDOWN", "DECOMMISSIONED", "REBOOTED")
DEFAULT_MAX_ALLOCATION = Resources.of(memory_mb=8192, vcores=4)  # YARN's defaults, before any node registers


def hadoop_node_id(node: Node) -> str:
    port = getattr(node, "ipc_port", 0)
    return f"{node.host}:{port}" if port else node.node_id


def node_by_hadoop_id(st: Ledger, node_id: str) -> Node | None:
    for node in st.nodes.values():
        if hadoop_node_id(node) == node_id:
            return node
    return None


def queue_leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def max_allocation(st: Ledger) -> Resources:
    return st.max_allocation() or DEFAULT_MAX_ALLOCATION


def amrm_token_for(st: Ledger, attempt_id: str, service: str) -> ipc.Token:
    return tokens.amrm_token(st.amrm_key, attempt_id, service)


UNAVAILABLE = "N/A"


def _unknown_resource() -> yr.Resource:
    return yr.Resource(memory=-1, virtual_cores=-1)


def restricted_app_report(st: Ledger, app: App) -> yr.ApplicationReport:
    """The report of an app for a caller without VIEW_APP on it, as YARN's RMAppImpl builds it with access
    refused: host, tracking URLs and diagnostics unavailable, no progress, a placeholder attempt id (-1) and
    the placeholder usage report (every count and resource -1); state, times, type, tags and priority as
    they are."""
    state, final_status = st.reported_state(app)
    return yr.ApplicationReport(
        application_id=records.app_id_pb(app.app_id), user=app.user, queue=queue_leaf(app.queue), name=app.name,
        host=UNAVAILABLE, rpc_port=-1, yarn_application_state=APP_STATES.get(state, yr.NEW),
        tracking_url=UNAVAILABLE, original_tracking_url=UNAVAILABLE, diagnostics=UNAVAILABLE,
        start_time=int(app.start_time * 1000), finish_time=int(app.finish_time * 1000),
        final_application_status=FINAL_STATUSES.get(final_status, yr.APP_UNDEFINED), progress=0.0,
        application_type=app.app_type, application_tags=list(app.tags), unmanaged_application=app.unmanaged,
        priority=yr.Priority(priority=app.priority), launch_time=int(app.launch_time * 1000),
        submit_time=int(app.submit_time * 1000),
        current_application_attempt_id=yr.ApplicationAttemptId(
            application_id=records.app_id_pb(app.app_id), attempt_id=-1),
        app_resource_usage=yr.ApplicationResourceUsageReport(
            num_used_containers=-1, num_reserved_containers=-1, used_resources=_unknown_resource(),
            reserved_resources=_unknown_resource(), needed_resources=_unknown_resource()),
    )


def app_report(st: Ledger, app: App, *, scheduler_address: str, web_url: str, caller: str = "", full: bool = True
               ) -> yr.ApplicationReport:
    """``caller``: the remote user; the submitter of an unmanaged app gets its AMRMToken. ``full`` False: the
    restricted report (:func:`restricted_app_report`)."""
    if not full:
        return restricted_app_report(st, app)
    att = app.current
    state, final_status = st.reported_state(app)
    report = yr.ApplicationReport(
        application_id=records.app_id_pb(app.app_id), user=app.user, queue=queue_leaf(app.queue), name=app.name,
        host=(att.host if att and att.host else "N/A"), rpc_port=(att.rpc_port if att and att.host else -1),
        yarn_application_state=APP_STATES.get(state, yr.NEW),
        tracking_url=tracking_url_of(app.app_id, web_url, app.tracking_url),
        original_tracking_url=app.tracking_url or "N/A",
        diagnostics=app.diagnostics or "", start_time=int(app.start_time * 1000),
        finish_time=int(app.finish_time * 1000),
        final_application_status=FINAL_STATUSES.get(final_status, yr.APP_UNDEFINED),
        progress=app.progress, application_type=app.app_type, application_tags=list(app.tags),
        unmanaged_application=app.unmanaged, priority=yr.Priority(priority=app.priority),
        launch_time=int(app.launch_time * 1000), submit_time=int(app.submit_time * 1000),
    )
    if att is not None:
        report.current_application_attempt_id.CopyFrom(records.attempt_id_pb(att.attempt_id))
        if app.unmanaged and caller == app.user and not att.final and not app.final:
            # an unmanaged AM (run by the client itself) gets its AMRMToken here
            report.am_rm_token.CopyFrom(amrm_token_for(st, att.attempt_id, scheduler_address))
    usage = report.app_resource_usage
    usage.num_used_containers = len(app.containers)
    usage.used_resources.CopyFrom(records.resource_pb(app.used))
    usage.memory_seconds = int(app.memory_seconds)
    usage.vcore_seconds = int(app.vcore_seconds)
    capacity = st.cluster_capacity()
    if not capacity.is_zero():
        usage.cluster_usage_percentage = 100.0 * app.used.dominant_share(capacity)
    return report


def tracking_url_of(app_id: str, web_url: str, url: str) -> str:
    """The tracking URL a report shows: the AM's own, else the RM's page of the app."""
    return url or f"{web_url}/cluster/app/{app_id}"


def attempt_report(att: Attempt, *, web_url: str) -> yr.ApplicationAttemptReport:
    """An attempt as YARN's RMAppAttemptImpl reports it: the AM's host and RPC port once it registered (N/A and
    -1 before), its tracking URL, the AM container once allocated (never for an unmanaged AM)."""
    report = yr.ApplicationAttemptReport(
        application_attempt_id=records.attempt_id_pb(att.attempt_id),
        host=att.host or UNAVAILABLE, rpc_port=att.rpc_port if att.host else -1,
        tracking_url=tracking_url_of(att.app_id, web_url, att.tracking_url),
        original_tracking_url=att.tracking_url or UNAVAILABLE,
        diagnostics=att.diagnostics, yarn_application_attempt_state=ATTEMPT_STATES.get(att.state, yr.APP_ATTEMPT_NEW),
        start_time=int(att.start_time * 1000), finish_time=int(att.finish_time * 1000),
    )
    if att.am_container_id:
        report.am_container_id.CopyFrom(records.container_id_pb(att.am_container_id))
    return report


def container_report(st: Ledger, c: Container) -> yr.ContainerReport:
    """A container as YARN's RMContainerImpl reports it: RUNNING until it completes (exit status 0, diagnostics
    unset), then COMPLETE with its exit status and diagnostics; the node's Hadoop id and web address."""
    node = st.nodes.get(c.node_id)
    report = yr.ContainerReport(
        container_id=records.container_id_pb(c.container_id), resource=records.resource_pb(c.resource),
        node_id=records.node_id_pb(hadoop_node_id(node) if node is not None else c.node_id),
        priority=yr.Priority(priority=c.priority), creation_time=int(c.allocate_time * 1000),
        finish_time=int(c.finish_time * 1000), container_state=yr.C_RUNNING if c.live else yr.C_COMPLETE,
        container_exit_status=0 if c.live else c.exit_status, log_url=logs_url(node, c.container_id),
        node_http_address=f"http://{node.http_address}" if node is not None and node.http_address else "",
    )
    if not c.live:
        report.diagnostics_info = c.diagnostics
    return report


def node_report(node: Node) -> yr.NodeReport:
    return yr.NodeReport(
        node_id=records.node_id_pb(hadoop_node_id(node)), http_address=node.http_address, rack_name=node.rack,
        used=records.resource_pb(node.allocated), capability=records.resource_pb(node.capability),
        num_containers=len(node.containers), node_state=NODE_STATES.get(node.state, yr.NS_NEW),
        health_report=node.health_report, last_health_report_time=int(node.last_health_update * 1000),
    )


def cluster_metrics(st: Ledger) -> yr.YarnClusterMetrics:
    count: dict[str, int] = {}
    for n in st.nodes.values():
        count[n.state] = count.get(n.state, 0) + 1
    active = sum(v for k, v in count.items() if k not in INACTIVE_NODE_STATES)
    fields = {
        "num_node_managers": active, "num_decommissioned_nms": count.get("DECOMMISSIONED", 0),
        "num_active_nms": count.get("RUNNING", 0), "num_lost_nms": count.get("LOST", 0),
        "num_unhealthy_nms": count.get("UNHEALTHY", 0), "num_rebooted_nms": count.get("REBOOTED", 0),
        "num_decommissioning_nms": count.get("DECOMMISSIONING", 0),
        "num_shutdown_nms": count.get("SHUTDOWN", 0),
    }
    return yr.YarnClusterMetrics(**{k: v for k, v in fields.items() if v})  # zeros are the defaults


def queue_info(st: Ledger, path: str, *, children: bool, recursive: bool, apps: bool,
               scheduler_address: str, web_url: str, may_view: Callable[[App], bool] = lambda app: True
               ) -> yr.QueueInfo:
    """``may_view``: whether the caller sees an app of the queue in full (else its restricted report)."""
    q = st.queues[path]  # type: ignore[index]
    used = Resources()
    queue_apps = [a for a in st.apps.values() if a.queue == path or a.queue.startswith(path + ".")]
    for a in queue_apps:
        if not a.final:
            used = used + a.used
    capacity = st.cluster_capacity()
    guaranteed = capacity.amounts and q.abs_capacity
    current = used.dominant_share(capacity) / q.abs_capacity if guaranteed else 0.0
    info = yr.QueueInfo(
        queue_name=queue_leaf(q.path), queue_path=q.path, capacity=q.capacity, maximum_capacity=q.max_capacity,
        current_capacity=current, state=yr.Q_RUNNING if q.running else yr.Q_STOPPED, weight=q.weight,
    )
    if children or recursive:
        for child in q.children:
            info.child_queues.append(queue_info(st, child, children=False, recursive=recursive, apps=apps,
                                                scheduler_address=scheduler_address, web_url=web_url,
                                                may_view=may_view))
    if apps and q.is_leaf:
        info.applications.extend(app_report(st, a, scheduler_address=scheduler_address, web_url=web_url,
                                            full=may_view(a)) for a in queue_apps)
    return info
