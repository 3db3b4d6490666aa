"""``shepherd reservation``: create, list, show, update and delete reservations over YARN's reservation REST
API (``/ws/v1/cluster/reservation/...``), and chart their skylines against the queue's plan capacity, in the
terminal or as an SVG file. The plan capacities come from ``/ws/v1/shepherd/reservation-plans``."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import typer
from rich.console import Group, RenderableType
from rich.table import Column, Table
from rich.text import Text

from rm.client import ClientError
from rm.commands.chart import Band, Chart, Run, span, svg_chart, text_chart
from rm.commands.common import REST_OPT, fail
from rm.commands.output import OUTPUT_OPTS, Output, console, error, kv_table, read_command
from rm.commands.reservation_flags import INTERPRETERS, definition_from_flags, read_file, skyline_requests
from rm.commands.rest import RestClient
from rm.commands.shapes import clock, when

reservation_group = typer.Typer(no_args_is_help=True, help="Reservations (YARN's reservation system): create, "
                                "list, show, update, delete; their skylines against the queue's capacity.")

R = "/ws/v1/cluster/reservation"
PLANS = "/ws/v1/shepherd/reservation-plans"
RESOURCES = {"memory": ("memory", "MB"), "vcores": ("vCores", "vcores")}

QUEUE_OPT = typer.Option(None, "--queue", "-q", help="reservable queue (leaf name or path)")
RESOURCE_OPT = typer.Option("memory", "--resource", help="what the chart counts: memory or vcores")
SVG_OPT = typer.Option(None, "--svg", dir_okay=False, help="also write the chart to this SVG file")
ARRIVAL_OPT = typer.Option(None, "--arrival", help="earliest start: now, +30m, +2h, HH:MM[:SS] (today, or "
                           "tomorrow if past) or seconds since the epoch \\[create: now]")
DEADLINE_OPT = typer.Option(None, "--deadline", help="when it must be done: +2h (from now), HH:MM[:SS] or "
                            "seconds since the epoch")
STAGE_OPT = typer.Option([], "--stage", "-s", help="one stage (repeatable, in order): "
                         "containers=N,duration=10m[,memory=MB][,vcores=N][,gang=N]")
SKYLINE_OPT = typer.Option(None, "--skyline", help="containers per --step, back to back (R_ORDER_NO_GAP), e.g. "
                           "2,4,4,1; instead of --stage")
STEP_OPT = typer.Option(None, "--step", help="how long each --skyline step lasts: 600, 90s, 10m, 2h")
MEMORY_OPT = typer.Option(1024, "--memory", min=1, help="MB per container of a --skyline")
VCORES_OPT = typer.Option(1, "--vcores", min=1, help="vcores per container of a --skyline")
INTERP_OPT = typer.Option(None, "--interpreter", help="any, all, order or order-no-gap \\[one stage: all; "
                          "several: order]")
NAME_OPT = typer.Option(None, "--name", help="the reservation's name")


# ---------------------------------------------------------------------------------------- REST helpers


def _call(client: RestClient, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    try:
        return client.call(method, path, body)
    except ClientError as exc:
        raise fail(exc) from None


def plans(client: RestClient) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = _call(client, "GET", PLANS)["reservationPlans"]["plan"]
    return found


def _plan_of(all_plans: list[dict[str, Any]], queue: str) -> dict[str, Any] | None:
    for p in all_plans:
        q = p["queue"]
        if queue in (q, q.removeprefix("root.")) or q.rsplit(".", 1)[-1] == queue:
            return p
    return None


def listed(client: RestClient, queue: str, rid: str | None = None, *, since_ms: int = 0) -> list[dict[str, Any]]:
    """The queue's reservations (or one), with their allocations, as a list."""
    params = {"queue": queue, "include-resource-allocations": "true", "start-time": str(since_ms)}
    if rid:
        params["reservation-id"] = rid
    got = _call(client, "GET", f"{R}/list?{urlencode(params)}")["reservations"]
    if got is None:
        return []
    return got if isinstance(got, list) else [got]


