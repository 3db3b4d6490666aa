"""MRM evaluation (MRM §6): work estimates with prediction intervals, predictability with no slack, and service
differentiation by eq. 13's prices, on the workload of ``mrm_workload`` (Table 1's bins, grep / sort /
wordcount / pi, a 40-node cluster of 2 map + 2 reduce slots per node, Poisson arrivals).

1. **Estimators**: 5 training runs and 5 test runs of 100 jobs; per phase (map, reduce) and estimator
   (``bin``, ``ridge``, ``auto`` from ``rm.core.deadlines.estimate``): R², the share of jobs whose actual work
   is above the PI upper bound (z = 1.96), the PI upper bound over the actual work; over ``--seeds`` seeds.
2. **No slack** (Table 4): 100-job runs at mean gaps 100 / 50 / 32 s, every job buys its earliest feasible
   finish; tardy %, median tardiness and earliness.
3. **Service differentiation** (§6.3): ``--jobs`` jobs per point (20,000), half delay-sensitive (the earliest
   deadline priced at most α·p), half delay-tolerant (the earliest priced at most p), α in {2, 1.5, 1.1},
   κ = 2, mean gaps 40 / 44 / 50 / 100 / 200 s; against FCFS, non-preemptive strict priority (on the
   deadlines MRM sold at α = 2) and EDF with unrestricted deadlines uniform in [2p, 4p].

(2) and (3) run in ``mrm_model``: a fluid queueing model of the cluster whose every quote, price and admission
is made by the project's ``DeadlineBook`` and ``Pricer`` (not the full simulator, which is too slow for 20,000
jobs per point here). ``--sim N`` also runs N jobs through the real simulator (``sim/engine.py``, the ``mrm``
scheduler) beside the model on the same jobs.

    python bench/eval_mrm.py [--quick] [--out docs/results/mrm.md] [--jobs 20000] [--sim 400]
"""

from __future__ import annotations

import argparse
import math
import pickle
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mrm_model as mm
import mrm_workload as wl

from rm.core.deadlines.estimate import RunRecord, WorkEstimator, make_estimator, r_squared

KAPPA = 2.0
ALPHAS = (2.0, 1.5, 1.1)
SD_GAPS = (40.0, 44.0, 50.0, 100.0, 200.0)
NS_GAPS = ((100.0, "low"), (50.0, "medium"), (32.0, "heavy"))
PHASES = ("map", "reduce")


def log(msg: str) -> None:
    print(msg, flush=True)


def pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def quant(xs: Sequence[float], q: float) -> float:
    return float(np.quantile(np.asarray(xs, dtype=float), q)) if len(xs) else math.nan


def med(xs: Sequence[float]) -> float:
    return quant(xs, 0.5)


