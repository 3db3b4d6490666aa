"""The applications table (``/ui/apps``): filters by state, queue, user, type and tag kept in the URL, newest
first, one page at a time. The filters run over the ledger's apps directly and only the page shown is rendered
(through the REST layer's ``app_json``, so the numbers are the REST API's), which keeps a page of a
10,000-app cluster well under the 500 ms budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from rm.core.records import APP_STATES
from rm.service.rest import render
from rm.service.ui.page import Reader, badge, bar, esc, fmt_duration, fmt_ms, page, q, table

if TYPE_CHECKING:
    from rm.core.entities import App
    from rm.service.server import ResourceManager

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


@dataclass(frozen=True, slots=True)
class AppFilter:
    """What ``/ui/apps?state=&queue=&user=&type=&tag=`` asks for; empty fields match everything.

    ``state`` is a comma list of YARN app states (as the REST ``states`` filter); ``queue`` matches the queue and
    its descendants, by full path or leaf name; ``type`` and ``tag`` compare case-insensitively."""

    states: frozenset[str] = frozenset()
    queue: str = ""
    user: str = ""
    app_type: str = ""
    tag: str = ""

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> tuple[AppFilter, list[str]]:
        """The filter, and a message for each part of the query that was not understood (and ignored)."""
        problems: list[str] = []
        states: set[str] = set()
        for part in params.get("state", "").split(","):
            s = part.strip().upper()
            if not s:
                continue
            if s in APP_STATES:
                states.add(s)
            else:
                problems.append(f"unknown state {part.strip()!r} (one of {', '.join(APP_STATES)})")
        return cls(frozenset(states), params.get("queue", "").strip(), params.get("user", "").strip(),
                   params.get("type", "").strip().lower(), params.get("tag", "").strip().lower()), problems

    def query(self) -> dict[str, str]:
        out = {"state": ",".join(sorted(self.states)), "queue": self.queue, "user": self.user,
               "type": self.app_type, "tag": self.tag}
        return {k: v for k, v in out.items() if v}


def matching(rm: ResourceManager, f: AppFilter) -> list[App]:
    """The apps ``f`` selects, newest submission first (ties broken by id)."""
    queues = _queues(rm, f.queue) if f.queue else None
    out = []
    for app in rm.state.apps.values():
        if f.states and app.state not in f.states:
            continue
        if f.user and app.user != f.user:
            continue
        if queues is not None and app.queue not in queues:
            continue
        if f.app_type and app.app_type.lower() != f.app_type:
            continue
        if f.tag and f.tag not in (t.lower() for t in app.tags):
            continue
        out.append(app)
    out.sort(key=lambda a: (a.submit_time, a.app_id), reverse=True)
    return out


def _queues(rm: ResourceManager, name: str) -> set[str]:
    paths = [p for p in rm.state.queues if p == name or p.rsplit(".", 1)[-1] == name]
    return {p for p in rm.state.queues for base in paths if p == base or p.startswith(f"{base}.")} or {name}


def _int(text: str | None, default: int, lo: int, hi: int) -> int:
    try:
        return max(lo, min(hi, int(text))) if text else default
    except ValueError:
        return default


def apps_page(rm: ResourceManager, params: Mapping[str, str], reader: Reader | None = None) -> str:
    f, problems = AppFilter.parse(params)
    size = _int(params.get("size"), PAGE_SIZE, 1, MAX_PAGE_SIZE)
    apps = matching(rm, f)
    pages = max(1, -(-len(apps) // size))
    number = _int(params.get("page"), 1, 1, pages)
    shown = apps[(number - 1) * size: number * size]
    rows = [_row(render.app_json(rm, a, with_requests=False, full=reader is None or reader.may_view(a)))
            for a in shown]
    warn = "".join(f'<p class="warn">{esc(p)}; ignored.</p>' for p in problems)
    summary = (f'<p class="muted" id="count" data-total="{len(apps)}">{len(apps)} application(s) match; '
               f"page {number} of {pages}.</p>")
    body = (_filters(rm, f, size) + warn + summary
            + table(["id", "name", "type", "user", "queue", "state", "final status", "progress", "started",
                     "elapsed", "priority", "% of cluster", "containers"], rows, cls="apps",
                    empty="no application matches")
            + _pager(f, number, pages, size))
    return page("Applications", "apps", body, now=rm.now(), reader=reader)


def _row(a: dict[str, Any]) -> str:
    app_id = str(a["id"])
    progress = float(a["progress"])
    containers = a["runningContainers"] if int(a["runningContainers"]) >= 0 else "—"
    return (
        f'<tr data-app="{esc(app_id)}" data-state="{esc(a["state"])}">'
        f'<td><a href="/ui/apps/{esc(q(app_id))}">{esc(app_id)}</a></td><td>{esc(a["name"])}</td>'
        f'<td>{esc(a["applicationType"])}</td><td>{esc(a["user"])}</td><td>{esc(a["queue"])}</td>'
        f'<td>{badge(str(a["state"]))}</td><td>{esc(a["finalStatus"])}</td>'
        f'<td class="progress">{bar(progress, label=f"{progress:.0f}%")}</td>'
        f'<td>{fmt_ms(a["startedTime"])}</td>'
        f'<td>{fmt_duration(int(a["elapsedTime"]) / 1000)}</td>'
        f'<td>{esc(a["priority"])}</td><td>{float(a["clusterUsagePercentage"]):.1f}</td>'
        f"<td>{esc(containers)}</td></tr>"
    )


def _filters(rm: ResourceManager, f: AppFilter, size: int) -> str:
    state_opts = "".join(
        f'<option value="{s}"{" selected" if f.states == {s} else ""}>{s}</option>' for s in APP_STATES)
    if len(f.states) > 1:
        joined = ",".join(sorted(f.states))
        state_opts += f'<option value="{esc(joined)}" selected>{esc(joined)}</option>'
    queue_opts = "".join(
        f'<option value="{esc(p)}"{" selected" if f.queue == p else ""}>{esc(p)}</option>'
        for p in sorted(rm.state.queues))
    if f.queue and f.queue not in rm.state.queues:
        queue_opts += f'<option value="{esc(f.queue)}" selected>{esc(f.queue)}</option>'
    return (
        '<form class="filters" method="get" action="/ui/apps">'
        f'<label>state <select name="state"><option value="">any</option>{state_opts}</select></label>'
        f'<label>queue <select name="queue"><option value="">any</option>{queue_opts}</select></label>'
        f'<label>user <input name="user" value="{esc(f.user)}" size="10"></label>'
        f'<label>type <input name="type" value="{esc(f.app_type)}" size="10"></label>'
        f'<label>tag <input name="tag" value="{esc(f.tag)}" size="10"></label>'
        f'<input type="hidden" name="size" value="{size}">'
        '<button type="submit">filter</button> <a href="/ui/apps">clear</a></form>'
    )


def _pager(f: AppFilter, number: int, pages: int, size: int) -> str:
    if pages <= 1:
        return ""

    def link(n: int, text: str) -> str:
        query = urlencode({**f.query(), "page": str(n), **({"size": str(size)} if size != PAGE_SIZE else {})})
        return f'<a href="/ui/apps?{esc(query)}">{esc(text)}</a>'

    parts = []
    if number > 1:
        parts += [link(1, "« first"), link(number - 1, "‹ previous")]
    parts.append(f"<span>page {number} of {pages}</span>")
    if number < pages:
        parts += [link(number + 1, "next ›"), link(pages, "last »")]
    return f'<nav class="pager">{" ".join(parts)}</nav>'
