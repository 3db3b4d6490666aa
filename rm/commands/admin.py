"""``shepherd admin``: the operator's commands for the ResourceManagers themselves (YARN's ``rmadmin``)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import typer
from rich.table import Table

from common import credentials
from rm.client import ClientError
from rm.commands.common import fail
from rm.commands.health import check_health
from rm.commands.output import OUTPUT_OPTS, Output, console, error, read_command
from rm.commands.rest import RestClient
from rm.commands.shapes import when
from rm.commands.target import resolve_rest_option

admin_group = typer.Typer(no_args_is_help=True, help="ResourceManager administration: service-state, "
                          "check-health, refresh-queues, decommission, recommission, token.")


@admin_group.command("service-state")
@read_command
def service_state(
    rest: str = typer.Option(None, "--rest", envvar="SHEPHERD_REST", callback=resolve_rest_option,
                             help="every RM's REST URL, comma-separated (an active/standby pair) \\[default: "
                                  "as every command finds it, e.g. the current cluster, else http://127.0.0.1:8088]"),
    out: Output = OUTPUT_OPTS,
) -> None:
    """Each ResourceManager's HA state, as YARN's `rmadmin -getServiceState`: active, standby, or unreachable.
    Exits 0 when one of them is active, else 1 (with --watch: 0 at Ctrl-C). -o json|yaml prints, per RM, its
    `url` and its `/ws/v1/cluster/info` object (`clusterInfo`), or the `error` that kept it from answering;
    -o wide adds each one's id, version and start time."""
    given = (u.strip().rstrip("/") for u in rest.split(",") if u.strip())
    urls = [url if "://" in url else f"http://{url}" for url in given]
    if not urls:
        error("no ResourceManager given (--rest URL[,URL...])")
        raise typer.Exit(2)

    def fetch() -> list[dict[str, Any]]:
        return [_service_state(url) for url in urls]

    if out.watch:
        out.show(fetch, _states_table, _states_wide)
        return
    found = fetch()
    out.show(lambda: found, _states_table, _states_wide)
    active = any(_ha_state(rm) == "active" for rm in found)
    raise typer.Exit(0 if active else 1)


def _service_state(url: str) -> dict[str, Any]:
    """One RM's answer to ``/ws/v1/cluster/info`` with its URL, or why it gave none."""
    try:
        info = httpx.get(f"{url}/ws/v1/cluster/info", timeout=5.0, follow_redirects=False).json()["clusterInfo"]
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        return {"url": url, "error": type(exc).__name__}
    return {"url": url, "clusterInfo": info}


def _ha_state(rm: dict[str, Any]) -> str:
    """``active``, ``standby`` (an RM without HA is active), or ``unreachable``."""
    info = rm.get("clusterInfo")
    return "unreachable" if info is None else str(info.get("haState", "ACTIVE")).lower()


def _states_wide(rms: list[dict[str, Any]]) -> Table:
    return _states_table(rms, wide=True)


def _states_table(rms: list[dict[str, Any]], *, wide: bool = False) -> Table:
    table = Table("RESOURCEMANAGER", "STATE", "ACTIVE", *(["ID", "VERSION", "STARTED"] if wide else []))
    for rm in rms:
        url, info, state = rm["url"], rm.get("clusterInfo"), _ha_state(rm)
        if info is None:
            table.add_row(url, state, rm.get("error", ""), *(["-"] * 3 if wide else []))
            continue
        extra = [str(info.get("id", "-")), str(info.get("resourceManagerVersion", "-")),
                 when(info.get("startedOn"))] if wide else []
        table.add_row(url, state, str(info.get("activeResourceManager", url if state == "active" else "")), *extra)
    return table


admin_group.command("check-health")(check_health)


@admin_group.command("refresh-queues")
def refresh_queues(
    dry_run: bool = typer.Option(False, "--dry-run", help="only validate the files against the running RM "
                                 "(exit 2 if it would refuse them); apply nothing"),
    rest: str | None = typer.Option(None, "--rest", callback=resolve_rest_option,
                                    help="the RM's REST URL (default: `shepherd --cluster`, $SHEPHERD_REST, the "
                                         "current cluster, yarn-site.xml, or http://127.0.0.1:8088)"),
) -> None:
    """Make the RM read its queue tree again from its configuration files (YARN's `rmadmin -refreshQueues`;
    SIGHUP does the same). An invalid tree, or one that would strand unfinished apps, is refused and the old
    queues stay in force. With --dry-run the RM only says whether it would accept them."""
    path = "/ws/v1/shepherd/admin/refresh-queues" + ("?dryRun=true" if dry_run else "")
    try:
        with RestClient(rest) as client:
            leaves = client.call("POST", path).get("queues", [])
    except ClientError as exc:
        raise fail(exc) from None
    if dry_run:
        console.print(f"valid; a refresh would put in force: {', '.join(leaves)} (nothing changed)")
    else:
        console.print(f"queues refreshed: {', '.join(leaves)}")


