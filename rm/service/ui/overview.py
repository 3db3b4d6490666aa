"""The cluster overview (``/`` and ``/ui``): the numbers of ``/ws/v1/cluster/metrics``, usage by queue and a
grid of nodes coloured by how much of each is allocated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from common.resources import Resources
from rm.service.rest import render
from rm.service.ui.page import badge, bar, cards, esc, fmt_mb, page, pct, q, section, table
from rm.service.views import cluster_metrics, queue_metrics

if TYPE_CHECKING:
    from rm.core.entities import Node
    from rm.service.server import ResourceManager

APP_LINKS = {
    "appsSubmitted": "/ui/apps", "appsPending": "/ui/apps?state=NEW,NEW_SAVING,SUBMITTED,ACCEPTED",
    "appsRunning": "/ui/apps?state=RUNNING", "appsCompleted": "/ui/apps?state=FINISHED",
    "appsFailed": "/ui/apps?state=FAILED", "appsKilled": "/ui/apps?state=KILLED",
}


def overview_page(rm: ResourceManager) -> str:
    st = rm.state
    now = rm.now()
    m = render.cluster_metrics(cluster_metrics(st))
    apps = cards([
        ("appsSubmitted", "apps submitted", m["appsSubmitted"]),
        ("appsPending", "pending", m["appsPending"]),
        ("appsRunning", "running", m["appsRunning"]),
        ("appsCompleted", "completed", m["appsCompleted"]),
        ("appsFailed", "failed", m["appsFailed"]),
        ("appsKilled", "killed", m["appsKilled"]),
        ("containersAllocated", "containers running", m["containersAllocated"]),
        ("containersPending", "containers pending", m["containersPending"]),
    ], APP_LINKS)
    resources = table(
        ["", "total", "used", "available", "pending", "used of total"],
        [_resource_row("memory", "MB", m["totalMB"], m["allocatedMB"], m["availableMB"], m["pendingMB"]),
         _resource_row("vcores", "VirtualCores", m["totalVirtualCores"], m["allocatedVirtualCores"],
                       m["availableVirtualCores"], m["pendingVirtualCores"])],
        cls="resources",
    )
    nodes = cards([
        ("totalNodes", "nodes", m["totalNodes"]),
        ("activeNodes", "active", m["activeNodes"]),
        ("unhealthyNodes", "unhealthy", m["unhealthyNodes"]),
        ("decommissioningNodes", "decommissioning", m["decommissioningNodes"]),
        ("decommissionedNodes", "decommissioned", m["decommissionedNodes"]),
        ("lostNodes", "lost", m["lostNodes"]),
        ("rebootedNodes", "rebooted", m["rebootedNodes"]),
        ("shutdownNodes", "shut down", m["shutdownNodes"]),
    ])
    body = (section("Applications", apps) + section("Resources", resources)
            + section("Nodes by state", nodes) + section("Usage by queue", _queue_usage(rm))
            + section("Node grid", _node_grid(list(st.nodes.values()))))
    return page("Cluster overview", "overview", body, now=now)


def _resource_row(name: str, suffix: str, total: int, used: int, avail: int, pending: int) -> str:
    show = fmt_mb if name == "memory" else str
    share = pct(used, total)
    return (f"<tr><th>{name}</th><td data-metric=\"total{suffix}\">{show(total)}</td>"
            f"<td data-metric=\"allocated{suffix}\">{show(used)}</td>"
            f"<td data-metric=\"available{suffix}\">{show(avail)}</td>"
            f"<td data-metric=\"pending{suffix}\">{show(pending)}</td>"
            f"<td>{bar(share, label=f'{share:.0f}%')}</td></tr>")


def _queue_usage(rm: ResourceManager) -> str:
    st = rm.state
    total = st.cluster_capacity()
    per_queue = queue_metrics(st)
    rows = []
    for path in sorted(st.queues):
        queue = st.queues[path]
        if queue.children:
            continue
        mv = per_queue.get(path)
        if mv is None:
            continue
        used = mv.allocated.dominant_share(total) * 100 if not total.is_zero() else 0.0
        guaranteed = queue.abs_capacity * 100
        rows.append(
            f'<tr><td><a href="/ui/apps?queue={esc(q(path))}">{esc(path)}</a></td>'
            f"<td>{mv.apps_running}</td><td>{mv.apps_pending}</td>"
            f"<td>{fmt_mb(mv.allocated.memory_mb)} / {mv.allocated.vcores} vcores</td>"
            f"<td>{bar(used, label=f'{used:.1f}% of cluster (guaranteed {guaranteed:.0f}%)')}</td></tr>")
    return table(["queue", "running", "pending", "used", "share of the cluster"], rows, empty="no leaf queues")


def _node_grid(nodes: list[Node]) -> str:
    if not nodes:
        return "<p class=\"muted\">No NodeManager has registered.</p>"
    tiles = []
    for n in sorted(nodes, key=lambda n: (n.rack, n.node_id)):
        share = used_of(n.capability, n.allocated)
        level = min(4, int(share // 25)) if n.state == "RUNNING" else "off"
        free = (n.capability - n.allocated).clamp_min_zero()
        tip = (f"{n.node_id} ({n.rack}) {n.state}: {share:.0f}% allocated, "
               f"{fmt_mb(free.memory_mb)} and {free.vcores} vcores free, {len(n.containers)} containers")
        tiles.append(f'<a class="tile u{level}" href="/ui/nodes/{esc(q(n.node_id))}" title="{esc(tip)}" '
                     f'data-node="{esc(n.node_id)}" data-used="{share:.1f}">'
                     f'<span class="tname">{esc(n.node_id)}</span>'
                     f'<span class="tpct">{share:.0f}%</span>{_mini_state(n.state)}</a>')
    legend = ('<p class="legend"><span class="tile-key u0"></span>&lt;25% <span class="tile-key u1"></span>25–50% '
              '<span class="tile-key u2"></span>50–75% <span class="tile-key u3"></span>75–100% '
              '<span class="tile-key u4"></span>full <span class="tile-key uoff"></span>not schedulable</p>')
    return f'<div class="grid">{"".join(tiles)}</div>{legend}'


def _mini_state(state: str) -> str:
    return "" if state == "RUNNING" else badge(state)


def used_of(capability: Resources, allocated: Resources) -> float:
    """Percent of a node's capability allocated, by its dominant resource."""
    return allocated.dominant_share(capability) * 100 if not capability.is_zero() else 0.0
