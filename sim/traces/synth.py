"""SLS SYNTH generator specs (``syn.json``, ``syn_generic.json``, ``syn_stream.json``): sampled jobs.

The spec holds distributions, not jobs; jobs are drawn with a ``random.Random`` seeded by the spec's
``rand_seed`` (or the caller's seed) the way SLS reads them:

* ``num_jobs`` jobs; each picks a workload by ``workload_weight``, then a job class by ``class_weight``;
* its submit time: a ``time_distribution`` bucket by weight, uniform inside it (seconds; bucket i spans
  [time_i, time_i+1));
* task counts, task times, memory and vcores are log-normal with the given mean and standard deviation
  (a missing or zero deviation means the mean itself); counts are rounded, at least 1 — a value of
  ``{"val": 5, "std": 1}`` gives about 5;
* task times are **milliseconds** (as SLS uses them: ``mtime_avg: 10`` means 10 ms tasks).

Legacy specs (``mtasks_avg`` …) give a map stage and a reduce stage after it; generic specs (``tasks[]``)
give one stage per task type in order, each depending on the previous one (a ``stream`` job's single stage
has no parents).
"""

from __future__ import annotations

import math
from pathlib import Path
from random import Random
from typing import Any

from am.jobspec import Job, JobSpecError, parse_job
from sim.traces.jsonstream import iter_objects


def lognormal(rng: Random, mean: float, std: float) -> float:
    """A log-normal sample with the given mean and standard deviation (the mean itself when std is 0)."""
    if mean <= 0 or std <= 0:
        return mean
    sigma2 = math.log(1.0 + (std * std) / (mean * mean))
    mu = math.log(mean) - sigma2 / 2.0
    return rng.lognormvariate(mu, math.sqrt(sigma2))


def _pick(rng: Random, items: list[dict[str, Any]], weight_key: str) -> dict[str, Any]:
    weights = [float(i.get(weight_key, 1.0)) for i in items]
    return rng.choices(items, weights=weights)[0]


def _submit(rng: Random, buckets: list[dict[str, Any]]) -> float:
    if not buckets:
        return 0.0
    idx = rng.choices(range(len(buckets)), weights=[float(b.get("weight", 0)) for b in buckets])[0]
    lo = float(buckets[idx]["time"])
    hi = float(buckets[idx + 1]["time"]) if idx + 1 < len(buckets) else lo + 1.0
    return rng.uniform(lo, hi)


def _val(rng: Random, spec: dict[str, Any] | None, default: float) -> float:
    if not spec:
        return default
    return lognormal(rng, float(spec.get("val", default)), float(spec.get("std", 0.0)))


def _stage(name: str, times_ms: list[float], memory: float, vcores: float, parents: list[str]) -> dict[str, Any]:
    return {"name": name, "tasks": len(times_ms), "memory_mb": max(1, round(memory)),
            "vcores": max(1, round(vcores)), "durations_s": [max(0.0, t) / 1000.0 for t in times_ms],
            "parents": parents}


def _legacy(rng: Random, c: dict[str, Any]) -> list[dict[str, Any]]:
    stages: list[dict[str, Any]] = []
    for kind, letter in (("map", "m"), ("reduce", "r")):
        n = max(1, round(lognormal(rng, float(c[f"{letter}tasks_avg"]), float(c.get(f"{letter}tasks_stddev", 0)))))
        times = [lognormal(rng, float(c[f"{letter}time_avg"]), float(c.get(f"{letter}time_stddev", 0)))
                 for _ in range(n)]
        memory = lognormal(rng, float(c.get(f"{kind}_max_memory_avg", 1024)),
                           float(c.get(f"{kind}_max_memory_stddev", 0)))
        vcores = lognormal(rng, float(c.get(f"{kind}_max_vcores_avg", 1)), float(c.get(f"{kind}_max_vcores_stddev", 0)))
        stages.append(_stage(kind, times, memory, vcores, [stages[-1]["name"]] if stages else []))
    return stages


def _generic(rng: Random, c: dict[str, Any]) -> list[dict[str, Any]]:
    stages: list[dict[str, Any]] = []
    for i, t in enumerate(c.get("tasks", [])):
        n = max(1, round(_val(rng, t.get("count"), 1)))
        times = [_val(rng, t.get("time"), 0.0) for _ in range(n)]
        name = f"{t.get('type', 'task')}{i}"
        parents = [stages[-1]["name"]] if stages else []
        stages.append(_stage(name, times, _val(rng, t.get("max_memory"), 1024),
                             _val(rng, t.get("max_vcores"), 1), parents))
    return stages


def load_synth(path: str | Path, *, seed: int | None = None) -> list[Job]:
    specs = list(iter_objects(path))
    if len(specs) != 1 or "workloads" not in specs[0]:
        raise JobSpecError(f"{path}: not an SLS SYNTH spec (one object with workloads[])")
    spec = specs[0]
    rng = Random(int(spec.get("rand_seed", 0)) if seed is None else seed)
    jobs: list[Job] = []
    for n in range(int(spec.get("num_jobs", 0))):
        workload = _pick(rng, spec["workloads"], "workload_weight")
        cls = _pick(rng, workload["job_classes"], "class_weight")
        arrival = _submit(rng, workload.get("time_distribution", []))
        stages = _generic(rng, cls) if "tasks" in cls else _legacy(rng, cls)
        data = {"id": f"synth_{n}", "name": str(cls.get("class_name", "synth")),
                "user": str(cls.get("user_name", "default")), "queue": str(workload.get("queue_name", "default")),
                "arrival_s": arrival, "stages": stages}
        jobs.append(parse_job(data, where=f"{path}: job {n}"))
    return sorted(jobs, key=lambda j: j.arrival_s)
