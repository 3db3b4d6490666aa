"""How long the C(p, a) precompute takes for a job of the size the Jockey paper's job G has.

A random DAG of 110 stages and about 8,500 tasks (job G: 110 stages, 8,496 vertices; median task 3 s,
p90 7.7 s), each stage with 20 run-time samples, a small initialisation latency and a 1 % failure
probability. The table covers the default allocation grid (about 20 points up to the widest stage),
32 runs per allocation, 51 progress levels and 16 samples per cell. Prints seconds per build.

    python bench/bench_jockey_model.py [--stages 110] [--tasks 8500] [--runs 32] [--repeat 3]

With ``--control`` it instead runs a hand check of the controller (not an evaluation): a 12-stage,
600-task job, deadline 900 s, executed task by task while every task takes ``slow`` times its profiled
time, once under the controller and once at the controller's first allocation held fixed.

    python bench/bench_jockey_model.py --control
"""

from __future__ import annotations

import argparse
import heapq
import math
import time

import numpy as np

from am.policies.jockey.controller import JockeyController
from am.policies.jockey.model import CpaTable, build_table
from am.policies.jockey.profile import JobProfile, StageProfile
from am.policies.jockey.progress import JobState, StageState
from am.policies.jockey.utility import default_utility


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


def execute(
    profile: JobProfile, table: CpaTable, deadline_s: float, slow: float, *, adapt: bool, seed: int,
    paced: bool = True,
) -> tuple[float, float]:
    """Run the job once; returns (finish time, mean units held). Tasks start FIFO by stage as units free up;
    a lowered allocation lets running tasks finish. ``paced``: the controller knows the profile and hears the
    finished tasks' run times, so it scales its predictions by the run's pace."""
    rng = np.random.default_rng(seed)
    ctl = JockeyController(table, default_utility(deadline_s), profile=profile if paced else None)
    n = len(profile.stages)
    done, started, finished = [0] * n, [0] * n, [False] * n
    done_s = [0.0] * n
    running: list[tuple[float, int, float]] = []
    now, next_step, units, held = 0.0, 0.0, 0, 0.0
    while not all(finished):
        if now >= next_step - 1e-9:
            state = JobState({s.name: StageState(done=done[i], done_s=done_s[i])
                              for i, s in enumerate(profile.stages)})
            decision = ctl.step(now, state)
            if adapt or units == 0:
                units = decision.requested_units
            next_step = now + ctl.period_s
        for i, s in enumerate(profile.stages):
            if all(finished[profile.index(p)] for p in s.parents):
                while started[i] < s.tasks and len(running) < units:
                    run = float(rng.choice(s.run_s)) * slow
                    duration = run + float(rng.choice(s.init_s)) * slow
                    heapq.heappush(running, (now + duration, i, run))
                    started[i] += 1
        upcoming = running[0][0] if running else math.inf
        step_to = min(upcoming, next_step)
        held += units * (step_to - now)
        now = step_to
        while running and running[0][0] <= now + 1e-12:
            _, i, run = heapq.heappop(running)
            done[i] += 1
            done_s[i] += run
            finished[i] = done[i] == profile.stages[i].tasks
    return now, held / now


def control_check() -> None:
    profile = random_profile(12, 600, seed=4)
    table = build_table(profile)
    deadline = 900.0
    print(
        f"stages={len(profile.stages)} tasks={profile.total_tasks} work={profile.total_work_s:.0f} unit-s "
        f"deadline={deadline:.0f} s; finish times of 4 runs, mean units held"
    )
    variants = (("paced     ", True, True), ("unpaced   ", True, False), ("fixed     ", False, False))
    for slow in (0.7, 1.0, 1.5, 2.0, 2.5, 3.0):
        for label, adapt, paced in variants:
            runs = [execute(profile, table, deadline, slow, adapt=adapt, seed=s, paced=paced) for s in range(4)]
            finish = " ".join(f"{f:5.0f}" for f, _ in runs)
            units = np.mean([u for _, u in runs])
            print(f"slow x{slow:.1f} {label} finish {finish}  units {units:5.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=110)
    ap.add_argument("--tasks", type=int, default=8500)
    ap.add_argument("--runs", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--control", action="store_true", help="run the controller hand check instead")
    args = ap.parse_args()
    if args.control:
        control_check()
        return
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
