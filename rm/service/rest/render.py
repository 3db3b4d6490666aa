"""YARN's JSON shapes for the RM state: the app, attempt, node, scheduler, metrics and info objects."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from common.ids import QueuePath
from common.resources import MEMORY, VCORES, Resources
from rm.core.entities import App, Attempt, Node
from rm.service.rest.deadlines import deadline_json
from rm.service.views import ClusterMetricsView, QueueMetricsView

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

VERSION = "shepherd-0.1.0"
HADOOP_VERSION = "3.3.6"
INACTIVE_NODE_STATES = frozenset({"LOST", "DECOMMISSIONED", "REBOOTED", "SHUTDOWN"})


def ms(t: float) -> int:
    return int(t * 1000)


def yarn_resource(r: Resources) -> dict[str, int]:
    return {"memory": r.get(MEMORY), "vCores": r.get(VCORES)}


def logs_url(node: Node | None, container_id: str | None) -> str:
    if node is None or not container_id:
        return ""
    return f"http://{node.http_address}/ws/v1/node/containers/{container_id}/logs"


def info(rm: ResourceManager) -> dict[str, Any]:
    ts = rm.state.meta.cluster_timestamp
    return {
        "id": ts,
        "startedOn": ts,
        "state": "STARTED",
        "haState": "ACTIVE",
        "rmStateStoreName": "shepherd.SqlStateStore",
        "resourceManagerVersion": VERSION,
        "resourceManagerBuildVersion": VERSION,
        "resourceManagerVersionBuiltOn": "",
        "hadoopVersion": HADOOP_VERSION,
        "hadoopBuildVersion": f"{HADOOP_VERSION} ({VERSION})",
        "hadoopVersionBuiltOn": "",
        "haZooKeeperConnectionState": "ResourceManager HA is not enabled.",
    }


def cluster_metrics(m: ClusterMetricsView) -> dict[str, Any]:
    return {
        "appsSubmitted": m.apps_submitted, "appsCompleted": m.apps_completed, "appsPending": m.apps_pending,
        "appsRunning": m.apps_running, "appsFailed": m.apps_failed, "appsKilled": m.apps_killed,
        "reservedMB": 0, "availableMB": m.available.memory_mb, "allocatedMB": m.allocated.memory_mb,
        "pendingMB": m.pending.memory_mb, "totalMB": m.total.memory_mb,
        "reservedVirtualCores": 0, "availableVirtualCores": m.available.vcores,
        "allocatedVirtualCores": m.allocated.vcores, "pendingVirtualCores": m.pending.vcores,
        "totalVirtualCores": m.total.vcores,
        "containersAllocated": m.containers_allocated, "containersReserved": 0,
        "containersPending": m.containers_pending,
        "totalNodes": sum(m.nodes.values()), "activeNodes": m.nodes.get("RUNNING", 0),
        "lostNodes": m.nodes.get("LOST", 0), "unhealthyNodes": m.nodes.get("UNHEALTHY", 0),
        "decommissioningNodes": m.nodes.get("DECOMMISSIONING", 0),
        "decommissionedNodes": m.nodes.get("DECOMMISSIONED", 0),
        "rebootedNodes": m.nodes.get("REBOOTED", 0), "shutdownNodes": m.nodes.get("SHUTDOWN", 0),
    }


UNAVAILABLE = "N/A"
# what a caller without VIEW_APP on an app still sees of it (Hadoop's AppInfo without access, and the RPC
# report's restricted fields): who, what and where it is, its state and times, never what it runs or uses
PUBLIC_APP_FIELDS = ("id", "user", "name", "queue", "state", "finalStatus", "trackingUI", "clusterId",
                     "applicationType", "applicationTags", "priority", "startedTime", "launchTime", "finishedTime",
                     "elapsedTime", "logAggregationStatus", "unmanagedApplication", "appNodeLabelExpression",
                     "amNodeLabelExpression", "runAttempts")
RESTRICTED_APP_FIELDS: dict[str, Any] = {
    "progress": 0.0, "diagnostics": UNAVAILABLE, "allocatedMB": -1, "allocatedVCores": -1, "runningContainers": -1,
    "memorySeconds": 0, "vcoreSeconds": 0, "queueUsagePercentage": 0.0, "clusterUsagePercentage": 0.0,
    "preemptedResourceMB": 0, "preemptedResourceVCores": 0, "numNonAMContainerPreempted": 0,
    "numAMContainerPreempted": 0, "pendingMB": 0, "pendingVCores": 0, "fairShareMB": 0, "fairShareVCores": 0,
    "pendingDefaultAsks": 0, "pendingAltruisticAsks": 0, "leftoverContainers": 0,
}


class AppsView:
    """What every app's report in one answer shares, worked out once for the answer: the cluster's capacity,
    each queue's guaranteed part of it and the time."""

    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm
        self.now = rm.now()
        self.capacity = rm.state.cluster_capacity()
        self._guaranteed: dict[QueuePath, Resources] = {}

    def guaranteed(self, queue: QueuePath) -> Resources:
        found = self._guaranteed.get(queue)
        if found is None:
            q = self.rm.state.queues.get(queue)
            found = Resources({r: int(v * q.abs_capacity) for r, v in self.capacity.amounts.items()}) if q \
                else Resources()
            self._guaranteed[queue] = found
        return found


