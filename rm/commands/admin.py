"""``shepherd admin``: the operator's commands for the ResourceManagers themselves (YARN's ``rmadmin``)."""

from __future__ import annotations

import httpx
import typer
from rich.table import Table

from rm.commands.output import console, error

admin_group = typer.Typer(no_args_is_help=True, help="ResourceManager administration: service-state.")


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
