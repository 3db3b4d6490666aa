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
jobs per point here). (3) runs again on one server, the paper's own §6.3 setting (an M/G/1 queue:
``mrm_model.ServerModel``), where its targets are judged. ``--sim N`` also runs N jobs through the real
simulator (``sim/engine.py``, the ``mrm`` scheduler) beside the model on the same jobs. The figures are in
``mrm_figures``, the page in ``mrm_page``.

    python bench/eval_mrm.py [--quick] [--out docs/results/mrm.md] [--jobs 20000] [--sim 400]
"""

from __future__ import annotations

import argparse
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
from mrm_figures import (
    ALPHAS,
    KAPPA,
    NS_GAPS,
    PHASES,
    SD_GAPS,
    Outcome,
    Point,
    fmt,
    jump_ahead,
    med,
    merge,
    outcome,
    pct,
    tardy_of,
    waits,
)
from mrm_page import write_page

from rm.core.deadlines.estimate import RunRecord, WorkEstimator, make_estimator, r_squared


def log(msg: str) -> None:
    print(msg, flush=True)


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


def exp_no_slack(seeds: Sequence[int], estimator: str, dt: float, by_phase: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for gap, label in NS_GAPS:
        outs: list[Outcome] = []
        per_run: list[float] = []
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


def make_model(server: bool, runs: list[mm.Run], mode: str, dt: float, by_phase: bool, **kw: Any) -> mm.Model:
    """The cluster model, or (``server``) one server, for these runs and scheduler."""
    if server:
        return mm.ServerModel(runs, mode, dt=dt, **kw)
    return mm.Model(runs, mode, dt=dt, by_phase=by_phase, **kw)


def point_runs(seed: int, gap: float, jobs_n: int, t: Trained) -> list[mm.Run]:
    """A point's jobs, half delay-sensitive, with their claims: the same for every model and scheduler."""
    jobs = wl.stream(seed * 1_000 + int(gap), gap, jobs_n)
    rng = Random(seed * 77 + int(gap))
    return runs_for(jobs, t, ["DS" if rng.random() < 0.5 else "DT" for _ in jobs])


def exp_service(seed: int, jobs_n: int, estimator: str, dt: float, by_phase: bool,
                gaps: Sequence[float], *, server: bool = False) -> list[Point]:
    """MRM at each alpha against FCFS, priority and unrestricted EDF, at each gap: on the cluster model, or
    (``server``) on one server, the paper's M/G/1, with the same jobs and claims."""
    t = train(seed, estimator)

    def model(runs: list[mm.Run], mode: str, **kw: Any) -> mm.Model:
        return make_model(server, runs, mode, dt, by_phase, **kw)

    points = []
    for gap in gaps:
        t0 = time.monotonic()
        base = point_runs(seed, gap, jobs_n, t)
        if server:
            base = [mm.on_one_server(r) for r in base]
        mrm: dict[float, list[mm.Run]] = {}
        stats: dict[float, mm.ModelStats] = {}
        for alpha in ALPHAS:
            t1 = time.monotonic()
            m = model(fresh(base), "mrm", kappa=KAPPA, avg_work=t.avg_work, chooser=chooser_for(alpha))
            mrm[alpha] = m.run()
            stats[alpha] = m.stats
            o = outcome(mrm[alpha])
            log(f"  gap {gap:.0f}s alpha {alpha}: tardy {pct(o.rate)} ({o.tardy}/{o.n}; PI misses {o.pi_miss_tardy}, "
                f"critical path {o.path_tardy}, cascades {o.cascade_tardy}, other {o.other_tardy}), "
                f"{time.monotonic() - t1:.0f}s")
        sold = mrm[2.0]
        fcfs = model(fresh(sold), "fcfs").run()
        prio = model(fresh(sold), "priority").run()
        urng = Random(seed * 13 + int(gap))
        unres = fresh(base)
        for r in unres:
            r.deadline = r.job.arrival + urng.uniform(2.0, 4.0) * alone(r.job)
        edf = model(fresh(unres), "edf").run()
        edf_np = mm.ServerModel(fresh(unres), "edf", preemptive=False).run() if server else []
        points.append(Point(gap, mrm, stats, fcfs, prio, edf, time.monotonic() - t0, edf_np))
        log(f"  gap {gap:.0f}s: FCFS tardy {pct(outcome(fcfs).rate)}, priority {pct(outcome(prio).rate)} (DT "
            f"{pct(tardy_of(prio, 'DT'))}), unrestricted EDF {pct(outcome(edf).rate)}"
            + (f" (never preempting {pct(outcome(edf_np).rate)})" if server else "") + f"; {points[-1].wall:.0f}s")
    return points


def alone(job: wl.MrJob | mm.ServerJob) -> float:
    """The job's time on an empty cluster (each phase at its actual rate, one after the other), or on the
    empty server (its work over the server's capacity): Verma et al.'s p."""
    return sum(w / r for w, r in zip(job.work, job.rates, strict=True))


def exp_accounting(seed: int, jobs_n: int, estimator: str, dt: float, by_phase: bool, gap: float) -> dict[str, Any]:
    """One point (alpha = 2) with the other way of taking finished work off the claims."""
    t = train(seed, estimator)
    model = mm.Model(point_runs(seed, gap, jobs_n, t), "mrm", dt=dt, kappa=KAPPA, avg_work=t.avg_work,
                     chooser=chooser_for(2.0), by_phase=by_phase)
    runs = model.run()
    return {"gap": gap, "by_phase": by_phase, "runs": runs, "stats": model.stats}


