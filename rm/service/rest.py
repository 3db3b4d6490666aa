"""HTTP front door: YARN's ResourceManager REST API (``/ws/v1/cluster``) and Prometheus ``/metrics``.

Shapes, field names and error bodies follow Hadoop YARN so existing clients work unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from rm.core.entities import App, Node
from rm.core.errors import BadRequest, NotFound, YarnError
from rm.core.records import APP_STATES
from rm.service.views import cluster_metrics, queue_usage

if TYPE_CHECKING:
    from rm.service.server import ResourceManager


def remote_exception(err: YarnError) -> JSONResponse:
    return JSONResponse(
        status_code=err.status,
        content={"RemoteException": {"exception": err.exception, "message": err.message,
                                     "javaClassName": err.java_class}},
    )


def _ms(t: float) -> int:
    return int(t * 1000)


def app_json(rm: ResourceManager, app: App) -> dict[str, Any]:
    st = rm.state
    att = app.current
    capacity = st.cluster_capacity()
    pending, _, pend_default, pend_alt = st.pending_of(app)
    elapsed = (app.finish_time or rm.now()) - app.start_time if app.start_time else 0.0
    out: dict[str, Any] = {
        "id": app.app_id,
        "user": app.user,
        "name": app.name,
        "queue": app.queue,
        "state": app.state,
        "finalStatus": app.final_status,
        "progress": round(app.progress * 100, 2),
        "trackingUI": "History" if app.final else "ApplicationMaster",
        "diagnostics": app.diagnostics,
        "clusterId": st.meta.cluster_timestamp,
        "applicationType": app.app_type,
        "applicationTags": ",".join(app.tags),
        "priority": app.priority,
        "startedTime": _ms(app.start_time),
        "launchTime": _ms(app.launch_time),
        "finishedTime": _ms(app.finish_time),
        "elapsedTime": int(elapsed * 1000),
        "allocatedMB": app.used.memory_mb if not app.final else -1,
        "allocatedVCores": app.used.vcores if not app.final else -1,
        "runningContainers": len(app.containers) if not app.final else -1,
        "memorySeconds": int(app.memory_seconds),
        "vcoreSeconds": int(app.vcore_seconds),
        "queueUsagePercentage": 0.0,
        "clusterUsagePercentage": round(app.used.dominant_share(capacity) * 100, 3) if not capacity.is_zero()
        else 0.0,
        "preemptedResourceMB": 0,
        "preemptedResourceVCores": 0,
        "numNonAMContainerPreempted": 0,
        "numAMContainerPreempted": 0,
        "logAggregationStatus": "DISABLED",
        "unmanagedApplication": app.unmanaged,
        "amNodeLabelExpression": "",
        "pendingMB": pending.memory_mb,
        "pendingVCores": pending.vcores,
        # shepherd's additions
        "fairShareMB": app.fair_share.memory_mb,
        "fairShareVCores": app.fair_share.vcores,
        "pendingDefaultAsks": pend_default,
        "pendingAltruisticAsks": pend_alt,
        "leftoverContainers": app.leftover_containers,
    }
    if app.tracking_url:
        out["trackingUrl"] = app.tracking_url
    if att is not None and att.am_container_id and att.node_id in st.nodes:
        node = st.nodes[att.node_id]  # type: ignore[index]
        out["amHostHttpAddress"] = node.http_address
        out["amContainerLogs"] = f"http://{node.http_address}/ws/v1/node/containers/{att.am_container_id}/logs"
        out["amRPCAddress"] = f"{att.host}:{att.rpc_port}" if att.host else ""
    return out


def node_json(n: Node) -> dict[str, Any]:
    free = (n.capability - n.allocated).clamp_min_zero()
    return {
        "id": n.node_id,
        "rack": n.rack,
        "state": n.state,
        "nodeHostName": n.host,
        "nodeHTTPAddress": n.http_address,
        "lastHealthUpdate": _ms(n.last_health_update),
        "healthReport": n.health_report,
        "numContainers": len(n.containers),
        "usedMemoryMB": n.allocated.memory_mb,
        "availMemoryMB": free.memory_mb,
        "usedVirtualCores": n.allocated.vcores,
        "availableVirtualCores": free.vcores,
        "version": "shepherd",
        "totalResource": {"memory": n.capability.memory_mb, "vCores": n.capability.vcores},
        "usedResource": {"memory": n.allocated.memory_mb, "vCores": n.allocated.vcores},
        "availableResource": {"memory": free.memory_mb, "vCores": free.vcores},
    }


def build_app(rm: ResourceManager) -> FastAPI:
    api = FastAPI(title="shepherd ResourceManager", docs_url="/docs", redoc_url=None)

    @api.exception_handler(YarnError)
    async def _yarn_error(request: Request, exc: YarnError) -> JSONResponse:
        return remote_exception(exc)

    @api.get("/cluster")
    async def cluster_page() -> dict[str, Any]:
        return {"clusterInfo": _info(rm)}

    @api.get("/metrics")
    async def prometheus() -> Response:
        return Response(generate_latest(rm.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @api.get("/ws/v1/cluster")
    @api.get("/ws/v1/cluster/info")
    async def info() -> dict[str, Any]:
        return {"clusterInfo": _info(rm)}

    @api.get("/ws/v1/cluster/metrics")
    async def metrics() -> dict[str, Any]:
        m = cluster_metrics(rm.state)
        return {"clusterMetrics": {
            "appsSubmitted": m.apps_submitted, "appsCompleted": m.apps_completed,
            "appsPending": m.apps_pending, "appsRunning": m.apps_running, "appsFailed": m.apps_failed,
            "appsKilled": m.apps_killed,
            "reservedMB": 0, "availableMB": m.available.memory_mb, "allocatedMB": m.allocated.memory_mb,
            "pendingMB": m.pending.memory_mb,
            "reservedVirtualCores": 0, "availableVirtualCores": m.available.vcores,
            "allocatedVirtualCores": m.allocated.vcores, "pendingVirtualCores": m.pending.vcores,
            "containersAllocated": m.containers_allocated, "containersReserved": 0,
            "containersPending": m.containers_pending,
            "totalMB": m.total.memory_mb, "totalVirtualCores": m.total.vcores,
            "totalNodes": sum(m.nodes.values()), "activeNodes": m.nodes.get("RUNNING", 0),
            "lostNodes": m.nodes.get("LOST", 0), "unhealthyNodes": m.nodes.get("UNHEALTHY", 0),
            "decommissioningNodes": 0, "decommissionedNodes": m.nodes.get("DECOMMISSIONED", 0),
            "rebootedNodes": 0, "shutdownNodes": m.nodes.get("SHUTDOWN", 0),
        }}

    @api.get("/ws/v1/cluster/nodes")
    async def nodes(states: str | None = None) -> dict[str, Any]:
        wanted = {s.strip().upper() for s in states.split(",")} if states else set()
        rows = [node_json(n) for n in rm.state.nodes.values() if not wanted or n.state in wanted]
        return {"nodes": {"node": rows}}

    @api.get("/ws/v1/cluster/nodes/{node_id}")
    async def node(node_id: str) -> dict[str, Any]:
        n = rm.state.nodes.get(node_id)  # type: ignore[call-overload]
        if n is None:
            raise NotFound(f"nodeId, {node_id}, is not found")
        return {"node": node_json(n)}

    @api.get("/ws/v1/cluster/apps")
    async def apps(states: str | None = None, queue: str | None = None, user: str | None = None,
                   limit: int | None = None) -> dict[str, Any]:
        wanted = set()
        if states:
            for s in states.split(","):
                s = s.strip().upper()
                if s not in APP_STATES:
                    raise BadRequest(f"Invalid application-state {s} specified. It should be one of "
                                     + ", ".join(APP_STATES))
                wanted.add(s)
        rows = []
        for app in rm.state.apps.values():
            if wanted and app.state not in wanted:
                continue
            if queue and app.queue not in (queue, f"root.{queue}"):
                continue
            if user and app.user != user:
                continue
            rows.append(app_json(rm, app))
        if limit is not None and limit > 0:
            rows = rows[:limit]
        return {"apps": {"app": rows}}

    @api.get("/ws/v1/cluster/apps/{app_id}")
    async def app(app_id: str) -> dict[str, Any]:
        return {"app": app_json(rm, rm.state.get_app(app_id))}

    @api.get("/ws/v1/cluster/apps/{app_id}/state")
    async def app_state(app_id: str) -> dict[str, Any]:
        return {"state": rm.state.get_app(app_id).state}

    @api.get("/ws/v1/cluster/apps/{app_id}/appattempts")
    async def attempts(app_id: str) -> dict[str, Any]:
        st = rm.state
        a = st.get_app(app_id)
        rows = []
        for att in a.attempts:
            node = st.nodes.get(att.node_id) if att.node_id else None
            rows.append({
                "id": att.number, "appAttemptId": att.attempt_id, "startTime": _ms(att.start_time),
                "finishedTime": _ms(att.finish_time), "containerId": att.am_container_id or "",
                "nodeId": att.node_id or "", "nodeHttpAddress": node.http_address if node else "",
                "logsLink": f"http://{node.http_address}/ws/v1/node/containers/{att.am_container_id}/logs"
                if node else "", "appAttemptState": att.state, "diagnosticsInfo": att.diagnostics,
            })
        return {"appAttempts": {"appAttempt": rows}}

    @api.get("/ws/v1/cluster/scheduler")
    async def scheduler() -> dict[str, Any]:
        return {"scheduler": {"schedulerInfo": _queue_json(rm, "root")}}

    return api


def _info(rm: ResourceManager) -> dict[str, Any]:
    ts = rm.state.meta.cluster_timestamp
    return {
        "id": ts,
        "startedOn": ts,
        "state": "STARTED",
        "haState": "ACTIVE",
        "rmStateStoreName": "shepherd.SqlStateStore",
        "resourceManagerVersion": "shepherd-0.1.0",
        "resourceManagerBuildVersion": "shepherd-0.1.0",
        "resourceManagerVersionBuiltOn": "",
        "hadoopVersion": "3.3.6",
        "hadoopBuildVersion": "3.3.6 (shepherd)",
        "hadoopVersionBuiltOn": "",
        "haZooKeeperConnectionState": "Could not find leader elector. Verify both HA and automatic "
                                      "failover are enabled.",
    }


def _queue_json(rm: ResourceManager, path: str) -> dict[str, Any]:
    st = rm.state
    usage = queue_usage(st)
    total = st.cluster_capacity()

    def build(p: str) -> dict[str, Any]:
        q = st.queues[p]  # type: ignore[index]
        used, napps = usage.get(p, (None, 0))
        used_mb = used.memory_mb if used is not None else 0
        used_vc = used.vcores if used is not None else 0
        guaranteed = total.memory_mb * q.abs_capacity
        node: dict[str, Any] = {
            "queueName": p.rsplit(".", 1)[-1],
            "queuePath": p,
            "capacity": q.capacity * 100,
            "usedCapacity": round(used_mb / guaranteed * 100, 3) if guaranteed else 0.0,
            "maxCapacity": q.max_capacity * 100,
            "absoluteCapacity": q.abs_capacity * 100,
            "absoluteMaxCapacity": q.abs_max_capacity * 100,
            "absoluteUsedCapacity": round(used_mb / total.memory_mb * 100, 3) if total.memory_mb else 0.0,
            "numApplications": napps,
            "resourcesUsed": {"memory": used_mb, "vCores": used_vc},
            "state": "RUNNING" if q.running else "STOPPED",
            "weight": q.weight,
        }
        if q.children:
            node["queues"] = {"queue": [build(c) for c in q.children]}
        else:
            node["type"] = "capacitySchedulerLeafQueueInfo"
        return node

    root = build(path)
    root["type"] = "capacityScheduler"
    return root
