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
                                [--repeat 5] [--case full empty] [--kept-layout] [--estimator]
                                [--interpreter-gc]

The process collects garbage as the RM does (``rm/service/gc_tuning.py``: what start-up made is frozen, full
collections wait for 100 middle ones), set before the snapshot is built, as the live RM's ledger fills after
its start-up; ``--interpreter-gc`` keeps CPython's defaults, under which a full collection walks the snapshot
every few cycles and lands in one of them.

By default every cycle derives the node layout (order, names, racks, capability matrix) anew, as the first cycle
after a node changes does; ``--kept-layout`` measures the cycles in between, which reuse it.

``--estimator`` measures what SLearn's size estimator adds instead: each pipeline that orders by size is timed
against the one it extends (``carbyne:estimate`` against ``carbyne``, ``slearn`` against ``mrm``) on the same
apps, every app now carrying a size estimate and one in ten held to its pilots (its other asks wait for the
sampling stage); and the size tracker's own work, the finished tasks of one cycle measured and the changed
estimates reported, as the RM does between two cycles (as many tasks finish as the cycle placed).

The bench has no reservations, so ``morpheus`` runs its reservation stage with nothing to serve.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from random import Random

from cluster_shapes import NODE_CAPACITY, SHAPES, host, node_id, percentile, rack

from common.ids import AppId, QueuePath, app_id
from common.resources import Resources
from common.terms import SizeEstimate
from rm.core.cycle import run_cycle
from rm.core.entities import App, Container
from rm.core.events import AppStarted, ContainerCompleted, Journal
from rm.core.model import AppView, AskView, ClusterSnapshot, LayoutMemo, NodeView
from rm.core.policies.registry import SCHEDULERS, named_pipeline
from rm.core.queues import build_queues
from rm.core.sizes_glue import SizeTracker
from rm.core.state_types import SamplingConfig
from rm.service.gc_tuning import tune_gc


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


GATED_EVERY = 10  # one app in ten is held to its pilots in ``with_estimates``
PILOTS = 2  # the pilots a held app may still start


def with_estimates(snap: ClusterSnapshot, gated: bool, seed: int = 2) -> ClusterSnapshot:
    """The same apps, each with a size estimate (from pilots, the history or its job file, in turn) and, with
    ``gated``, one in ``GATED_EVERY`` held to its pilots: its asks trimmed to ``PILOTS`` containers, its task
    asks in full held for the sampling stage, as the ledger's views show a gated app (the RM gates apps only
    under a pipeline with that stage)."""
    rng = Random(seed)
    apps: dict[AppId, AppView] = {}
    for i, (aid, app) in enumerate(snap.apps.items()):
        work = sum(a.remaining_work_s * a.num_containers for a in app.asks) or 1.0
        est = work * rng.uniform(0.5, 2.0)
        size = SizeEstimate(est, ("slearn", "history", "declared")[i % 3], est * 1.2, 0.5)
        view = replace(app, terms=replace(app.terms, size=size), size_hint_s=est)
        if gated and i % GATED_EVERY == 0:
            first = min(app.asks, key=lambda a: (a.priority, a.allocation_request_id))
            view = replace(view, asks=(replace(first, num_containers=PILOTS),), held=app.asks)
        apps[aid] = view
    return replace(snap, apps=apps)


ESTIMATOR_PAIRS = (("carbyne", "carbyne:estimate", False), ("mrm", "slearn", True))
"""Each pipeline that reads the size estimate, after the one it extends (its cost is the difference), and
whether it gates apps to their pilots."""


