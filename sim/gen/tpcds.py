"""A generator of TPC-DS-like DAG workloads, shaped like the query DAGs Carbyne (OSDI 2016, §2.2) reports.

Carbyne's Tables 1-2 describe the TPC-DS/TPC-H/BigBench DAGs it replays: at least 7 stages at the median
and up to 23 at the 95th percentile, multiple barriers (stages with several parents) in most DAGs, a
critical path of 5 stages at the median, and often several disjoint paths. Its evaluation draws 250 jobs
with Poisson arrivals, 20 s apart on average. This generator draws from distributions fitted to those
numbers (see ``TpcdsOptions``; ``dag_stats`` measures a workload so tests can check them):

* stages: log-normal, median 7, p95 23 (σ = ln(23/7)/1.645), at least 2;
* critical path: L = round(n^0.8 × u) stages with u log-normal around 1.05, within [2, n] (median 5);
* shape: a spine of L stages fixes the critical path; the other stages sit on random earlier levels, each
  fed by a stage one level up (so several roots = disjoint input paths), and with probability
  ``join_p`` also by a stage of any earlier level (a barrier); the last spine stage joins every branch
  that feeds nothing else, so every DAG ends in one output barrier;
* per stage: tasks log-normal (median ``tasks_median``), mean task time log-normal (median
  ``task_s_median``) with ±``jitter`` uniform per task, and a demand drawn from a few container sizes, so
  stages differ in their dominant resource.

``depth_scale``, ``root_p`` and the container-size tables move a workload away from TPC-DS's shape
(``sim.gen.families`` names such variants); at their defaults the draws are the TPC-DS-like ones.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from random import Random
from typing import Any

from am.jobspec import Job, parse_job

MEMORY_CHOICES = ((1024, 0.3), (2048, 0.35), (4096, 0.25), (6144, 0.1))
VCORE_CHOICES = ((1, 0.6), (2, 0.3), (4, 0.1))


@dataclass(frozen=True, slots=True)
class TpcdsOptions:
    jobs: int = 250
    interarrival_s: float = 20.0
    seed: int = 0
    stages_median: float = 7.0
    stages_p95: float = 23.0
    max_stages: int = 60
    join_p: float = 0.5
    tasks_median: float = 12.0
    tasks_sigma: float = 1.0
    max_tasks: int = 400
    task_s_median: float = 8.0
    task_s_sigma: float = 0.8
    jitter: float = 0.25
    depth_scale: float = 1.0  # the critical path's length relative to the TPC-DS-like one (shorter: bushier)
    root_p: float = 0.0  # chance an off-spine stage starts a path of its own (more disjoint input paths)
    memory_choices: tuple[tuple[int, float], ...] = MEMORY_CHOICES  # (MB, weight) of a stage's containers
    vcore_choices: tuple[tuple[int, float], ...] = VCORE_CHOICES


def _choice(rng: Random, table: Sequence[tuple[int, float]]) -> int:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table])[0]


def _shape(rng: Random, o: TpcdsOptions) -> list[list[int]]:
    """Parents (by index) of each stage of one DAG; stage order is topological."""
    sigma = math.log(o.stages_p95 / o.stages_median) / 1.645
    n = max(2, min(o.max_stages, round(rng.lognormvariate(math.log(o.stages_median), sigma))))
    depth = max(2, min(n, round(n**0.8 * rng.lognormvariate(math.log(1.05 * o.depth_scale), 0.15))))
    levels = list(range(depth)) + sorted(0 if o.root_p and rng.random() < o.root_p else rng.randrange(0, depth - 1)
                                         for _ in range(n - depth))
    order = sorted(range(n), key=lambda i: (levels[i], i))
    level_of = [levels[i] for i in order]
    by_level: dict[int, list[int]] = {}
    for idx, lv in enumerate(level_of):
        by_level.setdefault(lv, []).append(idx)
    spine = [by_level[lv][0] for lv in range(depth)]
    parents: list[list[int]] = [[] for _ in range(n)]
    for idx in range(n):
        lv = level_of[idx]
        if lv == 0:
            continue
        first = spine[lv - 1] if idx in spine else rng.choice(by_level[lv - 1])
        parents[idx].append(first)
        if idx != spine[-1] and rng.random() < o.join_p:
            extra = rng.choice([j for j in range(n) if level_of[j] < lv])
            if extra not in parents[idx]:
                parents[idx].append(extra)
    sink = spine[-1]
    fed = {p for ps in parents for p in ps}
    for idx in range(n):
        if idx != sink and idx not in fed and idx not in parents[sink]:
            parents[sink].append(idx)
    return parents


def generate_job(rng: Random, o: TpcdsOptions, job_id: str, arrival: float) -> Job:
    parents = _shape(rng, o)
    stages: list[dict[str, Any]] = []
    for i, ps in enumerate(parents):
        tasks = max(1, min(o.max_tasks, round(rng.lognormvariate(math.log(o.tasks_median), o.tasks_sigma))))
        mean = max(0.5, rng.lognormvariate(math.log(o.task_s_median), o.task_s_sigma))
        durations = [round(mean * rng.uniform(1 - o.jitter, 1 + o.jitter), 3) for _ in range(tasks)]
        stages.append({"name": f"s{i}", "tasks": tasks, "memory_mb": _choice(rng, o.memory_choices),
                       "vcores": _choice(rng, o.vcore_choices), "duration_s": round(mean, 3),
                       "durations_s": durations, "parents": [f"s{p}" for p in ps]})
    return parse_job({"id": job_id, "name": "tpcds", "arrival_s": round(arrival, 3), "stages": stages},
                     where=job_id)


def generate(options: TpcdsOptions | None = None) -> list[Job]:
    """``jobs`` TPC-DS-like jobs with Poisson arrivals (the first at 0), deterministic for a seed."""
    o = options or TpcdsOptions()
    rng = Random(o.seed)
    jobs: list[Job] = []
    t = 0.0
    for k in range(o.jobs):
        jobs.append(generate_job(rng, o, f"tpcds-{k:04d}", t))
        t += rng.expovariate(1.0 / o.interarrival_s)
    return jobs


@dataclass(frozen=True, slots=True)
class DagStats:
    stages: int
    barriers: int  # stages with more than one parent
    critical_path: int  # stages on the longest parent chain
    roots: int  # stages without parents: independent input paths


def dag_stats(job: Job) -> DagStats:
    depth = job.depths()
    return DagStats(len(job.stages), sum(1 for s in job.stages if len(s.parents) > 1),
                    max(depth.values()) + 1, sum(1 for s in job.stages if not s.parents))


def summary(jobs: Sequence[Job]) -> dict[str, float]:
    """Medians and 95th percentiles of the DAG statistics (what Carbyne's Tables 1-2 report)."""
    stats = [dag_stats(j) for j in jobs]

    def p95(xs: list[int]) -> float:
        s = sorted(xs)
        return float(s[min(len(s) - 1, math.ceil(0.95 * len(s)) - 1)])

    stages = [s.stages for s in stats]
    cp = [s.critical_path for s in stats]
    return {
        "stages_p50": float(statistics.median(stages)), "stages_p95": p95(stages),
        "critical_path_p50": float(statistics.median(cp)), "critical_path_p95": p95(cp),
        "multi_barrier_fraction": sum(1 for s in stats if s.barriers >= 2) / len(stats),
        "multi_root_fraction": sum(1 for s in stats if s.roots >= 2) / len(stats),
    }
