"""``shepherd app``: list, status, kill, move, priority, lifetime, explain. ``shepherd app ID`` is
``shepherd app status ID``."""

from __future__ import annotations

import calendar
import contextlib
import time
from typing import Any

import typer
from rich.console import Group, RenderableType
from rich.table import Column, Table
from rich.text import Text
from typer.core import TyperGroup

from rm.client import ClientError, RMClient
from rm.commands.common import REST_OPT, RM_OPT, exit_for, fail, res, res_dict
from rm.commands.output import OUTPUT_OPTS, Output, console, dump, error, kv_table, plain, read_command
from rm.commands.rest import RestClient
from rm.commands.shapes import age, app_rest, attempt_json, clock, when
from rm.commands.waiting import wait_for
from rm.core.records import APP_STATES
from rm.sdk import Client, Explanation


class AppGroup(TyperGroup):
    """Resolves ``app APPLICATION_ID ...`` to ``app status APPLICATION_ID ...``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # Any: typer's or click's Context
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["status", *args]
        return super().parse_args(ctx, args)


app_group = typer.Typer(cls=AppGroup, no_args_is_help=True, help="Applications: list, status, wait, attempts, "
                        "containers, kill, move, priority, lifetime, explain. `shepherd app ID` shows one app.")


def _states(state: list[str], all_states: bool) -> list[str]:
    wanted = [s.strip().upper() for item in state for s in item.split(",") if s.strip()]
    if "ALL" in wanted or all_states:
        return []
    bad = [s for s in wanted if s not in APP_STATES]
    if bad:
        raise typer.BadParameter(f"unknown state {bad[0]}; one of {', '.join(APP_STATES)} or ALL")
    return wanted or ["NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"]


@app_group.command("list")
@read_command
def app_list(
    state: list[str] = typer.Option([], "--state", "-s", help="states (repeatable or comma list; ALL for all)"),
    all_states: bool = typer.Option(False, "--all", "-A", help="every state (default: unfinished apps, as YARN)"),
    queue: str = typer.Option("", "--queue", "-q"),
    user: str = typer.Option("", "--user", "-u"),
    out: Output = OUTPUT_OPTS,
    rm: str | None = RM_OPT,
) -> None:
    """List applications (unfinished ones unless --all or --state)."""
    states = _states(state, all_states)
    with RMClient(rm) as client:
        def fetch() -> list[dict[str, Any]]:
            try:
                reports = client.apps(states=states, queue=queue, user=user, rest_shape=True)
                return [app_rest(r) for r in reports]
            except ClientError as exc:
                raise fail(exc) from None

        out.show(fetch, apps_table, apps_wide)


def apps_table(apps: list[dict[str, Any]]) -> Table:
    """Applications in their REST shape (:func:`rm.commands.shapes.app_rest`) as a table."""
    return _apps(apps, wide=False)


def apps_wide(apps: list[dict[str, Any]]) -> Table:
    """``apps_table`` with priority, fair share, running containers, pending asks, start time, elapsed time
    and the AM's node (``-o wide``)."""
    return _apps(apps, wide=True)


def _apps(apps: list[dict[str, Any]], *, wide: bool) -> Table:
    more = ["PRIORITY", "FAIR SHARE", "CONTAINERS", "PENDING", "STARTED", "ELAPSED", "AM HOST"] if wide else []
    table = Table(Column("ID", no_wrap=True), "NAME", "TYPE", "USER", "QUEUE", "STATE", "FINAL", "PROGRESS",
                  "USED", *more, title=f"{len(apps)} application(s)")
    now = time.time()
    for r in apps:
        mb, vcores = r.get("allocatedMB", -1), r.get("allocatedVCores", -1)
        used = "-" if mb < 0 else f"{mb} MB, {vcores} vcores"
        row = [r.get("id", ""), r.get("name", ""), r.get("applicationType", ""), r.get("user", ""),
               r.get("queue", ""), r.get("state", ""), r.get("finalStatus", ""),
               f"{float(r.get('progress', 0)):.0f}%", used]
        if wide:
            running = r.get("runningContainers", -1)
            pending = int(r.get("pendingDefaultAsks", 0)) + int(r.get("pendingAltruisticAsks", 0))
            row += [str(r.get("priority", 0)), f"{r.get('fairShareMB', 0)} MB, {r.get('fairShareVCores', 0)} vcores",
                    "-" if running < 0 else str(running), str(pending), clock(r.get("startedTime"), now),
                    age(_elapsed_s(r, now)), r.get("amHostHttpAddress") or "-"]
        table.add_row(*row)
    return table


