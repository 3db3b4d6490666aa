"""Simulator speed: the whole FB-2009 SWIM day under DRF, and task completions per wall-clock second.

    python bench/bench_sim.py [--trace PATH] [--nodes N:MEM_MB:VCORES] [--policy drf] [--jobs N]

The cluster defaults to 100 nodes of 16 GB / 8 vcores; the SWIM model scales the trace's bytes to it
(about 47,000 tasks for the day). Prints one line per figure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sim.engine import SimConfig, Simulator
from sim.policies import make_policy
from sim.traces.nodes import load_nodes
from sim.traces.swim import SwimModel, load_swim

DAY = ROOT.parent / "shared" / "traces" / "swim" / "FB-2009_samples_24_times_1hr_0.tsv"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=Path, default=DAY)
    parser.add_argument("--nodes", default="100:16384:8")
    parser.add_argument("--policy", default="drf")
    parser.add_argument("--jobs", type=int, default=0, help="only the first N jobs (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    nodes = load_nodes(args.nodes)
    started = time.perf_counter()
    jobs = load_swim(args.trace, SwimModel(nodes=len(nodes)))
    if args.jobs:
        jobs = jobs[: args.jobs]
    loaded = time.perf_counter()
    sim = Simulator(jobs, nodes, make_policy(args.policy), SimConfig(seed=args.seed))
    result = sim.run()
    done = time.perf_counter()
    wall = done - loaded
    tasks = result.task_completions
    print(f"trace            {args.trace.name}: {len(jobs)} jobs, {sum(j.total_tasks for j in jobs)} tasks")
    print(f"cluster          {len(nodes)} nodes ({args.nodes}), policy {args.policy}, seed {args.seed}")
    print(f"load trace       {loaded - started:.2f} s")
    print(f"simulate         {wall:.2f} s wall for {result.makespan:.0f} s simulated "
          f"({result.makespan / wall:.0f}x real time)")
    print(f"task completions {tasks} -> {tasks / wall:.0f} per wall-clock second")
    print(f"cycles           {result.cycles} -> {result.cycles / wall:.0f} per wall-clock second")
    print(f"whole run        {done - started:.2f} s (target: under 60 s for the day under drf)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