def tracker_cost(apps: int, tasks_per_app: int, per_cycle: int, repeat: int) -> tuple[float, float]:
    """The size tracker's work between two cycles, in seconds of CPU (median, 99th percentile over the batches):
    ``per_cycle`` tasks finish (their runtimes measured, pilots counted, gates opened) and the estimates they
    changed are worked out and reported (``flush``, which the next snapshot calls). ``apps`` wide apps of a few
    job names run with sampling on and the history learning; their tasks finish in turn."""
    tracker = SizeTracker(lambda _a, _s: None, history=True, config=SamplingConfig())
    tracker.sampling = True
    journal = Journal()
    rng = Random(3)
    res = Resources.of(memory_mb=1024, vcores=1)
    job = json.dumps({"id": "j", "stages": [{"name": "map", "tasks": tasks_per_app, "memory_mb": 1024}]})
    made: list[App] = []
    for a in range(apps):
        made.append(App(app_id=app_id(1, a + 1), name=f"job{a % 20}", queue="root.default", user="u",  # type: ignore[arg-type]
                        app_type="MAPREDUCE", priority=0, am_resource=res, am_launch={}, max_attempts=1, tags=(),
                        unmanaged=False, job_spec_json=job, submit_time=0.0, state="RUNNING"))
        tracker.on_event(AppStarted(made[-1], 0.0), journal)
    events = []
    for t in range(tasks_per_app):
        for app in made:
            start = 1.0 + t
            c = Container(container_id=f"{app.app_id}_{t}", app_id=app.app_id, attempt_id="a",  # type: ignore[arg-type]
                          node_id="n", resource=res, priority=0, allocation_request_id=1, ask_type="DEFAULT",
                          is_am=False, state="COMPLETED", allocate_time=start, start_time=start,
                          finish_time=start + rng.lognormvariate(3.0, 0.8))
            events.append(ContainerCompleted(c, c.finish_time))
    times = []
    for b in range(0, min(len(events), per_cycle * repeat), per_cycle):
        started = time.process_time()
        for e in events[b:b + per_cycle]:
            tracker.on_event(e, journal)
        tracker.flush()
        times.append(time.process_time() - started)
    return statistics.median(times), percentile(times, 99)


def estimator_rows(nodes: int, sizes: list[int], cases: list[str], repeat: int, kept_layout: bool) -> None:
    """Per size and case, each pair's cycle times (median CPU ms, the two pipelines' runs interleaved so that
    drift in the machine's speed falls on both), the tracker's work for as many finished tasks as the cycle
    placed, and what the estimator adds in all: (cycle difference + tracker) over the base cycle."""
    print(f"{'pipeline':>16} {'pending':>8} {'cluster':>7} {'cpu ms':>8} {'placed':>7} {'tracker ms':>10} "
          f"{'added':>7}")
    for n in sizes:
        for case in cases:
            snap = snapshot(nodes, n, full=case == "full")
            for base, extended, gated in ESTIMATOR_PAIRS:
                est = with_estimates(snap, gated)
                cpu_b, cpu_e = [], []
                for _ in range(repeat):  # interleaved
                    _, cb, placed_b = measure(snap, base, 1, kept_layout)
                    _, ce, placed_e = measure(est, extended, 1, kept_layout)
                    cpu_b += cb
                    cpu_e += ce
                track, _ = tracker_cost(len(snap.apps), max(50, -(-placed_e // len(snap.apps))), max(1, placed_e),
                                        5)
                p50_b, p50_e = statistics.median(cpu_b), statistics.median(cpu_e)
                added = (p50_e - p50_b + track) / p50_b
                print(f"{base:>16} {n:>8} {case:>7} {p50_b * 1000:>8.1f} {placed_b:>7}")
                print(f"{extended:>16} {n:>8} {case:>7} {p50_e * 1000:>8.1f} {placed_e:>7} {track * 1000:>10.2f} "
                      f"{added:>+7.1%}")


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
    parser.add_argument("--estimator", action="store_true",
                        help="what the size estimator adds: the pipelines that order by it against their bases")
    parser.add_argument("--interpreter-gc", action="store_true",
                        help="CPython's garbage-collection defaults instead of the RM's (gc_tuning.py)")
    args = parser.parse_args()
    if not args.interpreter_gc:
        tune_gc()
    layout = "kept across cycles" if args.kept_layout else "made by every cycle"
    collector = "CPython's defaults" if args.interpreter_gc else "the RM's (gc_tuning.py)"
    print(f"nodes={args.nodes} (64 GB, 32 vcores each), {args.repeat} runs per row, node layout {layout}, "
          f"garbage collection {collector}")
    if args.estimator:
        estimator_rows(args.nodes, args.asks, args.case, args.repeat, args.kept_layout)
        return
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