def bands(items: list[dict[str, Any]], resource: str) -> tuple[Band, ...]:
    key = RESOURCES[resource][0]
    out = []
    for item in items:
        runs = tuple(Run(int(a["startTime"]), int(a["endTime"]), float(a["resource"].get(key, 0)))
                     for a in item.get("resource-allocations") or [] if float(a["resource"].get(key, 0)) > 0)
        label = item["reservation-definition"].get("reservation-name") or item["reservation-id"]
        out.append(Band(f"{item['reservation-id']} ({label})", runs))
    return tuple(out)


def chart_of(items: list[dict[str, Any]], plan: dict[str, Any], resource: str, what: str) -> Chart | None:
    key, unit = RESOURCES[resource]
    bs = bands(items, resource)
    if span(bs) is None:
        return None
    # the window: every listed run, the zero ones too (from the arrival to the deadline of each instance)
    every = [(int(a["startTime"]), int(a["endTime"])) for item in items for a in item.get("resource-allocations") or []]
    window = (min(a for a, _ in every), max(b for _, b in every))
    title = f"{resource} reserved by {what} in {plan['queue']} against its plan capacity"
    return Chart(bs, float(plan["capacity"].get(key, 0)), window[0], window[1], unit=unit, title=title)


def drawn(chart: Chart) -> Text:
    """The chart in the terminal's width (at most 160 columns)."""
    return Text("\n".join(text_chart(chart, width=max(40, min(console.width, 160)))))


def write_svg(chart: Chart, svg: Path) -> None:
    try:
        svg.write_text(svg_chart(chart))
    except OSError as exc:
        error(f"cannot write {svg}: {exc}")
        raise typer.Exit(1) from None
    console.print(f"wrote {svg}", highlight=False)


def _no_svg_watch(svg: Path | None, out: Output) -> None:
    if svg is not None and out.watch:
        raise typer.BadParameter("--svg writes one file: use it without --watch")


# ---------------------------------------------------------------------------------------- tables


def _requests(d: dict[str, Any]) -> str:
    reqs = d.get("reservation-requests") or {}
    items = reqs.get("reservation-request") or []
    items = [items] if isinstance(items, dict) else items
    names = {str(v): k for k, v in INTERPRETERS.items()}
    parts = [f"{r['num-containers']}x{r['capability'].get('memory')}MB/{r['capability'].get('vCores')}c "
             f"for {_dur(int(r['duration']))}" for r in items]
    interp = names.get(str(reqs.get("reservation-request-interpreter", 1)), "?")
    return f"{interp}: " + "; ".join(parts)


def _dur(ms: int) -> str:
    s = ms // 1000
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if s >= size and s % size == 0:
            return f"{s // size}{unit}"
    return f"{s}s"


def list_table(items: list[dict[str, Any]], *, wide: bool = False) -> Table:
    """Reservations as a table; ``wide`` adds when each was accepted, its priority and what it holds now."""
    more = ["ACCEPTED", "PRIORITY", "HOLDS NOW"] if wide else []
    table = Table(Column("ID", no_wrap=True), "NAME", "QUEUE", "USER", "ARRIVAL", "DEADLINE", "PERIOD", "REQUESTS",
                  *more, title=f"{len(items)} reservation(s)")
    now_ms = time.time() * 1000
    for item in items:
        d = item["reservation-definition"]
        period = d.get("recurrence-expression")
        accepted = int(item.get("acceptance-time") or 0)
        extra = [clock(accepted, now_ms / 1000), str(d.get("priority", 0)), _holds(item, now_ms)] if wide else []
        table.add_row(item["reservation-id"], d.get("reservation-name") or "-", item.get("queue", "-"),
                      item.get("user") or "-", when(int(d["arrival"])), when(int(d["deadline"])),
                      _dur(int(period)) if period else "-", _requests(d), *extra)
    return table


