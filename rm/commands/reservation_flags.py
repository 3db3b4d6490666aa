"""The reservation-definition ``shepherd reservation create|update`` send, from a YAML/JSON file in YARN's shape
or from flags: times (``now``, ``+2h``, ``HH:MM``, epoch seconds), durations, ``--stage`` specs and skylines."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer
import yaml

from rm.commands.common import next_clock_time

INTERPRETERS = {"any": 0, "all": 1, "order": 2, "order-no-gap": 3}
_UNITS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")


def duration_ms(text: str, what: str) -> int:
    """``600`` (seconds), ``90s``, ``10m``, ``2h``, ``1d`` as milliseconds."""
    m = _DURATION.match(text.strip().lower())
    if not m or float(m.group(1)) <= 0:
        raise typer.BadParameter(f"{what}: {text!r} is not a duration (600, 90s, 10m, 2h, 1d)")
    return round(float(m.group(1)) * _UNITS[m.group(2) or "s"])


def when_ms(text: str, now: float, what: str) -> int:
    """A point in time as milliseconds since the epoch: ``now``, ``+30m`` from now, ``HH:MM[:SS]`` (local,
    today or tomorrow), or seconds since the epoch."""
    t = text.strip().lower()
    if t == "now":
        return int(now * 1000)
    if t.startswith("+"):
        return int(now * 1000) + duration_ms(t[1:], what)
    if ":" in t:
        try:
            return int(next_clock_time(t, now) * 1000)
        except ValueError:
            raise typer.BadParameter(f"{what}: {text!r} is not HH:MM[:SS]") from None
    try:
        seconds = float(t)
    except ValueError:
        raise typer.BadParameter(f"{what}: {text!r}: use now, +30m, HH:MM[:SS] or seconds since the epoch") from None
    if seconds < 1e9:
        raise typer.BadParameter(f"{what}: {text!r} is not seconds since the epoch (use +{text}s for from now)")
    return int(seconds * 1000)


def parse_stage(text: str) -> dict[str, Any]:
    """``containers=4,duration=10m,memory=2048,vcores=1,gang=2`` as a YARN reservation-request."""
    fields: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or key not in ("containers", "duration", "memory", "vcores", "gang") or not value.strip():
            raise typer.BadParameter(f"--stage {text!r}: want containers=N,duration=10m[,memory=MB][,vcores=N]"
                                     "[,gang=N]")
        fields[key] = value.strip()
    if "containers" not in fields or "duration" not in fields:
        raise typer.BadParameter(f"--stage {text!r}: containers= and duration= are required")

    def count(key: str, default: int) -> int:
        raw = fields.get(key)
        if raw is None:
            return default
        if not raw.isdigit() or int(raw) < 1:
            raise typer.BadParameter(f"--stage {text!r}: {key} must be a whole number of at least 1")
        return int(raw)

    return {"capability": {"memory": count("memory", 1024), "vCores": count("vcores", 1)},
            "num-containers": count("containers", 1), "min-concurrency": count("gang", 1),
            "duration": duration_ms(fields["duration"], "--stage duration")}


def skyline_requests(counts: str, step: str | None, memory: int, vcores: int) -> list[dict[str, Any]]:
    """``--skyline 2,4,4,1 --step 10m``: one request per step, all its containers at once (a gang) for the step."""
    if not step:
        raise typer.BadParameter("--skyline needs --step (how long each step lasts, e.g. 10m)")
    try:
        ns = [int(x) for x in counts.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"--skyline wants whole numbers separated by commas, got {counts!r}") from None
    if not ns or any(n < 1 for n in ns):
        raise typer.BadParameter(f"--skyline wants at least one step of at least 1 container, got {counts!r}")
    ms = duration_ms(step, "--step")
    return [{"capability": {"memory": memory, "vCores": vcores}, "num-containers": n, "min-concurrency": n,
             "duration": ms} for n in ns]


def definition_from_flags(base: dict[str, Any] | None, *, now: float, arrival: str | None, deadline: str | None,
                          stages: list[str], interpreter: str | None, name: str | None,
                          skyline: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A reservation-definition: ``base`` (the current one, for update) with the flags given applied; a
    ``skyline`` (from ``skyline_requests``) replaces the requests and runs them back to back."""
    if skyline and stages:
        raise typer.BadParameter("give --stage or --skyline, not both")
    d: dict[str, Any] = json.loads(json.dumps(base)) if base else {}
    if arrival is not None or not base:
        d["arrival"] = when_ms(arrival or "now", now, "--arrival")
    if deadline is not None:
        d["deadline"] = when_ms(deadline, now, "--deadline")
    if "deadline" not in d:
        raise typer.BadParameter("--deadline is required (e.g. +2h)")
    if name is not None:
        d["reservation-name"] = name
    reqs = dict(d.get("reservation-requests") or {})
    if stages:
        reqs["reservation-request"] = [parse_stage(s) for s in stages]
    if skyline:
        reqs["reservation-request"] = skyline
        if interpreter is None:
            reqs["reservation-request-interpreter"] = INTERPRETERS["order-no-gap"]
    if not reqs.get("reservation-request"):
        raise typer.BadParameter("give at least one --stage (e.g. --stage containers=4,duration=10m)")
    if interpreter is not None:
        if interpreter.lower() not in INTERPRETERS:
            raise typer.BadParameter(f"--interpreter must be one of {', '.join(INTERPRETERS)}, not {interpreter!r}")
        reqs["reservation-request-interpreter"] = INTERPRETERS[interpreter.lower()]
    elif "reservation-request-interpreter" not in reqs:
        reqs["reservation-request-interpreter"] = INTERPRETERS["order" if len(reqs["reservation-request"]) > 1
                                                               else "all"]
    d["reservation-requests"] = reqs
    return d


def read_file(path: Path) -> tuple[str | None, dict[str, Any]]:
    """A YAML/JSON file: a submit body (``queue`` and ``reservation-definition``) or a bare definition."""
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise typer.BadParameter(f"{path}: {exc}") from None
    if not isinstance(raw, dict):
        raise typer.BadParameter(f"{path}: want a reservation-definition object (arrival, deadline, "
                                 "reservation-requests) or a submit body with one")
    if "reservation-definition" in raw:
        queue = raw.get("queue")
        return (str(queue) if queue else None), dict(raw["reservation-definition"] or {})
    return None, raw
