"""Scheduling-cycle time of the RM core with many pending asks over a large cluster.

Builds a snapshot of N nodes and apps whose pending asks (half DEFAULT, half ALTRUISTIC) add up to the
requested count, then times ``run_cycle`` with a pipeline (carbyne by default). Two cases per size:
an empty cluster (the cycle places as much as fits) and a nearly full one (the cycle mostly finds
that nothing fits, which is the steady state of a busy cluster).

    python bench/bench_cycle.py [--nodes 1000] [--asks 10000 50000] [--pipeline carbyne] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from random import Random

from rm.core.cycle import run_cycle
from rm.core.ids import AppId, NodeId, QueuePath, app_id
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView
from rm.core.policies.registry import named_pipeline
from rm.core.queues import build_queues
from rm.core.resources import Resources

SHAPES = [Resources.of(memory_mb=m, vcores=v) for m, v in ((1024, 1), (2048, 1), (4096, 2), (512, 1), (8192, 4))]


def snapshot(nodes: int, asks: int, *, full: bool, seed: int = 1) -> ClusterSnapshot:
    rng = Random(seed)
    cap = Resources.of(memory_mb=65_536, vcores=32)
    node_views = {}
    for i in range(nodes):
        nid = NodeId(f"host{i:04d}:8041")
        used = Resources.of(memory_mb=65_536 - rng.choice([0, 256, 512]), vcores=32 - rng.choice([0, 0, 1])) \
            if full else Resources()
        node_views[nid] = NodeView(node_id=nid, host=f"host{i:04d}", rack=f"/rack{i // 40}", capability=cap,
                                   allocated=used)
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


def measure(snap: ClusterSnapshot, pipeline_name: str, repeat: int) -> tuple[float, int]:
    times = []
    placed = 0
    for r in range(repeat):
        pipeline, shares = named_pipeline(pipeline_name)
        started = time.perf_counter()
        plan = run_cycle(snap, pipeline, shares=shares, now=0.0, rng=Random(r))
        times.append(time.perf_counter() - started)
        placed = len(plan.placements)
    return statistics.median(times), placed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--asks", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--pipeline", default="carbyne")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"pipeline={args.pipeline} nodes={args.nodes} (64 GB, 32 vcores each)")
    print(f"{'pending asks':>12} {'cluster':>8} {'cycle ms (median)':>18} {'placed':>8}")
    for n in args.asks:
        for full in (True, False):
            snap = snapshot(args.nodes, n, full=full)
            secs, placed = measure(snap, args.pipeline, args.repeat)
            print(f"{n:>12} {'full' if full else 'empty':>8} {secs * 1000:>18.1f} {placed:>8}")


if __name__ == "__main__":
    main()
