"""What Carbyne's AMs spend re-planning: the cost of one scheduling decision, per workload family.

Runs one family (``sim.gen.families``, or eval_carbyne's ``tpcds-wide``) under ``carbyne`` and times every
call of the altruistic ask policy (``CarbyneAsks.asks``: scan the DAG, pack forward within the share, pack
backward from T_k), and counts the packings and the forward packings cut short by their pass budget
(``timepack.PASSES``). Prints the figures; with ``--out`` appends them as one JSON line.

    python bench/bench_carbyne_am.py [--family tpcds] [--jobs 250] [--out docs/results/carbyne-am.jsonl]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from eval_carbyne import widened, with_altruism

from am.dag_state import DagState
from am.jobspec import Job
from am.policies import altruism
from am.policies.api import AskDecision
from common.resources import Resources
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.gen.families import family
from sim.gen.tpcds import TpcdsOptions, generate
from sim.policies import make_policy
from sim.runner import scale_load


def jobs_of(name: str, count: int, seed: int) -> tuple[list[Job], str]:
    if name == "tpcds-wide":  # eval_carbyne's: 4x the tasks per stage on nodes 4x as large
        jobs = generate(TpcdsOptions(jobs=count, seed=seed, tasks_median=48.0, max_tasks=1600))
        return scale_load(jobs, 1.25), widened("20:20480:8", 4)
    f = family(name)
    return f.jobs(count, seed), f.nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="tpcds")
    parser.add_argument("--jobs", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    jobs, nodes = jobs_of(args.family, args.jobs, args.seed)
    calls: list[float] = []
    packs = {"forward": 0, "reverse": 0, "forward_cut": 0}
    forward, reverse, asks = altruism.pack_forward, altruism.pack_reverse, altruism.CarbyneAsks.asks

    def counted_forward(*a: Any, **k: Any) -> Any:
        out = forward(*a, **k)
        packs["forward"] += 1
        packs["forward_cut"] += out.truncated
        return out

    def counted_reverse(*a: Any, **k: Any) -> Any:
        packs["reverse"] += 1
        return reverse(*a, **k)

    def timed_asks(self: altruism.CarbyneAsks, dag: DagState, share: Resources, now: float) -> list[AskDecision]:
        started = time.perf_counter()
        out = asks(self, dag, share, now)
        calls.append(time.perf_counter() - started)
        return out

    altruism.pack_forward, altruism.pack_reverse = counted_forward, counted_reverse  # type: ignore[assignment]
    altruism.CarbyneAsks.asks = timed_asks  # type: ignore[method-assign]
    count, mem, vc = (int(x) for x in nodes.split(":"))
    started = time.perf_counter()
    result = Simulator(with_altruism(jobs, None), uniform_nodes(count, mem, vc), make_policy("carbyne"),
                       SimConfig(seed=args.seed)).run()
    wall = time.perf_counter() - started
    ms = sorted(c * 1000 for c in calls)
    figures = {
        "family": args.family, "jobs": len(jobs), "tasks": sum(j.total_tasks for j in jobs), "nodes": nodes,
        "wall_s": round(wall, 1), "tasks_per_s": round(result.task_completions / wall),
        "am_share_of_wall": round(sum(calls) / wall, 3), "decisions": len(calls),
        "decision_ms_mean": round(statistics.fmean(ms), 3),
        "decision_ms_p99": round(ms[int(0.99 * (len(ms) - 1))], 3), "decision_ms_max": round(ms[-1], 2),
        **packs,
    }
    for key, value in figures.items():
        print(f"{key:<18} {value}")
    if args.out is not None:
        with args.out.open("a") as f:
            f.write(json.dumps(figures) + "\n")


if __name__ == "__main__":
    main()
