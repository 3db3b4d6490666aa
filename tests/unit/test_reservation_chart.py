"""The skyline charts of ``shepherd reservation``: a small skyline computed by hand, in text and in SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC

import pytest
import typer

from rm.commands.chart import Band, Chart, Run, column_peaks, span, stacked, svg_chart, text_chart
from rm.commands.reservation_flags import (
    definition_from_flags,
    duration_ms,
    parse_stage,
    skyline_requests,
    when_ms,
)

MIN = 60_000
# 2 units for 10 minutes, then 4 for 10 minutes, against a capacity of 4: from 00:00 to 00:20 UTC
STEP_UP = Chart((Band("a", (Run(0, 10 * MIN, 2), Run(10 * MIN, 20 * MIN, 4))),), 4, 0, 20 * MIN, unit="")
SVG = "{http://www.w3.org/2000/svg}"


def test_the_text_chart_of_a_small_skyline() -> None:
    lines = text_chart(STEP_UP, width=14, height=4, tz=UTC)
    # labels take 2 columns, the axis 1: 11 columns of 20/11 minutes; column 5 holds the step (peak 4)
    assert lines == [
        "4 │┈┈┈┈┈┈┈┈┈┈┈",     # the capacity is the top: one row above it, dotted where nothing is over
        "  │     ██████",
        "  │     ██████",
        "  │███████████",
        "0 │███████████",
        "  └───────────",
        "   00:00",            # 00:20 does not fit beside it in 11 columns
        "peak 4 of a 4 capacity; ┈ marks the capacity",
    ]


def test_partial_cells_over_capacity_and_time_labels() -> None:
    chart = Chart((Band("a", (Run(0, 30 * MIN, 3),)), Band("b", (Run(30 * MIN, 60 * MIN, 5),))), 4, 0,
                  60 * MIN, unit="MB")
    lines = text_chart(chart, width=44, height=5, tz=UTC)
    # top 5, one unit per row, 38 columns of 1.6 minutes (19 for a, 19 for b); the capacity 4 is the bottom
    # of the top row: its blank cells are dotted, b's 5 fills it (over capacity)
    assert lines[:6] == [
        "4 MB │" + "┈" * 19 + "█" * 19,
        "     │" + " " * 19 + "█" * 19,
        "     │" + "█" * 38,
        "     │" + "█" * 38,
        "   0 │" + "█" * 38,
        "     └" + "─" * 38,
    ]
    labels = lines[6].split()
    assert (labels[0], labels[2], labels[-1]) == ("00:00", "00:30", "01:00")
    assert lines[-1] == "peak 5 MB of a 4 MB capacity (over capacity); ┈ marks the capacity"
    # a half-unit step shows as a half block
    half = Chart((Band("a", (Run(0, MIN, 1.5),)),), 2, 0, MIN, unit="")
    assert "▄" in "".join(text_chart(half, width=20, height=2, tz=UTC))


def test_stacking_and_peaks() -> None:
    bands = (Band("a", (Run(0, 10, 1),)), Band("b", (Run(5, 20, 2),)))
    assert stacked(bands, 0, 20) == [(0, 5, [1.0, 1.0]), (5, 10, [1.0, 3.0]), (10, 20, [0.0, 2.0])]
    assert column_peaks(Chart(bands, 4, 0, 20), 2) == [3.0, 2.0]  # the peak of each half, not its mean
    assert span(bands) == (0, 20)
    assert span((Band("z", ()),)) is None


def test_the_svg_chart_of_a_small_skyline() -> None:
    doc = svg_chart(STEP_UP, tz=UTC)
    root = ET.fromstring(doc)  # well-formed, standalone
    assert root.tag == f"{SVG}svg"
    (band,) = root.iter(f"{SVG}polygon")
    assert band.find(f"{SVG}title").text == "a"  # type: ignore[union-attr]
    pts = [tuple(float(v) for v in p.split(",")) for p in band.attrib["points"].split()]
    # plot: x 72..944 over 20 minutes, y 270 (0) .. 34 (top = 4 x 1.08)
    def y(v: float) -> float:
        return 270 - v / (4 * 1.08) * (270 - 34)
    assert pts[:4] == [(72.0, pytest.approx(y(2), abs=0.06)), (508.0, pytest.approx(y(2), abs=0.06)),
                       (508.0, pytest.approx(y(4), abs=0.06)), (944.0, pytest.approx(y(4), abs=0.06))]
    assert pts[4:] == [(944.0, 270.0), (508.0, 270.0), (508.0, 270.0), (72.0, 270.0)]
    (cap,) = [e for e in root.iter(f"{SVG}line") if e.attrib.get("class") == "capacity"]
    assert float(cap.attrib["y1"]) == pytest.approx(y(4), abs=0.06)
    times = [e.text for e in root.iter(f"{SVG}text") if e.attrib.get("class") == "time"]
    assert times[0] == "00:00"
    assert times[-1] == "00:20"
    assert len(times) == 7
    legend = [e.text for e in root.iter(f"{SVG}text") if e.attrib.get("class") == "legend"]
    assert legend == ["a"]
    assert "<script" not in doc
    assert "href" not in doc


def test_stage_and_time_flags() -> None:
    assert parse_stage("containers=4,duration=10m,memory=2048") == {
        "capability": {"memory": 2048, "vCores": 1}, "num-containers": 4, "min-concurrency": 1,
        "duration": 600_000}
    assert parse_stage("containers=2,duration=90,vcores=2,gang=2")["min-concurrency"] == 2
    for bad in ("containers=4", "duration=1m", "containers=0,duration=1m", "containers=2,duration=soon",
                "containers=2,duration=1m,colour=red", "4x1024"):
        with pytest.raises(typer.BadParameter):
            parse_stage(bad)
    now = 1_800_000_000.0
    assert when_ms("now", now, "--arrival") == 1_800_000_000_000
    assert when_ms("+2h", now, "--deadline") == 1_800_007_200_000
    assert when_ms("1800003600", now, "--deadline") == 1_800_003_600_000
    for bad in ("soon", "25:00", "+0m", "600"):
        with pytest.raises(typer.BadParameter):
            when_ms(bad, now, "--deadline")
    assert duration_ms("1d", "x") == 86_400_000


def test_definition_from_flags() -> None:
    now = 1_800_000_000.0
    one = definition_from_flags(None, now=now, arrival=None, deadline="+1h", stages=["containers=2,duration=5m"],
                                interpreter=None, name="nightly")
    assert one["arrival"] == 1_800_000_000_000
    assert one["deadline"] == 1_800_003_600_000
    assert one["reservation-requests"]["reservation-request-interpreter"] == 1  # one stage: all
    assert one["reservation-name"] == "nightly"
    two = definition_from_flags(None, now=now, arrival="+10m", deadline="+1h",
                                stages=["containers=2,duration=5m", "containers=1,duration=5m"], interpreter=None,
                                name=None)
    assert two["reservation-requests"]["reservation-request-interpreter"] == 2  # several: in order
    moved = definition_from_flags(two, now=now, arrival=None, deadline="+2h", stages=[], interpreter="order-no-gap",
                                  name=None)
    assert moved["arrival"] == two["arrival"]
    assert moved["deadline"] == 1_800_007_200_000
    assert moved["reservation-requests"]["reservation-request"] == two["reservation-requests"]["reservation-request"]
    assert moved["reservation-requests"]["reservation-request-interpreter"] == 3
    with pytest.raises(typer.BadParameter):
        definition_from_flags(None, now=now, arrival=None, deadline=None, stages=["containers=1,duration=1m"],
                              interpreter=None, name=None)
    with pytest.raises(typer.BadParameter):
        definition_from_flags(None, now=now, arrival=None, deadline="+1h", stages=[], interpreter=None, name=None)
    with pytest.raises(typer.BadParameter):
        definition_from_flags(two, now=now, arrival=None, deadline=None, stages=[], interpreter="sometimes",
                              name=None)


def test_a_skyline_from_flags() -> None:
    sky = skyline_requests("2,4,1", "10m", 2048, 1)
    assert [(r["num-containers"], r["min-concurrency"], r["duration"]) for r in sky] == [
        (2, 2, 600_000), (4, 4, 600_000), (1, 1, 600_000)]
    assert sky[0]["capability"] == {"memory": 2048, "vCores": 1}
    d = definition_from_flags(None, now=1_800_000_000.0, arrival=None, deadline="+1h", stages=[], interpreter=None,
                              name=None, skyline=sky)
    assert d["reservation-requests"]["reservation-request-interpreter"] == 3  # back to back
    for counts, step in (("2,4", None), ("2,x", "1m"), ("0,1", "1m"), ("", "1m")):
        with pytest.raises(typer.BadParameter):
            skyline_requests(counts, step, 1024, 1)
    with pytest.raises(typer.BadParameter):
        definition_from_flags(None, now=1_800_000_000.0, arrival=None, deadline="+1h",
                              stages=["containers=1,duration=1m"], interpreter=None, name=None, skyline=sky)
