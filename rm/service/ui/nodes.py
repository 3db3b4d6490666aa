"""NodeManagers (``/ui/nodes``) and one of them (``/ui/nodes/{id}``), from ``node_json``, the object of
``/ws/v1/cluster/nodes``, plus the containers the RM placed there."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from common.errors import NotFound
from common.ids import NodeId
from common.resources import MEMORY, VCORES
from rm.service.rest import render
from rm.service.ui.page import (
    badge,
    bar,
    esc,
    fmt_duration,
    fmt_mb,
    fmt_ms,
    fmt_time,
    page,
    pct,
    q,
    section,
    table,
)

if TYPE_CHECKING:
    from rm.service.server import ResourceManager


def nodes_page(rm: ResourceManager) -> str:
    now = rm.now()
    rows = [_row(render.node_json(n), now) for _, n in sorted(rm.state.nodes.items())]
    body = table(["node", "rack", "state", "containers", "memory used", "vcores used", "last health update",
                  "health report"], rows, cls="nodes", empty="no NodeManager has registered")
    return page("Nodes", "nodes", body, now=now)


def _usage(j: dict[str, Any]) -> tuple[str, str]:
    total, used = j["totalResource"], j["usedResource"]
    mem = pct(used["memory"], total["memory"])
    cpu = pct(used["vCores"], total["vCores"])
    return (bar(mem, label=f'{fmt_mb(used["memory"])} of {fmt_mb(total["memory"])}', attrs=f'data-used="{mem:.2f}"'),
            bar(cpu, label=f'{used["vCores"]} of {total["vCores"]}', attrs=f'data-used="{cpu:.2f}"'))


def _row(j: dict[str, Any], now: float) -> str:
    mem, cpu = _usage(j)
    seen = j["lastHealthUpdate"] / 1000
    ago = f"{fmt_duration(now - seen)} ago" if seen else "—"
    return (f'<tr data-node="{esc(j["id"])}" data-state="{esc(j["state"])}">'
            f'<td><a href="/ui/nodes/{esc(q(j["id"]))}">{esc(j["id"])}</a></td><td>{esc(j["rack"])}</td>'
            f'<td>{badge(j["state"])}</td><td>{j["numContainers"]}</td><td>{mem}</td><td>{cpu}</td>'
            f'<td title="{esc(fmt_ms(j["lastHealthUpdate"]))}">{ago}</td>'
            f'<td class="wrap">{esc(j["healthReport"]) or "healthy"}</td></tr>')


def node_page(rm: ResourceManager, node_id: str) -> str:
    n = rm.state.nodes.get(NodeId(node_id))
    if n is None:
        raise NotFound(f"nodeId, {node_id}, is not found")
    j = render.node_json(n)
    mem, cpu = _usage(j)
    http = j["nodeHTTPAddress"]
    facts = [
        ("state", badge(j["state"])),
        ("rack", esc(j["rack"])),
        ("host", esc(j["nodeHostName"])),
        ("NodeManager web", f'<a href="http://{esc(http)}/" rel="noreferrer">{esc(http)}</a>' if http else "—"),
        ("memory", mem),
        ("vcores", cpu),
        ("health", esc(j["healthReport"]) or "healthy"),
        ("last health update", fmt_ms(j["lastHealthUpdate"])),
        ("registered", fmt_time(n.registered_at)),
    ]
    extra = sorted(r for r in n.capability.amounts if r not in (MEMORY, VCORES))
    for r in extra:
        facts.append((r, f"{n.allocated.get(r)} of {n.capability.get(r)}"))
    summary = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in facts)
    live = sorted((rm.state.containers[c] for c in n.containers if c in rm.state.containers),
                  key=lambda c: c.container_id)
    rows = []
    for c in live:
        rows.append(f'<tr data-container="{esc(c.container_id)}"><td>{esc(c.container_id)}</td>'
                    f'<td><a href="/ui/apps/{esc(q(c.app_id))}">{esc(c.app_id)}</a></td>'
                    f'<td>{"AM" if c.is_am else "task"}</td><td>{badge(c.state)}</td>'
                    f"<td>{fmt_mb(c.resource.memory_mb)}, {c.resource.vcores} vcores</td>"
                    f"<td>{fmt_time(c.start_time)}</td>"
                    f'<td><a href="{esc(render.logs_url(n, c.container_id))}" rel="noreferrer">logs</a></td></tr>')
    body = (f'<section><table class="kv" id="summary" data-state="{esc(j["state"])}">{summary}</table></section>'
            + section(f"Containers ({len(live)})",
                      table(["container", "application", "role", "state", "resource", "started", "logs"], rows,
                            empty="no container runs here")))
    return page(f"Node {node_id}", "nodes", body, now=rm.now())