def _elapsed_s(r: dict[str, Any], now: float) -> float | None:
    """Seconds from an app's start to its end, or to ``now`` while it runs (None before it starts)."""
    start, end = r.get("startedTime") or 0, r.get("finishedTime") or 0
    if start <= 0:
        return None
    return ((end if end > 0 else now * 1000) - start) / 1000


@app_group.command("status")
@read_command
def app_status(app_id: str, out: Output = OUTPUT_OPTS, rm: str | None = RM_OPT, rest: str | None = REST_OPT) -> None:
    """Show one application: state, usage, fair share, size estimate, attempts, diagnostics (-o wide: also
    its AM, launch and elapsed time, tags and aggregate usage)."""
    with RMClient(rm) as client, RestClient(rest) as web:
        def fetch() -> dict[str, Any]:
            try:
                data = app_rest(client.app(app_id, rest_shape=True))
                data["appAttempts"] = [attempt_json(a) for a in client.attempts(app_id)]
            except ClientError as exc:
                raise fail(exc) from None
            # the RM's own size estimate (REST only); without it the status is shown all the same
            with contextlib.suppress(ClientError, KeyError, TypeError):
                data["sizeEstimate"] = web.call("GET", f"/ws/v1/shepherd/apps/{app_id}/estimate")["estimate"]
            if data.get("state") in WAITING:  # why it waits and its place in its queue, as `app explain`
                with contextlib.suppress(ClientError, KeyError, TypeError):
                    data["explanation"] = web.call("GET", f"/ws/v1/shepherd/apps/{app_id}/explain")["explanation"]
            return data

        out.show(fetch, _status_table, _status_wide)


WAITING = frozenset({"NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED"})
"""The states of an app that has no AM running yet: `app status` says why it waits."""


def waiting_line(e: dict[str, Any]) -> str:
    """One line of an explanation: its reason code, and the app's place among those waiting in its queue."""
    position = e.get("positionInQueue")
    where = (f"position {position} of {e.get('waitingInQueue')} waiting in {e.get('queue')}" if position
             else f"{e.get('waitingInQueue')} waiting in {e.get('queue')}")
    return f"[{e.get('reason')}] {where} (`shepherd app explain` has the numbers)"


def size_line(e: dict[str, Any]) -> str:
    """One line of the RM's size estimate: its state, source, total and remaining task-seconds, and under
    SLearn sampling the pilots planned, started and finished and whether the gate is open."""
    est = e.get("estimate") or {}
    parts = [str(e.get("state", "UNKNOWN"))]
    if est:
        parts.append(f"{est.get('source')}: {float(est.get('totalTaskSeconds', 0)):.0f} task-s, "
                     f"{float(est.get('remainingTaskSeconds', 0)):.0f} to go")
    else:
        parts.append("no estimate")
    gate = e.get("sampling")
    if gate:
        opened = f"open ({gate.get('openedBy')})" if gate.get("open") else "closed"
        parts.append(f"pilots {gate.get('pilotsFinished', 0)}/{gate.get('pilots', 0)} finished "
                     f"({gate.get('pilotsStarted', 0)} started) at {100 * float(gate.get('ratio', 0)):g} %, "
                     f"gate {opened}")
    return "; ".join(parts)


def _status_wide(d: dict[str, Any]) -> RenderableType:
    return _status_table(d, wide=True)


