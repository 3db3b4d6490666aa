"""The MRM evaluation's page (``docs/results/mrm.md``): the targets, each experiment's tables, where we fall
short and why."""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import mrm_model as mm
import mrm_workload as wl
from mrm_figures import (
    ALPHAS,
    NS_GAPS,
    PHASES,
    SD_GAPS,
    Outcome,
    Point,
    fmt,
    jump_ahead,
    med,
    outcome,
    pct,
    quant,
    tardy_of,
    waits,
)


def service_targets(points: Sequence[Point]) -> list[tuple[str, str, str, bool]]:
    """The §6.3 targets on one set of points: (target, wanted, measured, met)."""
    rows: list[tuple[str, str, str, bool]] = []
    worst2 = max(tardy_of(p.mrm[2.0]) for p in points)
    rows.append(("tardy at alpha = 2, every load", "<= 2.5%", f"worst {pct(worst2)}", worst2 <= 0.025))
    worst15 = max(tardy_of(p.mrm[a]) for p in points for a in ALPHAS if a <= 1.5)
    rows.append(("tardy at alpha <= 1.5, every load", "<= 0.1%", f"worst {pct(worst15)}", worst15 <= 0.001))
    p40 = min(points, key=lambda p: p.gap)
    j_all, j_saw, _ = jump_ahead(p40.mrm[2.0], p40.fcfs)
    w_m = statistics.mean(waits(p40.mrm[2.0], "DS"))
    w_f = statistics.mean(waits(p40.fcfs, "DS"))
    rows.append((f"DS jobs that jump ahead of FCFS, {p40.gap:.0f} s gap (alpha = 2)", ">= 35%",
                 f"{pct(j_all)} ({pct(j_saw)} of those that found a DT job waiting)", j_all >= 0.35))
    rows.append((f"DS mean wait below FCFS's, {p40.gap:.0f} s gap", "MRM < FCFS", f"{w_m:.0f} s vs {w_f:.0f} s",
                 w_m < w_f))
    heavy = [p for p in points if p.gap <= 50] or [p40]
    dt_prio = tardy_of(p40.prio, "DT")
    rows.append((f"strict priority: DT violations (on MRM's deadlines), {p40.gap:.0f} s gap (the heaviest load)",
                 "> 30%", pct(dt_prio) + " (" + ", ".join(f"{p.gap:.0f} s: {pct(tardy_of(p.prio, 'DT'))}"
                                                         for p in heavy) + ")", dt_prio > 0.30))
    variants = [("unrestricted EDF (preempting) vs MRM (alpha = 2) violations, every load", "edf")]
    if points[0].edf_np:
        variants.append(("unrestricted EDF (never preempting, as FCFS and priority) vs MRM (alpha = 2), every load",
                         "edf_np"))
    for name, attr in variants:
        ratios = []
        for p in points:
            m = tardy_of(p.mrm[2.0])
            u = tardy_of(getattr(p, attr))
            ratios.append((u / m if m > 0 else math.inf, p.gap, u, m))
        low, low_gap, low_u, low_m = min(ratios)
        got = ("inf" if math.isinf(low) else f"lowest {low:.2f}x ({low_gap:.0f} s gap: EDF {pct(low_u)}, MRM "
               f"{pct(low_m)})") + "; EDF " + ", ".join(f"{g:.0f} s: {pct(u)}" for _, g, u, _ in ratios)
        rows.append((name, ">= 10x", got, low >= 10))
    outs = [outcome(p.mrm[a]) for p in points for a in ALPHAS]
    misses = sum(o.tardy for o in outs)
    pi = sum(o.pi_miss_tardy for o in outs)
    cascade = sum(o.cascade_tardy for o in outs)
    path = sum(o.path_tardy for o in outs)
    other = sum(o.other_tardy for o in outs)
    rows.append(("MRM misses that are not PI misses (the job's own, or a cascade from one due no later)", "0",
                 f"{path + other} of {misses} (PI {pi}, cascade {cascade}, critical path {path}, other {other})",
                 path + other == 0))
    rows.append(("MRM misses that no estimate explains (overbooking)", "0", f"{other} of {misses}", other == 0))
    return rows


