"""``shepherd app deadline ID WHEN`` and ``shepherd app slo ID``: change a running app's deadline (admitted by
its queue's deadline book, or refused with the earliest feasible finish) and show how it stands against it."""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rm.client import ClientError
from rm.commands.apps import app_group
from rm.commands.common import REST_OPT, fail, next_clock_time, show_rest
from rm.commands.output import OUTPUT_OPTS, Output, console, kv_table, read_command
from rm.commands.rest import RestClient

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
TRACE_ROWS = 20  # control decisions shown in the table (-o json has every one the RM keeps)
EPOCH_FROM = 1e9  # a bare number at least this large is seconds since the epoch; smaller, seconds from now


def deadline_body(text: str, now: float) -> dict[str, Any]:
    """The body of a deadline change from the command line: ``45m``, ``+45m``, ``90s``, ``2h`` or a number of
    seconds below 10⁹ from the RM's now; ``HH:MM[:SS]`` today (tomorrow if that has passed) or seconds since
    the epoch as a time."""
    t = text.strip()
    rel = t.removeprefix("+")
    scale = _UNITS.get(rel[-1:].lower(), 0.0)
    try:
        if ":" in t:
            return {"deadline": round(next_clock_time(t, now) * 1000)}
        value = float(rel[:-1] if scale else rel)
        if not t.startswith("+") and not scale and value >= EPOCH_FROM:
            return {"deadline": round(value * 1000)}
        seconds = value * (scale or 1.0)
        if seconds <= 0:
            raise ValueError(t)
        return {"deadline": f"+{seconds:g}"}
    except ValueError:
        raise typer.BadParameter(f"{text!r}: use 45m, 90s, 2h, +SECONDS, HH:MM[:SS] or seconds since the "
                                 "epoch") from None


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def _res(d: dict[str, Any] | None) -> str:
    return "-" if d is None else f"{d.get('memory', 0)} MB, {d.get('vCores', 0)} vcores"


def slo_view(s: dict[str, Any]) -> RenderableType:
    unit = _res(s.get("unit"))
    utility = s.get("utility")
    rows: list[tuple[str, Any]] = [
        ("application", s.get("id")),
        ("status", s.get("status")),
        ("deadline", f"{_when(s.get('deadline'))} ({s.get('deadlineSource')})"),
        ("predicted finish", _when(s.get("predictedFinish"))),
        ("progress", f"{100 * float(s.get('progress') or 0):.1f}%"),
        ("claim in the deadline book", "yes" if s.get("claimed") else "no"),
        ("work (total / left)", f"{s.get('totalWork')} / {s.get('remainingWork')} unit-s (unit {unit})"),
        ("oracle allocation", f"{s.get('oracleUnits')} units (the run), {s.get('oracleUnitsNow')} (what is left)"),
        ("guarantee requested", _res(s.get("requestedGuarantee"))),
        ("guarantee granted", _res(s.get("grantedGuarantee"))),
        ("utility", "-" if not utility else ", ".join(f"{p['afterSubmitSec']:g} s: {p['value']:g}"
                                                     for p in utility)),
        ("modelled from runs", ", ".join(s.get("profileRuns") or []) or "- (its job file)"),
        ("model built in", "-" if s.get("modelBuildSec") is None else f"{s['modelBuildSec']:g} s"),
    ]
    if s.get("workDone") is not None:
        above = s.get("aboveOracle")
        rows += [("work done", f"{s['workDone']:g} unit-s"),
                 ("requested above the oracle", "-" if above is None else f"{100 * above:.1f}%")]
    trace = s.get("controlTrace") or []
    if not trace:
        return Group(kv_table(rows), Text("no control decisions reported by the application master"))
    table = Table("TIME", "PROGRESS", "PACE", "A^r", "A^s", "REQUESTED", "PREDICTED FINISH", "STATUS",
                  title=f"control decisions (the last {min(len(trace), TRACE_ROWS)} of {len(trace)})")
    for c in trace[-TRACE_ROWS:]:
        table.add_row(_when(c.get("time")), f"{100 * float(c.get('progress') or 0):.1f}%",
                      f"{float(c.get('pace') or 1.0):.2f}", str(c.get("rawUnits")),
                      str(c.get("smoothedUnits")), str(c.get("requestedUnits")), _when(c.get("predictedFinish")),
                      f"{c.get('status')}{' (held)' if c.get('held') else ''}")
    return Group(kv_table(rows), table)


@app_group.command("deadline")
def app_deadline(app_id: str, when: str = typer.Argument(..., help="45m, 90s, 2h, HH:MM[:SS] or epoch seconds"),
                 rest: str | None = REST_OPT) -> None:
    """Change a running application's deadline; its queue's deadline book must admit it (else the earliest
    feasible finish is named and nothing changes)."""
    body = deadline_body(when, time.time())
    with RestClient(rest) as client:
        try:
            out = client.call("PUT", f"/ws/v1/shepherd/apps/{app_id}/deadline", body)["slo"]
        except ClientError as exc:
            raise fail(exc) from None
    console.print(f"{app_id} is due {_when(out.get('deadline'))} ({out.get('status')})")


@app_group.command("slo")
@read_command
def app_slo(app_id: str, out: Output = OUTPUT_OPTS, rest: str | None = REST_OPT) -> None:
    """How an application stands against its deadline: status, predicted finish, guarantees, oracle (-o wide is
    the table)."""
    show_rest(rest, f"/ws/v1/shepherd/apps/{app_id}/slo", "slo", out.format, slo_view, watch=out.watch,
              interval=out.interval)
