"""The NodeManager's own web page (``/`` and ``/node`` on its HTTP port): one server-rendered HTML document
without external assets — the node's id, state and health, its resources total and in use, the
ResourceManager it reports to, its running and recently completed containers with links to their logs, and a
link back to the RM's web UI. Built from the same dictionaries the JSON paths serve; ``now_ms`` is an argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from common.resources import MEMORY, VCORES

STYLE = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2329;background:#f6f7f9}"
    "header{background:#24303c;color:#fff;padding:10px 20px;display:flex;gap:18px;align-items:baseline}"
    "header a{color:#cfe3ff}main{padding:8px 20px 24px}h1{font-size:20px;margin:10px 0}"
    "h2{font-size:16px;margin:22px 0 8px}table{border-collapse:collapse;background:#fff;min-width:40%}"
    "th,td{border:1px solid #d5d9de;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#eef0f3}.muted{color:#6b7580}.ok{color:#1e7e34}.bad{color:#b02a37}"
    ".bar{display:inline-block;width:140px;height:9px;background:#e3e6ea;margin-left:8px;vertical-align:middle}"
    ".bar i{display:block;height:100%;background:#4a90d9}"
)


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def fmt_ms(ms: int | None) -> str:
    if not ms:
        return "—"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def ago(ms: int | None, now_ms: int) -> str:
    if not ms:
        return ""
    s = max(0, (now_ms - ms) // 1000)
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f" ({s // size} {unit} ago)"
    return f" ({s} s ago)"


def node_state(info: Mapping[str, Any]) -> str:
    """The node as this NodeManager sees it: RUNNING, UNHEALTHY, or REGISTERING (not registered yet)."""
    if not info.get("registered"):
        return "REGISTERING"
    return "RUNNING" if info.get("nodeHealthy", True) else "UNHEALTHY"


def _amount(key: str, value: int) -> str:
    if key == MEMORY:
        return f"{value / 1024:g} GB" if value >= 1024 and value % 1024 == 0 else f"{value} MB"
    return f"{value} {'vcores' if key == VCORES else key}"


def _resources(total: Mapping[str, int], used: Mapping[str, int]) -> str:
    rows = []
    for key in sorted(total, key=lambda k: (k not in (MEMORY, VCORES), k)):
        t, u = int(total[key]), int(used.get(key, 0))
        share = min(100.0, 100.0 * u / t) if t > 0 else 0.0
        rows.append(f'<tr data-resource="{esc(key)}"><th>{esc(key)}</th><td>{esc(_amount(key, u))} of '
                    f'{esc(_amount(key, t))}<span class="bar" title="{share:.0f}%"><i style="width:{share:.0f}%">'
                    "</i></span></td></tr>")
    return "<table>" + "".join(rows) + "</table>"


def _logs(c: Mapping[str, Any]) -> str:
    cid = quote(str(c["id"]), safe="")
    files = c.get("containerLogFiles") or ["stdout", "stderr"]
    return " ".join(f'<a href="/ws/v1/node/containers/{cid}/logs/{quote(str(f), safe="")}">{esc(f)}</a>'
                    for f in files)


def _containers(items: Sequence[Mapping[str, Any]], now_ms: int, *, done: bool, empty: str) -> str:
    if not items:
        return f'<p class="muted">{esc(empty)}</p>'
    head = ["container", "application", "user", "memory", "vcores", "started"]
    head += ["finished", "exit code", "diagnostics"] if done else ["state"]
    head.append("logs")
    rows = []
    for c in items:
        cells = [f'<a href="/ws/v1/node/containers/{quote(str(c["id"]), safe="")}">{esc(c["id"])}</a>',
                 esc(c.get("appId", "")), esc(c.get("user", "")), esc(_amount(MEMORY, int(c.get("totalMemoryNeededMB", 0)))),
                 esc(c.get("totalVCoresNeeded", 0)), esc(fmt_ms(c.get("startTime"))) + esc(ago(c.get("startTime"), now_ms))]
        if done:
            cells += [esc(fmt_ms(c.get("finishTime"))), esc(c.get("exitCode", "")), esc(c.get("diagnostics") or "")]
        else:
            cells.append(esc(c.get("state", "")))
        cells.append(_logs(c))
        rows.append(f'<tr data-container="{esc(c["id"])}">' + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    return ("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>")


def node_page(info: Mapping[str, Any], containers: Sequence[Mapping[str, Any]], *, rm_web_url: str,
              now_ms: int) -> str:
    """The whole HTML document. ``info`` is ``/ws/v1/node/info``'s nodeInfo, ``containers`` the container
    objects of ``/ws/v1/node/containers``; ``rm_web_url`` the RM's web address ("" when unknown)."""
    node_id = str(info.get("id", ""))
    state = node_state(info)
    running = [c for c in containers if c.get("state") != "COMPLETE"]
    recent = sorted((c for c in containers if c.get("state") == "COMPLETE"),
                    key=lambda c: int(c.get("finishTime") or 0), reverse=True)
    rm_link = ""
    if rm_web_url:
        base = rm_web_url.rstrip("/")
        rm_link = (f'<a id="rm-ui" href="{esc(base)}/ui/nodes/{quote(node_id, safe="")}">this node in the '
                   f'ResourceManager\'s UI</a> · <a href="{esc(base)}/ui">cluster overview</a>')
    health = info.get("healthReport") or ""
    cls = "ok" if state == "RUNNING" else "bad"
    facts = [
        ("node id", esc(node_id)),
        ("state", f'<span id="state" class="{cls}">{esc(state)}</span>' + (f" — {esc(health)}" if health else "")),
        ("ResourceManager", esc(info.get("resourceManagerAddress", "")) + (f" · {rm_link}" if rm_link else "")),
        ("rack", esc(info.get("rack", ""))),
        ("version", esc(info.get("nodeManagerVersion", ""))),
        ("memory enforcement", esc(info.get("memoryEnforcement", ""))),
        ("last health check", esc(fmt_ms(info.get("lastNodeUpdateTime")))),
    ]
    body = (
        "<table>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts) + "</table>"
        + "<h2>Resources (in use of total)</h2>"
        + _resources(info.get("capability") or {}, info.get("used") or {})
        + f'<h2 id="running">Running containers ({len(running)})</h2>'
        + _containers(running, now_ms, done=False, empty="No container runs here.")
        + f'<h2 id="recent">Recently completed containers ({len(recent)})</h2>'
        + _containers(recent, now_ms, done=True, empty="None kept (completed containers stay listed for a while).")
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>NodeManager {esc(node_id)} · shepherd</title><style>{STYLE}</style>"
        '<link rel="icon" href="data:,"></head><body>'  # no favicon request
        f"<header><strong>shepherd NodeManager</strong><span>{esc(node_id)}</span>"
        + (f'<a href="{esc(rm_web_url.rstrip("/"))}/ui">ResourceManager UI</a>' if rm_web_url else "")
        + f'</header><main><h1>Node {esc(node_id)}</h1>{body}<p class="muted">Rendered {esc(fmt_ms(now_ms))} '
        'UTC. JSON: <a href="/ws/v1/node/info">/ws/v1/node/info</a> · '
        '<a href="/ws/v1/node/containers">/ws/v1/node/containers</a> · <a href="/metrics">metrics</a></p>'
        "</main></body></html>"
    )