def service_tables(add: Callable[[str], None], points: Sequence[Point]) -> None:
    """Tables 5-8 and Fig. 9's comparisons, and the book's counters, for one set of points."""
    add("#### Tardy jobs (Table 5)\n")
    add("| mean gap | " + " | ".join(f"alpha = {a:g}" for a in ALPHAS) +
        " | misses: PI / cascade / critical path / other (alpha 2, 1.5, 1.1) |")
    add("|---|" + "---|" * len(ALPHAS) + "---|")
    for p in points:
        cells = []
        causes = []
        for a in ALPHAS:
            o = outcome(p.mrm[a])
            cells.append(f"{pct(o.rate)} ({o.tardy})")
            causes.append(f"{o.pi_miss_tardy}/{o.cascade_tardy}/{o.path_tardy}/{o.other_tardy}")
        add(f"| {p.gap:.0f} s | " + " | ".join(cells) + " | " + ", ".join(causes) + " |")
    add("\nPaper (Table 5, gaps 50 / 100 / 200 s): alpha = 2: 1.3 / 2.2 / 2.5%; alpha = 1.5: 0.01%; "
        "alpha = 1.1: 0.\n")
    add("#### Slack and premium (Tables 6-8)\n")
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
        "premium DS 2.4 / 1.8 / 1.31, DT 1.2 (median). `DT deadlines past the quoted curve`: the deadline the "
        "user's price search found lies past the last point a quote lists (its points are f^e plus multiples of "
        "the job's critical path, and the admitted deadlines); on one server a small job's critical path is a "
        "fraction of a second, so a slack of about one average job often lies past it.\n")
    add("#### Against FCFS, strict priority and unrestricted EDF (Fig. 9)\n")
    add("Same jobs at each gap. FCFS and priority run on the deadlines the jobs bought under MRM at alpha = 2; "
        "EDF's deadlines are arrival + U(2, 4) x the job's time alone on the empty cluster or server (Verma et "
        "al.'s p). Wait = arrival to first unit of service; mean (p5-p95).\n")
    np_ = bool(points[0].edf_np)
    add("| mean gap | DS wait MRM (a=2) | DS wait FCFS | DS wait priority | tardy MRM a=2 (DS / DT) | "
        "tardy FCFS (DS / DT) | tardy priority (DS / DT) | tardy unrestricted EDF"
        + (" (preempting / not)" if np_ else "") + " | DS earliness median MRM / FCFS (s) |")
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
            f"{t2(p.prio)} | {pct(tardy_of(p.edf))}" + (f" / {pct(tardy_of(p.edf_np))}" if np_ else "")
            + f" | {fmt(early(p.mrm[2.0]))} / {fmt(early(p.fcfs))} |")
    p40 = min(points, key=lambda p: p.gap)
    j_all, j_saw, saw = jump_ahead(p40.mrm[2.0], p40.fcfs)
    add(f"\nAt the {p40.gap:.0f} s gap, {pct(j_all)} of the DS jobs finish before some job that arrived earlier "
        f"and finished before them under FCFS (paper: 35.4%); of the {saw} DS jobs that found a DT job "
        f"waiting on arrival (under FCFS), {pct(j_saw)} (paper: 47.7%).\n")
    add("#### The book\n")
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
            st = p.stats[a]
            risky = [r for r in p.mrm[a] if r.at_risk]
            add(f"| {p.gap:.0f} s | {a:g} | {st.relayouts} | {st.relayout_failed} | {len(risky)} | "
                f"{sum(r.finish > r.deadline + 1e-6 for r in risky)} | {st.admit_retries} | {st.max_claims} |")
    add("")


def seeds_table(add: Callable[[str], None], rows: Sequence[dict[str, Any]]) -> None:
    add(f"Other seeds ({rows[0]['n']} jobs each, alpha = 2, their own training runs), for how much the headline "
        "figures move:\n")
    add("| seed | mean gap | tardy | misses that are not PI misses or cascades | DS wait MRM / FCFS (s) | DS jobs "
        "jumping ahead of FCFS | priority: DT violations |")
    add("|---|---|---|---|---|---|---|")
    for d in rows:
        prio = pct(d["prio_dt"]) if "prio_dt" in d else "-"
        add(f"| {d['seed']} | {d['gap']:.0f} s | {pct(d['tardy'])} | {d.get('not_pi', d['other'])} | "
            f"{d['wait_mrm']:.0f} / {d['wait_fcfs']:.0f} | {pct(d['jump'])} | {prio} |")
    add("")


