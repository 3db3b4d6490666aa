"""``shepherd node list|status``, ``shepherd queue status`` and ``shepherd sampling``."""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.console import Group, RenderableType
from rich.table import Column, Table
from rich.tree import Tree

from rm.client import ClientError, RMClient
from rm.commands.common import REST_OPT, RM_OPT, as_dict, fail, res_dict
from rm.commands.output import OUTPUT_OPTS, Output, kv_table, read_command
from rm.commands.rest import RestClient
from rm.commands.shapes import age, node_json, resources, when

NODE_STATES = ("NEW", "RUNNING", "UNHEALTHY", "DECOMMISSIONING", "DECOMMISSIONED", "LOST", "REBOOTED",
               "SHUTDOWN")

node_group = typer.Typer(no_args_is_help=True, help="NodeManagers: list, status.")
queue_group = typer.Typer(no_args_is_help=True, help="Queues: status.")


def nodes_table(nodes: list[dict[str, Any]]) -> Table:
    """NodeManagers in their REST shape (:func:`rm.commands.shapes.node_json`) as a table."""
    return _nodes(nodes, wide=False)


def nodes_wide(nodes: list[dict[str, Any]]) -> Table:
    """``nodes_table`` with the rack, what is free and how long ago its health was last
    reported (``-o wide``)."""
    return _nodes(nodes, wide=True)


def _nodes(nodes: list[dict[str, Any]], *, wide: bool) -> Table:
    more = ["RACK", "AVAILABLE", "HEALTH UPDATED"] if wide else []
    table = Table(Column("NODE", no_wrap=True), "STATE", "HTTP", "CONTAINERS", "USED", "CAPABILITY", *more,
                  "HEALTH", title=f"{len(nodes)} node(s)")
    now = time.time()
    for n in nodes:
        last = n.get("lastHealthUpdate") or 0
        extra = [n.get("rack") or "-", resources(n.get("availableResource")),
                 f"{age(now - last / 1000)} ago" if last > 0 else "-"] if wide else []
        table.add_row(n.get("id", ""), n.get("state", ""), n.get("nodeHTTPAddress", ""),
                      str(n.get("numContainers", 0)), resources(n.get("usedResource")),
                      resources(n.get("totalResource")), *extra, n.get("healthReport", ""))
    return table


@node_group.command("list")
@read_command
def node_list(
    state: list[str] = typer.Option([], "--state", "-s", help="node states (repeatable or comma list)"),
    all_states: bool = typer.Option(False, "--all", "-A", help="every state (default: RUNNING, as YARN)"),
    out: Output = OUTPUT_OPTS,
    rm: str | None = RM_OPT,
) -> None:
    """List NodeManagers (RUNNING ones unless --all or --state)."""
    wanted = [s.strip().upper() for item in state for s in item.split(",") if s.strip()]
    bad = [s for s in wanted if s not in NODE_STATES]
    if bad:
        raise typer.BadParameter(f"unknown node state {bad[0]}; one of {', '.join(NODE_STATES)}")
    states = [] if all_states else wanted or ["RUNNING"]
    with RMClient(rm) as client:
        def fetch() -> list[dict[str, Any]]:
            try:
                return [node_json(n) for n in client.nodes(states=states)]
            except ClientError as exc:
                raise fail(exc) from None

        out.show(fetch, nodes_table, nodes_wide)


@node_group.command("status")
@read_command
def node_status(node_id: str, out: Output = OUTPUT_OPTS, rm: str | None = RM_OPT) -> None:
    """Show one NodeManager (HOST:PORT); -o wide is the table, which shows every field already."""
    with RMClient(rm) as client:
        def fetch() -> dict[str, Any]:
            try:
                nodes = [node_json(n) for n in client.nodes()]
            except ClientError as exc:
                raise fail(exc) from None
            for n in nodes:
                if n["id"] == node_id:
                    return n
            raise fail(ClientError("NOT_FOUND", f"nodeId, {node_id}, is not found"))

        out.show(fetch, _node_view)


def _node_view(n: dict[str, Any]) -> RenderableType:
    return kv_table([
        ("node", n.get("id")), ("state", n.get("state")), ("rack", n.get("rack")),
        ("http address", n.get("nodeHTTPAddress")), ("containers", n.get("numContainers", 0)),
        ("used", resources(n.get("usedResource"))), ("available", resources(n.get("availableResource"))),
        ("capability", resources(n.get("totalResource"))),
        ("health report", n.get("healthReport") or "-"),
        ("last health update", when(n.get("lastHealthUpdate"))),
    ])


