"""``shepherd job plan JOB.yaml``: a dry run of a submission (``POST /ws/v1/shepherd/plan``);
``shepherd job quote JOB.yaml``: what finishing it by each deadline costs (``POST /ws/v1/shepherd/quotes``);
``shepherd deadlines``: the deadlines bought, earliest first (``GET /ws/v1/shepherd/deadlines``)."""

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
from rm.commands.common import REST_OPT, fail, next_clock_time
from rm.commands.output import console, dump, error, kv_table

job_group = typer.Typer(no_args_is_help=True, help="Jobs: plan (a dry run of a submission), quote (a price for "
                        "each deadline).")

PLAN_OUT_OPT = typer.Option("table", "-o", "--output", help="table or json")


@job_group.command("plan")
def plan(
    job: Path = typer.Argument(..., exists=True, dir_okay=False, help="job file (YAML or JSON), as for submit"),
    queue: str | None = typer.Option(None, "--queue", "-q", help="the queue it would be submitted to"),
    output: str = PLAN_OUT_OPT,
    rest: str | None = REST_OPT,
) -> None:
    """What would happen if JOB were submitted now: its queue, where its AM and first stage would be placed,
    its predicted start and finish, whether the job file's deadline_s would be met, and the running apps it
    would delay. Nothing is submitted."""

    def body(spec: Any) -> dict[str, Any]:
        out: dict[str, Any] = spec.to_dict()
        if queue:
            out["queue"] = queue
        return out

    result = _post_job(job, output, rest, "/ws/v1/shepherd/plan", body, timeout=120.0).get("plan", {})
    if result is not None:
        console.print(plan_table(result))


def _post_job(job: Path, output: str, rest: str | None, path: str, body: Any, *,
              timeout: float = 30.0) -> dict[str, Any]:
    """Read a job file, POST what ``body(job)`` makes of it to ``path`` as its user, and print the answer
    as JSON when asked (then None comes back for the table)."""
    from am.jobspec import JobSpecError, load_job
    from rm.commands.rest import RestClient

    if output not in ("table", "json"):
        raise typer.BadParameter(f"-o must be table or json, not {output!r}")
    try:
        spec = load_job(job)
    except JobSpecError as exc:
        error(f"invalid job file: {exc}")
        raise typer.Exit(2) from None
    user = spec.user or os.environ.get("USER", "dr.who")
    with RestClient(rest, timeout=timeout) as client:
        try:
            answer: dict[str, Any] = client.call("POST", f"{path}?user.name={quote(user)}", body(spec))
        except ClientError as exc:
            raise fail(exc) from None
    if output == "json":
        sys.stdout.write(dump(next(iter(answer.values()), {}), "json"))
        return {key: None for key in answer}
    return answer


def _when(ms: int | None, plan_ms: int) -> str:
    if ms is None:
        return "-"
    clock = time.strftime("%H:%M:%S", time.localtime(ms / 1000))
    return f"{clock} (+{(ms - plan_ms) / 1000:.1f} s)"


def _feasible(p: dict[str, Any]) -> str:
    """The plan's verdict on the job file's deadline_s: yes, no, or that the job has none."""
    limit = p.get("deadlineSec")
    if limit is None:
        return "- (the job sets no deadline_s)"
    verdict = "yes" if p.get("deadlineFeasible") else "no"
    return f"{verdict} (deadline {limit:g} s after submission)"


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
        ("deadline feasible", _feasible(p)),
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


def parse_deadline(text: str, now: float) -> float:
    """A deadline as given on the command line: ``+90``/``+90s``/``+30m``/``+2h`` from now, ``HH:MM[:SS]``
    today (tomorrow if that has passed), or seconds since the epoch."""
    t = text.strip()
    try:
        if t.startswith("+"):
            unit = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(t[-1].lower(), 0.0)
            return now + float(t[1:-1] if unit else t[1:]) * (unit or 1.0)
        if ":" in t:
            return next_clock_time(t, now)
        return float(t)
    except ValueError:
        raise typer.BadParameter(f"--deadline {text!r}: use +90s, +30m, +2h, HH:MM[:SS] or seconds since the "
                                 "epoch") from None


@job_group.command("quote")
def quote_job(
    job: Path = typer.Argument(..., exists=True, dir_okay=False, help="job file (YAML or JSON), as for submit"),
    queue: str | None = typer.Option(None, "--queue", "-q", help="the queue it would be submitted to"),
    output: str = PLAN_OUT_OPT,
    rest: str | None = REST_OPT,
) -> None:
    """What finishing JOB by each deadline would cost now: its estimated work with a prediction interval,
    the earliest feasible finish, and a price curve. Buy a point with `shepherd submit JOB --quote ID
    [--deadline ...]` before the quote expires."""
    q = _post_job(job, output, rest, "/ws/v1/shepherd/quotes",
                  lambda spec: {"queue": queue or spec.queue, "job": spec.to_dict()}).get("quote", {})
    if q is not None:
        console.print(quote_table(q))


def quote_table(q: dict[str, Any]) -> RenderableType:
    created = int(q.get("created") or 0)
    est = q.get("estimate") or {}
    rows: list[tuple[str, Any]] = [
        ("quote", q.get("id")), ("job", q.get("job")), ("queue", q.get("queue")),
        ("expires", _when(q.get("expires"), created)),
        ("estimated work", (f"{est.get('mean', 0):.0f} unit-s ± {est.get('stddev', 0):.0f} "
                            f"({est.get('method')}, {est.get('runs')} runs); claimed {est.get('piUpper', 0):.0f} "
                            f"(z = {est.get('z')})")),
        ("critical path", f"{q.get('criticalPath', 0):.1f} s"),
        ("earliest finish", _when(q.get("earliestFinish"), created)),
    ]
    curve = Table(title="price by deadline", show_edge=False)
    curve.add_column("deadline")
    curve.add_column("price (tokens)", justify="right")
    for p in q.get("curve", []):
        curve.add_row(_when(p["deadline"], created), f"{p['price']:.1f}")
    return Group(kv_table(rows), curve)


def deadlines(
    queue: str | None = typer.Option(None, "--queue", "-q"),
    output: str = PLAN_OUT_OPT,
    rest: str | None = REST_OPT,
) -> None:
    """The deadlines bought, earliest first: price, estimate, remaining work, laxity and status."""
    from rm.commands.rest import RestClient

    if output not in ("table", "json"):
        raise typer.BadParameter(f"-o must be table or json, not {output!r}")
    path = "/ws/v1/shepherd/deadlines" + (f"?queue={quote(queue)}" if queue else "")
    with RestClient(rest) as client:
        try:
            answer = client.call("GET", path)
        except ClientError as exc:
            raise fail(exc) from None
    rows = (answer.get("deadlines") or {}).get("deadline") or []
    if output == "json":
        sys.stdout.write(dump(rows, "json"))
        return
    now_ms = int(time.time() * 1000)
    t = Table(show_edge=False)
    for col in ("APP", "NAME", "QUEUE", "DEADLINE", "PRICE", "CLAIMED", "REMAINING", "LAXITY", "STATUS"):
        t.add_column(col)
    for d in rows:
        lax = d.get("laxity")
        t.add_row(d["id"], d["name"], d["queue"], _when(d["deadline"], now_ms), f"{d['price']:.1f}",
                  f"{d['estimate']['piUpper']:.0f}", f"{d['remainingWork']:.0f}",
                  "-" if lax is None else f"{lax:.0f} s", d["status"])
    console.print(t)