def app_json(rm: ResourceManager, app: App, *, with_requests: bool = True, full: bool = True,
             view: AppsView | None = None) -> dict[str, Any]:
    """YARN's AppInfo. ``full`` False: the restricted view a caller without VIEW_APP on the app gets (the
    tracking URL, the AM's container, host and logs, the deadline terms and the pending requests left out).
    ``view``: the answer's shared figures, when it reports many apps."""
    out = _app_json(rm, app, with_requests=with_requests, view=view or AppsView(rm))
    if full:
        return out
    restricted = {k: out[k] for k in PUBLIC_APP_FIELDS if k in out} | RESTRICTED_APP_FIELDS
    if with_requests:
        restricted["resourceRequests"] = []
    return restricted


def _app_json(rm: ResourceManager, app: App, *, with_requests: bool, view: AppsView) -> dict[str, Any]:
    st = rm.state
    att = app.current
    capacity = view.capacity
    pending, _, pend_default, pend_alt = st.pending_of(app)
    end = app.finish_time or view.now
    guaranteed = view.guaranteed(app.queue)
    registered = att is not None and att.registered
    state, final_status = st.reported_state(app)
    out: dict[str, Any] = {
        "id": app.app_id,
        "user": app.user,
        "name": app.name,
        "queue": app.queue,
        "state": state,
        "finalStatus": final_status,
        "progress": round(app.progress * 100, 2),
        "trackingUI": "History" if app.final else ("ApplicationMaster" if registered else "UNASSIGNED"),
        "diagnostics": app.report_diagnostics(),
        "clusterId": st.meta.cluster_timestamp,
        "applicationType": app.app_type,
        "applicationTags": ",".join(app.tags),
        "priority": app.priority,
        "startedTime": ms(app.start_time),
        "launchTime": ms(app.launch_time),
        "finishedTime": ms(app.finish_time),
        "elapsedTime": max(0, ms(end) - ms(app.start_time)) if app.start_time else 0,
        "allocatedMB": app.used.memory_mb if not app.final else -1,
        "allocatedVCores": app.used.vcores if not app.final else -1,
        "runningContainers": len(app.containers) if not app.final else -1,
        "memorySeconds": int(app.memory_seconds),
        "vcoreSeconds": int(app.vcore_seconds),
        "queueUsagePercentage": round(app.used.dominant_share(guaranteed) * 100, 3)
        if not guaranteed.is_zero() else 0.0,
        "clusterUsagePercentage": round(app.used.dominant_share(capacity) * 100, 3)
        if not capacity.is_zero() else 0.0,
        "preemptedResourceMB": app.preempted.memory_mb,
        "preemptedResourceVCores": app.preempted.vcores,
        "numNonAMContainerPreempted": app.preempted_containers,
        "numAMContainerPreempted": app.preempted_am_containers,
        "logAggregationStatus": "DISABLED",
        "unmanagedApplication": app.unmanaged,
        "appNodeLabelExpression": "",
        "amNodeLabelExpression": "",
        # shepherd's additions (extra fields only; every YARN field keeps its meaning)
        "pendingMB": pending.memory_mb,
        "pendingVCores": pending.vcores,
        "fairShareMB": app.fair_share.memory_mb,
        "fairShareVCores": app.fair_share.vcores,
        "pendingDefaultAsks": pend_default,
        "pendingAltruisticAsks": pend_alt,
        "leftoverContainers": app.leftover_containers,
        "runAttempts": len(app.attempts),
    }
    if app.tracking_url:
        out["trackingUrl"] = app.tracking_url
    if att is not None and att.am_container_id:
        out["amContainerId"] = att.am_container_id
        node = st.nodes.get(att.node_id) if att.node_id else None
        if node is not None:
            out["amHostHttpAddress"] = node.http_address
            out["amContainerLogs"] = logs_url(node, att.am_container_id)
        if att.host:
            out["amRPCAddress"] = f"{att.host}:{att.rpc_port}"
    if app.terms.claim is not None:
        out["deadline"] = deadline_json(app, st.deadlines, view.now)
    if with_requests:
        out["resourceRequests"] = resource_requests(app)
    return out