def _status_table(d: dict[str, Any], *, wide: bool = False) -> RenderableType:
    mb, vcores = d.get("allocatedMB", -1), d.get("allocatedVCores", -1)
    rows: list[tuple[str, Any]] = [
        ("id", d.get("id")), ("name", d.get("name")), ("type", d.get("applicationType")),
        ("user", d.get("user")), ("queue", d.get("queue")), ("priority", d.get("priority", 0)),
        ("state", d.get("state")), ("final status", d.get("finalStatus")),
        ("progress", f"{float(d.get('progress', 0)):.0f}%"),
        ("used", "-" if mb < 0 else f"{mb} MB, {vcores} vcores"),
        ("fair share", f"{d.get('fairShareMB', 0)} MB, {d.get('fairShareVCores', 0)} vcores"),
        ("running containers", max(0, d.get("runningContainers", 0))),
        ("pending asks", (f"{d.get('pendingDefaultAsks', 0)} DEFAULT, "
                          f"{d.get('pendingAltruisticAsks', 0)} ALTRUISTIC")),
        ("from leftover", d.get("leftoverContainers", 0)), ("attempts", d.get("runAttempts", 0)),
        ("started", when(d.get("startedTime", 0))), ("finished", when(d.get("finishedTime", 0))),
        ("tracking url", d.get("trackingUrl", "")), ("diagnostics", d.get("diagnostics", "")),
    ]
    if wide:
        rows += [
            ("am host", d.get("amHostHttpAddress") or "-"), ("am container", d.get("amContainerId") or "-"),
            ("launched", when(d.get("launchTime", 0))), ("elapsed", age(_elapsed_s(d, time.time()))),
            ("tags", d.get("applicationTags") or "-"),
            ("aggregate usage", f"{d.get('memorySeconds', 0)} MB-seconds, {d.get('vcoreSeconds', 0)} vcore-seconds"),
            ("cluster usage", f"{float(d.get('clusterUsagePercentage', 0)):g}%"),
        ]
    dl = d.get("deadline")
    if dl:
        lax = float(dl.get("laxity", -1))
        rows += [
            ("deadline", (f"{when(dl['deadline'])} ({dl.get('status')}), bought for "
                          f"{float(dl.get('price', 0)):.1f} tokens")),
            ("estimate", (f"{float(dl.get('mean', 0)):.0f} unit-s, claimed {float(dl.get('piUpper', 0)):.0f} "
                          f"({dl.get('method')}, {dl.get('runs', 0)} runs); "
                          f"{float(dl.get('remainingWork', 0)):.0f} to go"
                          + (f", {lax:.0f} s to spare" if lax >= 0 else ""))),
        ]
    size = d.get("sizeEstimate")
    if size:
        rows.append(("size", size_line(size)))
    why = d.get("explanation")
    if why:
        rows.append(("waiting", waiting_line(why)))
    attempts = Table("ATTEMPT", "STATE", "AM CONTAINER", "NODE", "DIAGNOSTICS", title="attempts")
    for a in d.get("appAttempts", []):
        attempts.add_row(a.get("appAttemptId", ""), a.get("appAttemptState", ""), a.get("containerId", ""),
                         a.get("nodeId", ""), a.get("diagnosticsInfo", ""))
    return Group(kv_table(rows), attempts)


@app_group.command("wait")
def app_wait(app_id: str, rm: str | None = RM_OPT) -> None:
    """Follow an application until it ends (also across RM restarts); exit 0 only if it succeeded. Ctrl-C stops
    following, not the app."""
    with Client(rm) as client:
        raise typer.Exit(wait_for(client, app_id))


@app_group.command("attempts")
@read_command
def app_attempts(app_id: str, out: Output = OUTPUT_OPTS, rm: str | None = RM_OPT) -> None:
    """The application's attempts (YARN's `applicationattempt -list`)."""
    with RMClient(rm) as client:
        def fetch() -> list[dict[str, Any]]:
            try:
                return [attempt_json(a) for a in client.attempts(app_id)]
            except ClientError as exc:
                raise fail(exc) from None

        out.show(fetch, _attempts_table, _attempts_wide)


