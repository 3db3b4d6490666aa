"""Jockey evaluation (Jockey §5): recurring SLO DAG jobs on a shared cluster kept busy by best-effort work,
under the real simulator (``sim/engine.py``: the RM's pipelines, the real AM policies and controller).

Workload (``jockey_workload``): eleven recurring jobs (Table 2's seven shapes and four TPC-H queries), each
run ``--rounds`` times with fresh task times (stage-level variation, one run in ten needing 1.5–2× its work),
stragglers and failed attempts, among greedy TPC-DS-like jobs that keep about 80 % of the cluster busy. Each
job's AM models it from one training run. Jobs A–C run with twice their deadline in every third round (two
deadlines, the longer twice the shorter, as the paper's detailed subset).

Policies (the SLO jobs' AM policy; the background is greedy in all):
* ``jockey``: the ``jockey`` scheduler (guarantee stage) and the adaptive controller on C(p, a);
* ``jockey-static``: the controller's first decision held to the end (Jockey w/o adaptation);
* ``jockey-amdahl``: the controller on Amdahl's model (Jockey w/o simulator);
* ``max-allocation``: guaranteed the largest allocation its model knows (the widest stage), or the most its
  queue can guarantee when that is lower, throughout;
* ``drf``: no guarantee at all: the SLO jobs are greedy jobs under DRF.

Also measured: deadlines halved / doubled / tripled 10 % of the way into a run (``jockey``), C(p, a)'s
prediction error at allocations the profile was not run at against Amdahl's, the sensitivity to hysteresis,
dead zone and slack, and the C(p, a) precompute time of the largest TPC-H profile.

    python bench/eval_jockey.py [--rounds 9] [--quick] [--out docs/results/jockey.md]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from random import Random
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import itertools

import jockey_workload as wl

from am.policies.jockey.controller import ControlConfig
from am.policies.jockey.model import Amdahl, build_table
from am.policies.jockey.profile import profile_from_job
from am.policies.jockey.progress import JobState
from am.policies.jockey.simulate import Draws, schedule
from am.policies.jockey_policy import cached_table
from common.resources import Resources
from sim.config import Faults, SimConfig, Timing, uniform_nodes
from sim.engine import Simulator
from sim.metrics import JobRecord
from sim.policies import make_policy
from sim.slowdown import Contention
from sim.traces.tpch import TpchOptions, load_tpch

POLICIES: dict[str, tuple[str, str]] = {  # name -> (scheduler, the SLO jobs' AM policy)
    "jockey": ("jockey", "jockey"),
    "jockey-static": ("jockey", "jockey-static"),
    "jockey-amdahl": ("jockey", "jockey-amdahl"),
    "max-allocation": ("jockey", "jockey-max"),
    "drf": ("drf", "greedy"),
}
NODES, NODE_MB, NODE_VCORES = 20, 32768, 8
# contention episodes (sim.slowdown), the same in a round for every policy: about one an hour, ten minutes long
# on average, slowing a quarter to all of the nodes 1.5-3x (the paper's job F took twice its time on an
# overloaded cluster; its §2.4 names contention for network and server resources among the causes of variance)
CONTENTION = Contention(per_hour=1.0, mean_s=600.0, nodes=(0.25, 1.0), factor=(1.5, 3.0))
FAULTS = Faults(straggler_rate=0.01, straggler_factor=3.0, failure_rate=0.005)  # --contention adds CONTENTION
GAP_S = 300.0  # between SLO arrivals in a round
TIMING = Timing(cycle_interval_s=0.25)  # a scheduling cycle at most every 250 ms (the RM's default is 50 ms): the
# decisions of a 160-vcore cluster under 80 % load at a quarter of the cycles
TWO_DEADLINES = ("job-A", "job-B", "job-C")
MOVES = {"halved": 0.5, "doubled": 2.0, "tripled": 3.0}
MOVE_AT = 0.1
PAPER_MOVES = {"halved": 1.48, "doubled": -0.63, "tripled": -0.83}
SENSITIVITY = {
    "default (slack 1.2, α 0.2, dead zone d·3/60)": ControlConfig(),
    "no hysteresis, no dead zone": ControlConfig(hysteresis=1.0, dead_zone_s=0.0),
    "slack 1.0": ControlConfig(slack=1.0),
    "slack 1.1": ControlConfig(slack=1.1),
}
CONTROL = ControlConfig()  # the controller of every run but the sensitivity rows


def log(msg: str) -> None:
    print(msg, flush=True)


@dataclass(slots=True)
class SloRun:
    job: str
    round: int
    policy: str
    arrival: float
    deadline_s: float  # the deadline it was judged against, seconds after arrival
    finish_s: float | None  # after arrival
    work_s: float  # task-seconds it ran (its T)
    oracle: int
    requested: list[tuple[float, float]] = field(default_factory=list)  # (seconds after arrival, units)
    granted: list[tuple[float, float]] = field(default_factory=list)  # what the RM granted, the same way
    held: list[tuple[float, float, float]] = field(default_factory=list)  # (from, to, units) after arrival
    heavy: bool = False
    moved_at_s: float | None = None
    critical_path_s: float = 0.0  # this run's own chain of longest tasks, through the fastest node while
    # contention episodes last: no allocation finishes it sooner

    @property
    def feasible(self) -> bool:
        return feasible(self.critical_path_s, self.deadline_s)

    @property
    def met(self) -> bool:
        return self.finish_s is not None and self.finish_s <= self.deadline_s + 1e-6

    @property
    def ratio(self) -> float:
        return math.inf if self.finish_s is None else self.finish_s / self.deadline_s

    def requested_mean(self, start: float = 0.0) -> float:
        """Time-weighted mean of the requested units over [start, finish]."""
        end = self.finish_s or 0.0
        return _integral(self.requested, start, end) / max(1e-9, end - start)

    def mean_after(self, start: float) -> tuple[float, float, float]:
        """Time-weighted mean units requested, granted and held over [start, finish]."""
        end = self.finish_s or 0.0
        span = max(1e-9, end - start)
        held = sum(u * max(0.0, min(b, end) - max(a, start)) for a, b, u in self.held)
        return _integral(self.requested, start, end) / span, _integral(self.granted, start, end) / span, held / span

    def above_oracle_requested(self) -> float | None:
        end = self.finish_s or 0.0
        total = _integral(self.requested, 0.0, end)
        if total <= 0:
            return None
        above = _integral([(t, max(0.0, u - self.oracle)) for t, u in self.requested], 0.0, end)
        return above / total

    def above_oracle_held(self) -> float | None:
        """Of the unit-seconds of containers the job held, the share above the oracle allocation."""
        end = self.finish_s or 0.0
        points = sorted({0.0, end, *(a for a, _, _ in self.held), *(b for _, b, _ in self.held)})
        total = above = 0.0
        for lo, hi in itertools.pairwise(points):
            if hi <= lo or lo >= end:
                continue
            units = sum(u for a, b, u in self.held if a <= lo and b >= hi)
            total += units * (hi - lo)
            above += max(0.0, units - self.oracle) * (hi - lo)
        return above / total if total > 0 else None


def feasible(critical_path_s: float, deadline_s: float) -> bool:
    """Whether any allocation could meet the deadline: the run's critical path fits before it."""
    return critical_path_s <= deadline_s + 1e-6


