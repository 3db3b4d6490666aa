"""Reservation skylines against a queue's plan capacity over time, drawn for a terminal (unicode blocks) or
as a standalone SVG file. Pure: the data comes in (``Band``: one reservation's allocation as runs of equal
amounts over milliseconds), text or SVG goes out; the time zone of the axis labels is an argument."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from html import escape

BLOCKS = " ▁▂▃▄▅▆▇█"  # a cell filled 0/8 .. 8/8 from the bottom
CAPACITY_MARK = "┈"


@dataclass(frozen=True, slots=True)
class Run:
    start_ms: int
    end_ms: int
    amount: float


@dataclass(frozen=True, slots=True)
class Band:
    """One reservation's allocation over time."""

    label: str
    runs: tuple[Run, ...]


@dataclass(frozen=True, slots=True)
class Chart:
    bands: tuple[Band, ...]
    capacity: float
    start_ms: int
    end_ms: int
    unit: str = "MB"  # what the amounts count
    title: str = ""


def span(bands: Sequence[Band]) -> tuple[int, int] | None:
    """The first start and last end over every non-empty run, or None when nothing is allocated."""
    runs = [r for b in bands for r in b.runs if r.end_ms > r.start_ms]
    if not runs:
        return None
    return min(r.start_ms for r in runs), max(r.end_ms for r in runs)


def stacked(bands: Sequence[Band], start_ms: int, end_ms: int) -> list[tuple[int, int, list[float]]]:
    """The window cut where any band changes: per piece, each band's top (its amount stacked on those before)."""
    cuts = {start_ms, end_ms}
    for band in bands:
        for r in band.runs:
            cuts.update(t for t in (r.start_ms, r.end_ms) if start_ms < t < end_ms)
    times = sorted(cuts)
    out: list[tuple[int, int, list[float]]] = []
    for a, b in itertools.pairwise(times):
        total, tops = 0.0, []
        for band in bands:
            total += sum(r.amount for r in band.runs if r.start_ms <= a and r.end_ms >= b)
            tops.append(total)
        out.append((a, b, tops))
    return out


def column_peaks(chart: Chart, width: int) -> list[float]:
    """The stacked total in each of ``width`` equal columns of the window: its peak over the column, so a
    short spike is never hidden by the columns' width."""
    pieces = stacked(chart.bands, chart.start_ms, chart.end_ms)
    length = max(1, chart.end_ms - chart.start_ms)
    peaks = []
    for c in range(width):
        a = chart.start_ms + length * c / width
        b = chart.start_ms + length * (c + 1) / width
        peaks.append(max((tops[-1] for p, q, tops in pieces if tops and p < b and q > a), default=0.0))
    return peaks


def amount(value: float, unit: str) -> str:
    if unit == "MB" and value >= 1024 and value % 1024 == 0:
        return f"{value / 1024:g} GB"
    return f"{value:g} {unit}" if unit else f"{value:g}"


def clock(ms: float, tz: tzinfo | None, with_date: bool) -> str:
    at = datetime.fromtimestamp(ms / 1000, tz)
    return at.strftime("%m-%d %H:%M" if with_date else "%H:%M")


