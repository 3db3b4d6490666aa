"""The page both fuzzers write: ``docs/results/fuzzing.md`` with one section per fuzzer, and
``docs/results/fuzzing.json`` beside it with one key per fuzzer. Each fuzzer replaces only its own section,
so the two can be run in any order; what follows ``<!-- notes -->`` at the end is written by hand and kept."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results" / "fuzzing.md"

TITLE = "# Fuzzing: the REST API (schemathesis) and the gRPC API (mutated protobuf)"
INTRO = ("Acceptance: no 5xx and no schema violation over the REST API's OpenAPI document (≥ 200 examples per "
         "operation, anonymous and authenticated); 10,000 mutated messages per gRPC method against a live "
         "cluster with no RM crash, no `UNKNOWN`/`INTERNAL` status, no traceback in the RM's log, and the "
         "heartbeat p99 ≤ 1 s meanwhile. How to run them: [docs/rest.md](../rest.md#fuzzing).")
ORDER = ("rest", "grpc")
NOTES = "<!-- notes -->"


def _markers(key: str) -> tuple[str, str]:
    return f"<!-- section:{key} -->", f"<!-- end:{key} -->"


def write_section(key: str, markdown: str, data: dict[str, Any], page: Path = PAGE) -> None:
    """Replace section ``key`` of the page (and its key in the JSON beside it), keeping the others."""
    page.parent.mkdir(parents=True, exist_ok=True)
    old = page.read_text() if page.exists() else ""
    sections: dict[str, str] = {}
    for k in ORDER:
        begin, end = _markers(k)
        m = re.search(re.escape(begin) + r"\n(.*?)" + re.escape(end), old, re.DOTALL)
        if m:
            sections[k] = m.group(1)
    sections[key] = markdown.rstrip("\n") + "\n"
    parts = [TITLE, "", INTRO, ""]
    for k in ORDER:
        if k in sections:
            begin, end = _markers(k)
            parts += [begin, sections[k] + end, ""]
    if NOTES in old:  # written by hand below the sections: what the runs found, kept as it is
        parts.append(old[old.index(NOTES):].rstrip("\n") + "\n")
    page.write_text("\n".join(parts))
    js = page.with_suffix(".json")
    stored: dict[str, Any] = json.loads(js.read_text()) if js.exists() else {}
    stored[key] = data
    js.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def percentile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) by nearest rank; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


def log_problems(text: str) -> list[str]:
    """Lines of a daemon's log that show an unhandled exception: a JSON log record with a traceback
    (``exception``), and any plain line of a traceback or of asyncio's or gRPC's "Exception in ...". The
    fields of a JSON record other than its traceback are not searched: they quote what clients sent."""
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if isinstance(record, dict):
                if record.get("exception") or record.get("level") == "CRITICAL":
                    out.append(line)
                continue
        if "Traceback (most recent call last)" in line or "Exception in" in line:
            out.append(line)
    return out
