"""One application (``/ui/apps/{id}``): its state and times, progress, diagnostics, the DAG of a DAG job with
each stage's state, why it waits (the explain endpoint's answer), its deadline if it bought one, attempts,
containers with their NodeManager log links, and a kill button.

The kill button sends the REST API's own kill (``PUT /ws/v1/cluster/apps/{id}/state``) from the browser, with
the cluster's client secret when the user gives one: the UI holds no credential of its own, so a page opened
without the secret cannot kill anything on a secured cluster, and says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from am.policies.api import stage_index_of
from common.errors import ApplicationNotFound, NotFound
from rm.core.explain import explain
from rm.core.policies.api import queue_order
from rm.service.rest import render
from rm.service.rest.deadlines import deadline_json
from rm.service.stages import job_of, stage_states
from rm.service.ui.dag import dag_svg
from rm.service.ui.deadlines import deadline_panel
from rm.service.ui.page import (
    Reader,
    badge,
    bar,
    esc,
    fmt_duration,
    fmt_mb,
    fmt_ms,
    fmt_time,
    page,
    q,
    section,
    table,
)

if TYPE_CHECKING:
    from rm.core.entities import App, Container
    from rm.service.server import ResourceManager

MAX_CONTAINERS = 300  # rows on the page (the newest; the count says how many there are)


def app_page(rm: ResourceManager, app_id: str, reader: Reader | None = None) -> str:
    try:
        app = rm.state.get_app(app_id)
    except ApplicationNotFound:
        raise NotFound(f"app with id: {app_id} not found") from None
    if reader is not None and not reader.may_view(app):
        return _restricted(rm, app, reader)
    a = render.app_json(rm, app)
    containers = sorted((c for c in rm.state.containers.values() if c.app_id == app.app_id),
                        key=lambda c: (not c.live, -c.allocate_time, c.container_id))
    parts = [_summary(a), _kill(rm, app)]
    if a["diagnostics"]:
        parts.append(section("Diagnostics", f'<pre class="diag">{esc(a["diagnostics"])}</pre>'))
    job = job_of(app)
    if job is not None:
        parts.append(_dag(app, job, containers))
    if not app.final:
        parts.append(_why_pending(rm, app))
    if app.terms.claim is not None:
        parts.append(section("Deadline", deadline_panel(deadline_json(app, rm.state.deadlines, rm.now())),
                             ident="deadline"))
    parts.append(_estimate(rm, app))
    parts.append(section("Attempts", _attempts(rm, app)))
    parts.append(section(f"Containers ({len(containers)})", _containers(rm, containers, [s.name for s in job.stages] if job else []),
                         ident="containers"))
    return page(f"Application {app.app_id}", "apps", "".join(parts), now=rm.now(), reader=reader)


def _restricted(rm: ResourceManager, app: App, reader: Reader) -> str:
    """YARN's restricted report of an app the reader may not view: who may, and no diagnostics, DAG, attempts,
    containers or log links."""
    notice = (f'<p class="warn" id="restricted">User {esc(reader.who.user)} may not see the details of this '
              "application: its owner, the cluster's and its queue's administrators and the users of its VIEW_APP "
              "ACL may." + (" Sign in above with a credential of one of them." if reader.secured else "") + "</p>")
    parts = [notice, _summary(render.app_json(rm, app, full=False)), _kill(rm, app)]
    return page(f"Application {app.app_id}", "apps", "".join(parts), now=rm.now(), reader=reader)


def _summary(a: dict[str, Any]) -> str:
    progress = float(a["progress"])
    finished = int(a["finishedTime"])
    rows = [
        ("state", badge(a["state"]) + f' <span class="muted">final status {esc(a["finalStatus"])}</span>'),
        ("name", esc(a["name"])),
        ("queue", f'<a href="/ui/apps?queue={esc(q(a["queue"]))}">{esc(a["queue"])}</a>'),
        ("user", f'<a href="/ui/apps?user={esc(q(a["user"]))}">{esc(a["user"])}</a>'),
        ("type", esc(a["applicationType"])),
        ("tags", esc(a["applicationTags"]) or "—"),
        ("priority", esc(a["priority"])),
        ("progress", bar(progress, label=f"{progress:.0f}%", attrs=f'data-progress="{progress}"')),
        ("started", fmt_ms(a["startedTime"])),
        ("launched", fmt_ms(a["launchTime"])),
        ("finished", fmt_ms(finished)),
        ("elapsed", fmt_duration(int(a["elapsedTime"]) / 1000)),
        ("allocated", "—" if int(a["allocatedMB"]) < 0 else
         f'{fmt_mb(a["allocatedMB"])}, {a["allocatedVCores"]} vcores in {a["runningContainers"]} containers '
         f'({float(a["clusterUsagePercentage"]):.1f}% of the cluster)'),
        ("pending", f'{fmt_mb(a["pendingMB"])}, {a["pendingVCores"]} vcores'),
        ("resource use", f'{a["memorySeconds"]} MB·s, {a["vcoreSeconds"]} vcore·s'),
    ]
    if a.get("trackingUrl"):
        rows.append(("tracking URL", _link(a["trackingUrl"])))
    if a.get("amContainerLogs"):
        rows.append(("AM logs", _link(a["amContainerLogs"])))
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<section><table class="kv" id="summary" data-state="{esc(a["state"])}">{body}</table></section>'


def _link(url: str) -> str:
    return f'<a href="{esc(url)}" rel="noreferrer">{esc(url)}</a>'


def _kill(rm: ResourceManager, app: App) -> str:
    if app.final:
        return ""
    secured = bool(rm.cfg.client_secret)
    need = ("This cluster needs its client secret for any change (the <code>client_secret</code> of the "
            "RM's <code>credentials.json</code>): paste it below; it is kept only in this browser tab and sent as "
            "<code>Authorization: Bearer</code>. Without it the RM refuses the kill." if secured else
            "This cluster runs without secrets: anyone who reaches the REST API can kill applications.")
    return (
        f'<section class="kill" id="kill" data-app="{esc(app.app_id)}" data-secured="{str(secured).lower()}">'
        '<h2>Kill</h2>'
        f"<p class=\"muted\">{need}</p>"
        '<form id="kill-form" autocomplete="off">'
        + ('<label>client secret <input type="password" id="kill-secret" name="secret" size="28"></label> '
           if secured else "")
        + '<button type="submit" class="danger" id="kill-button">Kill application</button></form>'
        '<p id="kill-result" role="status"></p></section>'
    )


def _dag(app: App, job: Any, containers: list[Container]) -> str:
    stages = stage_states(app, job, containers)
    rows = [
        f'<tr data-stage="{esc(s.name)}" data-state="{s.state}"><td>{esc(s.name)}</td><td>{badge(s.state)}</td>'
        f"<td>{esc(', '.join(s.parents)) or '—'}</td><td>{s.done} / {s.tasks}</td><td>{s.running}</td>"
        f"<td>{s.waiting}</td><td>{s.failed}</td></tr>" for s in stages]
    legend = ('<p class="legend muted">Per stage, from the containers the RM placed for it: done tasks ended with '
              "exit 0; running ones hold a container; waiting ones are asked for and not yet placed.</p>")
    return section(f"DAG: {job.name or job.id}",
                   f'<div class="dagbox">{dag_svg(stages)}</div>{legend}'
                   + table(["stage", "state", "after", "done", "running", "waiting", "failed containers"],
                           rows, cls="stages"),
                   ident="dag")


def _why_pending(rm: ResourceManager, app: App) -> str:
    try:
        e = explain(rm.state, app.app_id, queue_order(rm.pipeline), now=rm.now()).to_dict()
    except ApplicationNotFound:
        return ""
    position = e.get("positionInQueue")
    where = (f"position {position} of {e['waitingInQueue']} waiting in {esc(e['queue'])}"
             if position else f"{e['waitingInQueue']} waiting in {esc(e['queue'])}")
    numbers = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in (e.get("numbers") or {}).items())
    asks = [f"<tr><td>{esc(x['allocationRequestId'])}{' (AM)' if x['am'] else ''}</td>"
            f"<td>{esc(_res(x['capability']))}</td><td>{esc(x['numContainers'])}</td><td><code>{esc(x['reason'])}"
            f"</code></td></tr>" for x in e.get("asks", [])]
    body = (f'<p><code class="reason" id="reason">{esc(e["reason"])}</code> {esc(e["message"])}</p>'
            f'<p class="muted">{where}; dominant share {float(e["dominantShare"]):.3f} '
            f'(fair {float(e["fairDominantShare"]):.3f}).</p>'
            + (f'<table class="kv">{numbers}</table>' if numbers else "")
            + (table(["request", "each", "containers", "waits because"], asks, cls="asks") if asks else ""))
    return section("Why it waits", body, ident="why")


def _estimate(rm: ResourceManager, app: App) -> str:
    """What the RM has measured of the app's size (``/ws/v1/shepherd/apps/{id}/estimate``), if anything."""
    d = rm.state.sizes.describe(app.app_id)
    size = app.terms.size
    if d.get("state") == "UNKNOWN" and size is None:
        return ""
    facts = [("state", esc(d.get("state", ""))),
             ("tasks finished", f'{esc(d.get("finishedTasks", 0))} of {esc(d.get("tasks", 0))}')]
    est = d.get("estimate")
    if est:
        facts.append(("measured", (f'{est["remainingTaskSeconds"]} of {est["totalTaskSeconds"]} task·s to go '
                                  f'({esc(est["source"])}, confidence {est["confidence"]})')))
    if size is not None:
        facts.append(("used by the scheduler", (f"{size.remaining_s:.1f} of {size.total_s or 0:.1f} task·s to go "
                                               f"({esc(size.source)}, confidence {size.confidence:.2f})")))
    gate = d.get("sampling")
    if gate:
        facts.append(("sampling", f'{gate["pilots"]} pilot tasks, gate {"open" if gate["open"] else "closed"}'))
    rows = [f"<tr><td>{esc(g['priority'])}</td><td>{esc(g['tasks'])}</td><td>{esc(g['finished'])}</td>"
            f"<td>{esc(g['meanRuntime'] if g['meanRuntime'] is not None else '—')}</td>"
            f"<td>{esc(g['declaredTaskSeconds'])}</td></tr>" for g in d.get("groups", [])]
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
    return section("Size estimate", f'<table class="kv">{body}</table>'
                   + (table(["priority", "tasks", "finished", "mean runtime (s)", "declared task·s"], rows)
                      if rows else ""), ident="estimate")


