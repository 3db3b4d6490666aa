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
from rm.commands.common import REST_OPT, RM_OPT, exit_for, fail, res, res_dict, show_rest
from rm.commands.output import INTERVAL_OPT, OUT_OPT, WATCH_OPT, console, dump, error, kv_table, plain, show
from rm.commands.rest import RestClient
from rm.commands.shapes import app_rest, attempt_json, when
from rm.commands.waiting import wait_for
from rm.core.records import APP_STATES


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
def app_list(
    state: list[str] = typer.Option([], "--state", "-s", help="states (repeatable or comma list; ALL for all)"),
    all_states: bool = typer.Option(False, "--all", "-A", help="every state (default: unfinished apps, as YARN)"),
    queue: str = typer.Option("", "--queue", "-q"),
    user: str = typer.Option("", "--user", "-u"),
    output: str = OUT_OPT,
    watch: bool = WATCH_OPT,
    interval: float = INTERVAL_OPT,
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

        show(fetch, output, apps_table, watch=watch, interval=interval)


def apps_table(apps: list[dict[str, Any]]) -> Table:
    """Applications in their REST shape (:func:`rm.commands.shapes.app_rest`) as a table."""
    table = Table(Column("ID", no_wrap=True), "NAME", "TYPE", "USER", "QUEUE", "STATE", "FINAL", "PROGRESS",
                  "USED", title=f"{len(apps)} application(s)")
    for r in apps:
        mb, vcores = r.get("allocatedMB", -1), r.get("allocatedVCores", -1)
        used = "-" if mb < 0 else f"{mb} MB, {vcores} vcores"
        table.add_row(r.get("id", ""), r.get("name", ""), r.get("applicationType", ""), r.get("user", ""),
                      r.get("queue", ""), r.get("state", ""), r.get("finalStatus", ""),
                      f"{float(r.get('progress', 0)):.0f}%", used)
    return table


@app_group.command("status")
def app_status(app_id: str, output: str = OUT_OPT, watch: bool = WATCH_OPT, interval: float = INTERVAL_OPT,
               rm: str | None = RM_OPT, rest: str | None = REST_OPT) -> None:
    """Show one application: state, usage, fair share, size estimate, attempts, diagnostics."""
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

        show(fetch, output, _status_table, watch=watch, interval=interval)


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


def _status_table(d: dict[str, Any]) -> RenderableType:
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
    with RMClient(rm) as client:
        raise typer.Exit(wait_for(client, app_id))


@app_group.command("attempts")
def app_attempts(app_id: str, output: str = OUT_OPT, rm: str | None = RM_OPT) -> None:
    """The application's attempts (YARN's `applicationattempt -list`)."""
    with RMClient(rm) as client:
        def fetch() -> list[dict[str, Any]]:
            try:
                return [attempt_json(a) for a in client.attempts(app_id)]
            except ClientError as exc:
                raise fail(exc) from None

        show(fetch, output, _attempts_table)


def _attempts_table(attempts: list[dict[str, Any]]) -> Table:
    table = Table("ATTEMPT", "STATE", "AM CONTAINER", "NODE", "STARTED", "DIAGNOSTICS", title="attempts")
    for a in attempts:
        table.add_row(a.get("appAttemptId", ""), a.get("appAttemptState", ""), a.get("containerId", ""),
                      a.get("nodeId", ""), when(a.get("startTime", 0)), a.get("diagnosticsInfo", ""))
    return table


@app_group.command("containers")
def app_containers(app_id: str, output: str = OUT_OPT, rm: str | None = RM_OPT) -> None:
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

        show(fetch, output, _containers_table)


def _containers_table(containers: list[dict[str, Any]]) -> Table:
    table = Table(Column("CONTAINER", no_wrap=True), "NODE", "STATE", "EXIT", "RESOURCE", "STARTED", "LOGS",
                  title=f"{len(containers)} container(s)")
    for c in containers:
        ended = c["state"] == "COMPLETED"
        table.add_row(c["containerId"], c["nodeId"], c["state"], str(c["exitStatus"]) if ended else "",
                      f"{c['allocatedMB']} MB, {c['allocatedVCores']} vcores", when(c["startedTime"]), c["logUrl"])
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
def app_explain(app_id: str, output: str = OUT_OPT, watch: bool = WATCH_OPT, interval: float = INTERVAL_OPT,
                rest: str | None = REST_OPT) -> None:
    """Why an application waits: the reason code, the numbers behind it, its place in its queue."""
    show_rest(rest, f"/ws/v1/shepherd/apps/{app_id}/explain", "explanation", output, _explain_view, watch=watch,
              interval=interval)


def _explain_view(e: dict[str, Any]) -> RenderableType:
    limits = e.get("limits", {})
    q, am = limits.get("queue", {}), limits.get("am", {})
    position = e.get("positionInQueue")
    rows: list[tuple[str, Any]] = [
        ("application", f"{e.get('appId')} ({e.get('state')})"),
        ("reason", e.get("reason")),
        ("why", e.get("message")),
        ("queue", f"{e.get('queue')}: position {position} of {e.get('waitingInQueue')} waiting"
         if position else e.get("queue")),
        ("used / fair share", (f"{res_dict(e.get('used'))} / {res_dict(e.get('fairShare'))} (dominant share "
                               f"{e.get('dominantShare', 0):.3f} of {e.get('fairDominantShare', 0):.3f})")),
        ("queue limit", f"uses {res_dict(q.get('used'))} of max {res_dict(q.get('max'))} "
                        f"(guaranteed {res_dict(q.get('guaranteed'))})" if q else "-"),
        ("AM limit", f"AMs use {res_dict(am.get('used'))} of {res_dict(am.get('limit'))}" if am else "-"),
    ]
    dl = e.get("deadline")
    if dl:
        when = time.strftime("%H:%M:%S", time.localtime(dl["deadline"] / 1000))
        rows.append(("deadline", (f"{when} ({dl.get('status')}); owed {dl.get('owedUnitsNow', 0)} units now, "
                                  f"{dl.get('remainingWork', 0)} unit-s to go, laxity {dl.get('laxity')} s")))
    numbers = Text(dump(e.get("numbers", {}), "json").strip(), style="dim")
    asks = Table("ASK", "CAPABILITY", "CONTAINERS", "REASON", title="waiting asks")
    for a in e.get("asks", []):
        asks.add_row("AM" if a.get("am") else str(a.get("allocationRequestId")), res_dict(a.get("capability")),
                     str(a.get("numContainers")), a.get("reason", ""))
    return Group(kv_table(rows), Text("numbers:"), numbers, asks)


__all__ = ["app_group", "res"]
