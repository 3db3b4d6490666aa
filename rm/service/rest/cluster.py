"""Cluster-wide YARN endpoints: info, metrics, scheduler, nodes, app statistics, and the /cluster probe."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from common.errors import BadRequest, NotFound
from rm.core.records import APP_STATES
from rm.service.rest import render
from rm.service.views import cluster_metrics, queue_metrics

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

NODE_STATES = ("NEW", "RUNNING", "UNHEALTHY", "DECOMMISSIONING", "DECOMMISSIONED", "LOST", "REBOOTED",
               "SHUTDOWN")
BASE = "/ws/v1/cluster"


def parse_states(text: str | None, allowed: tuple[str, ...], what: str) -> set[str]:
    """A comma list of states, case-insensitive; an unknown one is a 400 naming the allowed values."""
    out: set[str] = set()
    for part in (text or "").split(","):
        s = part.strip().upper()
        if not s:
            continue
        if s not in allowed:
            raise BadRequest(f"Invalid {what} {part.strip()} specified. It should be one of "
                             f"[{', '.join(allowed)}]")
        out.add(s)
    return out


def add_cluster_routes(api: FastAPI, rm: ResourceManager) -> None:
    @api.get("/cluster", response_class=HTMLResponse, tags=["web"], summary="Web UI landing page")
    async def cluster_page() -> str:
        m = render.cluster_metrics(cluster_metrics(rm.state))
        rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in m.items())
        return ("<!doctype html><html><head><title>shepherd ResourceManager</title></head><body>"
                "<h1>shepherd ResourceManager</h1><p>REST API under <a href='/ws/v1/cluster/info'>"
                "/ws/v1/cluster</a>; API docs at <a href='/docs'>/docs</a>; Prometheus metrics at "
                f"<a href='/metrics'>/metrics</a>.</p><h2>Cluster metrics</h2><table>{rows}</table>"
                "</body></html>")

    @api.get(BASE, tags=["cluster"], summary="Cluster information")
    @api.get(f"{BASE}/info", tags=["cluster"], summary="Cluster information")
    async def info() -> dict[str, Any]:
        return {"clusterInfo": render.info(rm)}

    @api.get(f"{BASE}/metrics", tags=["cluster"], summary="Cluster metrics")
    async def metrics() -> dict[str, Any]:
        return {"clusterMetrics": render.cluster_metrics(cluster_metrics(rm.state))}

    @api.get(f"{BASE}/scheduler", tags=["cluster"], summary="Scheduler and queue tree (capacity scheduler)")
    async def scheduler() -> dict[str, Any]:
        return {"scheduler": {"schedulerInfo": render.scheduler_json(rm, queue_metrics(rm.state))}}

    @api.get(f"{BASE}/nodes", tags=["nodes"], summary="NodeManagers, optionally by state")
    async def nodes(states: str | None = None, state: str | None = None) -> dict[str, Any]:
        wanted = parse_states(states, NODE_STATES, "node state") | parse_states(state, NODE_STATES, "node state")
        rows = [render.node_json(n, rm.now()) for _, n in sorted(rm.state.nodes.items())
                if not wanted or n.state in wanted]
        return {"nodes": {"node": rows}}

    @api.get(f"{BASE}/nodes/{{node_id}}", tags=["nodes"], summary="One NodeManager")
    async def node(node_id: str) -> dict[str, Any]:
        for nid, n in rm.state.nodes.items():
            if nid == node_id:
                return {"node": render.node_json(n, rm.now())}
        raise NotFound(f"nodeId, {node_id}, is not found")

    @api.get(f"{BASE}/appstatistics", tags=["apps"], summary="Application counts by state and type")
    async def app_statistics(states: str | None = None, applicationTypes: str | None = None
                             ) -> dict[str, Any]:
        wanted = parse_states(states, APP_STATES, "application-state") or set(APP_STATES)
        types = {t.strip().lower() for t in (applicationTypes or "").split(",") if t.strip()}
        if len(types) > 1:
            raise BadRequest("# of applicationTypes = " + str(len(types)) + ", we temporarily support at most "
                             "one applicationType")
        counts: dict[str, int] = dict.fromkeys(sorted(wanted), 0)
        for app in rm.state.apps.values():
            if app.state in wanted and (not types or app.app_type.lower() in types):
                counts[app.state] += 1
        kind = next(iter(types)) if types else "*"
        return {"appStatInfo": {"statItem": [{"state": s, "type": kind, "count": n} for s, n in counts.items()]}}