def _attempts_wide(attempts: list[dict[str, Any]]) -> Table:
    return _attempts_table(attempts, wide=True)


def _attempts_table(attempts: list[dict[str, Any]], *, wide: bool = False) -> Table:
    more = ["FINISHED", "NODE HTTP"] if wide else []
    table = Table("ATTEMPT", "STATE", "AM CONTAINER", "NODE", "STARTED", *more, "DIAGNOSTICS", title="attempts")
    for a in attempts:
        extra = [when(a.get("finishedTime", 0)), a.get("nodeHttpAddress") or "-"] if wide else []
        table.add_row(a.get("appAttemptId", ""), a.get("appAttemptState", ""), a.get("containerId", ""),
                      a.get("nodeId", ""), when(a.get("startTime", 0)), *extra, a.get("diagnosticsInfo", ""))
    return table


@app_group.command("containers")
@read_command
def app_containers(app_id: str, out: Output = OUTPUT_OPTS, rm: str | None = RM_OPT) -> None:
    """The application's containers, running and ended (YARN's `container -list`), with their log URLs."""
    with RMClient(rm) as client:
        def fetch() -> list[dict[str, Any]]:
            try:
                return [{"containerId": c.container_id, "nodeId": c.node_id, "state": c.state,
                         "exitStatus": c.exit_status, "startedTime": c.start_time_ms,
                         "finishedTime": c.finish_time_ms, "diagnostics": c.diagnostics, "logUrl": c.log_url,
                         "allocatedMB": dict(c.resource.values).get("memory-mb", 0),
                         "allocatedVCores": dict(c.resource.values).get("vcores", 0)}
                        for c in client.containers(app_id)]
            except ClientError as exc:
                raise fail(exc) from None

        out.show(fetch, _containers_table, _containers_wide)


def _containers_wide(containers: list[dict[str, Any]]) -> Table:
    return _containers_table(containers, wide=True)


def _containers_table(containers: list[dict[str, Any]], *, wide: bool = False) -> Table:
    more = ["FINISHED", "ELAPSED", "DIAGNOSTICS"] if wide else []
    table = Table(Column("CONTAINER", no_wrap=True), "NODE", "STATE", "EXIT", "RESOURCE", "STARTED", "LOGS", *more,
                  title=f"{len(containers)} container(s)")
    now = time.time()
    for c in containers:
        ended = c["state"] == "COMPLETED"
        extra = [when(c["finishedTime"]), age(_elapsed_s({"startedTime": c["startedTime"],
                                                          "finishedTime": c["finishedTime"]}, now)),
                 c["diagnostics"] or "-"] if wide else []
        table.add_row(c["containerId"], c["nodeId"], c["state"], str(c["exitStatus"]) if ended else "",
                      f"{c['allocatedMB']} MB, {c['allocatedVCores']} vcores", when(c["startedTime"]), c["logUrl"],
                      *extra)
    return table


@app_group.command("kill")
def app_kill(app_ids: list[str] = typer.Argument(..., help="one or more application ids"),
             rm: str | None = RM_OPT) -> None:
    """Kill applications; exits 2 if any is unknown or already finished."""
    refused: ClientError | None = None
    with RMClient(rm) as client:
        for app_id in app_ids:
            try:
                client.kill(app_id, "Application killed by user.")
                console.print(f"killed {app_id}")
            except ClientError as exc:
                message = plain(exc.message)
                error(message if app_id in message else f"{app_id}: {message}")
                refused = exc
    if refused is not None:
        raise exit_for(refused)


@app_group.command("move")
def app_move(app_id: str, queue: str, rest: str | None = REST_OPT) -> None:
    """Move an application to another leaf queue."""
    with RestClient(rest) as client:
        try:
            out = client.call("PUT", f"/ws/v1/cluster/apps/{app_id}/queue", {"queue": queue})
        except ClientError as exc:
            raise fail(exc) from None
    console.print(f"{app_id} is in queue {out.get('queue')}")


