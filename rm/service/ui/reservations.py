"""The reservation plan (``/ui/reservations``): for each reservable queue, its reservations' skylines stacked
against the queue's plan capacity over time (memory, inline SVG), and the reservations as a table.

The skylines are the allocations YARN's ``/ws/v1/cluster/reservation/list?include-resource-allocations=true``
reports (``ReservationSystem.list_reservations``), over a window starting now: ``?hours=`` long (1 to 168),
by default up to the last deadline, at least one hour and at most a day."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from common.resources import MEMORY, VCORES, Resources
from rm.core.reservation.listing import LONG_MAX, ReservationInfo
from rm.core.reservation.requests import Reservation
from rm.service.ui.page import esc, fmt_duration, fmt_mb, fmt_ms, fmt_time, page, section, table

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

W, H, LEFT, RIGHT, TOP, BOTTOM = 920, 230, 64, 16, 14, 26
HOUR_MS = 3_600_000


def reservations_page(rm: ResourceManager, params: Mapping[str, str]) -> str:
    now = rm.now()
    plan = rm.state.reservation_plan()
    start = int(now * 1000)
    every = sorted(plan.reservations.values(), key=lambda r: r.reservation_id)
    hours = _hours(params.get("hours"), every, start)
    end = start + hours * HOUR_MS
    parts = [(f'<form class="filters" method="get" action="/ui/reservations"><label>window (hours) '
             f'<input name="hours" value="{hours}" size="4"></label> <button type="submit">show</button></form>')]
    for queue in sorted(plan.plans):
        book = plan.plans[queue]
        infos = plan.list_reservations(str(queue), None, start, end, True)
        chart = skyline_svg(infos, book.timeline.capacity, start, end, now)
        parts.append(section(f"Queue {queue}", chart + _table(infos), ident=f"plan-{queue}"))
    if not plan.plans:
        parts.append('<p class="muted">No queue is reservable yet (a queue gets a plan once the cluster has nodes).'
                     "</p>")
    return page("Reservations", "reservations", "".join(parts), now=now)


def _hours(text: str | None, reservations: Sequence[Reservation], start_ms: int) -> int:
    if text:
        try:
            return max(1, min(168, int(text)))
        except ValueError:
            pass
    last = max((r.definition.deadline_ms for r in reservations if not r.definition.periodic), default=start_ms)
    return max(1, min(24, -(-(last - start_ms) // HOUR_MS)))


def skyline_svg(infos: Sequence[ReservationInfo], capacity: Resources, start: int, end: int, now: float) -> str:
    """Each reservation's memory over [start, end] ms, stacked, under a line at the plan's capacity."""
    cap = capacity.get(MEMORY)
    steps: list[list[tuple[int, int, int]]] = []  # per reservation: (from, to, MB)
    cuts = {start, end}
    for info in infos:
        segs = [(max(s.start_ms, start), min(s.end_ms, end), s.resource.get(MEMORY))
                for s in info.allocations or () if s.end_ms > start and s.start_ms < end]
        steps.append(segs)
        for a, b, _ in segs:
            cuts.update((a, b))
    times = sorted(cuts)
    peak = 0
    stacked: list[list[int]] = []  # per reservation, the top of its band on each interval
    base = [0] * (len(times) - 1)
    for segs in steps:
        tops = []
        for k in range(len(times) - 1):
            mid = (times[k] + times[k + 1]) / 2
            mb = sum(v for a, b, v in segs if a <= mid < b)
            tops.append(base[k] + mb)
        stacked.append(tops)
        base = tops
        peak = max([peak, *tops])
    top_mb = max(cap, peak, 1) * 1.08
    span = max(1, end - start)

    def x(t: float) -> float:
        return LEFT + (t - start) / span * (W - LEFT - RIGHT)

    def y(mb: float) -> float:
        return H - BOTTOM - mb / top_mb * (H - TOP - BOTTOM)

    bands = []
    lower = [0] * (len(times) - 1)
    for i, (info, tops) in enumerate(zip(infos, stacked, strict=True)):
        upper_pts = []
        lower_pts = []
        for k in range(len(times) - 1):
            upper_pts += [(x(times[k]), y(tops[k])), (x(times[k + 1]), y(tops[k]))]
            lower_pts += [(x(times[k]), y(lower[k])), (x(times[k + 1]), y(lower[k]))]
        pts = upper_pts + lower_pts[::-1]
        poly = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
        hue = (i * 67 + 200) % 360
        name = info.definition.name or info.reservation_id
        bands.append(f'<polygon class="band" points="{poly}" style="fill:hsl({hue} 60% 62%)" '
                     f'data-reservation="{esc(info.reservation_id)}"><title>{esc(name)}</title></polygon>')
        lower = tops
    ticks = []
    step_h = max(1, (end - start) // HOUR_MS // 8)
    t = start - start % HOUR_MS + HOUR_MS
    while t < end:
        if ((t // HOUR_MS) % step_h) == 0:
            ticks.append(f'<line class="tick" x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" y2="{H - BOTTOM}"/>'
                         f'<text class="axis" x="{x(t):.1f}" y="{H - 8}" text-anchor="middle">'
                         f"{fmt_time(t / 1000)[11:16]}</text>")
        t += HOUR_MS
    cap_y = y(cap)
    return (
        f'<svg class="skyline" role="img" aria-label="reservation skylines" viewBox="0 0 {W} {H}" width="100%" '
        f'data-capacity-mb="{cap}" xmlns="http://www.w3.org/2000/svg">'
        f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}"/>'
        f'{"".join(ticks)}{"".join(bands)}'
        f'<line class="capacity" x1="{LEFT}" y1="{cap_y:.1f}" x2="{W - RIGHT}" y2="{cap_y:.1f}"/>'
        f'<text class="axis" x="{LEFT - 6}" y="{cap_y + 4:.1f}" text-anchor="end">{esc(fmt_mb(cap))}</text>'
        f'<text class="axis" x="{LEFT - 6}" y="{H - BOTTOM + 4}" text-anchor="end">0</text>'
        f'<line class="now" x1="{x(now * 1000):.1f}" y1="{TOP}" x2="{x(now * 1000):.1f}" y2="{H - BOTTOM}"/>'
        f'<text class="axis" x="{LEFT}" y="{TOP - 3}">memory reserved; the line is the plan capacity; '
        f"from now to {esc(fmt_time(end / 1000))} UTC</text></svg>"
    )


def _table(infos: Sequence[ReservationInfo]) -> str:
    rows = []
    for info in infos:
        d = info.definition
        asks = ", ".join(f"{r.num_containers}×{fmt_mb(r.capability.get(MEMORY))}/{r.capability.get(VCORES)}c "
                         f"for {fmt_duration(r.duration_ms / 1000)}" for r in d.requests)
        period = fmt_duration(d.recurrence_ms / 1000) if d.periodic else "—"
        deadline = "—" if d.deadline_ms >= LONG_MAX else fmt_ms(d.deadline_ms)
        rows.append(f'<tr data-reservation="{esc(info.reservation_id)}"><td>{esc(info.reservation_id)}</td>'
                    f"<td>{esc(d.name)}</td><td>{esc(info.user)}</td><td>{fmt_ms(d.arrival_ms)}</td>"
                    f"<td>{deadline}</td><td>{period}</td><td>{esc(d.interpreter)}</td><td>{esc(asks)}</td>"
                    f"<td>{len(info.missed_instances)}</td></tr>")
    return table(["reservation", "name", "user", "arrival", "deadline", "period", "interpreter", "asks",
                  "missed instances"], rows, empty="no reservation overlaps this window")
