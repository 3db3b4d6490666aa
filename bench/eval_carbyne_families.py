"""Carbyne across workload families (``sim.gen.families``), not seeds: where does its gain over DRF hold?

For every family it runs drf, sjf (exact sizes: the headroom a size-aware order has over DRF) and carbyne
(Carbyne's altruistic AMs), and reports per family:

* SJF's headroom: drf's average JCT over sjf's;
* carbyne's improvement: drf's average JCT over carbyne's;
* the share of the headroom carbyne captures, as a log-ratio: ln(improvement) / ln(headroom);
* Jain's index against drf's, and the jobs slowed below 0.8x of their drf JCT.

Families are split into a ``tune`` half (where settings may be chosen) and a ``held`` half (only reported);
each half gets its median and worst figures, and the held half is checked against the targets. ``tpch`` and
``fb2009`` (eval_carbyne.py's TPC-H and FB-2009 workloads) are held-back families too.

Writes ``docs/results/carbyne-families.md`` and ``carbyne-families.json``. ``--reuse
docs/results/carbyne.json`` takes the tpcds, tpch and fb2009 rows eval_carbyne.py measured on the same
workloads instead of simulating them again. ``--policies drf,sjf`` measures
the headroom alone; ``--merge`` keeps the rows of policies and families not run this time, so the figures can
be filled in part by part. ``--cache DIR`` keeps each simulated run.

    python bench/eval_carbyne_families.py [--families tpcds,chains,...] [--policies drf,sjf,carbyne]
                                          [--jobs 250] [--cache /tmp/carbyne-runs] [--merge]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval_carbyne import Runner, describe, fb_jobs, tpch_jobs, with_altruism

from am.jobspec import Job
from sim.gen.families import FAMILIES, family
from sim.report import policy_summary

TRACE_FAMILIES = {  # name: (what, nodes) of eval_carbyne's trace-driven workloads, held back
    "tpch": ("TPC-H 50g profiles (erdos-tpch), shuffled, Poisson arrivals every 12 s", "20:32768:16"),
    "fb2009": ("SWIM FB-2009 day, arrivals compressed 24x", "100:16384:8"),
}
HEADROOM_FLOOR = 1.3  # families where SJF gains less leave nothing much to capture
TARGETS = {"improvement": 1.3, "captured": 0.7, "jain": 0.06, "slowed": 0.05}


def reusable(path: Path | None, seed: int, jobs: int) -> dict[str, dict[str, Any]]:
    """Per family, the policy rows eval_carbyne.py measured on the same workload (its tpcds, tpch and fb2009
    runs): none unless its seed and, for tpcds, its job count are this run's."""
    if path is None:
        return {}
    report = json.loads(path.read_text())
    if report.get("seed") != seed:
        return {}
    out = {}
    for name, workload in report.get("workloads", {}).items():
        if name in ("tpch", "fb2009") or (name == "tpcds" and workload.get("jobs") == jobs):
            out[name] = workload["policies"]
    return out


def family_jobs(name: str, count: int, seed: int) -> tuple[list[Job], str, str, str]:
    """(jobs, nodes, half, what) of a generated or trace-driven family."""
    if name in TRACE_FAMILIES:
        what, nodes = TRACE_FAMILIES[name]
        ns = argparse.Namespace(seed=seed, tpch_gap=12.0, fb_nodes=nodes, fb_load=24.0)
        loader: Callable[[argparse.Namespace], list[Job]] = tpch_jobs if name == "tpch" else fb_jobs
        return loader(ns), nodes, "held", what
    f = family(name)
    return f.jobs(count, seed), f.nodes, f.half, f.what