def resource_requests(app: App) -> list[dict[str, Any]]:
    att = app.current
    if app.final or att is None or att.final:
        return []
    out: list[dict[str, Any]] = []
    if att.am_ask_pending:
        out.append(_request(app.am_resource, 1, 0, "*", True, -1))
    for a in att.asks.values():
        if a.num_containers > 0:
            name = a.nodes[0] if len(a.nodes) == 1 and not a.relax_locality else "*"
            out.append(_request(a.capability, a.num_containers, a.priority, name, a.relax_locality,
                                a.allocation_request_id))
    return out


def _request(r: Resources, n: int, priority: int, name: str, relax: bool, request_id: int) -> dict[str, Any]:
    return {"capability": yarn_resource(r), "numContainers": n, "priority": priority, "resourceName": name,
            "relaxLocality": relax, "nodeLabelExpression": "", "allocationRequestId": request_id}


def attempt_json(rm: ResourceManager, att: Attempt) -> dict[str, Any]:
    node = rm.state.nodes.get(att.node_id) if att.node_id else None
    return {
        "id": att.number,
        "appAttemptId": att.attempt_id,
        "startTime": ms(att.start_time),
        "finishedTime": ms(att.finish_time),
        "containerId": att.am_container_id or "",
        "nodeId": att.node_id or "",
        "nodeHttpAddress": node.http_address if node else "",
        "logsLink": logs_url(node, att.am_container_id),
        "blacklistedNodes": ",".join(sorted(att.blacklist)),
        "appAttemptState": att.state,
        "diagnosticsInfo": att.diagnostics,
    }


def node_json(n: Node, now: float | None = None) -> dict[str, Any]:
    """YARN's NodeInfo; with ``now``, a decommissioning node's remaining ``decommissioningTimeout`` (seconds)."""
    free = (n.capability - n.allocated).clamp_min_zero()
    out = {
        "id": n.node_id,
        "rack": n.rack,
        "state": n.state,
        "nodeHostName": n.host,
        "nodeHTTPAddress": "" if n.state in INACTIVE_NODE_STATES else n.http_address,
        "lastHealthUpdate": ms(n.last_health_update),
        "version": VERSION,
        "healthReport": n.health_report,
        "numContainers": len(n.containers),
        "usedMemoryMB": n.allocated.memory_mb,
        "availMemoryMB": free.memory_mb,
        "usedVirtualCores": n.allocated.vcores,
        "availableVirtualCores": free.vcores,
        "resourceUtilization": {
            "nodePhysicalMemoryMB": 0, "nodeVirtualMemoryMB": 0, "nodeCPUUsage": 0.0,
            "aggregatedContainersPhysicalMemoryMB": 0, "aggregatedContainersVirtualMemoryMB": 0,
            "containersCPUUsage": 0.0,
        },
        "totalResource": yarn_resource(n.capability),
        "usedResource": yarn_resource(n.allocated),
        "availableResource": yarn_resource(free),
    }
    if n.decommission_deadline:
        out["decommissionDeadline"] = ms(n.decommission_deadline)
        if now is not None:
            out["decommissioningTimeout"] = max(0, math.ceil(n.decommission_deadline - now))
    return out


def timeout_json(app: App, now: float) -> dict[str, Any]:
    if not app.lifetime_expiry:
        return {"type": "LIFETIME", "expiryTime": "UNLIMITED", "remainingTimeInSeconds": -1}
    when = datetime.fromtimestamp(app.lifetime_expiry, tz=UTC)
    text = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}+0000"
    remaining = 0 if app.final else max(0, int(app.lifetime_expiry - now))
    return {"type": "LIFETIME", "expiryTime": text, "remainingTimeInSeconds": remaining}