def _holds(item: dict[str, Any], now_ms: float) -> str:
    """What a reservation's allocation gives it at ``now_ms`` (``-`` outside its runs)."""
    for a in item.get("resource-allocations") or []:
        if int(a["startTime"]) <= now_ms < int(a["endTime"]):
            r = a["resource"]
            return f"{r.get('memory')} MB, {r.get('vCores')} vcores"
    return "-"


def show_view(item: dict[str, Any]) -> RenderableType:
    d = item["reservation-definition"]
    allocs = item.get("resource-allocations") or []
    rows: list[tuple[str, Any]] = [
        ("id", item["reservation-id"]), ("name", d.get("reservation-name") or "-"),
        ("queue", item.get("queue", "-")), ("user", item.get("user") or "-"),
        ("accepted", when(int(item["acceptance-time"])) if item.get("acceptance-time") else "-"),
        ("arrival", when(int(d["arrival"]))), ("deadline", when(int(d["deadline"]))),
        ("period", _dur(int(d["recurrence-expression"])) if d.get("recurrence-expression") else "-"),
        ("requests", _requests(d)), ("priority", d.get("priority", 0)),
    ]
    runs = Table("FROM", "TO", "MEMORY", "VCORES", title="allocation")
    for a in allocs:
        runs.add_row(when(int(a["startTime"])), when(int(a["endTime"])), f"{a['resource'].get('memory')} MB",
                     str(a["resource"].get("vCores")))
    return Group(kv_table(rows), runs) if allocs else Group(kv_table(rows), Text("no allocation", style="dim"))


# ---------------------------------------------------------------------------------------- commands


@reservation_group.command("create")
def create(
    file: Path | None = typer.Argument(None, dir_okay=False, help="YAML/JSON: a reservation-definition, or a "
                                       "submit body with queue and reservation-definition"),
    queue: str | None = QUEUE_OPT,
    arrival: str | None = ARRIVAL_OPT,
    deadline: str | None = DEADLINE_OPT,
    stage: list[str] = STAGE_OPT,
    skyline: str | None = SKYLINE_OPT,
    step: str | None = STEP_OPT,
    memory: int = MEMORY_OPT,
    vcores: int = VCORES_OPT,
    interpreter: str | None = INTERP_OPT,
    name: str | None = NAME_OPT,
    user: str | None = typer.Option(None, "--user", help="reserve as this user \\[default: dr.who]"),
    rest: str | None = REST_OPT,
) -> None:
    """Reserve capacity in a queue: from a file in YARN's reservation-definition shape, or from flags, e.g.
    `--queue default --deadline +2h --stage containers=4,duration=20m,memory=2048`, or a skyline:
    `--deadline +3h --skyline 2,4,4,1 --step 10m`. Prints its id."""
    now = time.time()
    sky = skyline_requests(skyline, step, memory, vcores) if skyline else None
    if file is not None:
        file_queue, definition = read_file(file)
        if arrival or deadline or stage or sky or interpreter or name:
            definition = definition_from_flags(definition, now=now, arrival=arrival, deadline=deadline,
                                               stages=stage, interpreter=interpreter, name=name, skyline=sky)
        queue = queue or file_queue
    else:
        definition = definition_from_flags(None, now=now, arrival=arrival, deadline=deadline, stages=stage,
                                           interpreter=interpreter, name=name, skyline=sky)
    queue = queue or "default"
    with RestClient(rest) as client:
        rid = _call(client, "POST", f"{R}/new-reservation")["reservation-id"]
        path = f"{R}/submit" + (f"?{urlencode({'user.name': user})}" if user else "")
        _call(client, "POST", path, {"queue": queue, "reservation-id": rid, "reservation-definition": definition})
    console.print(f"created {rid} in queue {queue} (`shepherd reservation show {rid}`)", highlight=False)