def _integral(steps: Sequence[tuple[float, float]], lo: float, hi: float) -> float:
    """∫ of a step function given as (time, value) points, over [lo, hi]."""
    out = 0.0
    for k, (t, v) in enumerate(steps):
        nxt = steps[k + 1][0] if k + 1 < len(steps) else hi
        a, b = max(lo, t), min(hi, nxt)
        if b > a:
            out += v * (b - a)
    return out


# ----------------------------------------------------------------------------------------------- runs


@dataclass(frozen=True, slots=True)
class Round:
    jobs: list[Any]  # the simulator's workload
    slo: dict[str, tuple[wl.Recurring, float, bool]]  # job id -> (recurring job, its deadline, heavy)
    critical_paths: dict[str, float]  # job id -> that run's critical path (its longest tasks, no initialisation)


def make_round(jobs: list[wl.Recurring], r: int, o: wl.WorkloadOptions, am_policy: str, *,
               background_scale: float = 1.0) -> Round:
    rng = Random(1_000 + r)
    order = list(range(len(jobs)))
    rng.shuffle(order)
    out: list[Any] = []
    slo: dict[str, tuple[wl.Recurring, float, bool]] = {}
    paths: dict[str, float] = {}
    for slot, k in enumerate(order):
        job = jobs[k]
        heavy = (r * len(jobs) + k) % o.heavy_every == 0
        factor = rng.uniform(1.5, 2.0) if heavy else 1.0
        durations = wl.draw_run(job.stages, Random(r * 7_919 + k * 104_729 + 17), stage_cv=o.stage_cv,
                                factor=factor)
        deadline = job.deadline_s * (2.0 if job.name in TWO_DEADLINES and r % 3 == 2 else 1.0)
        job_id = f"{job.name}-r{r}"
        out.append(wl.run_job(job.name, job.stages, durations, job_id=job_id, arrival=120.0 + slot * GAP_S,
                              deadline_s=deadline, am_policy=am_policy))
        slo[job_id] = (job, deadline, heavy)
        paths[job_id] = wl.critical_path(job.stages, durations)
    horizon = 120.0 + len(jobs) * GAP_S + max(j.deadline_s for j in jobs)
    bg = wl.background(o, NODES * NODE_VCORES, horizon * background_scale, seed=r)
    return Round(sorted(out + bg, key=lambda j: j.arrival_s), slo, paths)


def run_round(jobs: list[wl.Recurring], r: int, policy: str, o: wl.WorkloadOptions, *,
              control: ControlConfig | None = None, moves: dict[str, tuple[float, float]] | None = None,
              background_scale: float = 1.0) -> list[SloRun]:
    scheduler, am_policy = POLICIES[policy]
    rnd = make_round(jobs, r, o, am_policy, background_scale=background_scale)
    profiles = {jid: job.profile for jid, (job, _, _) in rnd.slo.items()}
    cfg = SimConfig(seed=r, faults=FAULTS, timing=TIMING, profiles=profiles, control=control or CONTROL,
                    deadline_moves=moves or {})
    sim = Simulator(rnd.jobs, uniform_nodes(NODES, NODE_MB, NODE_VCORES), make_policy(scheduler), cfg)
    result = sim.run()
    speeds = sim.attempts.speeds  # the round's contention episodes, if any
    out = []
    for rec in result.jobs:
        if rec.job_id not in rnd.slo:
            continue
        job, deadline, heavy = rnd.slo[rec.job_id]
        run = slo_run(rec, job, deadline, heavy, r, policy, moves)
        # its chain of longest tasks, run from its arrival on whichever node is fastest at each moment
        run.critical_path_s = speeds.fastest_end(rec.arrival, rnd.critical_paths[rec.job_id]) - rec.arrival
        out.append(run)
    return out


@dataclass(frozen=True, slots=True)
class Task:
    """One round of one policy, with its controller settings and deadline moves."""

    policy: str
    r: int
    control: ControlConfig | None = None
    factor: float | None = None  # every SLO run's deadline moved by this factor at MOVE_AT of its deadline


_WORK: tuple[list[wl.Recurring], wl.WorkloadOptions] | None = None  # what forked workers run rounds of


