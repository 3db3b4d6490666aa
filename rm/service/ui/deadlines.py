"""Apps that bought a deadline (``/ui/deadlines``), grouped on track / at risk / met / missed, and the deadline
panel of an app's page. Both render ``deadline_json``, the object of ``/ws/v1/shepherd/deadlines``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rm.service.rest.deadlines import deadline_json
from rm.service.ui.page import badge, bar, cards, esc, fmt_duration, fmt_ms, page, pct, q, section, table

if TYPE_CHECKING:
    from rm.service.operations import Operations
    from rm.service.server import ResourceManager

STATUSES = ("ON_TRACK", "AT_RISK", "MET", "MISSED")


def deadline_panel(d: dict[str, Any]) -> str:
    if not d:
        return '<p class="muted">No deadline.</p>'
    est = d["estimate"]
    laxity = d["laxity"]
    rows = [
        ("status", badge(d["status"])),
        ("deadline", fmt_ms(d["deadline"])),
        ("earliest feasible finish (at purchase)", fmt_ms(d["earliestFinish"])),
        ("finished", fmt_ms(d["finishedTime"]) if d["finishedTime"] else "—"),
        ("price", f'{d["price"]} tokens' + (f' (quote {esc(d["quoteId"])})' if d["quoteId"] else "")),
        ("estimated work", (f'{est["mean"]} ± {est["stddev"]} unit·s (upper {est["piUpper"]}, {esc(est["method"])}, '
                           f'{est["runs"]} runs)')),
        ("work to go", f'{d["remainingWork"]} unit·s'),
        ("laxity", "—" if laxity is None else fmt_duration(laxity)),
    ]
    body = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv" data-deadline-status="{esc(d["status"])}">{body}</table>'


def deadlines_page(rm: ResourceManager, ops: Operations, queue: str | None) -> str:
    now = rm.now()
    items = [deadline_json(a, rm.state.deadlines, now) for a in ops.deadline_apps(queue)]
    counts = {s: sum(1 for d in items if d["status"] == s) for s in STATUSES}
    summary = cards([(s, s.replace("_", " ").lower(), counts[s]) for s in STATUSES])
    groups = []
    for status in STATUSES:
        rows = [_row(d, now) for d in items if d["status"] == status]
        if rows:
            groups.append(section(f"{status.replace('_', ' ').title()} ({len(rows)})",
                                  table(["app", "name", "queue", "user", "state", "deadline", "time left",
                                         "laxity", "work to go", "price"], rows, cls="deadlines"),
                                  ident=status.lower()))
    if not groups:
        groups.append('<p class="muted">No application has bought a deadline (see <code>shepherd job quote</code> '
                      "and docs/deadlines.md).</p>")
    return page("Deadlines", "deadlines", summary + "".join(groups), now=now)


def _row(d: dict[str, Any], now: float) -> str:
    left = d["deadline"] / 1000 - now
    laxity = d["laxity"]
    upper = float(d["estimate"]["piUpper"]) or 1.0
    done = pct(upper - float(d["remainingWork"]), upper)
    to_go = f"{d['remainingWork']} unit·s"
    return (f'<tr data-app="{esc(d["id"])}" data-status="{esc(d["status"])}">'
            f'<td><a href="/ui/apps/{esc(q(d["id"]))}">{esc(d["id"])}</a></td><td>{esc(d["name"])}</td>'
            f'<td>{esc(d["queue"])}</td><td>{esc(d["user"])}</td><td>{badge(d["state"])}</td>'
            f'<td>{fmt_ms(d["deadline"])}</td><td>{fmt_duration(left) if d["finishedTime"] is None else "—"}</td>'
            f'<td>{"—" if laxity is None else fmt_duration(laxity)}</td>'
            f'<td>{bar(done, label=to_go)}</td><td>{d["price"]}</td></tr>')
