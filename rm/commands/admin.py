"""``shepherd admin``: the operator's commands for the ResourceManagers themselves (YARN's ``rmadmin``)."""

from __future__ import annotations

import httpx
import typer
from rich.table import Table

from rm.client import ClientError
from rm.commands.common import fail
from rm.commands.output import console, error
from rm.commands.rest import RestClient

admin_group = typer.Typer(no_args_is_help=True, help="ResourceManager administration: service-state, "
                          "refresh-queues.")


@admin_group.command("service-state")
def service_state(
    rest: str = typer.Option("http://127.0.0.1:8088", "--rest", envvar="SHEPHERD_REST",
                             help="every RM's REST URL, comma-separated (an active/standby pair)"),
) -> None:
    """Each ResourceManager's HA state, as YARN's `rmadmin -getServiceState`: active, standby, or unreachable.
    Exits 0 when one of them is active, else 1."""
    table = Table("RESOURCEMANAGER", "STATE", "ACTIVE")
    active = False
    for url in (u.strip().rstrip("/") for u in rest.split(",") if u.strip()):
        base = url if "://" in url else f"http://{url}"
        try:
            info = httpx.get(f"{base}/ws/v1/cluster/info", timeout=5.0, follow_redirects=False).json()["clusterInfo"]
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            table.add_row(base, "unreachable", type(exc).__name__)
            continue
        state = str(info.get("haState", "ACTIVE")).lower()
        active |= state == "active"
        table.add_row(base, state, str(info.get("activeResourceManager", base if state == "active" else "")))
    if not table.rows:
        error("no ResourceManager given (--rest URL[,URL...])")
        raise typer.Exit(2)
    console.print(table)
    raise typer.Exit(0 if active else 1)


@admin_group.command("refresh-queues")
def refresh_queues(
    rest: str | None = typer.Option(None, "--rest", help="the RM's REST URL (default: $SHEPHERD_REST, "
                                    "yarn-site.xml, or http://127.0.0.1:8088)"),
) -> None:
    """Make the RM read its queue tree again from its configuration files (YARN's `rmadmin -refreshQueues`;
    SIGHUP does the same). An invalid tree, or one that would strand unfinished apps, is refused and the old
    queues stay in force."""
    try:
        with RestClient(rest) as client:
            leaves = client.call("POST", "/ws/v1/shepherd/admin/refresh-queues").get("queues", [])
    except ClientError as exc:
        raise fail(exc) from None
    console.print(f"queues refreshed: {', '.join(leaves)}")
