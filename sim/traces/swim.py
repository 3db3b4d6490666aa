"""SWIM (Facebook 2009/2010 MapReduce day) job traces, turned into map → reduce jobs.

A SWIM row has a job's submit time and its map input, shuffle and reduce output bytes, but no tasks. The
model (documented in docs/simulator.md, every number a ``SwimModel`` field):

* bytes are scaled by ``nodes / original_nodes`` (600 machines for FB-2009), as SWIM's replay scales a
  trace to the target cluster;
* maps = ceil(input / split_bytes), at least one; each map reads one split (the last one the rest) and
  runs ``task_overhead_s + bytes / map_rate``;
* a job with shuffle bytes has reduces = ceil(shuffle / reduce_bytes), at least one; each reads an equal
  part of the shuffle and writes an equal part of the output, running ``task_overhead_s + (shuffle +
  output) / reduces / reduce_rate``; a job without shuffle bytes is map-only;
* maps ask ``map_memory_mb``/1 vcore, reduces ``reduce_memory_mb``/1 vcore.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from am.jobspec import Job, JobSpecError, parse_job

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SwimModel:
    nodes: int = 100  # the simulated cluster's size
    original_nodes: int = 600  # the traced cluster's size (FB-2009: 600 machines)
    split_bytes: int = 128 * MIB
    reduce_bytes: int = 512 * MIB  # shuffle bytes per reduce task
    map_rate: float = 4 * MIB  # bytes per second per map task
    reduce_rate: float = 4 * MIB  # bytes per second per reduce task (shuffle + output)
    task_overhead_s: float = 2.0
    map_memory_mb: int = 1024
    reduce_memory_mb: int = 2048

    @property
    def scale(self) -> float:
        return self.nodes / self.original_nodes


@dataclass(frozen=True, slots=True)
class SwimRow:
    job_id: str
    submit_s: float
    input_bytes: int
    shuffle_bytes: int
    output_bytes: int


def read_rows(path: str | Path) -> list[SwimRow]:
    rows: list[SwimRow] = []
    p = Path(path)
    for number, line in enumerate(p.read_text(encoding="ascii").splitlines(), start=1):
        if not line.strip():
            continue
        cols = line.split("\t")
        try:
            rows.append(SwimRow(cols[0], float(cols[1]), int(cols[3]), int(cols[4]), int(cols[5])))
        except (IndexError, ValueError) as exc:
            raise JobSpecError(f"{p}:{number}: not a SWIM row ({exc})") from None
    return rows


def _durations(total_bytes: float, tasks: int, per_task: float, rate: float, overhead: float) -> list[float]:
    out = []
    left = total_bytes
    for _ in range(tasks):
        part = min(per_task, left) if left > 0 else 0.0
        left -= part
        out.append(round(overhead + part / rate, 3))
    return out


def row_to_job(row: SwimRow, model: SwimModel, *, origin: float = 0.0) -> Job:
    s = model.scale
    inp, shuffle, out = row.input_bytes * s, row.shuffle_bytes * s, row.output_bytes * s
    maps = max(1, math.ceil(inp / model.split_bytes))
    stages: list[dict[str, Any]] = [_stage("map", _durations(inp, maps, model.split_bytes, model.map_rate,
                                                             model.task_overhead_s), model.map_memory_mb, [])]
    if row.shuffle_bytes > 0:
        reduces = max(1, math.ceil(shuffle / model.reduce_bytes))
        per = (shuffle + out) / reduces
        durations = [round(model.task_overhead_s + per / model.reduce_rate, 3)] * reduces
        stages.append(_stage("reduce", durations, model.reduce_memory_mb, ["map"]))
    return parse_job({"id": row.job_id, "arrival_s": max(0.0, row.submit_s - origin), "stages": stages},
                     where=row.job_id)


def _stage(name: str, durations: list[float], memory_mb: int, parents: list[str]) -> dict[str, Any]:
    stage: dict[str, Any] = {"name": name, "tasks": len(durations), "memory_mb": memory_mb, "vcores": 1,
                             "parents": parents}
    if len(set(durations)) == 1:
        stage["duration_s"] = max(durations[0], 0.001)
    else:
        stage["durations_s"] = durations
    return stage


def load_swim(path: str | Path, model: SwimModel | None = None) -> list[Job]:
    """Every row of a SWIM ``.tsv`` as a job; arrivals are the trace's submit times (seconds)."""
    m = model or SwimModel()
    return [row_to_job(r, m) for r in read_rows(path)]
