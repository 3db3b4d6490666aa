"""``shepherd slo``: SLO proposals inferred from run history (Morpheus) — list, show, accept (sign off,
optionally overriding deadline, earliest start, period, queue or skyline) and reject. Over the RM's REST API
(``/ws/v1/shepherd/slo-proposals``)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import typer
from rich.console import Group, RenderableType
from rich.table import Column, Table
from rich.text import Text

from rm.client import ClientError
from rm.commands.common import REST_OPT, fail, show_rest
from rm.commands.output import OUT_OPT, OUTPUT_OPTS, Format, Output, console, kv_table, read_command, show
from rm.commands.rest import RestClient

slo_group = typer.Typer(no_args_is_help=True, help="SLO proposals inferred from run history: list, show, "
                        "accept (sign off, with optional overrides), reject.")

BASE = "/ws/v1/shepherd/slo-proposals"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhdw]?)$")
_CLOCK = re.compile(r"^(\d{1,3}):(\d{2})(?::(\d{2}))?$")


def parse_seconds(text: str, what: str) -> float:
    """Seconds from ``3600``, ``90m``, ``7h``, ``1d``, ``2w``, or a clock offset ``HH:MM[:SS]`` into the period."""
    t = text.strip().lower()
    m = _CLOCK.match(t)
    if m:
        h, mi, sec = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if mi > 59 or sec > 59:
            raise typer.BadParameter(f"{what}: {text!r} is not a valid HH:MM[:SS] offset")
        return float(h * 3600 + mi * 60 + sec)
    m = _DURATION.match(t)
    if not m:
        raise typer.BadParameter(f"{what}: {text!r} is neither seconds (3600, 90m, 7h, 1d) nor HH:MM[:SS]")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def clock(seconds: float) -> str:
    """An offset into the period as [Nd+]HH:MM[:SS]."""
    s = round(seconds)
    days, rest = divmod(s, 86_400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    out = f"{h:02d}:{m:02d}" + (f":{sec:02d}" if sec else "")
    return f"{days}d+{out}" if days else out


def duration(seconds: float) -> str:
    s = round(seconds)
    for unit, size in (("w", 604_800), ("d", 86_400), ("h", 3600), ("m", 60)):
        if s >= size and s % size == 0:
            return f"{s // size}{unit}"
    return f"{s}s"


def _path(job: str) -> str:
    return f"{BASE}/{quote(job, safe='')}"


@slo_group.command("list")
@read_command
def slo_list(
    status: str = typer.Option("", "--status", "-s", help="only these statuses (comma list): proposed, accepted, "
                               "rejected"),
    out: Output = OUTPUT_OPTS,
    rest: str | None = REST_OPT,
) -> None:
    """Every recurring job with enough runs: its proposed period, window and peak, and its status (-o wide: its
    queue, user, step, container-seconds and who decided)."""
    with RestClient(rest) as client:
        def fetch() -> list[dict[str, Any]]:
            try:
                path = f"{BASE}?status={quote(status)}" if status else BASE
                items: list[dict[str, Any]] = client.call("GET", path)["sloProposals"]["sloProposal"]
            except ClientError as exc:
                raise fail(exc) from None
            return items

        out.show(fetch, _list_table, _list_wide)


def _list_wide(items: list[dict[str, Any]]) -> Table:
    return _list_table(items, wide=True)


def _list_table(items: list[dict[str, Any]], *, wide: bool = False) -> Table:
    more = ["QUEUE", "USER", "STEP", "CONTAINER-S", "DECIDED BY"] if wide else []
    table = Table(Column("JOB", no_wrap=True), "STATUS", "PERIOD", "EARLIEST START", "DEADLINE", "RUNS",
                  "PEAK", "ACTIONABLE", "RESERVATION", *more, title=f"{len(items)} SLO proposal(s)")
    for p in items:
        decision = p.get("decision") or {}
        extra = [p.get("queue") or "-", p.get("user") or "-", duration(p.get("step") or 0),
                 str(p.get("containerSeconds", 0)), decision.get("user") or "-"] if wide else []
        table.add_row(p["job"], p["status"], duration(p["period"]), clock(p["earliestStart"]),
                      clock(p["deadline"]), str(p["runs"]), str(p["peakContainers"]),
                      "yes" if p["actionable"] else "no", p.get("reservationId") or "-", *extra)
    return table


@slo_group.command("show")
@read_command
def slo_show(job: str, out: Output = OUTPUT_OPTS, rest: str | None = REST_OPT) -> None:
    """One job's proposal with its reasons and skyline (-o wide is the table, which shows every field)."""
    show_rest(rest, _path(job), "sloProposal", out.format, _show_view, watch=out.watch, interval=out.interval)


