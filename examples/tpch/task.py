"""One task of the TPC-H Q5-shaped example (examples/tpch-q5.yaml).

    task.py STAGE TASK TASKS [--parents a,b] [--aggregate] [--final]

Checks that every task of every parent stage left its marker, sleeps a little (0.2-1 s, fixed per
stage and task; scaled by TPCH_SLEEP_SCALE), then writes its own marker
``$OUTPUT_DIR/tpch/<stage>/part-<task>.json``. ``--aggregate`` tasks also write partial revenue per
nation; the ``--final`` task walks the whole DAG back through the markers, checks every upstream
task finished, and writes the query result to ``$OUTPUT_DIR/tpch-q5.json``. Exits 1 on a missing
input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zlib
from pathlib import Path
from typing import Any

NATIONS = ("CHINA", "INDIA", "INDONESIA", "JAPAN", "VIETNAM")  # region ASIA, as in Q5


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def marker_path(root: Path, stage: str, task: int) -> Path:
    return root / stage / f"part-{task:05d}.json"


def read_stage(root: Path, stage: str) -> list[dict[str, Any]]:
    """All markers of a finished stage; exits 1 when the stage is incomplete."""
    first = marker_path(root, stage, 0)
    if not first.exists():
        _fail(f"input stage {stage!r} has no output ({first} is missing)")
    tasks = int(json.loads(first.read_text(encoding="utf-8"))["tasks"])
    markers = []
    for task in range(tasks):
        path = marker_path(root, stage, task)
        if not path.exists():
            _fail(f"input stage {stage!r} is incomplete: {path} is missing")
        markers.append(json.loads(path.read_text(encoding="utf-8")))
    return markers


def upstream_stages(root: Path, parents: list[str]) -> set[str]:
    """Every stage reachable backwards from ``parents``, each checked complete on the way."""
    seen: set[str] = set()
    todo = list(parents)
    while todo:
        stage = todo.pop()
        if stage in seen:
            continue
        seen.add(stage)
        for marker in read_stage(root, stage):
            todo.extend(marker.get("parents", []))
    return seen


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def seed(stage: str, task: int) -> int:
    return zlib.crc32(f"{stage}/{task}".encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("stage")
    parser.add_argument("task", type=int)
    parser.add_argument("tasks", type=int)
    parser.add_argument("--parents", default="", help="comma-separated parent stages")
    parser.add_argument("--aggregate", action="store_true", help="write partial revenue per nation")
    parser.add_argument("--final", action="store_true", help="check the whole DAG and write the result")
    args = parser.parse_args(argv)
    out = os.environ.get("OUTPUT_DIR")
    if not out:
        _fail("OUTPUT_DIR is not set")
    root = Path(out) / "tpch"
    parents = [p for p in args.parents.split(",") if p]

    inputs = {p: read_stage(root, p) for p in parents}
    rows_in = sum(int(m["rows"]) for markers in inputs.values() for m in markers)
    scale = float(os.environ.get("TPCH_SLEEP_SCALE", "1"))
    time.sleep(scale * (0.2 + (seed(args.stage, args.task) % 9) / 10))

    rows = 1000 + seed(args.stage, args.task) % 5000 if not parents else max(1, rows_in // (2 * args.tasks))
    marker: dict[str, Any] = {
        "stage": args.stage, "task": args.task, "tasks": args.tasks, "parents": parents, "rows": rows,
        "attempt": int(os.environ.get("SHEPHERD_TASK_ATTEMPT", "0")),
    }
    if args.aggregate:
        marker["revenue"] = {n: (seed(args.stage + n, args.task) % 100_000) / 100 for n in NATIONS}
    if args.final:
        stages = upstream_stages(root, parents)
        revenue: dict[str, float] = dict.fromkeys(NATIONS, 0.0)
        for markers in inputs.values():
            for m in markers:
                for nation, amount in m.get("revenue", {}).items():
                    revenue[nation] += float(amount)
        result = sorted(revenue.items(), key=lambda kv: (-kv[1], kv[0]))
        write_json(Path(out) / "tpch-q5.json", {
            "query": "Q5", "region": "ASIA", "checked_stages": sorted(stages),
            "rows": [{"n_name": n, "revenue": round(r, 2)} for n, r in result],
        })
        print(f"{args.stage}: all {len(stages)} upstream stages complete; result in {out}/tpch-q5.json")
    write_json(marker_path(root, args.stage, args.task), marker)
    print(f"{args.stage}/{args.task}: read {rows_in} rows from {parents or 'the table'}, wrote {rows}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