def _run(task: Task) -> list[SloRun]:
    assert _WORK is not None
    jobs, o = _WORK
    moves = None
    if task.factor is not None:
        moves = {f"{jb.name}-r{task.r}": (MOVE_AT, task.factor) for jb in jobs}
    return run_round(jobs, task.r, task.policy, o, control=task.control, moves=moves)


def run_all(jobs: list[wl.Recurring], o: wl.WorkloadOptions, tasks: list[Task], workers: int) -> list[list[SloRun]]:
    """Every task's runs, in the tasks' order. A round is deterministic (its seeds, its episodes), so worker
    processes (forked, sharing the module's settings and built tables) give the same runs as one process."""
    global _WORK
    _WORK = (jobs, o)
    out: list[list[SloRun]] = []
    t0 = time.time()
    if workers <= 1 or len(tasks) <= 1:
        results: Iterable[list[SloRun]] = map(_run, tasks)
        pool = None
    else:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
        results = pool.map(_run, tasks)
    try:
        for task, got in zip(tasks, results, strict=True):
            what = task.policy if task.factor is None else f"{task.policy} deadline x{task.factor:g}"
            if task.control is not None:
                what += " (other settings)"
            log(f"{what:28s} round {task.r}: met {sum(x.met for x in got)}/{len(got)} ({time.time() - t0:.0f} s in)")
            out.append(got)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return out


def slo_run(rec: JobRecord, job: wl.Recurring, deadline: float, heavy: bool, r: int, policy: str,
            moves: dict[str, tuple[float, float]] | None) -> SloRun:
    unit = Resources.of(memory_mb=wl.TASK_MEMORY_MB, vcores=1)
    judged = (rec.deadline - rec.arrival) if rec.deadline is not None else deadline
    work = rec.task_seconds
    run = SloRun(job.name, r, policy, rec.arrival, judged,
                 None if rec.finish is None or rec.status != "SUCCEEDED" else rec.finish - rec.arrival,
                 work, max(1, math.ceil(work / judged)), heavy=heavy)
    run.requested = [(t - rec.arrival, g.vcores / unit.vcores) for t, g in rec.guarantees]
    run.granted = [(t - rec.arrival, g.vcores / unit.vcores) for t, g in rec.granted]
    run.held = [(a - rec.arrival, b - rec.arrival, c.vcores / unit.vcores) for a, b, c in rec.held]
    if moves and rec.job_id in moves:
        run.moved_at_s = moves[rec.job_id][0] * deadline
    return run


# ----------------------------------------------------------------------------------------------- model accuracy


def truth_finish(profile: Any, durations: list[list[float]], names: list[str], allocation: int) -> float:
    """When a run with exactly these task times ends at ``allocation`` slots (1 s of initialisation a task),
    scheduled as C(p, a)'s simulator schedules (same dispatch order and slot rule)."""
    by_name = dict(zip(names, durations, strict=True))
    blocks = [np.asarray(by_name[s.name], dtype=np.float64) + 1.0 for s in profile.stages]
    service = np.concatenate(blocks)[None, :]
    stage_of = np.concatenate([np.full(len(b), i, dtype=np.int64) for i, b in enumerate(blocks)])
    offsets = [0]
    for b in blocks:
        offsets.append(offsets[-1] + len(b))
    return float(schedule(profile, Draws(service, stage_of, tuple(offsets)), allocation).max())


def pooled_profile(job: wl.Recurring, o: wl.WorkloadOptions, runs: int) -> Any:
    """The job's profile from ``runs`` training runs, as the RM pools a job's recent runs
    (``profile_from_runs``): the training run's task times and those of ``runs - 1`` more, drawn apart from the
    runs the predictions are judged against."""
    extra = [wl.draw_run(job.stages, Random(70_000 + 97 * k + len(job.name)), stage_cv=o.stage_cv)
             for k in range(runs - 1)]
    by_name = {s.name: i for i, s in enumerate(job.stages)}
    stages = tuple(replace(st, run_s=st.run_s + tuple(x for d in extra for x in d[by_name[st.name]]))
                   for st in job.profile.stages)
    return replace(job.profile, stages=stages)


def model_accuracy(jobs: list[wl.Recurring], o: wl.WorkloadOptions, runs: int, pool: int = 3) -> dict[str, Any]:
    """C(0, a) and Amdahl's prediction at p = 0 against runs with fresh task times, at allocations of 1/2, 1,
    2 and 4 times the job's oracle units: mean |prediction − actual| / actual. Both models are built from the
    one training run (the paper's setting) and again from ``pool`` training runs (what the RM holds once a job
    has run that often)."""
    rows = []
    errors: dict[str, list[float]] = {"cpa": [], "amdahl": [], "cpa_pooled": [], "amdahl_pooled": []}
    for job in jobs:
        pooled = pooled_profile(job, o, pool)
        models = {"cpa": cached_table(job.profile), "amdahl": Amdahl(job.profile),
                  "cpa_pooled": cached_table(pooled), "amdahl_pooled": Amdahl(pooled)}
        start = JobState()  # nothing finished yet: p = 0
        names = [s.name for s in job.stages]
        base = job.oracle_units(job.training_work_s)
        for mult in (0.5, 1.0, 2.0, 4.0):
            a = max(1, round(base * mult))
            actual = statistics.fmean(
                truth_finish(job.profile, wl.draw_run(job.stages, Random(50_000 + k), stage_cv=o.stage_cv), names, a)
                for k in range(runs))
            row: dict[str, Any] = {"job": job.name, "units": a, "actual_s": actual}
            for name, model in models.items():
                predicted = float(np.mean(model.forecast(start, [float(a)]).samples[0]))
                errors[name].append(abs(predicted - actual) / actual)
                row[f"{name}_s"], row[f"{name}_error"] = predicted, errors[name][-1]
            rows.append(row)
    return {"rows": rows, "pool": pool, **{f"{name}_error": statistics.fmean(e) for name, e in errors.items()}}