def _time_labels(chart: Chart, width: int, tz: tzinfo | None) -> str:
    """A line of time labels under the columns: the start at the left, the end at the right, and times
    evenly between where they fit (each centred on the column it names)."""
    with_date = chart.end_ms - chart.start_ms > 86_400_000
    length = max(1, chart.end_ms - chart.start_ms)
    line = [" "] * width
    start, end = clock(chart.start_ms, tz, with_date), clock(chart.end_ms, tz, with_date)
    placed = [(0, len(start))]
    line[:len(start)] = list(start)
    if width - len(end) >= len(start) + 2:
        line[width - len(end):] = list(end)
        placed.append((width - len(end), width))
    marks = max(1, min(8, width // (len(start) + 4)))
    for k in range(1, marks):
        col = round(k * width / marks)
        text = clock(chart.start_ms + length * col / width, tz, with_date)
        left = col - len(text) // 2
        if any(left < b + 2 and left + len(text) > a - 2 for a, b in placed):
            continue
        line[left:left + len(text)] = list(text)
        placed.append((left, left + len(text)))
    return "".join(line).rstrip()


def text_chart(chart: Chart, *, width: int, height: int = 8, tz: tzinfo | None = None) -> list[str]:
    """The stacked skyline as rows of block characters, ``width`` columns in all (labels included): ``height``
    rows from 0 to the peak or the capacity, whichever is higher, plus one when the capacity is the top.
    Blank cells of the row just above the capacity are dotted (a filled one there is over capacity); a
    value axis on the left, time labels below."""
    whole = column_peaks(chart, 1)[0]
    top = max(chart.capacity, whole, 1e-9)
    unit_h = top / height
    cap_row = min(height, math.floor(chart.capacity / unit_h + 1e-9)) if chart.capacity > 0 else None
    labels = {0: "0"}
    if cap_row != height:
        labels[height - 1] = amount(top, chart.unit)
    if cap_row is not None:
        labels[cap_row] = amount(chart.capacity, chart.unit)
    gutter = max(len(s) for s in labels.values()) + 1
    cols = max(8, width - gutter - 1)
    peaks = column_peaks(chart, cols)
    rows = []
    for r in range(height if cap_row == height else height - 1, -1, -1):
        cells = []
        for v in peaks:
            ch = BLOCKS[round(min(1.0, max(0.0, (v - r * unit_h) / unit_h)) * 8)]
            cells.append(CAPACITY_MARK if ch == " " and r == cap_row else ch)
        rows.append(f"{labels.get(r, ''):>{gutter - 1}} │{''.join(cells).rstrip()}")
    rows.append(" " * gutter + "└" + "─" * cols)
    rows.append(" " * (gutter + 1) + _time_labels(chart, cols, tz))
    head = [chart.title] if chart.title else []
    peak = max(peaks, default=0.0)
    over = " (over capacity)" if peak > chart.capacity else ""
    legend = (f"peak {amount(peak, chart.unit)} of a {amount(chart.capacity, chart.unit)} capacity{over}; "
              f"{CAPACITY_MARK} marks the capacity")
    return [*head, *rows, legend]


# ------------------------------------------------------------------------------------------------ SVG

W, H, LEFT, RIGHT, TOP, BOTTOM = 960, 320, 72, 16, 34, 50
CHAR_W = 6.2  # rough width of one 11px sans-serif character, to lay the legend out


def svg_chart(chart: Chart, *, tz: tzinfo | None = None) -> str:
    """The same chart as a standalone SVG document: one stacked band per reservation (its label as a
    tooltip), a dashed line at the capacity, value and time axes."""
    pieces = stacked(chart.bands, chart.start_ms, chart.end_ms)
    peak = max((tops[-1] for _, _, tops in pieces if tops), default=0.0)
    top = max(chart.capacity, peak, 1e-9) * 1.08
    length = max(1, chart.end_ms - chart.start_ms)

    def x(t: float) -> float:
        return LEFT + (t - chart.start_ms) / length * (W - LEFT - RIGHT)

    def y(v: float) -> float:
        return H - BOTTOM - v / top * (H - TOP - BOTTOM)

    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="11">'),
           f"<title>{escape(chart.title or 'reservation skyline')}</title>",
           f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
           (f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" fill="#f6f7f9" '
           f'stroke="#c8ccd2"/>')]
    if chart.title:
        out.append(f'<text x="{LEFT}" y="16" font-size="13" fill="#222">{escape(chart.title)}</text>')
    lower = [0.0] * len(pieces)
    for i, band in enumerate(chart.bands):
        uppers = [tops[i] for _, _, tops in pieces]
        pts: list[tuple[float, float]] = []
        for (a, b, _), u in zip(pieces, uppers, strict=True):
            pts += [(x(a), y(u)), (x(b), y(u))]
        for (a, b, _), lo in reversed(list(zip(pieces, lower, strict=True))):
            pts += [(x(b), y(lo)), (x(a), y(lo))]
        hue = _hue(i)
        points = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
        out.append(f'<polygon class="band" points="{points}" fill="hsl({hue},60%,62%)" stroke="hsl({hue},50%,40%)" '
                   f'stroke-width="0.5"><title>{escape(band.label)}</title></polygon>')
        lower = uppers
    with_date = length > 86_400_000
    marks = 6
    for k in range(marks + 1):
        t = chart.start_ms + length * k / marks
        anchor = "start" if k == 0 else "end" if k == marks else "middle"
        out.append(f'<line x1="{x(t):.1f}" y1="{H - BOTTOM}" x2="{x(t):.1f}" y2="{H - BOTTOM + 4}" stroke="#888"/>'
                   f'<text class="time" x="{x(t):.1f}" y="{H - BOTTOM + 16}" text-anchor="{anchor}" fill="#444">'
                   f"{escape(clock(t, tz, with_date))}</text>")
    cap_y = y(chart.capacity)
    out.append(f'<line class="capacity" x1="{LEFT}" y1="{cap_y:.1f}" x2="{W - RIGHT}" y2="{cap_y:.1f}" '
               f'stroke="#c0392b" stroke-width="1.5" stroke-dasharray="6 3"/>')
    out.append(f'<text x="{LEFT - 6}" y="{cap_y + 4:.1f}" text-anchor="end" fill="#c0392b">'
               f"{escape(amount(chart.capacity, chart.unit))}</text>")
    out.append(f'<text x="{LEFT - 6}" y="{H - BOTTOM + 4}" text-anchor="end" fill="#444">0</text>')
    out.append(f'<text x="{W - RIGHT}" y="{TOP - 6}" text-anchor="end" fill="#444">peak '
               f"{escape(amount(peak, chart.unit))}; dashed line: the queue's plan capacity</text>")
    out += _legend(chart.bands)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _hue(i: int) -> int:
    return (i * 67 + 200) % 360


def _legend(bands: Sequence[Band]) -> list[str]:
    """One row under the time axis: a swatch and the label of each band, as many as fit, then "+N more"."""
    out: list[str] = []
    x, y = float(LEFT), H - 12
    for i, band in enumerate(bands):
        width = 16 + len(band.label) * CHAR_W + 14
        if x + width > W - RIGHT - 60 and i:
            out.append(f'<text class="legend" x="{x:.0f}" y="{y}" fill="#444">+{len(bands) - i} more</text>')
            break
        out.append(f'<rect x="{x:.0f}" y="{y - 9}" width="11" height="11" fill="hsl({_hue(i)},60%,62%)"/>'
                   f'<text class="legend" x="{x + 16:.0f}" y="{y}" fill="#222">{escape(band.label)}</text>')
        x += width
    return out
