"""One entry point for every workload format: ``load(path, fmt)`` returns native jobs in arrival order."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from am.jobspec import Job, JobSpecError, load_workload
from sim.traces.jsonstream import iter_objects
from sim.traces.rumen import load_rumen
from sim.traces.sls import load_sls
from sim.traces.swim import SwimModel, load_swim
from sim.traces.synth import load_synth
from sim.traces.tpch import TpchOptions, load_tpch

FORMATS = ("auto", "native", "sls", "synth", "rumen", "swim", "tpch")


@dataclass(frozen=True, slots=True)
class LoadOptions:
    nodes: int = 100  # the simulated cluster's node count (SWIM scales bytes by it)
    seed: int = 0
    tpch: TpchOptions = field(default_factory=lambda: TpchOptions(interarrival_s=20.0))


def detect(path: str | Path) -> str:
    p = Path(path)
    if p.is_dir() or p.name.endswith(("tpch_profiles.json", "queries.yaml")):
        return "tpch"
    if p.suffix == ".tsv":
        return "swim"
    if p.suffix == ".jsonl":
        return "native"
    for obj in iter_objects(p):
        if "workloads" in obj:
            return "synth"
        if "jobID" in obj:
            return "rumen"
        if "job.tasks" in obj or "num.nodes" in obj:
            return "sls"
        if "stages" in obj:
            return "native"
        break
    raise JobSpecError(f"{p}: cannot tell the workload format; give --format")


def load(path: str | Path, fmt: str = "auto", options: LoadOptions | None = None) -> list[Job]:
    o = options or LoadOptions()
    kind = detect(path) if fmt == "auto" else fmt
    if kind == "native":
        return load_workload(path)
    if kind == "sls":
        return load_synth(path, seed=o.seed or None) if detect(path) == "synth" else load_sls(path)
    if kind == "synth":
        return load_synth(path, seed=o.seed or None)
    if kind == "rumen":
        return load_rumen(path)
    if kind == "swim":
        return load_swim(path, SwimModel(nodes=o.nodes))
    if kind == "tpch":
        return load_tpch(path, replace(o.tpch, seed=o.seed))
    raise JobSpecError(f"unknown workload format {fmt!r}; known: {', '.join(FORMATS)}")
