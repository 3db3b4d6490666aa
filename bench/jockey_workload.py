"""The Jockey evaluation's workload (Jockey §5.1): recurring SLO DAG jobs with run-to-run variation, their
training runs and profiles, and best-effort background load.

**Recurring jobs.** Seven shaped like the paper's Table 2 (jobs A–G: stage count, vertex count scaled down by
``scale``, median and 90th-percentile task run time) as random DAGs in which every edge is a barrier (a stage
starts when all its parents' tasks have ended), and four TPC-H queries with the stage profiles measured on
CloudLab (``erdos-tpch``, 100 GB, 50 cores; 13–17 stages). Every task is a 1-vcore, 2 GB container.

**A run** draws every task's run time afresh: per stage a lognormal factor (run-to-run variation of a stage,
``stage_cv``), per task a lognormal draw around the stage's median (the spread within a stage); one run in
``heavy_every`` needs 1.5–2× its usual work (a bigger input). Stragglers and failed attempts come from the
simulator's ``Faults``. **The training run** is one such run without the heavy factor; the job's profile
(``profile_from_job`` of the training run's durations: one sample per task, 1 s of initialisation per task)
is what its AM's model is built from, as the paper builds C(p, a) from a single production run.

**Deadlines** come from the critical path and the oracle: d = max(``cp_factor`` × the training run's critical
path, T / ``oracle_units``), rounded up to 30 s, with T the training run's task-seconds: the oracle
allocation ⌈T / d⌉ is then at most ``oracle_units``. A job's utility is the paper's shape at d.

**Background**: TPC-DS-like DAGs (``sim.gen.tpcds``, greedy AMs) arriving as a Poisson process whose mean gap
puts ``load`` of the cluster's vcores to work on average.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from random import Random
from typing import Any

from am.jobspec import Job, parse_job
from am.policies.jockey.profile import JobProfile, profile_from_job
from am.policies.jockey.utility import default_utility
from sim.gen.tpcds import TpcdsOptions, generate_job
from sim.traces.tpch import TpchOptions, load_tpch

ROOT = Path(__file__).resolve().parents[1]
ERDOS = ROOT.parent / "shared" / "traces" / "erdos-tpch"

TABLE2 = (  # name, stages, vertices, median task s, p90 task s (Jockey Table 2, jobs A-G)
    ("A", 23, 681, 16.3, 61.5),
    ("B", 14, 1605, 4.0, 54.1),
    ("C", 16, 5751, 2.6, 5.7),
    ("D", 24, 3897, 6.1, 25.1),
    ("E", 11, 2033, 8.0, 130.0),
    ("F", 26, 6139, 3.6, 17.4),
    ("G", 110, 8496, 3.0, 7.7),
)
TPCH = ("tpch_q5_100g_maxCores_50", "tpch_q8_100g_maxCores_50", "tpch_q9_100g_maxCores_50",
        "tpch_q21_100g_maxCores_50")
TASK_MEMORY_MB = 2048
SIGMA_CAP = 1.2  # the spread of one job's task times (lognormal sigma) is capped here: E's p90/median of 16
# would give single tasks of hours


@dataclass(frozen=True, slots=True)
class WorkloadOptions:
    scale: float = 0.25  # vertex counts of the Table 2 jobs x this
    stage_cv: float = 0.2  # sigma of a stage's lognormal factor from run to run
    heavy_every: int = 10  # one run in this many needs 1.5-2x its work
    cp_factor: float = 3.0  # a run needing 2x its work doubles its critical path: at 2x it could never be on time
    oracle_units: int = 16
    load: float = 0.8  # the background's share of the cluster's vcores
    seed: int = 0


@dataclass(frozen=True, slots=True)
class StageShape:
    name: str
    tasks: int
    median_s: float
    sigma: float
    parents: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Recurring:
    """One recurring job: its stages' shapes, its training run's profile, its deadline."""

    name: str
    stages: tuple[StageShape, ...]
    profile: JobProfile
    deadline_s: float
    training_work_s: float  # T of the training run, task-seconds
    critical_path_s: float

    @property
    def tasks(self) -> int:
        return sum(s.tasks for s in self.stages)

    def oracle_units(self, work_s: float, deadline_s: float | None = None) -> int:
        return math.ceil(work_s / (deadline_s or self.deadline_s))


def _table2_shapes(rng: Random, name: str, stages: int, vertices: int, median: float, p90: float,
                   scale: float) -> list[StageShape]:
    sigma_total = min(SIGMA_CAP, math.log(p90 / median) / 1.2816)
    sigma = sigma_total / math.sqrt(2.0)  # half the spread between stages, half within one
    weights = [rng.paretovariate(1.2) for _ in range(stages)]
    total = sum(weights)
    out: list[StageShape] = []
    for i in range(stages):
        parents: tuple[str, ...] = ()
        if i > 0:
            k = rng.randint(1, min(3, i))
            parents = tuple(f"s{j}" for j in sorted(rng.sample(range(i), k)))
        tasks = max(1, round(weights[i] / total * vertices * scale))
        out.append(StageShape(f"s{i}", tasks, median * rng.lognormvariate(0.0, sigma), sigma, parents))
    return out


def _tpch_shapes(key: str) -> list[StageShape]:
    (job,) = [j for j in load_tpch(ERDOS, TpchOptions(scale="100g", max_cores=50)) if j.id == key]
    return [StageShape(s.name, s.tasks, s.estimated_task_s, 0.4, tuple(s.parents)) for s in job.stages]


def draw_run(stages: tuple[StageShape, ...], rng: Random, *, stage_cv: float, factor: float = 1.0) -> list[list[float]]:
    """One run's task run times, per stage."""
    out = []
    for s in stages:
        f = factor * rng.lognormvariate(0.0, stage_cv)
        out.append([round(max(0.05, s.median_s * f * rng.lognormvariate(0.0, s.sigma)), 3) for _ in range(s.tasks)])
    return out