@app_group.command("priority")
def app_priority(app_id: str, priority: int, rest: str | None = REST_OPT) -> None:
    """Change an application's priority (capped at yarn.cluster.max-application-priority)."""
    with RestClient(rest) as client:
        try:
            out = client.call("PUT", f"/ws/v1/cluster/apps/{app_id}/priority", {"priority": priority})
        except ClientError as exc:
            raise fail(exc) from None
    effective = out.get("priority")
    note = "" if effective == priority else f" (capped at the cluster maximum {effective})"
    console.print(f"{app_id} has priority {effective}{note}")


@app_group.command("lifetime")
def app_lifetime(app_id: str, seconds: int = typer.Argument(..., min=1, help="seconds from now"),
                 rest: str | None = REST_OPT) -> None:
    """Kill the application when SECONDS from now have passed (YARN's LIFETIME timeout)."""
    expiry = time.strftime("%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime(calendar.timegm(time.gmtime()) + seconds))
    with RestClient(rest) as client:
        try:
            out = client.call("PUT", f"/ws/v1/cluster/apps/{app_id}/timeout",
                              {"timeout": {"type": "LIFETIME", "expiryTime": expiry}})
        except ClientError as exc:
            raise fail(exc) from None
    t = out.get("timeout", {})
    console.print(f"{app_id} expires at {t.get('expiryTime')} ({t.get('remainingTimeInSeconds')} s from now)")


@app_group.command("explain")
@read_command
def app_explain(app_id: str, out: Output = OUTPUT_OPTS, rest: str | None = REST_OPT) -> None:
    """Why an application waits: the reason code, the numbers behind it, its place in its queue (-o wide is
    the table: it shows every number already)."""
    with Client(rest=rest) as client:
        def fetch() -> dict[str, Any]:  # the REST answer, as -o json prints it; the table reads it typed
            try:
                return client.explain(app_id).raw
            except ClientError as exc:
                raise fail(exc) from None

        out.show(fetch, lambda raw: _explain_view(Explanation.from_dict(raw)))


def _explain_view(e: Explanation) -> RenderableType:
    q, am = e.queue_limit, e.am_limit
    rows: list[tuple[str, Any]] = [
        ("application", f"{e.app_id} ({e.state})"),
        ("reason", e.reason),
        ("why", e.message),
        ("queue", f"{e.queue}: position {e.position_in_queue} of {e.waiting_in_queue} waiting"
         if e.position_in_queue else e.queue),
        ("used / fair share", (f"{res_dict(e.used)} / {res_dict(e.fair_share)} (dominant share "
                               f"{e.dominant_share:.3f} of {e.fair_dominant_share:.3f})")),
        ("queue limit", f"uses {res_dict(q.used)} of max {res_dict(q.max)} (guaranteed {res_dict(q.guaranteed)})"
         if q else "-"),
        ("AM limit", f"AMs use {res_dict(am.used)} of {res_dict(am.limit)}" if am else "-"),
    ]
    dl = e.deadline
    if dl:
        when = time.strftime("%H:%M:%S", time.localtime(dl.deadline_ms / 1000))
        rows.append(("deadline", (f"{when} ({dl.status}); owed {dl.owed_units_now:g} units now, "
                                  f"{dl.remaining_work:g} unit-s to go, laxity {dl.laxity_s} s")))
    numbers = Text(dump(e.numbers, "json").strip(), style="dim")
    asks = Table("ASK", "CAPABILITY", "CONTAINERS", "REASON", title="waiting asks")
    for a in e.asks:
        asks.add_row("AM" if a.am else str(a.allocation_request_id), res_dict(a.capability), str(a.num_containers),
                     a.reason)
    return Group(kv_table(rows), Text("numbers:"), numbers, asks)


__all__ = ["app_group", "res"]