def _res(r: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(r.items()))


def _attempts(rm: ResourceManager, app: App) -> str:
    rows = []
    for att in reversed(app.attempts):
        j = render.attempt_json(rm, att)
        logs = _link_text(j["logsLink"], "logs")
        node = (f'<a href="/ui/nodes/{esc(q(j["nodeId"]))}">{esc(j["nodeId"])}</a>' if j["nodeId"] else "—")
        rows.append(f"<tr><td>{esc(j['appAttemptId'])}</td><td>{badge(j['appAttemptState'])}</td>"
                    f"<td>{fmt_ms(j['startTime'])}</td><td>{fmt_ms(j['finishedTime'])}</td><td>{node}</td>"
                    f"<td>{esc(j['containerId']) or '—'}</td><td>{logs}</td></tr>")
        if j["diagnosticsInfo"]:  # on a row of its own: it can be long
            rows.append(f'<tr class="sub"><td colspan="7" class="wrap">{esc(j["diagnosticsInfo"])}</td></tr>')
    return table(["attempt", "state", "started", "finished", "node", "AM container", "logs"], rows,
                 empty="no attempt yet")


def _link_text(url: str, text: str) -> str:
    return f'<a href="{esc(url)}" rel="noreferrer">{esc(text)}</a>' if url else "—"


