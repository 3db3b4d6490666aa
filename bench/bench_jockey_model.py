"""How long the C(p, a) precompute takes for a job of the size the Jockey paper's job G has.

A random DAG of 110 stages and about 8,500 tasks (job G: 110 stages, 8,496 vertices; median task 3 s,
p90 7.7 s), each stage with 20 run-time samples, a small initialisation latency and a 1 % failure
probability. The table covers the default allocation grid (about 20 points up to the widest stage),
32 runs per allocation, 51 progress levels and 16 samples per cell. Prints seconds per build.

    python bench/bench_jockey_model.py [--stages 110] [--tasks 8500] [--runs 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from am.policies.jockey.model import build_table
from am.policies.jockey.profile import JobProfile, StageProfile


def random_profile(stages: int, tasks: int, seed: int = 1) -> JobProfile:
    rng = np.random.default_rng(seed)
    weights = rng.pareto(1.2, size=stages) + 0.2
    counts = np.maximum(1, np.round(weights / weights.sum() * tasks)).astype(int)
    out: list[StageProfile] = []
    for i in range(stages):
        parents: tuple[str, ...] = ()
        if i > 0:
            k = int(rng.integers(1, min(3, i) + 1))
            parents = tuple(f"s{j}" for j in sorted(rng.choice(i, size=k, replace=False)))
        median = float(rng.uniform(1.5, 5.0))
        run_s = tuple(float(x) for x in rng.lognormal(np.log(median), 0.6, size=20))
        out.append(
            StageProfile(
                name=f"s{i}",
                tasks=int(counts[i]),
                run_s=run_s,
                init_s=(0.2, 0.5, 1.0),
                failure_p=0.01,
                parents=parents,
            )
        )
    return JobProfile("bench", tuple(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=110)
    ap.add_argument("--tasks", type=int, default=8500)
    ap.add_argument("--runs", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    profile = random_profile(args.stages, args.tasks)
    best = float("inf")
    for i in range(args.repeat):
        t0 = time.perf_counter()
        table = build_table(profile, runs=args.runs, seed=i)
        best = min(best, time.perf_counter() - t0)
    print(
        f"stages={len(profile.stages)} tasks={profile.total_tasks} widest={profile.max_parallelism()} "
        f"grid={len(table.grid)} allocations {table.grid[0]}..{table.grid[-1]} runs={args.runs} "
        f"levels={len(table.levels)} samples={table.remaining_s.shape[2]}"
    )
    print(f"C(p, a) precompute: {best:.2f} s (best of {args.repeat})")
    mid = table.lookup(0.5, table.grid[len(table.grid) // 2])
    print(
        f"C(0, a_max) median {float(np.median(table.lookup(0.0, table.grid[-1]))):.1f} s; "
        f"C(0.5, a_mid) median {float(np.median(mid)):.1f} s"
    )


if __name__ == "__main__":
    main()