def fmt(x: float, nd: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


# ------------------------------------------------------------------------------------------ training


@dataclass
class Trained:
    estimator: WorkEstimator
    fallback: WorkEstimator
    ratio: Callable[[int], float]
    avg_work: float


def train(seed: int, name: str) -> Trained:
    runs = [j.record() for j in wl.training(seed)]
    est = make_estimator(name)
    est.fit(runs)
    ridge = make_estimator("ridge")
    ridge.fit(runs)
    return Trained(est, ridge, mm.longest_ratio(runs), float(np.mean([sum(r.work) for r in runs])))


def runs_for(jobs: Sequence[wl.MrJob], t: Trained, classes: Sequence[str] | None = None) -> list[mm.Run]:
    out = []
    for i, j in enumerate(jobs):
        est = t.estimator.estimate(j.features) or t.fallback.estimate(j.features)
        assert est is not None
        out.append(mm.Run(j, mm.claim_of(est, j, t.ratio), cls=classes[i] if classes else ""))
    return out


def fresh(runs: Sequence[mm.Run], **changes: Any) -> list[mm.Run]:
    """The same jobs, claims and classes, no state (for another scheduler)."""
    return [mm.Run(r.job, r.claim, cls=r.cls, deadline=r.deadline, earliest=r.earliest, price=r.price, **changes)
            for r in runs]


# ---------------------------------------------------------------------------------- 1. estimators


def exp_estimators(seeds: Sequence[int]) -> dict[str, Any]:
    names = ("bin", "ridge", "auto")
    acc: dict[tuple[str, int], dict[str, list[float]]] = {}
    for seed in seeds:
        runs: list[RunRecord] = [j.record() for j in wl.training(seed)]
        test = wl.training(seed + 10_000)
        for name in names:
            est = make_estimator(name)
            est.fit(runs)
            for k in range(2):
                a, p, over, ratio, worst = [], [], 0, [], 0.0
                per_run: dict[int, list[bool]] = {}
                missing = 0
                for j in test:
                    if len(j.work) <= k:
                        continue
                    e = est.estimate(j.features)
                    if e is None:
                        missing += 1
                        continue
                    a.append(j.work[k])
                    p.append(e.phases[k].mean)
                    miss = j.work[k] > e.phases[k].upper
                    over += miss
                    ratio.append(e.phases[k].upper / max(j.work[k], 1e-9))
                    per_run.setdefault(j.index // 100, []).append(miss)
                worst = max(sum(v) / len(v) for v in per_run.values())
                d = acc.setdefault((name, k), {"r2": [], "over": [], "ratio": [], "worst": [], "n": [], "missing": []})
                d["r2"].append(r_squared(a, p))
                d["over"].append(over / len(a))
                d["ratio"].append(med(ratio))
                d["worst"].append(worst)
                d["n"].append(len(a))
                d["missing"].append(missing)
    return {f"{n}/{k}": v for (n, k), v in acc.items()}


# ---------------------------------------------------------------------------------- 2. no slack


@dataclass
class Outcome:
    n: int
    tardy: int
    tardiness: list[float]
    earliness: list[float]
    pi_miss_tardy: int  # tardy jobs whose work exceeded their claim in some phase
    path_tardy: int  # tardy, no PI miss, but a phase slower than its claim's critical path
    other_tardy: int  # tardy with neither: the book or the scheduler broke a promise
    pi_miss_jobs: int
    at_risk: int

    @property
    def rate(self) -> float:
        return self.tardy / self.n if self.n else math.nan


def outcome(runs: Sequence[mm.Run]) -> Outcome:
    done = [r for r in runs if not r.refused]
    tardy = [r for r in done if r.finish > r.deadline + 1e-6]
    pi = [r for r in tardy if any(r.pi_miss)]
    path = [r for r in tardy if not any(r.pi_miss) and r.path_miss]
    return Outcome(len(done), len(tardy), [r.finish - r.deadline for r in tardy],
                   [r.deadline - r.finish for r in done if r.finish <= r.deadline + 1e-6], len(pi), len(path),
                   len(tardy) - len(pi) - len(path), sum(any(r.pi_miss) for r in done),
                   sum(r.at_risk for r in done))


def merge(outs: Sequence[Outcome]) -> Outcome:
    return Outcome(sum(o.n for o in outs), sum(o.tardy for o in outs), [x for o in outs for x in o.tardiness],
                   [x for o in outs for x in o.earliness], sum(o.pi_miss_tardy for o in outs),
                   sum(o.path_tardy for o in outs), sum(o.other_tardy for o in outs),
                   sum(o.pi_miss_jobs for o in outs), sum(o.at_risk for o in outs))


def exp_no_slack(seeds: Sequence[int], estimator: str, dt: float, by_phase: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for gap, label in NS_GAPS:
        outs, per_run = [], []
        for seed in seeds:
            t = train(seed, estimator)
            jobs = wl.one_run(Random(seed * 31 + int(gap)), gap, jobs=100)
            model = mm.Model(runs_for(jobs, t), "mrm", dt=dt, kappa=KAPPA, avg_work=t.avg_work, chooser=mm.earliest,
                             by_phase=by_phase)
            o = outcome(model.run())
            outs.append(o)
            per_run.append(o.rate)
        out[label] = {"gap": gap, "all": merge(outs), "runs": per_run}
    return out


# --------------------------------------------------------------------------- 3. service differentiation


def chooser_for(alpha: float) -> mm.Chooser:
    ds = mm.cheapest_within(alpha)
    dt_ = mm.cheapest_within(1.0)

    def choose(run: mm.Run, pricer: Any) -> float:
        return ds(run, pricer) if run.cls == "DS" else dt_(run, pricer)

    return choose


@dataclass
class Point:
    gap: float
    mrm: dict[float, list[mm.Run]]
    stats: dict[float, mm.ModelStats]
    fcfs: list[mm.Run]
    prio: list[mm.Run]
    edf: list[mm.Run]
    wall: float


def exp_service(seed: int, jobs_n: int, estimator: str, dt: float, by_phase: bool,
                gaps: Sequence[float]) -> list[Point]:
    t = train(seed, estimator)
    points = []
    for gap in gaps:
        t0 = time.monotonic()
        jobs = wl.stream(seed * 1_000 + int(gap), gap, jobs_n)
        rng = Random(seed * 77 + int(gap))
        classes = ["DS" if rng.random() < 0.5 else "DT" for _ in jobs]
        base = runs_for(jobs, t, classes)
        mrm: dict[float, list[mm.Run]] = {}
        stats: dict[float, mm.ModelStats] = {}
        for alpha in ALPHAS:
            t1 = time.monotonic()
            model = mm.Model(fresh(base), "mrm", dt=dt, kappa=KAPPA, avg_work=t.avg_work, chooser=chooser_for(alpha),
                             by_phase=by_phase)
            mrm[alpha] = model.run()
            stats[alpha] = model.stats
            o = outcome(mrm[alpha])
            log(f"  gap {gap:.0f}s alpha {alpha}: tardy {pct(o.rate)} ({o.tardy}/{o.n}; PI misses {o.pi_miss_tardy}, "
                f"critical path {o.path_tardy}, other {o.other_tardy}), {time.monotonic() - t1:.0f}s")
        sold = mrm[2.0]
        fcfs = mm.Model(fresh(sold), "fcfs", dt=dt).run()
        prio = mm.Model(fresh(sold), "priority", dt=dt).run()
        urng = Random(seed * 13 + int(gap))
        unres = fresh(base)
        for r in unres:
            r.deadline = r.job.arrival + urng.uniform(2.0, 4.0) * alone(r.job)
        edf = mm.Model(unres, "edf", dt=dt).run()
        points.append(Point(gap, mrm, stats, fcfs, prio, edf, time.monotonic() - t0))
        log(f"  gap {gap:.0f}s: FCFS tardy {pct(outcome(fcfs).rate)}, priority {pct(outcome(prio).rate)}, "
            f"unrestricted EDF {pct(outcome(edf).rate)}; {points[-1].wall:.0f}s")
    return points


def alone(job: wl.MrJob) -> float:
    """The job's duration on an empty cluster: each phase at its actual rate, one after the other."""
    return sum(w / r for w, r in zip(job.work, job.rates, strict=True))


def exp_accounting(seed: int, jobs_n: int, estimator: str, dt: float, by_phase: bool, gap: float) -> dict[str, Any]:
    """One point (alpha = 2) with the other way of taking finished work off the claims."""
    t = train(seed, estimator)
    jobs = wl.stream(seed * 1_000 + int(gap), gap, jobs_n)
    rng = Random(seed * 77 + int(gap))
    classes = ["DS" if rng.random() < 0.5 else "DT" for _ in jobs]
    model = mm.Model(runs_for(jobs, t, classes), "mrm", dt=dt, kappa=KAPPA, avg_work=t.avg_work,
                     chooser=chooser_for(2.0), by_phase=by_phase)
    runs = model.run()
    return {"gap": gap, "by_phase": by_phase, "runs": runs, "stats": model.stats}


def exp_seeds(seeds: Sequence[int], jobs_n: int, estimator: str, dt: float, by_phase: bool,
              gaps: Sequence[float]) -> list[dict[str, Any]]:
    """alpha = 2 and FCFS on other seeds' workloads (fewer jobs): how much the headline figures move."""
    out = []
    for seed in seeds:
        t = train(seed, estimator)
        for gap in gaps:
            jobs = wl.stream(seed * 1_000 + int(gap), gap, jobs_n)
            rng = Random(seed * 77 + int(gap))
            classes = ["DS" if rng.random() < 0.5 else "DT" for _ in jobs]
            model = mm.Model(runs_for(jobs, t, classes), "mrm", dt=dt, kappa=KAPPA, avg_work=t.avg_work,
                             chooser=chooser_for(2.0), by_phase=by_phase)
            mrm = model.run()
            fcfs = mm.Model(fresh(mrm), "fcfs", dt=dt).run()
            j_all, _, _ = jump_ahead(mrm, fcfs)
            o = outcome(mrm)
            out.append({"seed": seed, "gap": gap, "n": o.n, "tardy": o.rate, "other": o.other_tardy,
                        "wait_mrm": statistics.mean(waits(mrm, "DS")), "wait_fcfs": statistics.mean(waits(fcfs, "DS")),
                        "jump": j_all})
            log(f"  seed {seed} gap {gap:.0f}s: tardy {pct(o.rate)}, DS wait {out[-1]['wait_mrm']:.0f} vs FCFS "
                f"{out[-1]['wait_fcfs']:.0f} s, jump-ahead {pct(j_all)}")
    return out


def waits(runs: Sequence[mm.Run], cls: str) -> list[float]:
    return [r.start - r.job.arrival for r in runs if r.cls == cls and not r.refused]


def tardy_of(runs: Sequence[mm.Run], cls: str | None = None) -> float:
    rs = [r for r in runs if (cls is None or r.cls == cls) and not r.refused]
    return sum(r.finish > r.deadline + 1e-6 for r in rs) / max(1, len(rs))


def jump_ahead(mrm: Sequence[mm.Run], fcfs: Sequence[mm.Run], window: int = 400) -> tuple[float, float, int]:
    """Of the DS jobs: the share that finish before some earlier arrival under MRM that finished before them
    under FCFS; the same share among the DS jobs that found a DT job waiting (not started) under FCFS when
    they arrived; and how many found one."""
    by = {r.job.index: r for r in fcfs}
    order = sorted(mrm, key=lambda r: r.job.arrival)
    arr = np.array([r.job.arrival for r in order])
    fm = np.array([r.finish for r in order])
    ff = np.array([by[r.job.index].finish for r in order])
    sf = np.array([by[r.job.index].start for r in order])
    dt_mask = np.array([r.cls == "DT" for r in order])
    jumped = saw = jumped_saw = ds = 0
    for i, r in enumerate(order):
        if r.cls != "DS":
            continue
        ds += 1
        lo = max(0, i - window)
        earlier = slice(lo, i)
        over = (fm[earlier] > fm[i]) & (ff[earlier] < ff[i])
        j = bool(over.any())
        jumped += j
        waiting = bool((dt_mask[earlier] & (sf[earlier] > arr[i])).any())
        if waiting:
            saw += 1
            jumped_saw += j
    return jumped / max(1, ds), jumped_saw / max(1, saw), saw


# --------------------------------------------------------------------------- the real simulator


def exp_simulator(seed: int, n: int, gap: float, estimator: str, dt: float) -> dict[str, Any]:
    """``n`` jobs through the full simulator with the ``mrm`` scheduler, each asking for a deadline of
    U(2, 4) × its critical path; the model on the same jobs, claims and deadlines."""
    import mrm_sim

    t = train(seed, estimator)
    jobs = wl.stream(seed * 5 + 3, gap, n)
    rng = Random(seed)
    factors = [rng.uniform(2.0, 4.0) for _ in jobs]
    t0 = time.monotonic()
    sim = mrm_sim.run_simulator(jobs, factors)
    sim_wall = time.monotonic() - t0
    t0 = time.monotonic()
    sim_bin = mrm_sim.run_simulator(jobs, factors, "bin")
    sim_bin_wall = time.monotonic() - t0
    runs = mrm_sim.model_runs(jobs, factors)
    model = mm.Model(runs, "mrm", dt=dt, kappa=KAPPA, avg_work=t.avg_work, chooser=mrm_sim.fixed_deadline,
                     capacity=mrm_sim.BOOK_UNITS)
    model.run()
    return {"gap": gap, "n": n, "sim": sim, "sim_wall": sim_wall, "sim_bin": sim_bin, "sim_bin_wall": sim_bin_wall,
            "model": outcome(runs),
            "model_refused": sum(r.refused for r in runs)}


# ------------------------------------------------------------------------------------------- page


def write_page(path: Path, args: argparse.Namespace, est: dict[str, Any], ns: dict[str, Any],
               points: list[Point], simpt: dict[str, Any] | None, walls: dict[str, float],
               acct: dict[str, Any] | None = None, seeds_out: Sequence[dict[str, Any]] = ()) -> None:
    L: list[str] = []
    add = L.append
    total = sum(walls.values())
    add("# MRM: deadlines you can buy\n")
    add(f"Produced by `python bench/eval_mrm.py{' --quick' if args.quick else ''}` "
        f"({args.jobs} jobs per service-differentiation point, estimator `{args.estimator}`, step {args.dt:g} s, "
        f"{'by-phase' if args.by_phase else 'DeadlineSystem-style'} progress accounting; "
        f"{total / 60:.1f} min of wall time under `nice` on the 2-core development machine, shared with other "
        "work). Following MRM §6.\n")
    add("**What runs.** The estimators are the project's (`rm/core/deadlines/estimate.py`), fitted on recorded "
        "runs. The deadline experiments (no slack, service differentiation) run in `bench/mrm_model.py`: **a "
        "queueing model of the cluster driven by the project's deadline book, not the full simulator**. It is a "
        "fluid model of one pool of 160 units (40 nodes x 2 map + 2 reduce slots), stepped every "
        f"{args.dt:g} s; each job runs its phases in order, each at most at its width (min(tasks, 80)) and "
        "never faster than its longest task allows. Every quote (earliest feasible finish, eq. 13 prices) and "
        "every admission is made by `DeadlineBook` / `Pricer` on the model's state; before each arrival every "
        "claim is set to its remaining work and laid again (`relayout`); each step first gives each claim what "
        "its lazy layout owes it now, in EDF order (the `deadline` stage), then the rest EDF-first (the `edf` "
        "order, preemptive). The full simulator drives the real ledger but takes about a tenth of a second "
        "per job here (hours per 20,000-job point, 15 points); one modest point runs there too (below).\n")

    # ----------------------------------------------------------------- targets
    def e(name: str, k: int, key: str) -> list[float]:
        return est[f"{name}/{k}"][key]

    rows: list[tuple[str, str, str, bool]] = []
    for name in ("bin", "ridge", "auto"):
        for k, ph in enumerate(PHASES):
            over = e(name, k, "over")
            rows.append((f"PI upper bound exceeded, {ph}, `{name}` ({len(over)} seeds of 5 test runs)", "<= 5%",
                         f"{pct(statistics.mean(over))} (seeds {pct(min(over))}-{pct(max(over))})",
                         statistics.mean(over) <= 0.05))
    for est_name, res in ns.items():
        for label in ("low", "medium"):
            o: Outcome = res[label]["all"]
            rows.append((f"no-slack tardy, {label} load ({res[label]['gap']:.0f} s gap, {o.n} jobs, `{est_name}`)",
                         "<= 2.5%", pct(o.rate), o.rate <= 0.025))
    worst2 = max(tardy_of(p.mrm[2.0]) for p in points)
    rows.append(("tardy at alpha = 2, every load", "<= 2.5%", f"worst {pct(worst2)}", worst2 <= 0.025))
    worst15 = max(tardy_of(p.mrm[a]) for p in points for a in ALPHAS if a <= 1.5)
    rows.append(("tardy at alpha <= 1.5, every load", "<= 0.1%", f"worst {pct(worst15)}", worst15 <= 0.001))
    p40 = next((p for p in points if p.gap == min(x.gap for x in points)), None)
    if p40 is not None:
        j_all, j_saw, _ = jump_ahead(p40.mrm[2.0], p40.fcfs)
        w_m = statistics.mean(waits(p40.mrm[2.0], "DS"))
        w_f = statistics.mean(waits(p40.fcfs, "DS"))
        rows.append((f"DS jobs that jump ahead of FCFS, {p40.gap:.0f} s gap (alpha = 2)", ">= 35%",
                     f"{pct(j_all)} ({pct(j_saw)} of those that found a DT job waiting)", j_all >= 0.35))
        rows.append((f"DS mean wait below FCFS's, {p40.gap:.0f} s gap", "MRM < FCFS",
                     f"{w_m:.0f} s vs {w_f:.0f} s", w_m < w_f))
    worst_dt = min(tardy_of(p.prio, "DT") for p in points if p.gap <= 50) if any(p.gap <= 50 for p in points) \
        else min(tardy_of(p.prio, "DT") for p in points)
    rows.append(("strict priority: DT violations (on MRM's deadlines), 40-50 s gaps", "> 30%",
                 f"lowest {pct(worst_dt)}", worst_dt > 0.30))
    ratios = []
    for p in points:
        m = tardy_of(p.mrm[2.0])
        u = tardy_of(p.edf)
        ratios.append((u / m if m > 0 else math.inf, p.gap, u, m))
    low, low_gap, low_u, low_m = min(ratios)
    rows.append(("unrestricted EDF vs MRM (alpha = 2) violations, every load", ">= 10x",
                 "inf" if math.isinf(low) else f"lowest {low:.2f}x ({low_gap:.0f} s gap: EDF {pct(low_u)}, MRM "
                 f"{pct(low_m)}); EDF at most {pct(max(r[2] for r in ratios))} at any gap", low >= 10))
    not_pi = sum(outcome(p.mrm[a]).path_tardy + outcome(p.mrm[a]).other_tardy for p in points for a in ALPHAS)
    other = sum(outcome(p.mrm[a]).other_tardy for p in points for a in ALPHAS)
    misses = sum(outcome(p.mrm[a]).tardy for p in points for a in ALPHAS)
    rows.append(("MRM misses whose work was within the claim in every phase (all points, all alpha)", "0",
                 f"{not_pi} of {misses} (all from a longest task above the claim's critical path)"
                 if not_pi and not other else f"{not_pi} of {misses}", not_pi == 0))
    rows.append(("MRM misses that were neither a PI nor a critical-path miss (overbooking)", "0",
                 f"{other} of {misses}", other == 0))
    add("## Targets\n")
    add("| target | wanted | measured | met |")
    add("|---|---|---|---|")
    for name, want, got, ok in rows:
        add(f"| {name} | {want} | {got} | {'yes' if ok else 'no'} |")
    add("")

    # ----------------------------------------------------------------- workload
    add("## Workload\n")
    add("`bench/mrm_workload.py`. Table 1's bins (per 100 jobs: 38 of 1 map; 16 of 2-6; 14 of 7-30; 8 of 31-60 "
        "maps and 6 reduces; 6 of 61-120 / 12; 6 of 121-180 / 15; 4 of 181-240 / 18; 4 of 241-360 / 24; 4 of "
        "361-480 / 30), 25 jobs of each type per 100, Poisson arrivals. Map and reduce task times per type "
        "(grep: 32-128 MB per map, keepmap 0.1%; sort: 32-128 MB, everything shuffled; wordcount: 64 MB per "
        "map, CPU-bound; pi: 0.2-1 billion samples per map, compute-bound), with noise per run (sigma 0.05), per "
        "job (0.08) and per task (0.2), 2% stragglers (1.5-3x) and re-executions of 5% of maps and 1% of "
        "reduces. A job's name for the `bin` estimator is its type and size bin (similar, not identical jobs, as "
        "in the paper). Mean work per job ~ "
        f"{wl.mean_work(1, 2000):.0f} unit-seconds: the 40 / 44 / 50 / 100 / 200 s gaps load the 160 units at "
        + " / ".join(f"{wl.mean_work(1, 2000) / (g * wl.CAPACITY):.2f}" for g in SD_GAPS)
        + f", the 32 s gap (heavy, Table 4) at {wl.mean_work(1, 2000) / (32 * wl.CAPACITY):.2f}.\n")
    add("The claim of a job is its estimate's PI upper bound per phase at width min(tasks, 80); its longest "
        "task (the critical path) is the upper bound's mean task times the 97.5th percentile of longest / mean "
        "task in the training runs for that task count (see the findings: the ridge estimator's own `min_s` "
        "is unusable).\n")

    # ----------------------------------------------------------------- estimators
    add("## 1. Estimator accuracy (Tables 2-3)\n")
    add(f"5 training runs and 5 test runs of 100 jobs, {len(e('bin', 0, 'r2'))} seeds (mean, and the range over "
        "seeds). Work in unit-seconds per phase; `PI exceeded` = actual above mu + 1.96 sigma; `upper/actual` "
        "= the median PI upper bound over the actual work (how loose the claim is); `worst run` = the worst "
        "single 100-job test run.\n")
    add("| estimator | phase | R² | PI exceeded | worst run | upper/actual (median) | jobs estimated |")
    add("|---|---|---|---|---|---|---|")
    for name in ("bin", "ridge", "auto"):
        for k, ph in enumerate(PHASES):
            r2, over = e(name, k, "r2"), e(name, k, "over")
            add(f"| {name} | {ph} | {statistics.mean(r2):.3f} ({min(r2):.3f}-{max(r2):.3f}) | "
                f"{pct(statistics.mean(over))} ({pct(min(over))}-{pct(max(over))}) | {pct(max(e(name, k, 'worst')))}"
                f" | {statistics.mean(e(name, k, 'ratio')):.2f} | {sum(e(name, k, 'n'))} of "
                f"{sum(e(name, k, 'n')) + sum(e(name, k, 'missing'))} |")
    add("\nPaper: R² map/reduce OLS .99/.96, Ridge .99/.97, GP .99/.98, Bin .92/.87; PI error OLS 4%/1%, GP "
        "3.4%/1.2%, Bin 2.6%/2.2%; worst run 9% / 4%.\n")

    # ----------------------------------------------------------------- no slack
    add("## 2. Predictability with no slack (Table 4)\n")
    first = next(iter(ns.values()))
    add(f"Every job buys its earliest feasible finish. {len(first['low']['runs'])} runs of 100 jobs per load (the "
        "paper: 2), each test run with its own 5 training runs; per estimator. Tardy jobs are split by cause: "
        "a PI miss (some phase's work above its claim), a critical-path miss (no PI miss, but a phase's "
        "longest task made it slower than its claim allowed), other (neither: the book or the scheduler broke "
        "a promise).\n")
    add("| estimator | load | mean gap | jobs | tardy | per run | median tardiness (s) | median earliness (s) | "
        "tardy: PI miss / critical path / other | jobs with a PI miss | paper: tardy / tardiness / earliness |")
    add("|---|---|---|---|---|---|---|---|---|---|---|")
    paper4 = {"heavy": "18% / 22.9 / 135.3", "medium": "1% / 266.4 / 105.6", "low": "1% / 20.1 / 104.8"}
    for (est_name, res), (_gap, label) in ((x, y) for x in ns.items() for y in NS_GAPS):
        d = res[label]
        o = d["all"]
        add(f"| {est_name} | {label} | {d['gap']:.0f} s | {o.n} | {pct(o.rate)} | "
            f"{fmt(100 * min(d['runs']))}-{fmt(100 * max(d['runs']))}% | {fmt(med(o.tardiness))} | "
            f"{fmt(med(o.earliness))} | {o.pi_miss_tardy} / {o.path_tardy} / {o.other_tardy} | {o.pi_miss_jobs} | "
            f"{paper4[label]} |")
    add("")

    # ----------------------------------------------------------------- service differentiation
    add("## 3. Service differentiation (§6.3, Tables 5-8, Fig. 9)\n")
    add(f"{args.jobs} jobs per point (one seed per point), half DS (the earliest deadline priced <= alpha x p), "
        "half DT (the earliest priced <= p), kappa = 2; p is the job's PI upper bound in unit-seconds. The user "
        "searches eq. 13 (`Pricer.price`, non-increasing in the deadline) over the book's steps. Slack = "
        "deadline - earliest feasible finish.\n")
    add("### Tardy jobs (Table 5)\n")
    add("| mean gap | " + " | ".join(f"alpha = {a:g}" for a in ALPHAS) +
        " | misses: PI / critical path / other (alpha 2, 1.5, 1.1) |")
    add("|---|" + "---|" * len(ALPHAS) + "---|")
    for p in points:
        cells = []
        causes = []
        for a in ALPHAS:
            o = outcome(p.mrm[a])
            cells.append(f"{pct(o.rate)} ({o.tardy})")
            causes.append(f"{o.pi_miss_tardy}/{o.path_tardy}/{o.other_tardy}")
        add(f"| {p.gap:.0f} s | " + " | ".join(cells) + " | " + ", ".join(causes) + " |")
    add("\nPaper (Table 5, gaps 50 / 100 / 200 s): alpha = 2: 1.3 / 2.2 / 2.5%; alpha = 1.5: 0.01%; "
        "alpha = 1.1: 0.\n")
    add("### Slack and premium (Tables 6-8)\n")
    add("| mean gap | alpha | DS slack median / p95 (s) | DT slack median / p95 (s) | DS premium median / p95 | "
        "DT premium median / p95 | DT deadlines past the quoted curve |")
    add("|---|---|---|---|---|---|---|")
    for p in points:
        for a in ALPHAS:
            rs = p.mrm[a]
            row = [f"{p.gap:.0f} s", f"{a:g}"]
            for c in ("DS", "DT"):
                sl = [r.deadline - r.earliest for r in rs if r.cls == c]
                row.append(f"{fmt(med(sl))} / {fmt(quant(sl, 0.95))}")
            for c in ("DS", "DT"):
                pr = [r.price / r.job.total for r in rs if r.cls == c]
                row.append(f"{fmt(med(pr), 2)} / {fmt(quant(pr, 0.95), 2)}")
            dts = [r for r in rs if r.cls == "DT"]
            row.append(pct(sum(r.beyond_curve for r in dts) / max(1, len(dts))))
            add("| " + " | ".join(row) + " |")
    add("\nPaper: DS slack median 0 / 14.7 / 35.9 s at alpha 2 / 1.5 / 1.1; DT slack ~43.9 s (one average job); "
        "premium DS 2.4 / 1.8 / 1.31, DT 1.2 (median).\n")
    add("### Against FCFS, strict priority and unrestricted EDF (Fig. 9)\n")
    add("Same jobs at each gap. FCFS and priority run on the deadlines the jobs bought under MRM at alpha = 2; "
        "EDF's deadlines are arrival + U(2, 4) x the job's duration alone on the empty cluster (Verma et al.'s p). "
        "Wait = arrival to first unit of service; mean (p5-p95).\n")
    add("| mean gap | DS wait MRM (a=2) | DS wait FCFS | DS wait priority | tardy MRM a=2 (DS / DT) | "
        "tardy FCFS (DS / DT) | tardy priority (DS / DT) | tardy unrestricted EDF | DS earliness median MRM / FCFS "
        "(s) |")
    add("|---|---|---|---|---|---|---|---|---|")
    for p in points:
        def w(rs: list[mm.Run]) -> str:
            x = waits(rs, "DS")
            return f"{statistics.mean(x):.0f} ({quant(x, 0.05):.0f}-{quant(x, 0.95):.0f})"

        def t2(rs: list[mm.Run]) -> str:
            return f"{pct(tardy_of(rs, 'DS'))} / {pct(tardy_of(rs, 'DT'))}"

        def early(rs: list[mm.Run]) -> float:
            return med([r.deadline - r.finish for r in rs if r.cls == "DS"])

        add(f"| {p.gap:.0f} s | {w(p.mrm[2.0])} | {w(p.fcfs)} | {w(p.prio)} | {t2(p.mrm[2.0])} | {t2(p.fcfs)} | "
            f"{t2(p.prio)} | {pct(tardy_of(p.edf))} | {fmt(early(p.mrm[2.0]))} / {fmt(early(p.fcfs))} |")
    if p40 is not None:
        j_all, j_saw, saw = jump_ahead(p40.mrm[2.0], p40.fcfs)
        add(f"\nAt the {p40.gap:.0f} s gap, {pct(j_all)} of the DS jobs finish before some job that arrived earlier "
            f"and finished before them under FCFS (paper: 35.4%); of the {saw} DS jobs that found a DT job "
            f"waiting on arrival (under FCFS), {pct(j_saw)} (paper: 47.7%).\n")
    if seeds_out:
        add(f"Other seeds ({seeds_out[0]['n']} jobs each, alpha = 2, their own training runs), for how much the "
            "headline figures move:\n")
        add("| seed | mean gap | tardy | not PI or critical-path misses | DS wait MRM / FCFS (s) | DS jobs jumping "
            "ahead of FCFS |")
        add("|---|---|---|---|---|---|")
        for d in seeds_out:
            add(f"| {d['seed']} | {d['gap']:.0f} s | {pct(d['tardy'])} | {d['other']} | {d['wait_mrm']:.0f} / "
                f"{d['wait_fcfs']:.0f} | {pct(d['jump'])} |")
        add("")
    add("### The book\n")
    add("`relayout` is called before every arrival (with every claim set to its remaining work); when it cannot "
        "lay every claim again from scratch in any of its three orders (latest deadline, least laxity, longest "
        "critical path first) it falls back to re-laying each claim EDF-first in the room the others' current "
        "layouts leave, and claims that then do not fit are AT_RISK. `admissions refused after their "
        "own quote` counts deadlines on or after the quoted earliest finish that `admit` then refused (the "
        "quote and the admission disagreeing).\n")
    add("| mean gap | alpha | relayouts | relayouts that could not repack every claim | jobs ever AT_RISK | "
        "tardy of those | admissions refused after their own quote | most claims at once |")
    add("|---|---|---|---|---|---|---|---|")
    for p in points:
        for a in ALPHAS:
            s = p.stats[a]
            risky = [r for r in p.mrm[a] if r.at_risk]
            add(f"| {p.gap:.0f} s | {a:g} | {s.relayouts} | {s.relayout_failed} | {len(risky)} | "
                f"{sum(r.finish > r.deadline + 1e-6 for r in risky)} | {s.admit_retries} | {s.max_claims} |")
    add("")
    if acct is not None:
        base = next(p for p in points if p.gap == acct["gap"])
        add("How the book learns a job's progress matters. `DeadlineSystem._remaining` takes finished work off the "
            "claim's phases in order; taking it off the phase it ran in instead (the RM knows a container's phase "
            f"by its priority), at the {acct['gap']:.0f} s gap, alpha = 2:\n")
        add("| accounting | relayouts that could not repack | jobs ever AT_RISK | tardy | DS wait mean (s) | "
            "DS slack median (s) |")
        add("|---|---|---|---|---|---|")
        for label, runs, st in ((("by phase" if args.by_phase else "in phase order (DeadlineSystem)"),
                                 base.mrm[2.0], base.stats[2.0]),
                                (("by phase" if acct["by_phase"] else "in phase order (DeadlineSystem)"),
                                 acct["runs"], acct["stats"])):
            sl = [r.deadline - r.earliest for r in runs if r.cls == "DS"]
            add(f"| {label} | {st.relayout_failed} of {st.relayouts} | {sum(r.at_risk for r in runs)} | "
                f"{pct(tardy_of(runs))} | {statistics.mean(waits(runs, 'DS')):.0f} | {fmt(med(sl))} |")
        add("")
    add("Wall time per gap (three MRM runs and three baselines): " +
        ", ".join(f"{p.gap:.0f} s: {p.wall:.0f} s" for p in points) + ".\n")

    # ----------------------------------------------------------------- simulator
    add("## The full simulator, one modest point\n")
    if simpt is None:
        add("Not run (`--sim 0`).\n")
    else:
        mo: Outcome = simpt["model"]
        add(f"{simpt['n']} jobs of the same workload at a {simpt['gap']:.0f} s mean gap, through `sim/engine.py` "
            "with the `mrm` scheduler (the `deadlines` admission rule, the deadline stage, the ledger) on 40 "
            "nodes of 4 task containers plus room for AMs. The simulator buys a fixed deadline, so each job asks "
            "for U(2, 4) x its critical path after it arrives, and the RM refuses it when that is before the "
            "earliest feasible finish. The RM starts with no run history: it estimates from the job file's task "
            "durations (`declared`, +/- 50%: the claim is 1.98 x the work) until finished runs let its "
            "estimator answer. The model row runs the same jobs with the declared claims (widths capped at 80) "
            "and the same deadlines.\n")
        add("| | admitted | refused | met | missed | claims by method | runs recorded | wall (s) |")
        add("|---|---|---|---|---|---|---|---|")
        for label, key, wall in (("full simulator, estimator `auto` (as configured)", "sim", "sim_wall"),
                                 ("full simulator, estimator replaced by `bin`", "sim_bin", "sim_bin_wall")):
            s = simpt[key]
            methods = ", ".join(f"{k} {v}" for k, v in sorted(s["methods"].items()))
            add(f"| {label} | {s['admitted']} | {s['refused']} | {s['met']} | {s['missed']} | {methods} | "
                f"{s['runs']} | {simpt[wall]:.0f} |")
        add(f"| model, declared claims | {mo.n} | {simpt['model_refused']} | {mo.n - mo.tardy} | {mo.tardy} | "
            "declared | - | - |")
        add("\nWith `auto`, once three runs have finished, every job without two runs of its own name (type and "
            "size bin) is estimated by the ridge regression instead of its job file, and ridge claims are at "
            "most one unit wide with loose bounds (see the problems below): their earliest finishes are hours "
            "away and most deadlines are refused. With `bin` (the same name's runs, else the job file) the "
            f"simulator admits {simpt['sim_bin']['admitted']} of {simpt['n']} (the model, with every job's "
            f"declared claim and no AM containers, {mo.n}). Admitted deadlines missed in the simulator: "
            f"{simpt['sim']['missed']} (auto), {simpt['sim_bin']['missed']} (bin).\n")

    # ----------------------------------------------------------------- shortfalls
    add("## Where we fall short, and why\n")
    short = [(name, want, got) for name, want, got, ok in rows if not ok]
    if not short:
        add("* Every target above is met in this run.")
    slack_dt = [r.deadline - r.earliest for p in points for r in p.mrm[2.0] if r.cls == "DT"]
    for name, want, got in short:
        why = ""
        if name.startswith("PI upper bound exceeded") and "`ridge`" not in name:
            why = (" `bin` (and `auto`, which is `bin` whenever a job's type and size bin has two runs) puts a "
                   "normal quantile (1.96) on a sample standard deviation of as few as 2-5 runs in the rare "
                   "large bins; Student's t would widen those intervals (problems below). `ridge` meets the "
                   "target on both phases, at the price of loose bounds for small jobs.")
        elif name.startswith("strict priority"):
            why = (f" The deadlines are the ones MRM sold, and eq. 13 as built sells DT jobs a median "
                   f"{med(slack_dt):.0f} s of slack (p95 {quant(slack_dt, 0.95):.0f} s) where the paper's were "
                   "one average job (43.9 s): even a starved DT job usually finishes in time. The priority "
                   "scheduler's DT violations are still the highest of the three schedulers at the 40-50 s "
                   "gaps.")
        elif name.startswith("tardy at alpha <= 1.5"):
            why = (" Every such miss is a PI or critical-path miss (no overbooking). Since the slack a job offers "
                   "became a duration (the paper's reading), delay-tolerant jobs buy far less slack than with "
                   "unit-second slack (which met this target at 0.04%), so at the busiest gaps a job whose "
                   "work runs past its claim finds less room left before its deadline. The paper's 0.01% comes "
                   "from estimates whose errors were all of one sign (about 95% above the actual).")
        elif name.startswith("unrestricted EDF"):
            why = (" In this model EDF is preemptive, fluid and work conserving over one pool; at these loads "
                   "a deadline of 2-4x a job's time alone is rarely too short, so EDF misses almost nothing, "
                   "while MRM's misses are its estimates' misses (DS jobs at alpha = 2 buy deadlines close to "
                   "their earliest finish). The paper's 20-40% for EDF with unrestricted deadlines is Verma et "
                   "al.'s Hadoop setting, which this model does not reproduce; the comparison here says the "
                   "model is kind to EDF, not that MRM's admission breaks promises (no miss is an overbooking).")
        elif name.startswith("MRM misses whose work"):
            why = (" These jobs' work stayed within their claims, but a straggler or a re-execution made a "
                   "phase's longest task longer than the claim's critical path (its `min_s`, the training "
                   "runs' 97.5th percentile of longest / mean task), so the phase could not run as fast as "
                   "laid out. No miss came from the book promising more than the cluster has.")
        add(f"* **{name}**: wanted {want}, measured {got}.{why}")
    add("")
    add(SHORTFALLS)
    add(FINDINGS)
    add("## Wall time\n")
    add("| part | seconds |")
    add("|---|---|")
    for part, secs in walls.items():
        add(f"| {part} | {secs:.0f} |")
    add(f"| total | {total:.0f} |\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(L) + "\n")


SHORTFALLS = """Why, and what the figures do not show:

* **A model, not the cluster.** The deadline experiments run in a fluid model (preemptive, no task
  granularity, one pool of 160 units where Hadoop has 80 map and 80 reduce slots). The admission, layouts and
  prices are the project's code; the execution is not the simulator's (no AM containers, heartbeats or
  container preemption costs). A job's phase can run no faster than its longest task, so a straggler the
  claim did not foresee can make a job late without a PI miss ("critical path" misses above).
* **Slack is a duration.** The slack a job offers is the time it could still run at its own width after its
  earliest finish, normalised by the average job's *duration* at its width (the paper's single-server
  reading: a DT job pays p once it offers about one average job duration); the slack of admitted claims, which
  the jump-ahead term charges for, is their free room in unit-seconds over the average job's work. Every
  quoted curve runs to the floor price, and a maximum price buys the earliest deadline within it by search.
* **Claims are loose for small jobs.** The ridge estimator's residual spread is one number for all jobs, so
  the PI of a one-map job is many times its work (the paper's OLS had the same problem: PI length 13.8x the
  map duration); `bin` groups by type and size bin. Loose claims give lateness-free but late deadlines
  (large earliness), and a DS premium over the actual work above alpha.
* **Relayout is greedy.** `DeadlineBook.relayout` lays every claim again from scratch, each as late as it goes
  in what the ones before it left, in three orders (latest deadline, least laxity, longest critical path
  first); with width caps every such order can fail where the claims' current layouts fit (a wide late claim
  takes the room a narrow earlier one needs). It then falls back to re-laying each claim in EDF order in the
  room the others' current layouts leave, which keeps every claim that still fits. The two orders added to
  the first changed little here: at the 40 s gap, alpha = 2, relayouts that could not repack fell from 16,436
  to 15,651 of 19,977 with DeadlineSystem's accounting, and from 6,443 to 3,555 with the by-phase accounting
  (table above). Orders that repack 97.5 % of random feasible sets rescuing so few suggests that most of these
  sets are not feasible from scratch: claims whose remaining work is behind their layout (not counted directly).
* **One seed per service-differentiation point** (20,000 jobs each); the no-slack and estimator figures are
  over several seeds.
"""


FINDINGS = """## Problems this evaluation found in `rm/core/deadlines`, and what became of them

* **Fixed since:** the ridge estimator's critical path was its whole work (it now takes a high quantile of
  the longest over the mean task, scaled to the job); it blew up on a feature the history never saw (such
  features are left out); a regression answered from three runs (it now needs ten, or twice its features,
  else the job file's durations are used); `bin` used the normal quantile on two to five runs (Student's t
  now); finished work was taken off the claim's phases in order (now off the phase it ran in); the slack a
  job offers was in unit-seconds over the average work (now a duration, see above) and curves stopped before
  the floor price.
* **`DeadlineBook.relayout` gave up on feasible sets; now less often.** It laid claims latest deadline first
  only, and with width caps that fails where a layout exists: capacity 2, A = 10 unit-s at width 1 by 10 and
  B = 12 unit-s at width 2 by 11 (B took [5, 11) at 2 and left A 5 unit-s). It now also tries least laxity
  first (A, then B: a unit each over [0, 10), B two in [10, 11)) and longest critical path first. On random
  feasible sets of 2-12 admitted claims the three orders repack 97.5 % (latest deadline first alone: 80 %);
  an exact repacking (a flow over time steps with phase order) is not built. The fallback still keeps every
  claim that fits, so nothing breaks either way.
"""


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a small smoke run (seconds)")
    ap.add_argument("--out", type=Path, default=Path("docs/results/mrm.md"))
    ap.add_argument("--jobs", type=int, default=20_000, help="jobs per service-differentiation point")
    ap.add_argument("--seeds", type=int, default=5, help="seeds of the estimator experiment")
    ap.add_argument("--ns-runs", type=int, default=6, help="100-job runs per load, no slack")
    ap.add_argument("--estimator", default="auto", choices=("bin", "ridge", "auto"))
    ap.add_argument("--dt", type=float, default=5.0, help="the book's and the model's step (s)")
    ap.add_argument("--by-phase", action="store_true",
                    help="take completed work off the claim of the phase it ran in (not DeadlineSystem's order)")
    ap.add_argument("--sim", type=int, default=400, help="jobs through the full simulator (0: skip)")
    ap.add_argument("--sim-gap", type=float, default=50.0)
    ap.add_argument("--more-seeds", type=int, default=3, help="other seeds at the extreme gaps, alpha = 2")
    ap.add_argument("--more-jobs", type=int, default=5_000, help="jobs per other-seed point")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dump", type=Path, help="also keep the raw results here (a pickle)")
    ap.add_argument("--render", type=Path, help="only write the page again from a --dump")
    args = ap.parse_args(argv)
    walls: dict[str, float] = {}
    if args.render is not None:
        with args.render.open("rb") as f:
            old, est, ns, points, simpt, walls, acct, seeds_out = pickle.load(f)
        old.out = args.out
        write_page(args.out, old, est, ns, points, simpt, walls, acct, seeds_out)
        log(f"wrote {args.out}")
        return 0
    gaps: Sequence[float] = SD_GAPS
    if args.quick:
        args.jobs, args.seeds, args.ns_runs, args.sim = min(args.jobs, 300), 1, 1, 0
        gaps = (40.0, 100.0)
    t0 = time.monotonic()
    log("1. estimators")
    est = exp_estimators(range(args.seed, args.seed + args.seeds))
    for key, v in est.items():
        name, k = key.split("/")
        log(f"  {name:5s} {PHASES[int(k)]:6s} R2 {statistics.mean(v['r2']):.3f}  PI exceeded "
            f"{pct(statistics.mean(v['over']))}  upper/actual {statistics.mean(v['ratio']):.2f}")
    walls["estimators"] = time.monotonic() - t0
    t0 = time.monotonic()
    log("2. no slack")
    ns = {name: exp_no_slack(range(args.seed, args.seed + args.ns_runs), name, args.dt, args.by_phase)
          for name in dict.fromkeys((args.estimator, "ridge"))}
    for (name, res), (_gap, label) in ((x, y) for x in ns.items() for y in NS_GAPS):
        o = res[label]["all"]
        log(f"  {name:5s} {label:6s} tardy {pct(o.rate)} median tardiness {fmt(med(o.tardiness))} s, earliness "
            f"{fmt(med(o.earliness))} s; tardy: PI miss {o.pi_miss_tardy}, critical path {o.path_tardy}, "
            f"other {o.other_tardy} of {o.tardy}")
    walls["no slack"] = time.monotonic() - t0
    t0 = time.monotonic()
    log(f"3. service differentiation ({args.jobs} jobs per point)")
    points = exp_service(args.seed, args.jobs, args.estimator, args.dt, args.by_phase, gaps)
    walls["service differentiation"] = time.monotonic() - t0
    acct = None
    seeds_out = []
    if not args.quick and args.more_seeds > 0:
        t0 = time.monotonic()
        log(f"3c. other seeds ({args.more_seeds} x {args.more_jobs} jobs, alpha = 2)")
        seeds_out = exp_seeds(range(args.seed + 1, args.seed + 1 + args.more_seeds), args.more_jobs, args.estimator,
                              args.dt, args.by_phase, (gaps[0], gaps[-1]))
        walls["other seeds"] = time.monotonic() - t0
    if not args.quick:
        t0 = time.monotonic()
        log("3b. the other progress accounting, 40 s gap, alpha = 2")
        acct = exp_accounting(args.seed, args.jobs, args.estimator, args.dt, not args.by_phase, gaps[0])
        walls["progress accounting variant"] = time.monotonic() - t0
    simpt = None
    if args.sim > 0:
        t0 = time.monotonic()
        log(f"4. full simulator ({args.sim} jobs)")
        simpt = exp_simulator(args.seed, args.sim, args.sim_gap, args.estimator, args.dt)
        log(f"  simulator {simpt['sim']}; model tardy {simpt['model'].tardy}/{simpt['model'].n}, refused "
            f"{simpt['model_refused']}")
        walls["full simulator"] = time.monotonic() - t0
    if args.dump is not None:
        with args.dump.open("wb") as f:
            pickle.dump((args, est, ns, points, simpt, walls, acct, seeds_out), f)
    write_page(args.out, args, est, ns, points, simpt, walls, acct, seeds_out)
    log(f"wrote {args.out} ({sum(walls.values()) / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