def exp_seeds(seeds: Sequence[int], jobs_n: int, estimator: str, dt: float, by_phase: bool,
              gaps: Sequence[float], *, server: bool = False) -> list[dict[str, Any]]:
    """alpha = 2 and FCFS on other seeds' workloads (fewer jobs): how much the headline figures move, on the
    cluster model or (``server``) on one server."""
    out = []
    for seed in seeds:
        t = train(seed, estimator)
        for gap in gaps:
            runs = point_runs(seed, gap, jobs_n, t)
            if server:
                runs = [mm.on_one_server(r) for r in runs]
            mrm = make_model(server, runs, "mrm", dt, by_phase, kappa=KAPPA, avg_work=t.avg_work,
                             chooser=chooser_for(2.0)).run()
            fcfs = make_model(server, fresh(mrm), "fcfs", dt, by_phase).run()
            prio = make_model(server, fresh(mrm), "priority", dt, by_phase).run()
            j_all, _, _ = jump_ahead(mrm, fcfs)
            o = outcome(mrm)
            out.append({"seed": seed, "gap": gap, "n": o.n, "tardy": o.rate, "other": o.other_tardy,
                        "not_pi": o.path_tardy + o.other_tardy, "server": server,
                        "wait_mrm": statistics.mean(waits(mrm, "DS")), "wait_fcfs": statistics.mean(waits(fcfs, "DS")),
                        "jump": j_all, "prio_dt": tardy_of(prio, "DT")})
            log(f"  {'one server' if server else 'cluster'} seed {seed} gap {gap:.0f}s: tardy {pct(o.rate)}, DS wait "
                f"{out[-1]['wait_mrm']:.0f} vs FCFS {out[-1]['wait_fcfs']:.0f} s, jump-ahead {pct(j_all)}, priority's "
                f"DT violations {pct(out[-1]['prio_dt'])}")
    return out


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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a small smoke run (seconds)")
    ap.add_argument("--out", type=Path, default=Path("docs/results/mrm.md"))
    ap.add_argument("--jobs", type=int, default=20_000, help="jobs per service-differentiation point")
    ap.add_argument("--seeds", type=int, default=5, help="seeds of the estimator experiment")
    ap.add_argument("--ns-runs", type=int, default=6, help="100-job runs per load, no slack")
    ap.add_argument("--estimator", default="auto", choices=("bin", "ridge", "auto"))
    ap.add_argument("--dt", type=float, default=5.0, help="the book's and the model's step (s)")
    ap.add_argument("--server-dt", type=float, default=1.0, help="the book's step on one server (s)")
    ap.add_argument("--no-server", action="store_true", help="skip service differentiation on one server")
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
            saved = pickle.load(f)  # (args, est, ns, points, simpt, walls, acct, seeds_out, server)
        saved[0].out = args.out
        write_page(args.out, *saved)
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
    points: list[Point] = []
    server: list[Point] = []
    acct: dict[str, Any] | None = None
    seeds_out: list[dict[str, Any]] = []
    simpt: dict[str, Any] | None = None

    def keep() -> None:  # the raw results so far (a later part failing loses none of them)
        if args.dump is not None:
            with args.dump.open("wb") as f:
                pickle.dump((args, est, ns, points, simpt, walls, acct, seeds_out, server), f)

    if not args.no_server:
        t0 = time.monotonic()
        log(f"3. service differentiation on one server ({args.jobs} jobs per point)")
        server = exp_service(args.seed, args.jobs, args.estimator, args.server_dt, args.by_phase, gaps, server=True)
        walls["service differentiation, one server"] = time.monotonic() - t0
        keep()
    t0 = time.monotonic()
    log(f"3b. service differentiation on the cluster model ({args.jobs} jobs per point)")
    points = exp_service(args.seed, args.jobs, args.estimator, args.dt, args.by_phase, gaps)
    walls["service differentiation, cluster model"] = time.monotonic() - t0
    keep()
    if not args.quick and args.more_seeds > 0:
        t0 = time.monotonic()
        log(f"3c. other seeds ({args.more_seeds} x {args.more_jobs} jobs, alpha = 2)")
        others = range(args.seed + 1, args.seed + 1 + args.more_seeds)
        if not args.no_server:
            seeds_out = exp_seeds(others, args.more_jobs, args.estimator, args.server_dt, args.by_phase,
                                  (gaps[0], gaps[-1]), server=True)
        seeds_out += exp_seeds(others, args.more_jobs, args.estimator, args.dt, args.by_phase, (gaps[0], gaps[-1]))
        walls["other seeds"] = time.monotonic() - t0
    if not args.quick:
        t0 = time.monotonic()
        log("3d. the other progress accounting, 40 s gap, alpha = 2")
        acct = exp_accounting(args.seed, args.jobs, args.estimator, args.dt, not args.by_phase, gaps[0])
        walls["progress accounting variant"] = time.monotonic() - t0
    keep()
    if args.sim > 0:
        t0 = time.monotonic()
        log(f"4. full simulator ({args.sim} jobs)")
        simpt = exp_simulator(args.seed, args.sim, args.sim_gap, args.estimator, args.dt)
        log(f"  simulator {simpt['sim']}; model tardy {simpt['model'].tardy}/{simpt['model'].n}, refused "
            f"{simpt['model_refused']}")
        walls["full simulator"] = time.monotonic() - t0
    keep()
    write_page(args.out, args, est, ns, points, simpt, walls, acct, seeds_out, server)
    log(f"wrote {args.out} ({sum(walls.values()) / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