def _unit(u: dict[str, Any]) -> str:
    parts = [f"{u.get('memory-mb', 0)} MB", f"{u.get('vcores', 0)} vcores"]
    parts += [f"{k}={v}" for k, v in sorted(u.items()) if k not in ("memory-mb", "vcores")]
    return ", ".join(parts)


def _show_view(p: dict[str, Any]) -> RenderableType:
    decision = p.get("decision") or {}
    rows: list[tuple[str, Any]] = [
        ("job", p["job"]), ("status", p["status"]), ("reservation", p.get("reservationId") or "-"),
        ("queue", p["queue"]), ("user", p["user"]), ("runs", p["runs"]),
        ("period", f"{duration(p['period'])} ({p['period']} s)"),
        ("earliest start", f"{clock(p['earliestStart'])} into the period ({p['earliestStart']:g} s)"),
        ("deadline", f"{clock(p['deadline'])} into the period ({p['deadline']:g} s)"),
        ("actionable", "yes" if p["actionable"] else "no"),
        ("skyline", (f"{len(p['skyline'])} step(s) of {p['step']} s, peak {p['peakContainers']} x "
                     f"<{_unit(p['unit'])}>, {p['containerSeconds']} container-seconds")),
        ("alignment penalty", p["alignment"]),
    ]
    if decision:
        rows.append(("decision", (f"{decision.get('status')} by {decision.get('user') or '-'} "
                                  f"(runs up to {decision.get('basedOn')})")))
    reasons = Text("\n".join(f"- {r}" for r in p["reasons"]) or "- none", style="dim")
    steps = Text(" ".join(str(x) for x in p["skyline"]), style="dim")
    return Group(kv_table(rows), Text("reasons:"), reasons, Text("skyline (containers per step):"), steps)


@slo_group.command("accept")
def slo_accept(
    job: str,
    deadline: str | None = typer.Option(None, "--deadline", help="deadline into the period: HH:MM[:SS] or "
                                        "seconds (25200, 7h)"),
    earliest_start: str | None = typer.Option(None, "--earliest-start", help="earliest start into the period"),
    period: str | None = typer.Option(None, "--period", help="the period: 1d, 12h, 3600 ..."),
    queue: str | None = typer.Option(None, "--queue", "-q", help="reserve in this queue instead"),
    skyline: str | None = typer.Option(None, "--skyline", help="containers per step instead, e.g. 2,4,4,1"),
    output: Format = OUT_OPT,
    rest: str | None = REST_OPT,
) -> None:
    """Sign off a job's SLO proposal (optionally overriding it): it becomes a periodic reservation. -o json|yaml
    prints the accepted proposal; -o wide is the table."""
    body: dict[str, Any] = {}
    if deadline is not None:
        body["deadline"] = parse_seconds(deadline, "--deadline")
    if earliest_start is not None:
        body["earliestStart"] = parse_seconds(earliest_start, "--earliest-start")
    if period is not None:
        body["period"] = int(parse_seconds(period, "--period"))
    if queue is not None:
        body["queue"] = queue
    if skyline is not None:
        try:
            body["skyline"] = [int(x) for x in skyline.split(",") if x.strip()]
        except ValueError:
            raise typer.BadParameter(f"--skyline wants whole numbers separated by commas, got {skyline!r}") from None
    with RestClient(rest) as client:
        try:
            out = client.call("POST", f"{_path(job)}/accept", body)
        except ClientError as exc:
            raise fail(exc) from None
    if output in ("json", "yaml"):
        show(lambda: out, output, _show_view)
        return
    console.print(f"accepted the SLO of {job}: periodic reservation {out['reservation-id']}")


@slo_group.command("reject")
def slo_reject(job: str, rest: str | None = REST_OPT) -> None:
    """Reject a job's SLO proposal: it is not proposed again until a new run of the job ends."""
    with RestClient(rest) as client:
        try:
            client.call("POST", f"{_path(job)}/reject")
        except ClientError as exc:
            raise fail(exc) from None
    console.print(f"rejected the SLO proposal of {job}")


__all__ = ["clock", "duration", "parse_seconds", "slo_group"]
