"""Simulator speed (M7): simulated task completions per wall-clock second, and the wall time of a day.

    python bench/bench_sim.py [--trace PATH] [--nodes N:MEM_MB:VCORES] [--policy drf] [--jobs N]
    python bench/bench_sim.py --copies 4            # a SWIM-style day of ~25,000 jobs on 400 nodes
    python bench/bench_sim.py --workload tpcds      # the TPC-DS-like workload of eval_carbyne, carbyne's AMs

The FB-2009 day: the cluster defaults to 100 nodes of 16 GB / 8 vcores; the SWIM model scales the trace's
bytes to it (about 47,000 tasks for the day). ``--copies K`` lays K FB-2009 days over one another (the two
day files of the trace in turn, job ids kept apart) on K times the nodes: the same day, K times the jobs.
``tpcds``: eval_carbyne.py's main workload (250 generated TPC-DS-like DAGs at 1.25 times its load, on 20
nodes of 20 GB / 8 vcores) under the ``carbyne`` policy. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from am.jobspec import Job
from sim.engine import SimConfig, Simulator
from sim.gen.tpcds import TpcdsOptions, generate
from sim.policies import make_policy
from sim.runner import scale_load
from sim.traces.nodes import load_nodes
from sim.traces.swim import SwimModel, load_swim

SWIM = ROOT.parent / "shared" / "traces" / "swim"
DAY = SWIM / "FB-2009_samples_24_times_1hr_0.tsv"
DAYS = (DAY, SWIM / "FB-2009_samples_24_times_1hr_1.tsv")


def swim_days(trace: Path, copies: int, nodes: int) -> list[Job]:
    """``copies`` FB-2009 days laid over one another, each scaled to ``nodes`` / ``copies`` nodes."""
    if copies <= 1:
        return load_swim(trace, SwimModel(nodes=nodes))
    out: list[Job] = []
    for k in range(copies):
        day = load_swim(DAYS[k % len(DAYS)], SwimModel(nodes=max(1, nodes // copies)))
        out += [j.model_copy(update={"id": f"{j.id}-d{k}"}) for j in day]
    return sorted(out, key=lambda j: (j.arrival_s, j.id))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=("fb2009", "tpcds"), default="fb2009")
    parser.add_argument("--trace", type=Path, default=DAY)
    parser.add_argument("--copies", type=int, default=1, help="FB-2009 days laid over one another (on K x nodes)")
    parser.add_argument("--nodes", default="", help="N:MEM_MB:VCORES (default 100:16384:8, or 20:20480:8 for tpcds)")
    parser.add_argument("--policy", default="", help="default drf, or carbyne for tpcds")
    parser.add_argument("--jobs", type=int, default=0, help="only the first N jobs (0: all; tpcds: 250)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tpcds = args.workload == "tpcds"
    policy = args.policy or ("carbyne" if tpcds else "drf")
    node_spec = args.nodes or ("20:20480:8" if tpcds else f"{100 * max(1, args.copies)}:16384:8")
    nodes = load_nodes(node_spec)
    started = time.perf_counter()
    if tpcds:
        jobs = scale_load(generate(TpcdsOptions(jobs=args.jobs or 250, seed=args.seed, tasks_median=12.0,
                                                max_tasks=400)), 1.25)
    else:
        jobs = swim_days(args.trace, args.copies, len(nodes))
        if args.jobs:
            jobs = jobs[: args.jobs]
    loaded = time.perf_counter()
    sim = Simulator(jobs, nodes, make_policy(policy), SimConfig(seed=args.seed))
    result = sim.run()
    done = time.perf_counter()
    wall = done - loaded
    tasks = result.task_completions
    source = "TPC-DS-like (eval_carbyne)" if tpcds else \
        (args.trace.name if args.copies <= 1 else f"{args.copies} FB-2009 days laid over one another")
    print(f"workload         {source}: {len(jobs)} jobs, {sum(j.total_tasks for j in jobs)} tasks")
    print(f"cluster          {len(nodes)} nodes ({node_spec}), policy {policy}, seed {args.seed}")
    print(f"load trace       {loaded - started:.2f} s")
    print(f"simulate         {wall:.2f} s wall for {result.makespan:.0f} s simulated "
          f"({result.makespan / wall:.0f}x real time)")
    print(f"task completions {tasks} -> {tasks / wall:.0f} per wall-clock second")
    print(f"cycles           {result.cycles} -> {result.cycles / wall:.0f} per wall-clock second")
    print(f"whole run        {done - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
