"""Streams of concatenated JSON objects (Rumen and SLS files are not JSON arrays)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from am.jobspec import JobSpecError


def iter_objects(path: str | Path) -> Iterator[dict[str, Any]]:
    """Every top-level JSON object in the file, in order (a JSON array's elements count too)."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            return
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise JobSpecError(f"{p}: not a stream of JSON objects at offset {pos}: {exc.msg}") from None
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    yield item
        elif isinstance(value, dict):
            yield value
        else:
            raise JobSpecError(f"{p}: expected JSON objects, found {type(value).__name__}")