def scheduler_json(rm: ResourceManager, per_queue: dict[QueuePath, QueueMetricsView]) -> dict[str, Any]:
    """The capacity scheduler's queue tree (the shape yarn-api-client's queue helpers walk)."""
    st = rm.state
    total = st.cluster_capacity()

    def pct(used: Resources, of: Resources) -> float:
        return round(used.dominant_share(of) * 100, 3) if not of.is_zero() else 0.0

    def scaled(fraction: float) -> Resources:
        return Resources({r: int(v * fraction + 1e-6) for r, v in total.amounts.items()})

    def build(path: QueuePath) -> dict[str, Any]:
        q = st.queues[path]
        m = per_queue.get(path, QueueMetricsView())
        guaranteed = scaled(q.abs_capacity)
        used_capacity = pct(m.allocated, guaranteed)
        abs_used = pct(m.allocated, total)
        node: dict[str, Any] = {
            "queueName": path.rsplit(".", 1)[-1],
            "queuePath": path,
            "capacity": round(q.capacity * 100, 4),
            "usedCapacity": used_capacity,
            "maxCapacity": round(q.max_capacity * 100, 4),
            "absoluteCapacity": round(q.abs_capacity * 100, 4),
            "absoluteMaxCapacity": round(q.abs_max_capacity * 100, 4),
            "absoluteUsedCapacity": abs_used,
            "weight": q.weight,
            "numApplications": m.apps_pending + m.apps_running,
            "usedResources": f"<memory:{m.allocated.memory_mb}, vCores:{m.allocated.vcores}>",
            "resourcesUsed": yarn_resource(m.allocated),
            "state": "RUNNING" if q.running else "STOPPED",
            "capacities": {"queueCapacitiesByPartition": [{
                "partitionName": "", "capacity": round(q.capacity * 100, 4), "usedCapacity": used_capacity,
                "maxCapacity": round(q.max_capacity * 100, 4),
                "absoluteCapacity": round(q.abs_capacity * 100, 4), "absoluteUsedCapacity": abs_used,
                "absoluteMaxCapacity": round(q.abs_max_capacity * 100, 4),
                "maxAMLimitPercentage": round(q.max_am_share * 100, 4),
            }]},
            "maximumAllocation": yarn_resource(rm.state.max_allocation() or Resources()),
        }
        if q.children:
            node["queues"] = {"queue": [build(c) for c in q.children]}
            return node
        users = _users(rm, path)
        node.update({
            "type": "capacitySchedulerLeafQueueInfo",
            "numActiveApplications": m.apps_running,
            "numPendingApplications": m.apps_pending,
            "numContainers": m.allocated_containers,
            "allocatedContainers": m.allocated_containers,
            "pendingContainers": m.pending_containers,
            "reservedContainers": 0,
            "maxApplications": 10000,
            "maxApplicationsPerUser": int(10000 * min(1.0, q.user_limit_factor)),
            "maxActiveApplications": 10000,
            "maxActiveApplicationsPerUser": int(10000 * min(1.0, q.user_limit_factor)),
            "userLimit": 100,
            "userLimitFactor": q.user_limit_factor,
            "users": {"user": users} if users else None,
            "defaultPriority": 0,
            "AMResourceLimit": yarn_resource(scaled(q.max_am_share * q.abs_max_capacity)),
            "usedAMResource": yarn_resource(m.am_used),
        })
        return node

    root = build(QueuePath("root"))
    root["type"] = "capacityScheduler"
    return root


def _users(rm: ResourceManager, path: QueuePath) -> list[dict[str, Any]]:
    by_user: dict[str, list[App]] = {}
    for app in rm.state.apps.values():
        if app.queue == path and not app.final:
            by_user.setdefault(app.user, []).append(app)
    out = []
    for user, apps in sorted(by_user.items()):
        used = Resources()
        for a in apps:
            used = used + a.used
        out.append({"username": user, "resourcesUsed": yarn_resource(used),
                    "numActiveApplications": sum(a.state == "RUNNING" for a in apps),
                    "numPendingApplications": sum(a.state != "RUNNING" for a in apps)})
    return out
