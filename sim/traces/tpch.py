"""TPC-H query DAGs with stage profiles measured on CloudLab (``erdos-tpch/``) as native jobs.

``queries.yaml`` gives each query's DAG (Spark stage ids, parent → children edges); the profiles file gives,
per query, data scale (50g … 500g) and core cap (``maxCores``), each stage's task count and mean task
runtime. One profile becomes one job: stage ``s<id>`` with ``num_tasks`` tasks of ``average_runtime_ms``
each and the DAG's parents. Task demands are not in the trace: every task asks ``memory_mb``/``vcores``
(default 2048 MB, 1 vcore, a Spark executor slot). Arrivals: all at 0, or a Poisson process with mean gap
``interarrival_s`` (seeded), in profile-name order or shuffled by the same seed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any

import yaml

from am.jobspec import Job, JobSpecError, parse_job

PROFILES = "cloudlab_22query_tpch_profiles.json"
QUERIES = "queries.yaml"
_KEY = re.compile(r"^tpch_q(\d+)_(\w+?)_maxCores_(\d+)$")


@dataclass(frozen=True, slots=True)
class TpchOptions:
    scale: str | None = None  # e.g. "50g"; None: every scale
    max_cores: int | None = None  # e.g. 50; None: every core cap
    memory_mb: int = 2048
    vcores: int = 1
    interarrival_s: float = 0.0  # mean Poisson gap; 0: every job at time 0
    shuffle: bool = False
    seed: int = 0


def load_dags(path: str | Path) -> dict[int, dict[int, list[int]]]:
    """Query number -> {stage id: parent stage ids}."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    out: dict[int, dict[int, list[int]]] = {}
    for graph in data.get("graphs", []):
        q = int(str(graph["name"]).lstrip("Qq"))
        parents: dict[int, list[int]] = {int(n["name"]): [] for n in graph["graph"]}
        for node in graph["graph"]:
            for child in node.get("children") or []:
                parents.setdefault(int(child), []).append(int(node["name"]))
        out[q] = parents
    return out


def profile_job(key: str, stages: list[dict[str, Any]], dag: dict[int, list[int]], opts: TpchOptions,
                arrival: float) -> Job:
    by_id = {int(s["stage_id"]): s for s in stages}
    if set(by_id) != set(dag):
        raise JobSpecError(f"profile {key}: stages {sorted(by_id)} do not match the query DAG {sorted(dag)}")
    out = []
    for sid in sorted(by_id):
        s = by_id[sid]
        out.append({"name": f"s{sid}", "tasks": int(s["num_tasks"]),
                    "duration_s": max(float(s["average_runtime_ms"]) / 1000.0, 0.001),
                    "memory_mb": opts.memory_mb, "vcores": opts.vcores,
                    "parents": [f"s{p}" for p in sorted(dag[sid])]})
    m = _KEY.match(key)
    name = f"tpch-q{m.group(1)}" if m else key
    return parse_job({"id": key, "name": name, "arrival_s": arrival, "stages": out}, where=f"TPC-H {key}")


def load_tpch(folder: str | Path, opts: TpchOptions | None = None) -> list[Job]:
    o = opts or TpchOptions()
    root = Path(folder)
    if root.is_file():
        root = root.parent
    dags = load_dags(root / QUERIES)
    profiles: dict[str, list[dict[str, Any]]] = json.loads((root / PROFILES).read_text(encoding="utf-8"))
    keys = []
    for key in sorted(profiles, key=_sort_key):
        m = _KEY.match(key)
        if m is None:
            raise JobSpecError(f"{root / PROFILES}: unexpected profile name {key!r}")
        if (o.scale is None or m.group(2) == o.scale) and (o.max_cores is None or int(m.group(3)) == o.max_cores):
            keys.append(key)
    rng = Random(o.seed)
    if o.shuffle:
        rng.shuffle(keys)
    jobs: list[Job] = []
    t = 0.0
    for key in keys:
        m = _KEY.match(key)
        assert m is not None
        jobs.append(profile_job(key, profiles[key], dags[int(m.group(1))], o, t))
        if o.interarrival_s > 0:
            t += rng.expovariate(1.0 / o.interarrival_s)
    return jobs


def _sort_key(key: str) -> tuple[int, int, int, str]:
    m = _KEY.match(key)
    if m is None:
        return (0, 0, 0, key)
    scale = int(re.sub(r"\D", "", m.group(2)) or 0)
    return (int(m.group(1)), scale, int(m.group(3)), key)