def _containers(rm: ResourceManager, containers: list[Container], stages: list[str]) -> str:
    """The app's containers, live ones first; a DAG job's task containers are named by their stage."""
    rows = []
    for c in containers[:MAX_CONTAINERS]:
        node = rm.state.nodes.get(c.node_id)
        idx = stage_index_of(c.allocation_request_id)
        role = "AM" if c.is_am else (stages[idx] if idx is not None and 0 <= idx < len(stages)
                                     else f"priority {c.priority}")
        exit_code = "" if c.live else str(c.exit_status)
        rows.append(
            f'<tr data-container="{esc(c.container_id)}"><td>{esc(c.container_id)}</td><td>{esc(role)}</td>'
            f'<td><a href="/ui/nodes/{esc(q(c.node_id))}">{esc(c.node_id)}</a></td><td>{badge(c.state)}</td>'
            f"<td>{fmt_mb(c.resource.memory_mb)}, {c.resource.vcores} vcores</td>"
            f"<td>{fmt_time(c.start_time)}</td><td>{fmt_time(c.finish_time)}</td><td>{esc(exit_code)}</td>"
            f"<td>{_link_text(render.logs_url(node, c.container_id), 'logs')}</td></tr>")
    more = (f'<p class="muted">The newest {MAX_CONTAINERS} of {len(containers)} are shown.</p>'
            if len(containers) > MAX_CONTAINERS else "")
    return table(["container", "runs", "node", "state", "resource", "started", "finished", "exit", "logs"], rows,
                 empty="no container yet") + more
