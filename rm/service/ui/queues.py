"""The queue tree (``/ui/queues``), drawn from ``scheduler_json``, the object of ``/ws/v1/cluster/scheduler``.

Each queue's bar spans the whole cluster: the solid part is what it uses (``absoluteUsedCapacity``), the
hatched part after it what its apps wait for, the tick its guarantee (``absoluteCapacity``) and the shaded
end what it may never grow into (past ``absoluteMaxCapacity``). The numbers are in the row and in ``data-``
attributes, so a script can check them against the REST API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from common.ids import QueuePath
from rm.service.rest import render
from rm.service.ui.page import badge, esc, fmt_mb, page, q, section, table
from rm.service.views import QueueMetricsView, queue_metrics

if TYPE_CHECKING:
    from rm.service.server import ResourceManager


def queues_page(rm: ResourceManager) -> str:
    st = rm.state
    per_queue = queue_metrics(st)
    tree = render.scheduler_json(rm, per_queue)
    total = st.cluster_capacity()
    rows: list[str] = []
    users: list[str] = []

    def walk(node: dict[str, Any], depth: int) -> None:
        path = QueuePath(node["queuePath"])
        m = per_queue.get(path, QueueMetricsView())
        pending = round(m.pending.dominant_share(total) * 100, 3) if not total.is_zero() else 0.0
        rows.append(_row(node, depth, pending, m))
        for u in (node.get("users") or {}).get("user", []):
            r = u["resourcesUsed"]
            users.append(f"<tr><td>{esc(path)}</td><td>{esc(u['username'])}</td><td>{u['numActiveApplications']}</td>"
                         f"<td>{u['numPendingApplications']}</td><td>{fmt_mb(r['memory'])}, {r['vCores']} vcores</td>"
                         "</tr>")
        for child in (node.get("queues") or {}).get("queue", []):
            walk(child, depth + 1)

    walk(tree, 0)
    legend = ('<p class="legend"><span class="qkey used"></span>used <span class="qkey pend"></span>pending '
              '<span class="qkey cap"></span>guaranteed capacity <span class="qkey over"></span>beyond maximum '
              "capacity — all as a share of the whole cluster</p>")
    body = (section("Queue tree", legend + table(["queue", "state", "apps running / pending", "used",
                                                  "cluster share"], rows, cls="queues"))
            + section("Users", table(["queue", "user", "running", "pending", "used"], users,
                                     empty="no user has an unfinished application")))
    return page("Queues", "queues", body, now=rm.now())


def _row(node: dict[str, Any], depth: int, pending: float, m: QueueMetricsView) -> str:
    cap, used, most = node["absoluteCapacity"], node["absoluteUsedCapacity"], node["absoluteMaxCapacity"]
    pend_w = max(0.0, min(100.0 - used, pending))
    qbar = (f'<span class="qbar" data-queue="{esc(node["queuePath"])}" data-capacity="{cap}" data-used="{used}" '
            f'data-max="{most}" data-pending="{pending}">'
            f'<span class="used" style="width:{min(100.0, used):.3f}%"></span>'
            f'<span class="pend" style="left:{min(100.0, used):.3f}%;width:{pend_w:.3f}%"></span>'
            f'<span class="over" style="left:{min(100.0, most):.3f}%;width:{max(0.0, 100.0 - most):.3f}%"></span>'
            f'<span class="cap" style="left:{min(100.0, cap):.3f}%"></span></span>')
    text = (f'<span class="barlabel">used {used:.1f}% · guaranteed {cap:.1f}% · max {most:.1f}%'
            + (f" · pending {pending:.1f}%" if pending else "") + "</span>")
    name = esc(node["queueName"])
    link = f'<a href="/ui/apps?queue={esc(q(node["queuePath"]))}">{name}</a>'
    res = node["resourcesUsed"]
    path_note = "" if depth == 0 else f'<span class="muted"> {esc(node["queuePath"])}</span>'
    return (f'<tr data-queue="{esc(node["queuePath"])}"><td style="padding-left:{0.5 + depth * 1.4:.1f}em">'
            f'{link}{path_note}</td><td>{badge(node["state"])}</td>'
            f"<td>{m.apps_running} / {m.apps_pending}</td>"
            f'<td>{fmt_mb(res["memory"])}, {res["vCores"]} vcores</td><td class="qcell">{qbar}{text}</td></tr>')
