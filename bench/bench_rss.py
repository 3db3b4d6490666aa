"""Memory of the RM's ledger at scale: N nodes and C running containers (perf-anchors §5: ≤ 2 GiB at 10,000
nodes and 100,000 running containers).

Builds the ledger the live RM holds (durable: container tokens and store records made, as in the service) in
this process: N nodes registered (64 GiB, 32 vcores each), A apps submitted with their AMs running and
registered, each app asking for its share of C containers; a plan places them all, every AM takes them in an
allocate call, and every node's heartbeat reports its containers RUNNING; then one scheduling cycle runs (it
builds the views of every node and app, which the ledger keeps). The records that the RM would write are drained
as they are made. Before anything is built, the RM's service (gRPC, REST, IPC, the store) is
imported, so the starting RSS holds what an idle RM process holds of code.

It prints the RSS after the imports, after the nodes, after the apps and after the containers, and the
objects the collector tracks. The live RM adds its network buffers, caches and metrics to this; its RSS at
start, with no nodes, is in docs/results/scale.md.

    python bench/bench_rss.py [--nodes 10000] [--apps 1000] [--containers 100000]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections import defaultdict
from random import Random

import psutil
from cluster_shapes import NODE_CAPACITY, node_id, register_nodes, running_ams

import rm.service.server  # noqa: F401  (the RM's service, imported for what an RM process holds of code)
from common.ids import AppId, NodeId
from common.resources import Resources
from rm.core.cycle import run_cycle
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.policies.registry import default_pipeline
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig, NodeStatus

TS = 1_700_000_000_000
TASK = Resources.of(memory_mb=2048, vcores=1)


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--apps", type=int, default=1_000)
    parser.add_argument("--containers", type=int, default=100_000)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = [("imports (an idle RM's code)", rss_mb())]
    ledger = Ledger(Ledger.fresh_meta(TS), build_queues(), CoreConfig())
    register_nodes(ledger, args.nodes)
    ledger.drain_records()
    rows.append((f"{args.nodes:,} nodes", rss_mb()))

    ams = running_ams(ledger, args.apps, args.nodes)
    ledger.drain_records()
    rows.append((f"{args.apps:,} apps, AMs registered", rss_mb()))

    per_app = args.containers // max(1, len(ams))
    for launch in ams:  # an ask of its own each (the ledger keeps it and counts it down)
        ask = Ask(allocation_request_id=1, priority=1, capability=TASK, num_containers=per_app)
        ledger.am_allocate(launch.amrm_token, 0, [ask], [], 0.0, [], [], 1.0)
    slots = NODE_CAPACITY.vcores - 1  # a node's vcores, less one for an AM
    placements, k = [], 0
    for launch in ams:
        for _ in range(per_app):
            placements.append(Place(app_id=AppId(launch.app_id), allocation_request_id=1,
                                    node_id=NodeId(node_id((k // slots) % args.nodes)), resource=TASK, priority=1))
            k += 1
    applied = ledger.apply_plan(Plan(based_on=ledger.version, placements=placements), 2.0)
    for launch in ams:
        ledger.am_allocate(launch.amrm_token, 1, [], [], 0.5, [], [], 3.0)  # the AM takes them
    ledger.drain_records()
    on_node: dict[str, list[NodeStatus]] = defaultdict(list)
    for c in ledger.containers.values():
        on_node[c.node_id].append(NodeStatus(container_id=c.container_id, state="RUNNING", start_time=4.0))
    for nid, statuses in on_node.items():
        ledger.node_heartbeat(nid, ledger.nodes[NodeId(nid)].response_id, statuses, True, "", 4.0)
    ledger.drain_records()
    running = sum(1 for c in ledger.containers.values() if c.state == "RUNNING")
    rows.append((f"{len(applied):,} containers placed, {running:,} running", rss_mb()))
    pipeline, shares = default_pipeline()  # a cycle builds (and the ledger keeps) the views of every node and app
    ledger.apply_plan(run_cycle(ledger.snapshot(5.0), pipeline, shares=shares, now=5.0, rng=Random(1)), 5.0)
    ledger.drain_records()
    rows.append(("after a scheduling cycle", rss_mb()))
    gc.collect()
    rows.append(("after a full collection", rss_mb()))

    print(f"bench_rss  {args.nodes:,} nodes, {args.apps:,} apps, {args.containers:,} containers asked "
          f"({time.perf_counter() - started:.0f} s)")
    base = rows[0][1]
    for what, mb in rows:
        print(f"  {what:<46} {mb:8.1f} MiB  (+{mb - base:.1f})")
    print(f"  objects the collector tracks: {len(gc.get_objects()):,}")


if __name__ == "__main__":
    main()
