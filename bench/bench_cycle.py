"""Scheduling-cycle time of the RM core with many pending asks over a large cluster.

Builds a snapshot of N nodes and apps whose pending asks (half DEFAULT, half ALTRUISTIC: every app is
yielding, so Carbyne holds its DEFAULT asks to its fair share) add up to the requested count, then times
``run_cycle`` with each pipeline asked for. Two cases per size: a nearly full cluster (the cycle mostly finds
that nothing fits, which is the steady state of a busy cluster) and an empty one (the cycle places as much as
fits: thousands of containers). Each case runs ``--repeat`` times; the table shows the median and 99th
percentile of the wall-clock time, the median CPU time of the process (less sensitive to other load on the
machine), how many containers the cycle placed and how many it places per second (placed / median wall-clock
time).

    python bench/bench_cycle.py [--nodes 1000] [--asks 10000 50000] [--pipeline carbyne drf morpheus]
                                [--repeat 5] [--case full empty] [--kept-layout]

By default every cycle derives the node layout (order, names, racks, capability matrix) anew, as the first cycle
after a node changes does; ``--kept-layout`` measures the cycles in between, which reuse it.

The bench has no reservations, so ``morpheus`` runs its reservation stage with nothing to serve.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from random import Random

from cluster_shapes import NODE_CAPACITY, SHAPES, host, node_id, percentile, rack

from common.ids import AppId, QueuePath, app_id
from common.resources import Resources
from rm.core.cycle import run_cycle
from rm.core.model import AppView, AskView, ClusterSnapshot, LayoutMemo, NodeView
from rm.core.policies.registry import SCHEDULERS, named_pipeline
from rm.core.queues import build_queues


def snapshot(nodes: int, asks: int, *, full: bool, seed: int = 1) -> ClusterSnapshot:
    rng = Random(seed)
    cap = NODE_CAPACITY
    node_views = {}
    for i in range(nodes):
        nid = node_id(i)
        used = Resources.of(memory_mb=65_536 - rng.choice([0, 256, 512]), vcores=32 - rng.choice([0, 0, 1])) \
            if full else Resources()
        node_views[nid] = NodeView(node_id=nid, host=host(i), rack=rack(i), capability=cap, allocated=used)
    apps: dict[AppId, AppView] = {}
    per_app = 50
    n_apps = max(1, asks // per_app)
    for a in range(n_apps):
        aid = app_id(1, a + 1)
        views = []
        for k in range(per_app // 10):  # 10 containers per ask entry
            shape = SHAPES[rng.randrange(len(SHAPES))]
            kind = "DEFAULT" if k % 2 == 0 else "ALTRUISTIC"
            views.append(AskView(app_id=aid, allocation_request_id=k + 1, priority=k // 2, capability=shape,
                                 num_containers=10, ask_type=kind,  # type: ignore[arg-type]
                                 remaining_work_s=rng.random() * 10_000))
        used = SHAPES[a % len(SHAPES)] * (3 if full else 0)
        apps[aid] = AppView(app_id=aid, queue=QueuePath("root.default"), user="u", priority=0,
                            submit_time=float(a), used=used, asks=tuple(views))
    return ClusterSnapshot(version=1, nodes=node_views, apps=apps, queues=build_queues())


def measure(snap: ClusterSnapshot, pipeline_name: str, repeat: int,
            kept_layout: bool = False) -> tuple[list[float], list[float], int]:
    """Wall-clock and CPU seconds of each run, and how many containers the (last) cycle placed. With
    ``kept_layout`` the runs share one node layout memo, as the ledger's snapshots do while no node registers
    or leaves, and a first run (not timed) makes it; the memo logs changes as the ledger's does, and no node
    changes between these runs (the ledger logs those a cycle's plan and the heartbeats since changed)."""
    wall, cpu = [], []
    placed = 0
    if kept_layout:
        memo = LayoutMemo()
        snap = replace(snap, layout=memo)
        memo.note((), snap.nodes)
        pipeline, shares = named_pipeline(pipeline_name)
        run_cycle(snap, pipeline, shares=shares, now=0.0, rng=Random(-1))
    for r in range(repeat):
        pipeline, shares = named_pipeline(pipeline_name)
        started, started_cpu = time.perf_counter(), time.process_time()
        plan = run_cycle(snap, pipeline, shares=shares, now=0.0, rng=Random(r))
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
        placed = len(plan.placements)
    return wall, cpu, placed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--asks", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--pipeline", nargs="+", default=["carbyne", "drf", "morpheus"], choices=sorted(SCHEDULERS))
    parser.add_argument("--case", nargs="+", default=["full", "empty"], choices=["full", "empty"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kept-layout", action="store_true",
                        help="cycles reuse the node layout, as the live RM's do while no node changes")
    args = parser.parse_args()
    layout = "kept across cycles" if args.kept_layout else "made by every cycle"
    print(f"nodes={args.nodes} (64 GB, 32 vcores each), {args.repeat} runs per row, node layout {layout}")
    print(f"{'pipeline':>9} {'pending':>8} {'cluster':>7} {'p50 ms':>8} {'p99 ms':>8} {'cpu ms':>8} "
          f"{'placed':>7} {'placed/s':>9}")
    for n in args.asks:
        for case in args.case:
            snap = snapshot(args.nodes, n, full=case == "full")
            for name in args.pipeline:
                wall, cpu, placed = measure(snap, name, args.repeat, args.kept_layout)
                p50 = statistics.median(wall)
                rate = f"{placed / p50:>9.0f}" if placed else f"{'-':>9}"
                print(f"{name:>9} {n:>8} {case:>7} {p50 * 1000:>8.1f} {percentile(wall, 99) * 1000:>8.1f} "
                      f"{statistics.median(cpu) * 1000:>8.1f} {placed:>7} {rate}")


if __name__ == "__main__":
    main()