@admin_group.command("token")
def token(
    user: str = typer.Option(..., "--user", help="the user the credentials authenticate"),
    lifetime: str = typer.Option("7d", "--lifetime", help="how long they work: seconds, or 30m, 12h, 7d"),
    out_dir: Path = typer.Option(None, "--out", help="write them into this directory (credentials.json and, "
                                 "when the RM serves Hadoop IPC, hadoop.token; both 0600) and print the exports "
                                 "the user needs; without it, print the bearer token only"),
    rest: str | None = typer.Option(None, "--rest", callback=resolve_rest_option,
                                    help="the RM's REST URL (default: as every command finds it)"),
) -> None:
    """Issue a user its own credentials (cluster admins only). With them the user's calls over REST, gRPC and
    Hadoop IPC are made as that user, and the ACLs (yarn.admin.acl, the queues' acl_submit_applications and
    acl_administer_queue, the apps' own) are checked for it. The cluster's client secret, by contrast, is the
    owner's: it may act for any user."""
    try:
        with RestClient(rest) as client:
            issued = client.call("POST", "/ws/v1/shepherd/admin/tokens",
                                 {"user": user, "lifetimeSeconds": parse_timeout(lifetime)})["userToken"]
    except ClientError as exc:
        raise fail(exc) from None
    if out_dir is None:
        console.print(issued["token"], soft_wrap=True, highlight=False)
        return
    creds = out_dir / credentials.FILE_NAME
    credentials.write_private(creds, json.dumps({"user": user, "client_secret": issued["token"]}, indent=2) + "\n")
    lines = [f"export {credentials.ENV_FILE}={creds}"]
    if issued.get("hadoopTokenFile"):
        hadoop = out_dir / "hadoop.token"
        credentials.write_private(hadoop, base64.b64decode(issued["hadoopTokenFile"]))
        lines.append(f"export HADOOP_TOKEN_FILE_LOCATION={hadoop}")
    console.print(f"credentials of {user}, valid until {when(issued['expires'])}, in {out_dir}; the user runs:",
                  highlight=False)
    for line in lines:
        console.print(f"  {line}", soft_wrap=True, highlight=False)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


def parse_timeout(text: str) -> float:
    """Seconds from ``600``, ``600s``, ``10m``, ``1h`` or ``7d``."""
    m = _DURATION.match(text)
    if m is None:
        raise typer.BadParameter(f"{text!r} is not a duration; give seconds (600) or 600s, 10m, 1h, 7d")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


def _node_line(node: dict[str, Any]) -> str:
    state = node.get("state", "")
    n = node.get("numContainers", 0)
    if state == "DECOMMISSIONING":
        left = node.get("decommissioningTimeout")
        return (f"node {node.get('id')} is DECOMMISSIONING: it gets no new containers; it is DECOMMISSIONED when "
                f"its {n} container(s) end or in {left} s, when what still runs there is killed")
    if state == "DECOMMISSIONED":
        return f"node {node.get('id')} is DECOMMISSIONED: its NodeManager is told to shut down"
    return f"node {node.get('id')} is {state}"


@admin_group.command("decommission")
def decommission(
    node: str = typer.Argument(..., help="the node's id, HOST:PORT (`shepherd nodes`)"),
    graceful: str | None = typer.Option(None, "--graceful", "-g", metavar="TIMEOUT",
                                        help="let its running containers finish for up to TIMEOUT (seconds, or "
                                        "30s, 10m, 1h) before they are killed; without it, at once"),
    rest: str | None = typer.Option(None, "--rest", callback=resolve_rest_option,
                                    help="the RM's REST URL (default: `shepherd --cluster`, $SHEPHERD_REST, the "
                                         "current cluster, yarn-site.xml, or http://127.0.0.1:8088)"),
) -> None:
    """Take a node out of service (YARN's `rmadmin -refreshNodes [-g TIMEOUT]`).

    With --graceful it is DECOMMISSIONING: no new containers, running ones go on; when none is left, or
    TIMEOUT passes (what still runs is then killed and its ApplicationMasters hear of it), it becomes
    DECOMMISSIONED and its NodeManager shuts down. Without --graceful, all that happens at once. Asking again
    changes the timeout. Exits 2 for an unknown node."""
    body = {"gracefulTimeoutSeconds": parse_timeout(graceful)} if graceful is not None else {}
    try:
        with RestClient(rest) as client:
            out = client.call("POST", f"/ws/v1/shepherd/admin/nodes/{quote(node.strip(), safe='')}/decommission",
                              body)
    except ClientError as exc:
        raise fail(exc) from None
    line = _node_line(out.get("node", {}))
    console.print(line if out.get("changed", True) else f"{line} (already)", highlight=False, soft_wrap=True)


@admin_group.command("recommission")
def recommission(
    node: str = typer.Argument(..., help="the node's id, HOST:PORT"),
    rest: str | None = typer.Option(None, "--rest", callback=resolve_rest_option,
                                    help="the RM's REST URL (default: `shepherd --cluster`, $SHEPHERD_REST, the "
                                         "current cluster, yarn-site.xml, or http://127.0.0.1:8088)"),
) -> None:
    """Take a node back into service: a DECOMMISSIONING one is RUNNING again at once; a DECOMMISSIONED one may
    register again (it is NEW until its NodeManager is started again)."""
    try:
        with RestClient(rest) as client:
            out = client.call("POST", f"/ws/v1/shepherd/admin/nodes/{quote(node.strip(), safe='')}/recommission")
    except ClientError as exc:
        raise fail(exc) from None
    n = out.get("node", {})
    if not out.get("changed", True):
        console.print(f"node {n.get('id')} is {n.get('state')}: not decommissioned; nothing to do", highlight=False)
    elif n.get("state") == "NEW":
        console.print(f"node {n.get('id')} may register again: start its NodeManager", highlight=False)
    else:
        console.print(f"node {n.get('id')} is {n.get('state')} again", highlight=False)