@reservation_group.command("list")
@read_command
def list_reservations(
    queue: str | None = typer.Option(None, "--queue", "-q", help="only this queue \\[default: every reservable "
                                     "queue]"),
    out: Output = OUTPUT_OPTS,
    chart: bool = typer.Option(False, "--chart", help="also chart each queue's reservations against its capacity"),
    resource: str = RESOURCE_OPT,
    svg: Path | None = SVG_OPT,
    rest: str | None = REST_OPT,
) -> None:
    """Reservations not yet over, per queue. -o json|yaml prints the REST API's reservation objects (numbers
    as strings, as YARN prints them) with their queue; -o wide adds when each was accepted, its priority and
    what it holds now."""
    _check_resource(resource)
    _no_svg_watch(svg, out)
    found = _Listing()

    def view(items: list[dict[str, Any]], *, wide: bool = False) -> RenderableType:
        if not (chart or svg):
            return list_table(items, wide=wide)
        charts = [drawn(c) for c in found.charts(items, resource)]
        return Group(list_table(items, wide=wide), *(charts or [Text("nothing to chart: no reservation holds "
                                                                      "capacity")]))

    with RestClient(rest) as client:
        out.show(lambda: found.fetch(client, queue), view, functools.partial(view, wide=True))
    if svg is not None and not out.structured:
        made = found.charts(found.items, resource)
        for i, c in enumerate(made):
            write_svg(c, _nth(svg, i, len(made)))


@dataclass
class _Listing:
    """What the last fetch of `reservation list` or `show` found: the plans of the queues looked at, by path,
    and their reservations (with their queue), for the charts."""

    plans: dict[str, dict[str, Any]] = field(default_factory=dict)
    items: list[dict[str, Any]] = field(default_factory=list)

    def fetch(self, client: RestClient, queue: str | None) -> list[dict[str, Any]]:
        chosen = _chosen(client, queue)
        since = int(time.time() * 1000)
        self.plans = {p["queue"]: p for p in chosen}
        self.items = [{**item, "queue": p["queue"]} for p in chosen
                      for item in listed(client, p["queue"], since_ms=since)]
        return self.items

    def find(self, client: RestClient, rid: str, queue: str | None) -> dict[str, Any]:
        item, plan = _find(client, rid, queue)
        self.plans, self.items = {plan["queue"]: plan}, [item]
        return item

    def charts(self, items: list[dict[str, Any]], resource: str, what: str = "its reservations") -> list[Chart]:
        """One chart per queue with reservations that hold capacity."""
        per_queue = [(p, [i for i in items if i["queue"] == q]) for q, p in self.plans.items()]
        return [c for p, mine in per_queue if mine and (c := chart_of(mine, p, resource, what))]


def _chosen(client: RestClient, queue: str | None) -> list[dict[str, Any]]:
    """The plans of every reservable queue, or of ``queue`` (the RM says why when it is not reservable)."""
    all_plans = plans(client)
    if not queue:
        return all_plans
    plan = _plan_of(all_plans, queue)
    if plan is None:  # the RM's own refusal
        listed(client, queue)
        return []
    return [plan]


def _nth(svg: Path, i: int, n: int) -> Path:
    """One SVG file per chart: FILE for one, FILE-1.svg, FILE-2.svg ... for several queues."""
    if n == 1:
        return svg
    return svg.with_name(f"{svg.stem}-{i + 1}{svg.suffix or '.svg'}")


def _check_resource(resource: str) -> None:
    if resource not in RESOURCES:
        raise typer.BadParameter(f"--resource must be memory or vcores, not {resource!r}")


