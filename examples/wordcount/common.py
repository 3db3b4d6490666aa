"""Shared helpers of the word-count example: where files go, and how they are written."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

WORDS = (
    "apple", "banana", "cherry", "delta", "echo", "falcon", "garden", "harbor", "island",
    "jungle", "kettle", "lantern", "meadow", "nectar", "orchard", "pepper", "quartz", "river",
    "saddle", "timber", "umber", "valley", "willow", "xenon", "yonder", "zephyr", "amber",
    "breeze", "cobalt", "dune", "ember", "fjord", "glacier", "heron", "ivory", "jasper",
)


def output_dir() -> Path:
    value = os.environ.get("OUTPUT_DIR")
    if not value:
        sys.exit("OUTPUT_DIR is not set")
    return Path(value)


def input_path(out: Path, task: int) -> Path:
    return out / "input" / f"part-{task:05d}.txt"


def counts_path(out: Path, task: int) -> Path:
    return out / "counts" / f"part-{task:05d}.json"


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` so that readers see the whole file or nothing (a retried task rewrites it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_json(path: Path, data: Any) -> None:
    write_atomically(path, json.dumps(data, sort_keys=True, indent=1) + "\n")


def task_arg() -> int:
    if len(sys.argv) < 2 or not sys.argv[1].isdigit():
        sys.exit(f"usage: {Path(sys.argv[0]).name} TASK_INDEX")
    return int(sys.argv[1])
