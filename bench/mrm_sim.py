"""One modest point of the MRM evaluation through the full simulator (``sim/engine.py``, the ``mrm``
scheduler), and the same jobs, claims and deadlines in the queueing model for comparison.

The simulator buys a fixed deadline (``deadline_s`` after arrival) and its RM, which has no run history,
estimates each job from its job file's task durations (``declared``: the work, with a relative error of
``DeadlineConfig.declared_cv`` = 0.5, so the claim is ``1 + 1.96 × 0.5`` times the work, at the phase's full
task count wide, its longest task as the critical path). The model gets the same claim, the same deadline,
and refuses the job when the deadline is before its earliest feasible finish, as the RM does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import mrm_model as mm
from mrm_workload import NODES, SLOTS, MrJob

from am.jobspec import Job, parse_job
from rm.core.deadlines.estimate import make_estimator
from rm.core.deadlines.layout import Phase, critical_path
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.policies import make_policy

DECLARED = 1 + 1.96 * 0.5
TASK_MB = 1024
NODE_MB = 4 * TASK_MB + 256  # four task containers and one AM
NODE_VCORES = 5
BOOK_UNITS = 0.8 * NODES * min(NODE_MB / TASK_MB, NODE_VCORES)  # DeadlineConfig.max_fraction of the queue


def declared_claim(job: MrJob) -> tuple[Phase, ...]:
    return tuple(Phase(w * DECLARED, float(min(t, SLOTS)), max(ts)) for w, t, ts in
                 zip(job.work, job.tasks, job.task_s, strict=True))


def to_sim(job: MrJob, deadline_s: float) -> Job:
    stages: list[dict[str, Any]] = [{"name": "map", "tasks": job.tasks[0], "memory_mb": TASK_MB,
                                     "durations_s": [round(x, 3) for x in job.task_s[0]]}]
    if len(job.tasks) > 1:
        stages.append({"name": "reduce", "tasks": job.tasks[1], "memory_mb": TASK_MB, "parents": ["map"],
                       "durations_s": [round(x, 3) for x in job.task_s[1]]})
    return parse_job({"id": f"j{job.index:05d}", "name": job.features.name, "arrival_s": round(job.arrival, 3),
                      "stages": stages, "deadline_s": round(deadline_s, 3)})


def deadlines(jobs: Sequence[MrJob], factors: Sequence[float]) -> list[float]:
    return [f * critical_path(declared_claim(j)) for j, f in zip(jobs, factors, strict=True)]


def run_simulator(jobs: Sequence[MrJob], factors: Sequence[float], estimator: str | None = None) -> dict[str, Any]:
    """The jobs through the simulator; ``estimator`` replaces the RM's work estimator (default: as configured,
    ``auto``) before the run."""
    ds = deadlines(jobs, factors)
    sim_jobs = [to_sim(j, d) for j, d in zip(jobs, ds, strict=True)]
    sim = Simulator(sim_jobs, uniform_nodes(NODES, NODE_MB, NODE_VCORES), make_policy("mrm"), SimConfig(seed=1))
    if estimator is not None:
        sim.ledger.deadlines.estimator = make_estimator(estimator)
    result = sim.run()
    methods: Counter[str] = Counter()
    for app in sim.ledger.apps.values():
        if app.terms.claim is not None:
            methods[app.terms.claim.method] += 1
    out: dict[str, Any] = {"admitted": 0, "refused": 0, "met": 0, "missed": 0, "methods": dict(methods),
                           "runs": len(sim.ledger.deadlines.runs)}
    for rec, j, d in zip(sorted(result.jobs, key=lambda r: r.job_id), jobs, ds, strict=True):
        if rec.status == "REFUSED":
            out["refused"] += 1
            continue
        out["admitted"] += 1
        if rec.finish is not None and rec.finish <= j.arrival + d + 1e-6:
            out["met"] += 1
        else:
            out["missed"] += 1
    return out


def model_runs(jobs: Sequence[MrJob], factors: Sequence[float]) -> list[mm.Run]:
    out = []
    for j, d in zip(jobs, deadlines(jobs, factors), strict=True):
        out.append(mm.Run(j, declared_claim(j), deadline=j.arrival + d))
    return out


def fixed_deadline(run: mm.Run, pricer: Any) -> float:
    """The deadline the job asked for, or refused (-1) when it is before the earliest feasible finish."""
    return run.deadline if run.deadline >= pricer.earliest - 1e-6 else -1.0