@queue_group.command("status")
@read_command
def queue_status(queue: str = typer.Argument("root", help="queue path or leaf name"), out: Output = OUTPUT_OPTS,
                 rm: str | None = RM_OPT) -> None:
    """Show a queue and its children: capacity, maximum, use, applications, state; and per user, the
    unfinished apps in it and what they hold."""
    with RMClient(rm) as client:
        def fetch() -> dict[str, Any]:
            try:
                data = as_dict(client.queue(queue))
                apps = client.apps(states=UNFINISHED)
            except ClientError as exc:
                raise fail(exc) from None
            data["users"] = users_of(str(data.get("path", "")), apps)
            return data

        out.show(fetch, _queue_view, _queue_wide)


UNFINISHED = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")


def users_of(path: str, apps: list[Any]) -> list[dict[str, Any]]:
    """Per-user use of the queue at ``path`` and its subtree, from its unfinished apps: apps running (AM
    running) and pending, and the memory and vcores their containers hold."""
    users: dict[str, dict[str, Any]] = {}
    for a in apps:
        if path not in ("", "root") and a.queue != path and not a.queue.startswith(path + "."):
            continue
        u = users.setdefault(a.user, {"user": a.user, "appsRunning": 0, "appsPending": 0, "used": {}})
        u["appsRunning" if a.state == "RUNNING" else "appsPending"] += 1
        for k, v in a.used.values.items():
            u["used"][k] = u["used"].get(k, 0) + int(v)
    return [users[name] for name in sorted(users)]


def _queue_line(q: dict[str, Any], wide: bool) -> str:
    line = (f"{q.get('path')}  [{q.get('state', 'RUNNING')}]  capacity {q.get('capacity', 0):g}%  max "
            f"{q.get('max_capacity', 0):g}%  absolute {q.get('absolute_capacity', 0):g}%  used "
            f"{res_dict(q.get('used', {}).get('values'))}  apps {q.get('num_applications', 0)}")
    return f"{line}  weight {q.get('weight', 0):g}" if wide else line


def _queue_wide(q: dict[str, Any]) -> RenderableType:
    """``-o wide``: each queue's weight too."""
    return _queue_view(q, wide=True)


def _queue_view(q: dict[str, Any], *, wide: bool = False) -> RenderableType:
    tree = Tree(_queue_line(q, wide))

    def add(node: Tree, children: list[dict[str, Any]]) -> None:
        for c in children:
            add(node.add(_queue_line(c, wide)), c.get("children", []))

    add(tree, q.get("children", []))
    users = q.get("users") or []
    if not users:
        return Group(tree)
    table = Table("USER", "APPS RUNNING", "APPS PENDING", "USED", title="users with unfinished apps")
    for u in users:
        table.add_row(u["user"], str(u["appsRunning"]), str(u["appsPending"]), res_dict(u["used"]))
    return Group(tree, table)


@read_command
def sampling(out: Output = OUTPUT_OPTS, rest: str | None = REST_OPT) -> None:
    """SLearn's sampler: whether the scheduler samples wide apps of unknown size, the ratio rule and the ratio
    the next one gets, and per ratio its jobs sampled and finished and its score (REST
    /ws/v1/shepherd/sampling)."""
    with RestClient(rest) as web:
        def fetch() -> dict[str, Any]:
            try:
                return dict(web.call("GET", "/ws/v1/shepherd/sampling")["sampling"])
            except ClientError as exc:
                raise fail(exc) from None

        out.show(fetch, sampling_view)


def sampling_view(s: dict[str, Any]) -> RenderableType:
    """The sampler's state as a summary and a table of its ratios (the lowest score is the one in use once the
    start-up trials are over)."""
    counters = s.get("counters") or {}
    summary = kv_table([
        ("sampling", "on (slearn)" if s.get("enabled") else "off (the scheduler has no sampling stage)"),
        ("rule", f"{s.get('rule')}; the next wide app gets {float(s.get('nextRatio', 0)):.0%}"),
        ("apps gated now", s.get("gatedApps")),
        ("gate timeout", f"{s.get('gateTimeoutSeconds')} s"),
        ("trust history", "yes" if s.get("trustHistory") else "no"),
        ("counters", ", ".join(f"{k} {v}" for k, v in counters.items()) or "-"),
    ])
    table = Table("RATIO", "JOBS SAMPLED", "FINISHED", "SCORE (JCT / RUNTIME)", title="ratios")
    for r in s.get("ratios") or []:
        score = r.get("score")
        table.add_row(f"{float(r.get('ratio', 0)):.0%}", str(r.get("jobsSampled", 0)), str(r.get("jobsFinished", 0)),
                      "-" if score is None else f"{float(score):.3f}")
    return Group(summary, table)
