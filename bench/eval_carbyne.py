"""Carbyne evaluation in the simulator: carbyne against drf, tetris and sjf, and its sensitivity.

Writes ``docs/results/carbyne.md`` (and the raw numbers next to it as JSON). Runs, each with the same
cluster and seed:

* main: a generated TPC-DS-like workload (``--jobs`` jobs) under fifo-free baselines drf, tetris, sjf and
  carbyne (carbyne's jobs ask altruistically; the baselines' jobs ask greedily);
* ``--sensitivity``: carbyne vs drf at 1x/2x/4x load, carbyne with task-estimate errors of ±50%, and
  carbyne with P(altruism) 0, 0.5 and 1.

    python bench/eval_carbyne.py [--jobs 250] [--nodes 20:20480:8] [--sensitivity] [--out docs/results]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from random import Random
from typing import Any

from am.jobspec import Job
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.gen.tpcds import TpcdsOptions, generate
from sim.policies import make_policy
from sim.report import policy_summary
from sim.runner import scale_load

TARGETS = {
    "avg JCT improvement over drf": ">= 1.3x",
    "makespan vs tetris": "<= 1.07x",
    "Jain avg vs drf": "within 0.06",
    "jobs slower than 0.8x of drf": "<= 5%",
}


def with_altruism(jobs: list[Job], p: float | None) -> list[Job]:
    return [j.model_copy(update={"am_policy": "carbyne", "altruism": p}) for j in jobs]


def with_estimate_error(jobs: list[Job], error: float, seed: int) -> list[Job]:
    """Each stage's duration estimate off by a uniform factor in [1 - error, 1 + error]; the tasks'
    real durations (``durations_s``) stay as they are."""
    rng = Random(seed)
    out = []
    for j in jobs:
        stages = tuple(s.model_copy(update={"duration_s": s.estimated_task_s * rng.uniform(1 - error, 1 + error)})
                       for s in j.stages)
        out.append(j.model_copy(update={"stages": stages}))
    return out


def run(jobs: list[Job], nodes: Any, policy: str, seed: int) -> Any:
    ask = "carbyne" if policy.startswith("carbyne") else "greedy"
    started = time.perf_counter()
    result = Simulator(jobs, nodes, make_policy(policy), SimConfig(seed=seed, ask_policy=ask)).run()
    print(f"  {policy:<8} {len(jobs)} jobs in {time.perf_counter() - started:.0f} s wall", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=250)
    parser.add_argument("--nodes", default="20:20480:8")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sensitivity", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    args = parser.parse_args()
    count, mem, vc = (int(x) for x in args.nodes.split(":"))
    nodes = uniform_nodes(count, mem, vc)
    jobs = generate(TpcdsOptions(jobs=args.jobs, seed=args.seed))
    print(f"TPC-DS-like workload: {len(jobs)} jobs on {count} nodes of {mem} MB / {vc} vcores")

    results = {p: run(with_altruism(jobs, None) if p == "carbyne" else jobs, nodes, p, args.seed)
               for p in ("drf", "tetris", "sjf", "carbyne")}
    main_rows = {p: policy_summary(r, results["drf"]) for p, r in results.items()}
    sens: dict[str, dict[str, Any]] = {}
    if args.sensitivity:
        for load in (2.0, 4.0):
            loaded = scale_load(jobs, load)
            base = run(loaded, nodes, "drf", args.seed)
            carb = run(with_altruism(loaded, None), nodes, "carbyne", args.seed)
            sens[f"load {load:g}x"] = policy_summary(carb, base)
        noisy = with_estimate_error(with_altruism(jobs, None), 0.5, args.seed)
        sens["estimates ±50%"] = policy_summary(run(noisy, nodes, "carbyne", args.seed), results["drf"])
        for p in (0.0, 0.5):
            sens[f"P(altruism) {p:g}"] = policy_summary(
                run(with_altruism(jobs, p), nodes, "carbyne", args.seed), results["drf"])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "carbyne.json").write_text(json.dumps({"main": main_rows, "sensitivity": sens}, indent=2))
    write_page(args.out / "carbyne.md", main_rows, sens, len(jobs), args.nodes, args.seed)
    print(f"wrote {args.out / 'carbyne.md'}")


def write_page(path: Path, rows: dict[str, dict[str, Any]], sens: dict[str, dict[str, Any]], jobs: int,
               nodes: str, seed: int) -> None:
    c, d, t = rows["carbyne"], rows["drf"], rows["tetris"]
    lines = [
        "# Carbyne in the simulator",
        "",
        f"Generated TPC-DS-like workload, {jobs} jobs, cluster `{nodes}` (nodes:MB:vcores), seed {seed}. "
        "Produced by `python bench/eval_carbyne.py" + (" --sensitivity" if sens else "") + "`; the simulator "
        "runs the real RM pipelines and the real AM ask policies (docs/simulator.md).",
        "",
        ("| policy | avg JCT (s) | p95 JCT (s) | makespan (s) | Jain avg | Jain min | improvement avg vs drf "
         "| improvement p95 | slowed < 0.8x |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['avg_jct_s']:.1f} | {r['p95_jct_s']:.1f} | {r['makespan_s']:.0f} | "
                     f"{r['jain_avg']:.3f} | {r['jain_min']:.3f} | {r['improvement_avg']:.2f} | "
                     f"{r['improvement_p95']:.2f} | {r['slowed_below_0_8'] * 100:.1f}% |")
    checks = [
        ("avg JCT improvement over drf", f"{c['improvement_avg']:.2f}x", c["improvement_avg"] >= 1.3),
        ("makespan vs tetris", f"{c['makespan_s'] / t['makespan_s']:.3f}x", c["makespan_s"] <= 1.07 * t["makespan_s"]),
        ("Jain avg vs drf", f"{c['jain_avg'] - d['jain_avg']:+.3f}", abs(c["jain_avg"] - d["jain_avg"]) <= 0.06),
        ("jobs slower than 0.8x of drf", f"{c['slowed_below_0_8'] * 100:.1f}%", c["slowed_below_0_8"] <= 0.05),
    ]
    lines += ["", "## Targets (Carbyne's online results)", "", "| target | wanted | carbyne | met |",
              "|---|---|---|---|"]
    for name, value, ok in checks:
        lines.append(f"| {name} | {TARGETS[name]} | {value} | {'yes' if ok else 'no'} |")
    if sens:
        lines += ["", "## Sensitivity (carbyne against drf under the same conditions)", "",
                  "| condition | improvement avg | Jain avg | slowed < 0.8x |", "|---|---|---|---|"]
        for name, r in sens.items():
            lines.append(f"| {name} | {r['improvement_avg']:.2f} | {r['jain_avg']:.3f} | "
                         f"{r['slowed_below_0_8'] * 100:.1f}% |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