def write_page(path: Path, args: argparse.Namespace, est: dict[str, Any], ns: dict[str, Any],
               points: list[Point], simpt: dict[str, Any] | None, walls: dict[str, float],
               acct: dict[str, Any] | None = None, seeds_out: Sequence[dict[str, Any]] = (),
               server: Sequence[Point] = ()) -> None:
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
    if server:
        add("**Service differentiation in the paper's setting.** MRM §6.3 studies pricing, FCFS and strict "
            "priority by simulating *an M/G/1 queue* (Fig. 9's caption): one server, one job at a time. "
            "`ServerModel` runs the same jobs and claims so: the whole pool of 160 units is the server, a job's "
            "service is its work over 160 units (the same load at each gap as the cluster model), its claim the "
            "sum of its phases' PI upper bounds, and time is continuous (event by event; the book still quotes "
            f"on steps of {args.server_dt:g} s). MRM and EDF preempt (a quote assumes a job can run around the "
            "claims laid before it, the paper's Fig. 7); FCFS and priority never do. The §6.3 targets are judged "
            "there; the cluster model's figures for the same targets are beside them.\n")

    # ----------------------------------------------------------------- targets
    def e(name: str, k: int, key: str) -> list[float]:
        return est[f"{name}/{k}"][key]

    rows: list[tuple[str, str, str, bool, str]] = []
    for name in ("bin", "ridge", "auto"):
        for k, ph in enumerate(PHASES):
            over = e(name, k, "over")
            rows.append((f"PI upper bound exceeded, {ph}, `{name}` ({len(over)} seeds of 5 test runs)", "<= 5%",
                         f"{pct(statistics.mean(over))} (seeds {pct(min(over))}-{pct(max(over))})",
                         statistics.mean(over) <= 0.05, ""))
    for est_name, res in ns.items():
        for label in ("low", "medium"):
            o: Outcome = res[label]["all"]
            rows.append((f"no-slack tardy, {label} load ({res[label]['gap']:.0f} s gap, {o.n} jobs, `{est_name}`)",
                         "<= 2.5%", pct(o.rate), o.rate <= 0.025, ""))
    judged = server or points
    cluster = {n: g for n, _, g, _ in service_targets(points)} if server else {}
    for name, want, got, ok in service_targets(judged):
        rows.append((name, want, got, ok, cluster.get(name, "")))
    add("## Targets\n")
    if server:
        add("The service-differentiation rows (from `tardy at alpha = 2` down) are judged on one server, the "
            "paper's §6.3 setting; the last column gives the cluster model's figure for the same target.\n")
        add("| target | wanted | measured | met | cluster model |")
        add("|---|---|---|---|---|")
        for name, want, got, ok, other_got in rows:
            add(f"| {name} | {want} | {got} | {'yes' if ok else 'no'} | {other_got} |")
    else:
        add("| target | wanted | measured | met |")
        add("|---|---|---|---|")
        for name, want, got, ok, _ in rows:
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
    if server:
        add("### 3a. On one server (the paper's M/G/1): the targets\n")
        service_tables(add, server)
        server_seeds = [d for d in seeds_out if d.get("server")]
        if server_seeds:
            seeds_table(add, server_seeds)
        add("### 3b. On the cluster model\n")
    service_tables(add, points)
    cluster_seeds = [d for d in seeds_out if not d.get("server")]
    if cluster_seeds:
        seeds_table(add, cluster_seeds)
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
    short = [(name, want, got) for name, want, got, ok, _ in rows if not ok]
    if not short:
        add("* Every target above is met in this run.")
    judged_dt = [r.deadline - r.earliest for p in judged for r in p.mrm[2.0] if r.cls == "DT"]
    for name, want, got in short:
        why = ""
        if name.startswith("PI upper bound exceeded") and "`ridge`" not in name:
            why = (" `bin` (and `auto`, which is `bin` whenever a job's type and size bin has two runs) rests on "
                   "as few as 2-5 runs in the rare large bins. `ridge` meets the target on both phases, at the "
                   "price of loose bounds for small jobs.")
        elif name.startswith("strict priority"):
            why = (f" The deadlines are the ones MRM sold; eq. 13 as built sells DT jobs a median "
                   f"{med(judged_dt):.0f} s of slack (p95 {quant(judged_dt, 0.95):.0f} s), so a DT job that "
                   "priority keeps waiting often still finishes in time.")
        elif name.startswith("tardy at alpha"):
            why = (" Every such miss is a PI miss, or a cascade from one (see the misses rows): the job's own "
                   "work, or that of a job due no later, ran past its claim.")
        elif name.startswith("unrestricted EDF (preempting)"):
            busy = [tardy_of(p.edf) / max(tardy_of(p.mrm[2.0]), 1e-12) for p in judged if p.gap <= 50]
            why = ((f" At the 40-50 s gaps a preempting EDF misses {min(busy):.0f}x MRM's rate or more; " if busy
                    else " ") +
                   "at light load it misses almost nothing: when a job with a short deadline can take the server "
                   "from whatever runs, a deadline of 2-4x its time alone is nearly always feasible. MRM's misses "
                   "there are delay-sensitive jobs that bought their earliest finish (no slack) and whose work ran "
                   "past its PI bound, so no baseline that misses almost nothing can miss 10x as often. Against an "
                   "EDF that lets the job in service finish, as the paper's FCFS and priority baselines do (and "
                   "Hadoop, where Verma et al. measured EDF, does not preempt running tasks), the target holds at "
                   "every load (the next row).")
        elif name.startswith("MRM misses that are not PI"):
            why = (" On the cluster model a straggler or a re-execution can make a phase's longest task longer "
                   "than the claim's critical path (the training runs' 97.5th percentile of longest / mean "
                   "task) with the work within the claim: the phase cannot run as fast as laid out.")
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
* **One server and the cluster model answer different questions.** On one server (the paper's M/G/1) a job
  has the whole cluster and every other job waits for it; on the cluster model each phase is held to
  min(tasks, 80) units and to its longest task, so several jobs run side by side. What that changes for the
  same jobs and claims: strict priority starves DT jobs far less on the cluster (a DT job runs beside the DS
  jobs, not behind them), EDF with unrestricted deadlines misses little there (a wide job leaves room for a
  narrow one with a short deadline), and only there can a straggler outlast its claim's critical path. The
  paper's §6.3 figures come from one server, so its targets are judged there; the cluster model's figures stand
  beside them in the targets table and in §3b.
* **A cascade** is a miss whose own work stayed within its claim, while a job due no later than it overran
  its own claim and held the capacity (the paper's "cascading violations"): the book laid both claims, but EDF
  serves the overrunning job first.
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