def precompute_time() -> dict[str, Any]:
    """The C(p, a) build of the largest TPC-H profile (most tasks), best of 3, on one core."""
    jobs = load_tpch(wl.ERDOS, TpchOptions())
    big = max(jobs, key=lambda j: j.total_tasks)
    profile = profile_from_job(big, queue_s=1.0, failure_p=0.01)
    times = []
    for _ in range(3):
        t0 = time.process_time()
        build_table(profile, seed=0)
        times.append(time.process_time() - t0)
    return {"job": big.id, "stages": len(big.stages), "tasks": big.total_tasks, "seconds": min(times)}


# ----------------------------------------------------------------------------------------------- summaries


def summarise(runs: list[SloRun]) -> dict[str, Any]:
    met = [r for r in runs if r.met]
    late = [r for r in runs if not r.met]
    above_req = [x for r in met if (x := r.above_oracle_requested()) is not None]
    above_held = [x for r in met if (x := r.above_oracle_held()) is not None]
    return {
        "runs": len(runs), "met": len(met), "met_fraction": len(met) / max(1, len(runs)),
        "misses": len(late),
        "late_pct_max": max(((r.ratio - 1) * 100 for r in late if r.finish_s is not None), default=0.0),
        "late_pct_median": statistics.median([(r.ratio - 1) * 100 for r in late if r.finish_s is not None])
        if any(r.finish_s is not None for r in late) else 0.0,
        "unfinished": sum(1 for r in late if r.finish_s is None),
        "above_oracle_requested": statistics.fmean(above_req) if above_req else None,
        "above_oracle_held": statistics.fmean(above_held) if above_held else None,
        "ratio_median": statistics.median([r.ratio for r in runs if r.finish_s is not None]) if runs else None,
        "heavy_runs": sum(r.heavy for r in runs), "heavy_met": sum(r.heavy and r.met for r in runs),
        "infeasible": sum(not r.feasible for r in runs),
        "finish_cov_median": finish_cov((r.job, r.deadline_s, r.finish_s) for r in runs),
    }


def finish_cov(runs: Iterable[tuple[str, float, float | None]]) -> float | None:
    """The run-to-run variation of completion time (Table 1's measure): the median over jobs of the coefficient
    of variation of their finish times, among runs with the same deadline (three or more). ``runs`` holds
    (job, deadline, finish or None)."""
    by: dict[tuple[str, float], list[float]] = {}
    for job, deadline, finish in runs:
        if finish is not None:
            by.setdefault((job, deadline), []).append(finish)
    covs = [statistics.pstdev(v) / statistics.fmean(v) for v in by.values() if len(v) >= 3]
    return statistics.median(covs) if covs else None


def moves_summary(base: list[SloRun], moved: dict[str, list[SloRun]]) -> dict[str, Any]:
    """Per move: deadlines met, and the mean requested units after the move against the same job-round
    without it (over the same span)."""
    ref = {(r.job, r.round): r for r in base}
    out: dict[str, Any] = {}
    for name, runs in moved.items():
        changes = []
        for r in runs:
            b = ref.get((r.job, r.round))
            if b is None or r.moved_at_s is None or r.finish_s is None or b.finish_s is None:
                continue
            after = r.requested_mean(r.moved_at_s)
            before = b.requested_mean(r.moved_at_s) if b.finish_s > r.moved_at_s else b.requested_mean()
            if before > 0:
                changes.append(after / before - 1.0)
        feasible = [r for r in runs if r.feasible]
        missed = [{"job": r.job, "round": r.round, "late": r.ratio - 1.0, "path": r.critical_path_s / r.deadline_s,
                   "after": r.mean_after(r.moved_at_s or 0.0)} for r in feasible if not r.met]
        out[name] = {"runs": len(runs), "met": sum(r.met for r in runs), "feasible_missed": missed,
                     "feasible": len(feasible), "met_feasible": sum(r.met for r in feasible),
                     "allocation_change": statistics.fmean(changes) if changes else None,
                     "allocation_change_median": statistics.median(changes) if changes else None,
                     "paper": PAPER_MOVES[name]}
    return out


# ----------------------------------------------------------------------------------------------- page


def fmt(x: float | None, pct: bool = True) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}%" if pct else f"{x:.2f}"


def contention_line(c: dict[str, Any]) -> str:
    return (f"* Contention episodes (`--contention`, sim/slowdown.py) slow every task running on the nodes they "
            f"hit, those already running too: {c['per_hour']:g} an hour on average (Poisson), each lasting an "
            f"exponential time with mean {c['mean_s']:.0f} s, on {c['nodes'][0]:.0%}-{c['nodes'][1]:.0%} of the "
            f"nodes, {c['factor'][0]:g}-{c['factor'][1]:g} times slower. A round's episodes are the same for "
            "every policy.")