def _find(client: RestClient, rid: str, queue: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The reservation and its queue's plan; ``error:`` and exit 2 when no reservable queue holds it."""
    all_plans = plans(client)
    plan = _plan_of(all_plans, queue) if queue else next((p for p in all_plans if rid in p["reservationIds"]), None)
    if queue and plan is None:
        listed(client, queue, rid)  # the RM says why (not a reservable queue)
    found = listed(client, plan["queue"], rid, since_ms=int(time.time() * 1000)) if plan else []
    if not found or plan is None:
        where = f" in queue {queue}" if queue else ""
        error(f"reservation {rid} is unknown{where} (see `shepherd reservation list`)")
        raise typer.Exit(2)
    return {**found[0], "queue": plan["queue"]}, plan


@reservation_group.command("show")
@read_command
def show(
    reservation_id: str,
    queue: str | None = QUEUE_OPT,
    out: Output = OUTPUT_OPTS,
    resource: str = RESOURCE_OPT,
    svg: Path | None = SVG_OPT,
    rest: str | None = REST_OPT,
) -> None:
    """One reservation: its definition, its allocation over time and a chart of it against the queue's plan
    capacity (`--svg FILE` writes the chart as SVG too; -o wide is the table, which shows every field)."""
    _check_resource(resource)
    _no_svg_watch(svg, out)
    found = _Listing()

    def view(item: dict[str, Any]) -> RenderableType:
        charts = found.charts([item], resource, reservation_id)
        return Group(show_view(item), drawn(charts[0]) if charts else Text("nothing to chart: it holds no capacity"))

    with RestClient(rest) as client:
        out.show(lambda: found.find(client, reservation_id, queue), view)
    made = found.charts(found.items, resource, reservation_id)
    if svg is not None and not out.structured and made:
        write_svg(made[0], svg)


@reservation_group.command("update")
def update(
    reservation_id: str,
    file: Path | None = typer.Argument(None, dir_okay=False, help="YAML/JSON with the new reservation-definition "
                                       "\\[default: the current one with the flags applied]"),
    queue: str | None = QUEUE_OPT,
    arrival: str | None = ARRIVAL_OPT,
    deadline: str | None = DEADLINE_OPT,
    stage: list[str] = STAGE_OPT,
    skyline: str | None = SKYLINE_OPT,
    step: str | None = STEP_OPT,
    memory: int = MEMORY_OPT,
    vcores: int = VCORES_OPT,
    interpreter: str | None = INTERP_OPT,
    name: str | None = NAME_OPT,
    rest: str | None = REST_OPT,
) -> None:
    """Change a reservation: a new definition from a file, or the current one with the flags given changed.
    If the new one does not fit, the RM keeps the old one (and this says why)."""
    now = time.time()
    sky = skyline_requests(skyline, step, memory, vcores) if skyline else None
    flagged = bool(arrival or deadline or stage or sky or interpreter or name)
    if file is None and not flagged:
        raise typer.BadParameter("give a file or at least one of --arrival, --deadline, --stage, --skyline, "
                                 "--interpreter, --name")
    with RestClient(rest) as client:
        if file is not None:
            _, definition = read_file(file)
        else:
            current, _ = _find(client, reservation_id, queue)
            definition = current["reservation-definition"]
        if flagged:
            definition = definition_from_flags(definition, now=now, arrival=arrival, deadline=deadline,
                                               stages=stage, interpreter=interpreter, name=name, skyline=sky)
        _call(client, "POST", f"{R}/update", {"reservation-id": reservation_id,
                                               "reservation-definition": definition})
    console.print(f"updated {reservation_id}", highlight=False)


@reservation_group.command("delete")
def delete(
    reservation_ids: list[str] = typer.Argument(..., help="one or more reservation ids"),
    rest: str | None = REST_OPT,
) -> None:
    """Delete reservations; their running apps go on as ordinary apps."""
    code = 0
    with RestClient(rest) as client:
        for rid in reservation_ids:
            try:
                client.call("POST", f"{R}/delete", {"reservation-id": rid})
            except ClientError as exc:
                error(exc.message)
                code = 2 if exc.code in ("INVALID_ARGUMENT", "NOT_FOUND") else 1
                continue
            console.print(f"deleted {rid}", highlight=False)
    if code:
        raise typer.Exit(code)


__all__ = ["reservation_group"]
