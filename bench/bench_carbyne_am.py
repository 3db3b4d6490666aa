"""What Carbyne's AMs spend re-planning, what they yield and where the yield goes, per workload family.

Runs one family (``sim.gen.families``, or eval_carbyne's ``tpcds-wide``) under ``carbyne`` and

* times every call of the altruistic ask policy (``CarbyneAsks.asks``: scan the DAG, pack forward within
  the share, pack backward from T_k), and counts the packings and the forward packings cut short by their
  pass budget (``timepack.PASSES``);
* counts what the AMs yield: the decisions that asked some runnable task ALTRUISTIC, and the share of
  runnable tasks asked so;
* follows T_k: how often a job's committed completion moved later (its share shrank) or was pulled in;
* follows the leftover: the containers the RM placed from it, and for each the receiving job's rank, by the
  remaining work its AM declared, among the jobs with asks waiting in that cycle (0: the job closest to
  completion, 1: the furthest).

Prints the figures; with ``--out`` appends them as one JSON line.

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
from rm.core.context import CycleContext
from rm.core.model import AskView, NodeView
from rm.core.plan import Place
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

    yielded = {"decisions_yielding": 0, "runnable": 0, "altruistic": 0}
    commits = {"later": 0, "earlier": 0, "kept": 0}
    committed = altruism.CarbyneAsks._committed

    def followed_commit(self: altruism.CarbyneAsks, now: float, *a: Any) -> float:
        before = self._commit
        out: float = committed(self, now, *a)
        if before is not None:
            commits["later" if out > before + 1e-9 else "earlier" if out < before - 1e-9 else "kept"] += 1
        return out

    placements = {"containers": 0, "leftover": 0}
    ranks: list[float] = []
    order_of: dict[int, dict[str, int]] = {}  # per cycle context: app -> rank by declared remaining work
    place = CycleContext.place

    def followed_place(ctx: CycleContext, ask: AskView, node: NodeView, *, from_leftover: bool = False) -> Place:
        if not ask.is_am:
            placements["containers"] += 1
            if from_leftover:
                placements["leftover"] += 1
                order = order_of.get(id(ctx))
                if order is None:
                    order_of.clear()
                    waiting = {str(a.app_id): max(k.remaining_work_s for k in a.asks)
                               for a in ctx.snap.apps.values() if any(not k.is_am for k in a.asks)}
                    order = order_of[id(ctx)] = {aid: i for i, aid in enumerate(sorted(waiting, key=waiting.get))}
                rank = order.get(str(ask.app_id))
                if rank is not None:
                    ranks.append(rank / max(1, len(order) - 1))
        return place(ctx, ask, node, from_leftover=from_leftover)

    def timed_asks(self: altruism.CarbyneAsks, dag: DagState, share: Resources, now: float) -> list[AskDecision]:
        started = time.perf_counter()
        out = asks(self, dag, share, now)
        calls.append(time.perf_counter() - started)
        last = self.last
        if last is not None:
            waiting = sum(last.default.values()) + sum(last.altruistic.values())
            kept_back = sum(last.altruistic.values())
            yielded["runnable"] += waiting
            yielded["altruistic"] += kept_back
            yielded["decisions_yielding"] += kept_back > 0
        return out

    altruism.pack_forward, altruism.pack_reverse = counted_forward, counted_reverse  # type: ignore[assignment]
    altruism.CarbyneAsks.asks = timed_asks  # type: ignore[method-assign]
    altruism.CarbyneAsks._committed = followed_commit  # type: ignore[method-assign]
    CycleContext.place = followed_place  # type: ignore[method-assign]
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
        "decisions_yielding": round(yielded["decisions_yielding"] / max(1, len(calls)), 3),
        "runnable_asked_altruistic": round(yielded["altruistic"] / max(1, yielded["runnable"]), 3),
        "t_k_moves": commits,
        "containers_from_leftover": round(placements["leftover"] / max(1, placements["containers"]), 3),
        "leftover_rank_median": round(statistics.median(ranks), 3) if ranks else None,
        "leftover_to_closest": round(sum(1 for r in ranks if r == 0) / len(ranks), 3) if ranks else None,
        "leftover_rank_deciles": [round(sum(1 for r in ranks if k / 10 <= r < (k + 1) / 10 or (k == 9 and r == 1))
                                        / len(ranks), 3) for k in range(10)] if ranks else None,
    }
    for key, value in figures.items():
        print(f"{key:<18} {value}")
    if args.out is not None:
        with args.out.open("a") as f:
            f.write(json.dumps(figures) + "\n")


if __name__ == "__main__":
    main()