def write_page(out: Path, data: dict[str, Any]) -> None:
    pol = data["policies"]
    j = pol["jockey"]
    lines = [
        "# Jockey in the simulator" + (", with contention episodes" if data["options"].get("contention") else ""),
        "",
        (f"Produced by `python bench/eval_jockey.py{data['argv']}` in {data['wall_min']:.1f} min of wall time on the "
        f"2-core development machine (shared with other work). Raw numbers: `{out.with_suffix('.json').name}` "
        "beside this page. "
        "The simulator runs the RM's real pipelines (the `jockey` scheduler: MRM's admission and deadline stage, "
        "then the `guarantee` stage, DRF and the leftover) and the real AM policies and controller "
        "(docs/jockey.md, docs/simulator.md)."
        + (f" The runs of {', '.join(data['kept'])} are the previous full run's, kept (`--keep`): the change "
           "since does not touch them, and round 0 of each, run again, finished exactly as stored."
           if data.get("kept") else "")),
        "",
        "## Setup",
        "",
        (f"* Cluster: {NODES} nodes of {NODE_MB // 1024} GB / {NODE_VCORES} vcores ({NODES * NODE_VCORES} vcores), "
        f"one queue. Background: greedy TPC-DS-like DAGs arriving as a Poisson process sized to keep "
        f"{data['options']['load']:.0%} of the vcores busy on their own."),
        (f"* {len(data['jobs'])} recurring SLO jobs (table below), each run {data['rounds']} times, "
        f"{GAP_S:.0f} s apart in shuffled order within a round: {j['runs']} SLO runs per policy. Every run draws "
        f"its task times afresh (a lognormal factor per stage, sigma {data['options']['stage_cv']}, and per "
        "task), one run in ten needs 1.5-2x its work, attempts straggle (1 %, 3x) and fail (0.5 %). "
        "Jobs A-C run with twice their deadline in every third round."),
        *([contention_line(data['options']['contention'])] if data["options"].get("contention") else []),
        ((f"* The controllers take the slower of the run's pace and the pace of the tasks that finished in the "
          f"last {data['options']['pace_window_periods']:g} control periods (`ControlConfig.pace_window_periods`, "
          "`--pace-window`).") if data["options"].get("pace_window_periods") else
         "* The controllers take the whole run's pace alone (`--pace-window 0`)."),
        ("* The simulator runs a scheduling cycle at most every 250 ms (the RM's default interval is 50 ms), "
         "to keep the runs affordable."),
        ("* Each job's AM models it from one training run (the paper builds C(p, a) from one production run): "
        "its profile holds that run's task times, 1 s of initialisation per task, 1 % failures."),
        ("* Deadlines: max(3 x the training run's critical path, T / 16), rounded up to 30 s (a run needing twice "
         "its work has twice the critical path, so 2x would make such runs impossible at any allocation); the "
         "utility is "
        "the paper's shape at d."),
        ("* Allocation above the oracle (the paper's impact measure): of the units the policy requested over the "
        "run, the share above ⌈T / d⌉ with T the run's own task-seconds; over the runs that met their deadline. "
        "`held` is the same over the containers the job actually held (the only measure DRF has)."),
        "",
        "| job | stages | tasks | training T (task-s) | critical path (s) | deadline (s) | oracle units |",
        "|---|---|---|---|---|---|---|",
    ]
    for jb in data["jobs"]:
        lines.append(f"| {jb['name']} | {jb['stages']} | {jb['tasks']} | {jb['work']:.0f} | {jb['cp']:.0f} | "
                     f"{jb['deadline']:.0f} | {jb['oracle']} |")
    lines += ["", "## Targets", "", "| target | wanted | measured | met |", "|---|---|---|---|"]
    for t in data["targets"]:
        lines.append(f"| {t['what']} | {t['wanted']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |")
    lines += ["", "## Policies", "",
              ("| policy | SLO runs | met | misses | worst miss (late) | median miss | above oracle (requested) | "
              "above oracle (held) | median finish / deadline | heavy runs met | infeasible | run-to-run CoV |"),
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in pol.items():
        lines.append(f"| {name} | {s['runs']} | {s['met']} ({s['met_fraction']:.1%}) | {s['misses']} | "
                     f"{s['late_pct_max']:.1f}% | {s['late_pct_median']:.1f}% | {fmt(s['above_oracle_requested'])} | "
                     f"{fmt(s['above_oracle_held'])} | {fmt(s['ratio_median'], pct=False)} | "
                     f"{s['heavy_met']}/{s['heavy_runs']} | {s.get('infeasible', '-')} | "
                     f"{fmt(s.get('finish_cov_median'), pct=False)} |")
    if data.get("moves"):
        refresh = data.get("moves_refresh")
        lines += ["", f"## Deadlines moved {MOVE_AT:.0%} of the way into a run (`jockey`)", ""]
        if refresh:
            lines += [(f"Re-run by `python bench/eval_jockey.py{refresh['argv']}` in {refresh['wall_min']:.1f} min, "
                       f"with jockey's unmoved runs of the {refresh['rounds']} rounds they compare with "
                       f"({refresh['unmoved_runs_changed']} of them finished otherwise than in the full run above)."),
                      ""]
        lines += [
                  ("A new deadline is infeasible when the run's own critical path (its longest task in each stage, "
                   "no initialisation, run from its arrival on whichever node is fastest at each moment while "
                   "contention episodes last) is longer: no allocation meets it. The paper's moves were all met, so "
                   "the target counts the feasible ones; the mean change is the paper's measure, the median shows "
                   "how much of it a few runs make."), "",
                  ("| move | runs | met | infeasible | feasible met | mean allocation after the move vs the same "
                   "run unmoved | median | paper |"),
                  "|---|---|---|---|---|---|---|---|"]
        for name, m in data["moves"].items():
            change = "-" if m["allocation_change"] is None else f"{100 * m['allocation_change']:+.0f}%"
            med = m.get("allocation_change_median")
            median = "-" if med is None else f"{100 * med:+.0f}%"
            lines.append(f"| {name} | {m['runs']} | {m['met']}/{m['runs']} | {m['runs'] - m['feasible']} | "
                         f"{m['met_feasible']}/{m['feasible']} | {change} | {median} | {100 * m['paper']:+.0f}% |")
        missed = [(name, x) for name, m in data["moves"].items() for x in m.get("feasible_missed", [])]
        if missed:
            lines += ["", ("Feasible moves that were missed: the mean units the AM requested after the move, what "
                           "the RM granted as a guarantee and what the job held (its critical path as a share of "
                           "the new deadline):"), "",
                      "| move | job, round | late | critical path / deadline | requested | granted | held |",
                      "|---|---|---|---|---|---|---|"]
            for name, x in missed:
                asked, granted, held = x["after"]
                lines.append(f"| {name} | {x['job']} r{x['round']} | {100 * x['late']:.1f}% | {x['path']:.2f} | "
                             f"{asked:.1f} | {granted:.1f} | {held:.1f} |")
    if data.get("sensitivity"):
        lines += ["", "## Sensitivity (`jockey`)", "",
                  "| controller | runs | met | misses | above oracle (requested) |", "|---|---|---|---|---|"]
        for name, s in data["sensitivity"].items():
            lines.append(f"| {name} | {s['runs']} | {s['met']} ({s['met_fraction']:.1%}) | {s['misses']} | "
                         f"{fmt(s['above_oracle_requested'])} |")
    acc = data.get("accuracy")
    if acc:
        refreshed = acc.get("refresh")
        lines += ["", "## C(p, a) against Amdahl", "",
                  *([(f"Re-measured by `python bench/eval_jockey.py{refreshed['argv']}` in "
                     f"{refreshed['wall_min']:.1f} min."), ""] if refreshed else []),
                  (f"Predicted remaining time at p = 0 against list-scheduled runs with fresh task times at 1/2, 1, 2 "
                  f"and 4 times each job's oracle units (mean of {acc['runs']} runs each): mean error "
                  f"C(p, a) {fmt(acc['cpa_error'])}, Amdahl {fmt(acc['amdahl_error'])}. The runs are scheduled by "
                  "the same list scheduler C(p, a) simulates with, so this measures what one training run's task "
                  "times say about other runs, not the scheduler model's fidelity to the cluster."
                  + (f" Built from {acc['pool']} training runs pooled, as the RM pools a job's recent runs, the "
                     f"errors are C(p, a) {fmt(acc['cpa_pooled_error'])}, Amdahl {fmt(acc['amdahl_pooled_error'])}."
                     if "cpa_pooled_error" in acc else ""))]
    pre = data.get("precompute")
    if pre:
        lines += ["", "## Precompute", "",
                  (f"C(p, a) for the largest TPC-H profile ({pre['job']}: {pre['stages']} stages, {pre['tasks']} "
                  f"tasks) took {pre['seconds']:.2f} s of CPU (best of 3, one core).")]
    lines += ["", "## Reading the figures", "", data.get("reading", "").strip(), ""]
    out.write_text("\n".join(lines), encoding="utf-8")


def targets(data: dict[str, Any]) -> list[dict[str, Any]]:
    pol = data["policies"]
    j = pol["jockey"]
    out: list[dict[str, Any]] = []

    def add(what: str, wanted: str, measured: str, met: bool) -> None:
        out.append({"what": what, "wanted": wanted, "measured": measured, "met": met})

    add("deadlines met, jockey", ">= 99%", f"{j['met']}/{j['runs']} ({j['met_fraction']:.2%})",
        j["met_fraction"] >= 0.99)
    add("worst miss, jockey", "<= 3% late", f"{j['late_pct_max']:.1f}%", j["late_pct_max"] <= 3.0)
    a = j["above_oracle_requested"]
    add("allocation above oracle, jockey", "<= 35% (paper 25%)", fmt(a), a is not None and a <= 0.35)
    if "max-allocation" in pol:
        m = pol["max-allocation"]["above_oracle_requested"]
        add("max-allocation's above-oracle share over jockey's", ">= 3x",
            "-" if m is None or not a else f"{m / a:.1f}x", m is not None and bool(a) and m / a >= 3.0)
    for name in ("jockey-static", "jockey-amdahl"):
        if name not in pol:
            continue
        other = pol[name]["misses"]
        base = max(1, j["misses"])
        add(f"{name} misses vs jockey's", ">= 5x", f"{other} vs {j['misses']}", other >= 5 * base)
    for name, mv in (data.get("moves") or {}).items():
        change = mv["allocation_change"]
        paper = mv["paper"]
        ok = mv["met_feasible"] == mv["feasible"] and change is not None and abs(change - paper) <= 0.3 * abs(paper)
        shown = "-" if change is None else f"{100 * change:+.0f}%"
        add(f"deadline {name}: all feasible met, allocation {100 * paper:+.0f}% ± 30%", "all met; within",
            f"{mv['met_feasible']}/{mv['feasible']} feasible met ({mv['met']}/{mv['runs']} in all); {shown}", ok)
    acc = data.get("accuracy")
    if acc:
        add("C(p, a) error at other allocations", "<= 10% and below Amdahl's",
            f"{fmt(acc['cpa_error'])} vs {fmt(acc['amdahl_error'])}"
            + (f" (from {acc['pool']} runs: {fmt(acc['cpa_pooled_error'])} vs {fmt(acc['amdahl_pooled_error'])})"
               if "cpa_pooled_error" in acc else ""),
            acc["cpa_error"] <= 0.10 and acc["cpa_error"] < acc["amdahl_error"])
    sens = data.get("sensitivity")
    if sens:
        keys = list(SENSITIVITY)
        base, loose = sens[keys[0]], sens[keys[1]]
        add("no hysteresis and no dead zone meet fewer", "fewer met", f"{loose['met']} vs {base['met']}",
            loose["met"] < base["met"])
        s0, s1 = sens["slack 1.0"], sens["slack 1.1"]
        add("zero slack misses some, 10% slack none", "misses > 0; 0",
            f"{s0['misses']}; {s1['misses']}", s0["misses"] > 0 and s1["misses"] == 0)
    pre = data.get("precompute")
    if pre:
        add("C(p, a) precompute, largest TPC-H profile", "<= 10 s", f"{pre['seconds']:.2f} s", pre["seconds"] <= 10.0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--move-rounds", type=int, default=3, help="rounds of each deadline move")
    ap.add_argument("--sensitivity-rounds", type=int, default=3)
    ap.add_argument("--accuracy-runs", type=int, default=20)
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--quick", action="store_true", help="2 rounds, 1 round of moves and sensitivity")
    ap.add_argument("--moves-only", action="store_true",
                    help="re-run only the deadline moves (and jockey's rounds they compare with); every other "
                         "figure is kept from the jockey.json beside --out, with the infeasible runs counted in it")
    ap.add_argument("--accuracy-only", action="store_true",
                    help="re-measure only C(p, a)'s and Amdahl's accuracy (list scheduling, no cluster runs); every "
                         "other figure is kept from the JSON file beside --out")
    ap.add_argument("--keep", default="",
                    help="policies whose runs and figures are taken from the jockey.json beside --out (a change "
                         "that does not touch them); round 0 of each is run again to check it finishes the same")
    ap.add_argument("--contention", action="store_true",
                    help="add contention episodes that slow running tasks (CONTENTION); the raw runs go to the "
                         "JSON file named after --out")
    ap.add_argument("--pace-window", type=float, default=None, metavar="PERIODS",
                    help="controllers also take the pace of the tasks finished in the last PERIODS control periods "
                         "(ControlConfig.pace_window_periods, default 5), the sensitivity rows too; 0: the whole "
                         "run's pace alone")
    ap.add_argument("--workers", type=int, default=1,
                    help="rounds run in this many processes at once (the figures are the same as with one)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "jockey.md")
    args = ap.parse_args()
    global FAULTS, CONTROL, SENSITIVITY
    if args.contention:
        FAULTS = replace(FAULTS, contention=CONTENTION)
    if args.pace_window is not None:
        window = args.pace_window or None
        CONTROL = replace(CONTROL, pace_window_periods=window)
        SENSITIVITY = {name: replace(cfg, pace_window_periods=window) for name, cfg in SENSITIVITY.items()}
    if args.quick:
        args.rounds, args.move_rounds, args.sensitivity_rounds, args.accuracy_runs = 2, 1, 1, 5
    started = time.time()
    o = wl.WorkloadOptions()
    jobs = wl.recurring_jobs(o)
    log(f"{len(jobs)} recurring jobs; building their C(p, a) tables")
    for job in jobs:
        cached_table(job.profile)
    if args.moves_only:
        return refresh_moves(args, jobs, o, started)
    if args.accuracy_only:
        return refresh_accuracy(args, jobs, o, started)
    data: dict[str, Any] = {"argv": "".join(f" {a}" for a in sys.argv[1:]), "rounds": args.rounds,
                            "options": {"load": o.load, "stage_cv": o.stage_cv, "scale": o.scale,
                                        "contention": asdict(CONTENTION) if args.contention else None,
                                        "pace_window_periods": CONTROL.pace_window_periods},
                            "jobs": [{"name": jb.name, "stages": len(jb.stages), "tasks": jb.tasks,
                                      "work": jb.training_work_s, "cp": jb.critical_path_s, "deadline": jb.deadline_s,
                                      "oracle": jb.oracle_units(jb.training_work_s)} for jb in jobs]}
    all_runs: dict[str, list[SloRun]] = {}
    keep = [p for p in args.keep.split(",") if p]
    stored = json.loads(args.out.with_suffix(".json").read_text(encoding="utf-8")) if keep else {}
    kept_runs: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    for policy in keep:
        if stored.get("rounds") != args.rounds:
            raise SystemExit(f"--keep: the stored run has {stored.get('rounds')} rounds, not {args.rounds}")
        kept_runs[policy] = stored["runs"][policy]
        kept[policy] = stored["policies"][policy]
        finish = {(x["job"], x["round"]): x["finish_s"] for x in kept_runs[policy]}
        again = run_round(jobs, 0, policy, o)
        changed = sum(1 for x in again if finish.get((x.job, 0)) != x.finish_s)
        log(f"{policy:15s} kept from the stored run; round 0 again: {changed} of {len(again)} runs finish otherwise")
        if changed:
            raise SystemExit(f"--keep {policy}: today's code changes its runs; run it again instead")
    policies = [p for p in args.policies.split(",") if p not in keep]
    tasks = [Task(policy, r) for policy in policies for r in range(args.rounds)]
    do_moves = "jockey" in policies and args.move_rounds > 0
    if do_moves:
        tasks += [Task("jockey", r, factor=factor) for factor in MOVES.values() for r in range(args.move_rounds)]
    sens_tasks = {name: [Task("jockey", r, control=cfg) for r in range(args.sensitivity_rounds)]
                  for name, cfg in SENSITIVITY.items()
                  if not (name.startswith("default") and "jockey" in policies)}
    tasks += [t for ts in sens_tasks.values() for t in ts]
    results = dict(zip(tasks, run_all(jobs, o, tasks, args.workers), strict=True))
    for policy in policies:
        all_runs[policy] = [x for r in range(args.rounds) for x in results[Task(policy, r)]]
    summaries = {name: summarise(runs) for name, runs in all_runs.items()}
    data["policies"] = {name: kept[name] if name in kept else summaries[name] for name in args.policies.split(",")}
    if keep:
        data["kept"] = keep
    if do_moves:
        moved = {name: [x for r in range(args.move_rounds) for x in results[Task("jockey", r, factor=factor)]]
                 for name, factor in MOVES.items()}
        data["moves"] = moves_summary(all_runs["jockey"], moved)
    if args.sensitivity_rounds:
        sens: dict[str, Any] = {}
        for name in SENSITIVITY:
            if name in sens_tasks:
                runs = [x for t in sens_tasks[name] for x in results[t]]
            else:
                runs = [x for x in all_runs["jockey"] if x.round < args.sensitivity_rounds]
            sens[name] = summarise(runs)
            log(f"sensitivity {name}: met {sens[name]['met']}/{sens[name]['runs']}")
        data["sensitivity"] = sens
    if args.accuracy_runs:
        data["accuracy"] = {"runs": args.accuracy_runs, **model_accuracy(jobs, o, args.accuracy_runs)}
        acc = data["accuracy"]
        log(f"C(p, a) error {acc['cpa_error']:.1%}, Amdahl {acc['amdahl_error']:.1%}; from {acc['pool']} runs "
            f"{acc['cpa_pooled_error']:.1%} and {acc['amdahl_pooled_error']:.1%}")
    data["precompute"] = precompute_time()
    data["wall_min"] = (time.time() - started) / 60.0
    data["reading"] = "(to be written after the run)"
    runs_json = {name: kept_runs[name] if name in kept_runs else [vars_of(r) for r in all_runs[name]]
                 for name in args.policies.split(",")}
    publish(args.out, data, runs_json)
    return 0


def publish(out: Path, data: dict[str, Any], runs_json: dict[str, Any]) -> None:
    """Targets, then the JSON file named after the page, and the page; the page's "Reading the figures" is kept as written."""
    for name, runs in runs_json.items():  # pages of runs from before the figure was kept
        data["policies"][name].setdefault(
            "finish_cov_median", finish_cov((x["job"], x["deadline_s"], x["finish_s"]) for x in runs))
    data["targets"] = targets(data)
    marker = "## Reading the figures\n"
    page = out.read_text(encoding="utf-8") if out.exists() else ""
    if marker in page:
        data["reading"] = page.split(marker, 1)[1]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({**data, "runs": runs_json}, indent=1, default=str),
                                             encoding="utf-8")
    write_page(out, data)
    for t in data["targets"]:
        log(f"{'MET ' if t['met'] else 'MISS'} {t['what']}: {t['measured']} (wanted {t['wanted']})")
    log(f"wrote {out}")


def refresh_moves(args: argparse.Namespace, jobs: list[wl.Recurring], o: wl.WorkloadOptions, started: float) -> int:
    """The deadline moves again, on today's code, into the page of an earlier full run (``--moves-only``). The
    moves' figures compare each moved run with jockey's unmoved run of the same round, so those rounds run again
    too (the simulator is deterministic for a round: they are the full run's own runs, unless the code changed
    what they do). Every other figure is the full run's, as stored, the infeasible runs counted from the critical
    paths stored with its runs (recomputed from their rounds, without episodes, for pages stored before)."""
    raw = json.loads(args.out.with_suffix(".json").read_text(encoding="utf-8"))
    runs_json = raw.pop("runs")
    data: dict[str, Any] = raw
    paths: dict[tuple[str, int], float] = {}  # for pages stored before the runs kept their critical paths
    if any("critical_path_s" not in x for runs in runs_json.values() for x in runs):
        for r in range(data["rounds"]):
            rnd = make_round(jobs, r, o, "jockey")
            paths.update({(job.name, r): rnd.critical_paths[jid] for jid, (job, _, _) in rnd.slo.items()})
    for name, runs in runs_json.items():
        data["policies"][name]["infeasible"] = sum(
            not feasible(x.get("critical_path_s", paths.get((x["job"], x["round"]), 0.0)), x["deadline_s"])
            for x in runs)
    tasks = [Task("jockey", r, factor=factor) for r in range(args.move_rounds) for factor in (None, *MOVES.values())]
    results = dict(zip(tasks, run_all(jobs, o, tasks, args.workers), strict=True))
    base = [x for r in range(args.move_rounds) for x in results[Task("jockey", r)]]
    moved = {name: [x for r in range(args.move_rounds) for x in results[Task("jockey", r, factor=factor)]]
             for name, factor in MOVES.items()}
    stored = {(x["job"], x["round"]): x["finish_s"] for x in runs_json["jockey"]}
    drift = sum(1 for b in base if stored.get((b.job, b.round)) != b.finish_s)
    data["moves"] = moves_summary(base, moved)
    data["moves_refresh"] = {"argv": "".join(f" {a}" for a in sys.argv[1:]),
                             "wall_min": (time.time() - started) / 60.0, "rounds": args.move_rounds,
                             "unmoved_runs_changed": drift}
    log(f"{drift} of {len(base)} unmoved jockey runs finished otherwise than in the stored full run")
    publish(args.out, data, runs_json)
    return 0


def refresh_accuracy(args: argparse.Namespace, jobs: list[wl.Recurring], o: wl.WorkloadOptions,
                     started: float) -> int:
    """The models' accuracy again, on today's code, into the page of an earlier full run (``--accuracy-only``):
    it runs no cluster, so no other figure depends on it."""
    raw = json.loads(args.out.with_suffix(".json").read_text(encoding="utf-8"))
    runs_json = raw.pop("runs")
    raw["accuracy"] = {"runs": args.accuracy_runs, **model_accuracy(jobs, o, args.accuracy_runs),
                       "refresh": {"argv": "".join(f" {a}" for a in sys.argv[1:]),
                                   "wall_min": (time.time() - started) / 60.0}}
    acc = raw["accuracy"]
    log(f"C(p, a) error {acc['cpa_error']:.1%}, Amdahl {acc['amdahl_error']:.1%}; from {acc['pool']} runs "
        f"{acc['cpa_pooled_error']:.1%} and {acc['amdahl_pooled_error']:.1%}")
    publish(args.out, raw, runs_json)
    return 0


def vars_of(r: SloRun) -> dict[str, Any]:
    return {"job": r.job, "round": r.round, "deadline_s": r.deadline_s, "finish_s": r.finish_s, "work_s": r.work_s,
            "oracle": r.oracle, "met": r.met, "heavy": r.heavy, "critical_path_s": r.critical_path_s,
            "above_oracle_requested": r.above_oracle_requested(),
            "above_oracle_held": r.above_oracle_held(), "requested_mean": r.requested_mean() if r.finish_s else None}


if __name__ == "__main__":
    sys.exit(main())