def critical_path(stages: tuple[StageShape, ...], durations: list[list[float]]) -> float:
    """The longest chain of longest tasks through the DAG (a run with unlimited containers)."""
    end: dict[str, float] = {}
    for s, d in zip(stages, durations, strict=True):
        end[s.name] = max((end[p] for p in s.parents), default=0.0) + max(d)
    return max(end.values())


def run_job(name: str, stages: tuple[StageShape, ...], durations: list[list[float]], *, job_id: str,
            arrival: float, deadline_s: float, am_policy: str | None = None) -> Job:
    """A run of a recurring job as a job file: its tasks' durations, and the paper's utility at its deadline."""
    points = [[t / 60.0, v] for t, v in default_utility(deadline_s).points]
    spec: dict[str, Any] = {
        "id": job_id, "name": name, "arrival_s": round(arrival, 3), "utility": points,
        "stages": [{"name": s.name, "tasks": s.tasks, "durations_s": durs, "memory_mb": TASK_MEMORY_MB, "vcores": 1,
                    "parents": list(s.parents)} for s, durs in zip(stages, durations, strict=True)],
    }
    if am_policy is not None:
        spec["am_policy"] = am_policy
    return parse_job(spec, where=job_id)


def recurring_jobs(o: WorkloadOptions) -> list[Recurring]:
    rng = Random(o.seed)
    shapes: list[tuple[str, list[StageShape]]] = [
        (f"job-{name}", _table2_shapes(rng, name, stages, vertices, median, p90, o.scale))
        for name, stages, vertices, median, p90 in TABLE2]
    shapes += [(key.split("_")[1], _tpch_shapes(key)) for key in TPCH]
    out = []
    for name, stage_list in shapes:
        stages = tuple(stage_list)
        training = draw_run(stages, rng, stage_cv=o.stage_cv)
        work = sum(sum(d) for d in training)
        cp = critical_path(stages, training)
        deadline = math.ceil(max(o.cp_factor * cp, work / o.oracle_units) / 30.0) * 30.0
        trained = run_job(name, stages, training, job_id=f"{name}-train", arrival=0.0, deadline_s=deadline)
        profile = replace(profile_from_job(trained, queue_s=1.0, failure_p=0.01), name=name)
        out.append(Recurring(name, stages, profile, deadline, work, cp))
    return out


def background(o: WorkloadOptions, vcores: int, until_s: float, seed: int) -> list[Job]:
    """Greedy TPC-DS-like jobs from time 0 to ``until_s`` whose work keeps ``load`` of ``vcores`` busy."""
    opts = TpcdsOptions(seed=seed, tasks_median=6.0, task_s_median=20.0)  # coarser than the Carbyne runs' DAGs:
    # the same load in a quarter of the tasks, so the simulator spends its time on the SLO jobs
    rng = Random(seed)
    sample = [generate_job(Random(seed * 31 + k), opts, "probe", 0.0) for k in range(200)]
    mean_work = sum(sum(s.task_duration_s(i) * s.vcores for i in range(s.tasks)) for j in sample
                    for s in j.stages) / len(sample)
    gap = mean_work / (o.load * vcores)
    jobs: list[Job] = []
    t = rng.expovariate(1.0 / gap)
    k = 0
    while t < until_s:
        job = generate_job(rng, opts, f"bg-{k:05d}", t)
        jobs.append(job.model_copy(update={"am_policy": "greedy"}))
        t += rng.expovariate(1.0 / gap)
        k += 1
    return jobs
