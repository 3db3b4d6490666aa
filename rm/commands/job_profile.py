"""``shepherd job profile NAME``: a recurring job's profile from its earlier runs, the one its next
ApplicationMaster is handed (``GET /ws/v1/shepherd/jobs/{name}/profile``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import typer
from rich.console import Group, RenderableType
from rich.table import Table

from rm.commands.common import REST_OPT, show_rest
from rm.commands.job import job_group
from rm.commands.output import OUTPUT_OPTS, Output, kv_table, read_command


def _s(ms: Any) -> str:
    return "-" if ms is None else f"{float(ms) / 1000:.2f}"


def profile_view(p: dict[str, Any]) -> RenderableType:
    runs = p.get("runs") or []
    head = kv_table([
        ("job", p.get("job")), ("queue", p.get("queue")), ("user", p.get("user")),
        ("built from", f"{len(runs)} run(s): {', '.join(runs)}"),
        ("tasks", p.get("totalTasks")), ("total work", f"{p.get('totalWork')} task-s"),
    ])
    table = Table("STAGE", "TASKS", "MEAN (s)", "P90 (s)", "LONGEST (s)", "INIT (s)", "QUEUE (s)", "FAILED",
                  "P(FAIL)", "CONTAINER", "PARENTS", title="per stage")
    for s in p.get("stages") or []:
        c = s.get("container") or {}
        table.add_row(str(s.get("name")), str(s.get("tasks")), _s(s.get("meanTaskTime")), _s(s.get("p90TaskTime")),
                      _s(s.get("longestTaskTime")), _s(s.get("initTime")), _s(s.get("queueTime")),
                      f"{s.get('failedAttempts')}/{s.get('attempts')}", f"{float(s.get('failureProbability') or 0):.3f}",
                      f"{c.get('memory', 0)} MB, {c.get('vCores', 0)} vc", ", ".join(s.get("parents") or []) or "-")
    return Group(head, table)


@job_group.command("profile")
@read_command
def job_profile(
    name: str = typer.Argument(..., help="the job's name (its applications' name)"),
    queue: str | None = typer.Option(None, "--queue", "-q", help="whose runs: this queue's (default: the newest run's)"),
    user: str | None = typer.Option(None, "--user", "-u", help="whose runs: this user's (default: the newest run's)"),
    out: Output = OUTPUT_OPTS,
    rest: str | None = REST_OPT,
) -> None:
    """A recurring job's profile from its earlier runs, per stage: tasks, mean / p90 task time, init and queue
    time, failures, and the runs it was built from. Its next ApplicationMaster models the job from it."""
    params = {k: v for k, v in (("queue", queue), ("user", user)) if v}
    path = f"/ws/v1/shepherd/jobs/{quote(name, safe='')}/profile" + (f"?{urlencode(params)}" if params else "")
    show_rest(rest, path, "jobProfile", out.format, profile_view, watch=out.watch, interval=out.interval)
