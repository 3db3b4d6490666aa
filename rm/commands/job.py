"""``shepherd job plan JOB.yaml``: a dry run of a submission (``POST /ws/v1/shepherd/plan``)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import typer
from rich.console import Group, RenderableType
from rich.table import Table

from rm.client import ClientError
from rm.commands.common import REST_OPT, fail
from rm.commands.output import console, dump, err_console, kv_table

job_group = typer.Typer(no_args_is_help=True, help="Jobs: plan (a dry run of a submission).")

PLAN_OUT_OPT = typer.Option("table", "-o", "--output", help="table or json")


@job_group.command("plan")
def plan(
    job: Path = typer.Argument(..., exists=True, dir_okay=False, help="job file (YAML or JSON), as for submit"),
    queue: str | None = typer.Option(None, "--queue", "-q", help="the queue it would be submitted to"),
    output: str = PLAN_OUT_OPT,
    rest: str | None = REST_OPT,
) -> None:
    """What would happen if JOB were submitted now: its queue, where its AM and first stage would be placed,
    its predicted start and finish, and the running apps it would delay. Nothing is submitted."""
    from am.jobspec import JobSpecError, load_job
    from rm.commands.rest import RestClient

    if output not in ("table", "json"):
        raise typer.BadParameter(f"-o must be table or json, not {output!r}")
    try:
        spec = load_job(job)
    except JobSpecError as exc:
        err_console.print(f"[red]invalid job file:[/red] {exc}")
        raise typer.Exit(2) from None
    body = spec.to_dict()
    if queue:
        body["queue"] = queue
    user = spec.user or os.environ.get("USER", "dr.who")
    with RestClient(rest, timeout=120.0) as client:
        try:
            answer = client.call("POST", f"/ws/v1/shepherd/plan?user.name={quote(user)}", body)
        except ClientError as exc:
            raise fail(exc) from None
    result = answer.get("plan", {})
    if output == "json":
        sys.stdout.write(dump(result, "json"))
        return
    console.print(plan_table(result))


def _when(ms: int | None, plan_ms: int) -> str:
    if ms is None:
        return "-"
    clock = time.strftime("%H:%M:%S", time.localtime(ms / 1000))
    return f"{clock} (+{(ms - plan_ms) / 1000:.1f} s)"


def plan_table(p: dict[str, Any]) -> RenderableType:
    t0 = int(p.get("planTime") or 0)
    am = p.get("amContainer")
    first = p.get("firstStage") or {}
    placed = ", ".join(f"{x['node']} x{x['tasks']}" for x in first.get("placements", [])) or "-"
    rows: list[tuple[str, Any]] = [
        ("job", p.get("job")), ("queue", p.get("queue")), ("user", p.get("user")),
        ("scheduler", p.get("scheduler")), ("outcome", p.get("status")),
        ("AM container", f"{am['node']} at {_when(am['time'], t0)}" if am else "-"),
        (f"first stage ({first.get('name', '')})", f"{placed}; first task at {_when(first.get('firstStartTime'), t0)}"),
        ("predicted start", _when(p.get("predictedStartTime"), t0)),
        ("predicted finish", _when(p.get("predictedFinishTime"), t0)),
    ]
    parts: list[RenderableType] = [kv_table(rows)]
    delays = p.get("delays") or []
    if delays:
        table = Table("APP", "NAME", "FINISH WITHOUT", "FINISH WITH", "DELAY", title="running apps it would delay")
        for d in delays:
            delay = d.get("delaySec")
            table.add_row(d.get("id", ""), d.get("name", ""), _when(d.get("finishTimeWithout"), t0),
                          _when(d.get("finishTimeWith"), t0), "-" if delay is None else f"{delay:.1f} s")
        parts.append(table)
    else:
        parts.append("delays no running app")
    for note in p.get("notes") or []:
        parts.append(f"note: {note}")
    return Group(*parts)