def figures(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The family's headline figures from its policies' summaries (what is missing stays None)."""
    drf, sjf, carbyne = rows.get("drf"), rows.get("sjf"), rows.get("carbyne")
    out: dict[str, Any] = {"headroom": None, "improvement": None, "captured": None, "jain_delta": None,
                           "slowed": None, "drf_avg_jct_s": drf["avg_jct_s"] if drf else None}
    if drf and sjf and sjf["avg_jct_s"]:
        out["headroom"] = drf["avg_jct_s"] / sjf["avg_jct_s"]
    if drf and carbyne and carbyne["avg_jct_s"]:
        out["improvement"] = drf["avg_jct_s"] / carbyne["avg_jct_s"]
        out["jain_delta"] = carbyne["jain_avg"] - drf["jain_avg"]
        out["slowed"] = carbyne["slowed_below_0_8"]
        if out["headroom"] is not None and out["headroom"] > 1.0:
            out["captured"] = math.log(out["improvement"]) / math.log(out["headroom"])
    return out


def half_summary(families: dict[str, dict[str, Any]], half: str) -> dict[str, Any]:
    mine = {n: f for n, f in families.items() if f["half"] == half and f["figures"]["improvement"] is not None}
    roomy = {n: f for n, f in mine.items() if (f["figures"]["headroom"] or 0) >= HEADROOM_FLOOR}

    def med(xs: list[float]) -> float | None:
        return statistics.median(xs) if xs else None

    return {
        "families": len(mine),
        "roomy": sorted(roomy),
        "improvement_median": med([f["figures"]["improvement"] for f in mine.values()]),
        "improvement_worst": min((f["figures"]["improvement"] for f in mine.values()), default=None),
        "roomy_improvement_median": med([f["figures"]["improvement"] for f in roomy.values()]),
        "roomy_captured_median": med([f["figures"]["captured"] for f in roomy.values()]),
        "jain_worst": min((f["figures"]["jain_delta"] for f in mine.values()), default=None),
        "slowed_worst": max((f["figures"]["slowed"] for f in mine.values()), default=None),
        "worse_than_drf": sorted(n for n, f in mine.items() if f["figures"]["improvement"] < 1.0),
    }


def checks(summary: dict[str, Any], everyone: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """(target, wanted, measured, met) — the issue's acceptance points for the held-back half."""

    def fmt(v: float | None, spec: str, unit: str = "") -> str:
        return "–" if v is None else format(v, spec) + unit

    imp, cap = summary["roomy_improvement_median"], summary["roomy_captured_median"]
    return [
        ("held-back, SJF headroom >= 1.3x: median avg-JCT improvement", ">= 1.3x", fmt(imp, ".2f", "x"),
         None if imp is None else imp >= TARGETS["improvement"]),
        ("held-back, SJF headroom >= 1.3x: median share of headroom captured", ">= 70%", fmt(cap, ".0%"),
         None if cap is None else cap >= TARGETS["captured"]),
        ("every family: Jain vs drf", "within 0.06", fmt(everyone["jain_worst"], "+.3f"),
         None if everyone["jain_worst"] is None else everyone["jain_worst"] >= -TARGETS["jain"]),
        ("every family: jobs slowed below 0.8x", "<= 5%", fmt(everyone["slowed_worst"], ".1%"),
         None if everyone["slowed_worst"] is None else everyone["slowed_worst"] <= TARGETS["slowed"]),
        ("every family: no worse than drf on avg JCT", "none worse", ", ".join(everyone["worse_than_drf"]) or "none",
         None if everyone["families"] == 0 else not everyone["worse_than_drf"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", default=",".join([*(f.name for f in FAMILIES), *TRACE_FAMILIES]))
    parser.add_argument("--policies", default="drf,sjf,carbyne")
    parser.add_argument("--jobs", type=int, default=250, help="jobs per generated family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--merge", action="store_true", help="keep the rows of what is not run this time")
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--cached-only", action="store_true",
                        help="simulate nothing: report the runs --cache holds, the others as not measured")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="eval_carbyne.py's carbyne.json: take its tpcds, tpch and fb2009 rows for the "
                             "policies not run now (the same workloads, when its seed and job count match)")
    args = parser.parse_args()
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if "drf" not in policies:
        policies.insert(0, "drf")  # every figure is against drf
    runner = Runner(args.seed, args.cache)
    path = args.out / "carbyne-families.json"
    report: dict[str, Any] = {"seed": args.seed, "jobs": args.jobs, "families": {}}
    if args.merge and path.exists():
        old = json.loads(path.read_text())
        if old.get("seed") == args.seed and old.get("jobs") == args.jobs:
            report["families"] = old.get("families", {})
    reused = reusable(args.reuse, args.seed, args.jobs)
    for name in (n.strip() for n in args.families.split(",") if n.strip()):
        jobs, nodes, half, what = family_jobs(name, args.jobs, args.seed)
        print(f"{name}: {len(jobs)} jobs on {nodes} ({half})", flush=True)
        runs = {p: with_altruism(jobs, None) if p == "carbyne" else jobs for p in policies}
        if args.cached_only:
            runs = {p: j for p, j in runs.items() if runner.cached(name, j, nodes, p)}
            if "drf" not in runs:
                continue
        results = {p: runner.run(name, j, nodes, p) for p, j in runs.items()}
        rows = dict(report["families"].get(name, {}).get("policies", {}))
        rows |= {p: row for p, row in reused.get(name, {}).items() if p not in results}
        rows |= {p: policy_summary(r, results["drf"]) for p, r in results.items()}
        report["families"][name] = {"what": what, "half": half, "nodes": nodes, **describe(jobs),
                                    "policies": rows, "figures": figures(rows)}
    order = [*(f.name for f in FAMILIES), *TRACE_FAMILIES]
    report["families"] = {n: report["families"][n] for n in order if n in report["families"]}
    report["halves"] = {h: half_summary(report["families"], h) for h in ("tune", "held")}
    report["every"] = half_summary({n: f | {"half": "all"} for n, f in report["families"].items()}, "all")
    args.out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    write_page(args.out / "carbyne-families.md", report)
    print(f"wrote {args.out / 'carbyne-families.md'}")


def _x(v: float | None, spec: str = ".2f", unit: str = "x") -> str:
    return "–" if v is None else format(v, spec) + unit


def write_page(path: Path, report: dict[str, Any]) -> None:
    lines = [
        "# Carbyne across workload families",
        "",
        (f"Produced by `python bench/eval_carbyne_families.py` (seed {report['seed']}, {report['jobs']} jobs per "
        "generated family); the families are defined in `sim/gen/families.py`. Each row runs drf, sjf (exact "
        "job sizes, the headroom a size-aware order has over drf) and carbyne (Carbyne's altruistic AMs) on the "
        "same jobs. *Improvement* is drf's average JCT over carbyne's, *headroom* drf's over sjf's, *captured* "
        "ln(improvement) / ln(headroom); *slowed* counts jobs whose own JCT factor is below 0.8. A `–` is a "
        "figure not measured yet."),
        "",
    ]
    for half, title in (("tune", "Tuning half (settings may be chosen here)"),
                        ("held", "Held-back half (only reported)")):
        lines += [f"## {title}", "",
                  ("| family | what | jobs / tasks | cluster | drf avg JCT (s) | SJF headroom | carbyne improvement "
                  "| captured | Jain vs drf | slowed < 0.8x |"),
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for name, f in report["families"].items():
            if f["half"] != half:
                continue
            g = f["figures"]
            lines.append(
                f"| {name} | {f['what']} | {f['jobs']} / {f['tasks']} | `{f['nodes']}` | "
                f"{_x(g['drf_avg_jct_s'], '.1f', '')} | {_x(g['headroom'])} | {_x(g['improvement'])} | "
                f"{_x(g['captured'], '.0%', '')} | {_x(g['jain_delta'], '+.3f', '')} | "
                f"{_x(g['slowed'], '.1%', '')} |")
        s = report["halves"][half]
        lines += ["", (f"{s['families']} families with carbyne measured; median improvement "
                  f"{_x(s['improvement_median'])}, worst {_x(s['improvement_worst'])}; on the "
                  f"{len(s['roomy'])} with SJF headroom >= {HEADROOM_FLOOR}x ({', '.join(s['roomy']) or 'none'}): "
                  f"median improvement {_x(s['roomy_improvement_median'])}, median captured "
                  f"{_x(s['roomy_captured_median'], '.0%', '')}; worst Jain vs drf "
                  f"{_x(s['jain_worst'], '+.3f', '')}, worst slowed {_x(s['slowed_worst'], '.1%', '')}."), ""]
    lines += ["## Targets", "", "| target | wanted | measured | met |", "|---|---|---|---|"]
    for target, wanted, measured, met in checks(report["halves"]["held"], report["every"]):
        lines.append(f"| {target} | {wanted} | {measured} | {'–' if met is None else 'yes' if met else 'no'} |")
    missing = [n for n, f in report["families"].items() if f["figures"]["improvement"] is None]
    if missing:
        lines += ["", f"Not measured with carbyne yet, so outside every figure above: {', '.join(missing)}."]
    lines += ["", *diagnosis_section(path.with_name("carbyne-am.jsonl"))]
    notes = path.with_name("carbyne-families-notes.md")
    if notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    path.write_text("\n".join(lines))


def diagnosis_section(path: Path) -> list[str]:
    """The table of bench_carbyne_am.py's runs (one JSON line each), when there are any."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    lines = ["## What the AMs yield and where it goes (`bench/bench_carbyne_am.py`)", "",
             ("One carbyne run per row. *Yielding decisions*: the AM decisions that asked some runnable task "
             "ALTRUISTIC; *runnable held back*: the share of runnable tasks asked so; *T_k later / earlier*: "
             "decisions where the committed completion moved (the share shrank / the job got ahead); *from "
             "leftover*: the containers the RM placed from the leftover; *to the closest*: those that went to the "
             "job with the least declared remaining work among the jobs with asks waiting (rank 0), and the median "
             "rank (0 closest, 1 furthest); *decision ms*: the AM's time per decision, mean / p99 / max."), "",
             ("| family | yielding decisions | runnable held back | T_k later / earlier / kept | from leftover "
             "| to the closest | median rank | decision ms | AM share of wall |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        moves = r["t_k_moves"]
        lines.append(
            f"| {r['family']} | {r['decisions_yielding']:.0%} | {r['runnable_asked_altruistic']:.0%} | "
            f"{moves['later']} / {moves['earlier']} / {moves['kept']} | {r['containers_from_leftover']:.0%} | "
            f"{_x(r['leftover_to_closest'], '.0%', '')} | {_x(r['leftover_rank_median'], '.2f', '')} | "
            f"{r['decision_ms_mean']:.2f} / {r['decision_ms_p99']:.1f} / {r['decision_ms_max']:.0f} | "
            f"{r['am_share_of_wall']:.0%} |")
    return [*lines, ""]


if __name__ == "__main__":
    main()
