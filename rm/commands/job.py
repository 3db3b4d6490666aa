"""``shepherd job plan JOB.yaml``: a dry run of a submission (``POST /ws/v1/shepherd/plan``);
``shepherd job quote JOB.yaml``: what finishing it by each deadline costs (``POST /ws/v1/shepherd/quotes``);
``shepherd deadlines``: the deadlines bought, earliest first (``GET /ws/v1/shepherd/deadlines``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import typer
from rich.console import Group, RenderableType
from rich.table import Table

from am.jobspec import Job
from rm.client import ClientError
from rm.commands.common import REST_OPT, fail, next_clock_time
from rm.commands.output import (
    OUT_OPT,
    OUTPUT_OPTS,
    Format,
    Output,
    console,
    dump,
    error,
    kv_table,
    read_command,
)
from rm.sdk.models import JobPlan

job_group = typer.Typer(no_args_is_help=True, help="Jobs: plan (a dry run of a submission), quote (a price for "
                        "each deadline), profile (what earlier runs say of a recurring job).")


@job_group.command("plan")
def plan(
    job: Path = typer.Argument(..., exists=True, dir_okay=False, help="job file (YAML or JSON), as for submit"),
    queue: str | None = typer.Option(None, "--queue", "-q", help="the queue it would be submitted to"),
    output: Format = OUT_OPT,
    rest: str | None = REST_OPT,
) -> None:
    """What would happen if JOB were submitted now: its queue, where its AM and first stage would be placed,
    its predicted start and finish, whether the job file's deadline_s would be met, and the running apps it
    would delay. Nothing is submitted."""
    from rm.sdk import Client

    spec = _read_job(job)
    with Client(rest=rest) as client:
        try:
            result = client.plan(spec, queue=queue)
        except ClientError as exc:
            raise fail(exc) from None
    if output in ("json", "yaml"):
        sys.stdout.write(dump(result.raw, output))
    else:
        console.print(plan_table(result))


def _read_job(job: Path) -> Job:
    """The job file; one that is not valid exits 2."""
    from am.jobspec import JobSpecError, load_job

    try:
        return load_job(job)
    except JobSpecError as exc:
        error(f"invalid job file: {exc}")
        raise typer.Exit(2) from None


def _post_job(job: Path, output: Format, rest: str | None, path: str, body: Any, *,
              timeout: float = 30.0) -> dict[str, Any]:
    """Read a job file, POST what ``body(job)`` makes of it to ``path`` as its user, and print the answer
    as JSON or YAML when asked (then None comes back for the table; -o wide is the table)."""
    from rm.commands.rest import RestClient
    from rm.sdk.jobs import job_user

    spec = _read_job(job)
    user = job_user(spec)
    with RestClient(rest, timeout=timeout) as client:
        try:
            answer: dict[str, Any] = client.call("POST", f"{path}?user.name={quote(user)}", body(spec))
        except ClientError as exc:
            raise fail(exc) from None
    if output in ("json", "yaml"):
        sys.stdout.write(dump(next(iter(answer.values()), {}), output))
        return {key: None for key in answer}
    return answer


def _when(ms: int | None, plan_ms: int) -> str:
    if ms is None:
        return "-"
    clock = time.strftime("%H:%M:%S", time.localtime(ms / 1000))
    return f"{clock} (+{(ms - plan_ms) / 1000:.1f} s)"


def _feasible(p: JobPlan) -> str:
    """The plan's verdict on the job file's deadline_s: yes, no, or that the job has none."""
    if p.deadline_s is None:
        return "- (the job sets no deadline_s)"
    verdict = "yes" if p.deadline_feasible else "no"
    return f"{verdict} (deadline {p.deadline_s:g} s after submission)"


def plan_table(p: JobPlan) -> RenderableType:
    t0 = p.plan_time_ms
    am = p.am_container
    first = p.first_stage
    placed = ", ".join(f"{x.node} x{x.tasks}" for x in first.placements) or "-"
    rows: list[tuple[str, Any]] = [
        ("job", p.job), ("queue", p.queue), ("user", p.user), ("scheduler", p.scheduler), ("outcome", p.status),
        ("AM container", f"{am.node} at {_when(am.time_ms, t0)}" if am else "-"),
        (f"first stage ({first.name})", f"{placed}; first task at {_when(first.first_start_time_ms, t0)}"),
        ("predicted start", _when(p.predicted_start_time_ms, t0)),
        ("predicted finish", _when(p.predicted_finish_time_ms, t0)),
        ("deadline feasible", _feasible(p)),
    ]
    parts: list[RenderableType] = [kv_table(rows)]
    if p.delays:
        table = Table("APP", "NAME", "FINISH WITHOUT", "FINISH WITH", "DELAY", title="running apps it would delay")
        for d in p.delays:
            table.add_row(d.app_id, d.name, _when(d.finish_time_without_ms, t0), _when(d.finish_time_with_ms, t0),
                          "-" if d.delay_s is None else f"{d.delay_s:.1f} s")
        parts.append(table)
    else:
        parts.append("delays no running app")
    parts.extend(f"note: {note}" for note in p.notes)
    if p.token:
        parts.append(f"to submit it only while this plan holds: shepherd submit JOB --plan-token {p.token}")
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
    output: Format = OUT_OPT,
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


@read_command
def deadlines(
    queue: str | None = typer.Option(None, "--queue", "-q"),
    out: Output = OUTPUT_OPTS,
    rest: str | None = REST_OPT,
) -> None:
    """The deadlines bought, earliest first: price, estimate, remaining work, laxity and status (-o wide: the
    user, app state, mean ± deviation of the estimate with its method and runs, and the earliest finish)."""
    from rm.commands.rest import RestClient

    path = "/ws/v1/shepherd/deadlines" + (f"?queue={quote(queue)}" if queue else "")
    with RestClient(rest) as client:
        def fetch() -> list[dict[str, Any]]:
            try:
                answer = client.call("GET", path)
            except ClientError as exc:
                raise fail(exc) from None
            rows: list[dict[str, Any]] = (answer.get("deadlines") or {}).get("deadline") or []
            return rows

        out.show(fetch, deadlines_table, lambda rows: deadlines_table(rows, wide=True))


def deadlines_table(rows: list[dict[str, Any]], *, wide: bool = False) -> Table:
    more = ["USER", "STATE", "ESTIMATE", "EARLIEST FINISH"] if wide else []
    t = Table(show_edge=False)
    for col in ("APP", "NAME", "QUEUE", *more[:2], "DEADLINE", "PRICE", "CLAIMED", *more[2:], "REMAINING", "LAXITY",
                "STATUS"):
        t.add_column(col)
    now_ms = int(time.time() * 1000)
    for d in rows:
        lax = d.get("laxity")
        est = d.get("estimate") or {}
        who = [d.get("user") or "-", d.get("state") or "-"] if wide else []
        how = [f"{est.get('mean', 0):.0f} ± {est.get('stddev', 0):.0f} ({est.get('method')}, {est.get('runs')} runs)",
               _when(d.get("earliestFinish"), now_ms)] if wide else []
        t.add_row(d["id"], d["name"], d["queue"], *who, _when(d["deadline"], now_ms), f"{d['price']:.1f}",
                  f"{est.get('piUpper', 0):.0f}", *how, f"{d['remainingWork']:.0f}",
                  "-" if lax is None else f"{lax:.0f} s", d["status"])
    return t
