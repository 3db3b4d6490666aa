"""ApplicationMaster allocate calls against the real ledger, in-core (perf-anchors M4: 100 AMs holding 1,000
asks each; the target is p99 ≤ 20 ms per call over gRPC, so the core's share must be well below that).

Builds a durable ``Ledger`` as the live RM holds it: N nodes registered (64 GiB, 32 vcores each), A apps
submitted, their AM containers placed and the AMs registered. Then times ``am_allocate`` in three cases:

* ``first``  — each AM's first call after registering, carrying its whole ask table (``--asks`` entries);
* ``steady`` — rounds in which a plan places ``--placed`` containers per app between calls, and each AM
  re-sends its whole ask table (the counts it still wants) with ``--releases`` containers given back; the
  response carries what was placed;
* ``churn``  — as ``steady``, but a node's health flips before every call (the cluster's node set changes
  all the time on a large cluster: registrations, lost and unhealthy nodes).

For each case it prints p50, p99 and max per ``am_allocate`` call, and the mean time per call spent validating
the asks, computing the headroom (free room and node count for the response) and in the rest (applying the
ask table and releases, building the result). Around each call it also does what the gRPC servicer does
(no sockets): parses the serialized request and builds its asks (decode), builds and serializes the answer
(encode); "wire" is the three together. Garbage collection runs as in the RM: by default the heap built at
start-up is frozen (``gc.freeze``) with the RM's thresholds; ``--no-freeze`` leaves the interpreter's. The
collections that ran during the timed phase are listed at the end.

    python bench/bench_allocate.py [--nodes 10000] [--apps 100] [--asks 1000] [--rounds 5]
                                   [--placed 20] [--releases 5] [--no-freeze] [--seed 1]
    python bench/bench_allocate.py --nodes 1000
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from random import Random
from typing import Any

from cluster_shapes import SHAPES, node_id, percentile, register_nodes, running_ams

from common.ids import AppId, NodeId
from common.resources import Resources
from proto import shepherd_pb2 as pb
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig
from rm.service import convert

TS = 1_700_000_000_000


@dataclass
class Am:
    """One simulated ApplicationMaster: its token, its ask table and what it holds."""

    app_id: AppId
    token: str
    shapes: dict[int, Resources]
    wanted: dict[int, int]  # per allocation_request_id, the containers it still wants
    response_id: int = 0
    held: list[str] = field(default_factory=list)  # containers received, oldest first

    def request(self, releases: list[str]) -> bytes:
        """An allocate request carrying the whole ask table, as the AM sends it."""
        return pb.AllocateRequest(response_id=self.response_id, releases=releases, progress=0.5, asks=[
            pb.ResourceAsk(allocation_request_id=k, priority=k % 10, num_containers=n,
                           capability=pb.Resource(values=self.shapes[k].to_dict()))
            for k, n in self.wanted.items()]).SerializeToString()


@dataclass
class Timings:
    calls: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # the thread's CPU time per call (not others' load)
    wire: list[float] = field(default_factory=list)  # the call with its request decoded and its answer encoded
    validate: float = 0.0
    headroom: float = 0.0
    decode: float = 0.0
    encode: float = 0.0
    allocated: int = 0


class Timed:
    """Wraps the ledger's ask validation and headroom in timers (instance attributes shadow the methods)."""

    def __init__(self, ledger: Ledger) -> None:
        self.spent = {"validate": 0.0, "headroom": 0.0}
        ledger.validate_asks = self._wrap(ledger.validate_asks, "validate")  # type: ignore[method-assign]
        ledger.headroom = self._wrap(ledger.headroom, "headroom")  # type: ignore[method-assign]
        ledger.schedulable_nodes = self._wrap(ledger.schedulable_nodes, "headroom")  # type: ignore[method-assign]

    def _wrap(self, fn: Callable[..., Any], key: str) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.spent[key] += time.perf_counter() - started
        return timed


class GcPauses:
    """Collections while the calls run, per generation: how many and the longest."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.longest = [0.0, 0.0, 0.0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            g = info["generation"]
            self.count[g] += 1
            self.longest[g] = max(self.longest[g], time.perf_counter() - self._started)

    def __str__(self) -> str:
        return "  ".join(f"gen{g}: {self.count[g]} (longest {self.longest[g] * 1e3:.1f} ms)" for g in range(3))


def build(nodes: int, apps: int, asks: int, seed: int) -> tuple[Ledger, list[Am]]:
    rng = Random(seed)
    ledger = Ledger(Ledger.fresh_meta(TS), build_queues(), CoreConfig())
    register_nodes(ledger, nodes)
    ams: list[Am] = []
    for launch in running_ams(ledger, apps, nodes):
        shapes = {k: SHAPES[rng.randrange(len(SHAPES))] for k in range(1, asks + 1)}
        ams.append(Am(launch.app_id, launch.amrm_token, shapes, {k: rng.randint(1, 10) for k in shapes}))
    ledger.drain_records()
    return ledger, ams


def place(ledger: Ledger, ams: list[Am], per_app: int, nodes: int, rng: Random) -> None:
    """A plan placing ``per_app`` containers for each app, on random nodes, for random asks it has."""
    placements = []
    for am in ams:
        att = ledger.apps[am.app_id].current
        assert att is not None
        open_asks = [a for a in att.asks.values() if a.num_containers > 0]
        for ask in rng.sample(open_asks, min(per_app, len(open_asks))):
            placements.append(Place(app_id=am.app_id, allocation_request_id=ask.allocation_request_id,
                                    node_id=NodeId(node_id(rng.randrange(nodes))), resource=ask.capability,
                                    priority=ask.priority))
    ledger.apply_plan(Plan(based_on=ledger.version, placements=placements), 1.0)


def call(ledger: Ledger, timed: Timed, am: Am, releases: int, out: Timings, now: float,
         before: Callable[[float], None] | None = None) -> None:
    gone, am.held = am.held[:releases], am.held[releases:]
    raw = am.request(gone)
    if before is not None:  # something that happens in the cluster just before the call (not timed)
        before(now)
    v0, h0 = timed.spent["validate"], timed.spent["headroom"]
    decoding = time.perf_counter()
    request = pb.AllocateRequest.FromString(raw)  # as the gRPC servicer does (rm/service/grpc_api.py)
    asks = convert.asks_from_pb(request.asks)
    started, started_cpu = time.perf_counter(), time.thread_time()
    res = ledger.am_allocate(am.token, request.response_id, asks, request.releases, request.progress, (), (), now)
    ended = time.perf_counter()
    out.cpu.append(time.thread_time() - started_cpu)
    convert.allocate_response_to_pb(res, now).SerializeToString()
    encoded = time.perf_counter()
    out.calls.append(ended - started)
    out.wire.append(encoded - decoding)
    out.decode += started - decoding
    out.encode += encoded - ended
    out.validate += timed.spent["validate"] - v0
    out.headroom += timed.spent["headroom"] - h0
    am.response_id = res.response_id
    for c in res.allocated:
        am.held.append(c.container_id)
        left = am.wanted[c.allocation_request_id] - 1
        if left:
            am.wanted[c.allocation_request_id] = left
        else:
            del am.wanted[c.allocation_request_id]
    out.allocated += len(res.allocated)
    ledger.drain_records()  # the service stores these before it answers; not part of the core's time


class HealthFlips:
    """Turns nodes unhealthy and back, one after the other: the node set changes before every call."""

    def __init__(self, ledger: Ledger, nodes: int) -> None:
        self.ledger, self.nodes = ledger, nodes
        self.next = 0
        self.healthy = True

    def flip(self, now: float) -> None:
        nid = node_id(self.next % self.nodes)
        self.healthy = not self.healthy
        self.ledger.node_heartbeat(nid, self.ledger.nodes[nid].response_id, [], self.healthy,
                                   "" if self.healthy else "disk failed", now)
        if self.healthy:
            self.next += 1


def run(args: argparse.Namespace, pauses: GcPauses) -> dict[str, Timings]:
    started = time.perf_counter()
    ledger, ams = build(args.nodes, args.apps, args.asks, args.seed)
    print(f"built: {args.nodes} nodes, {len(ams)} AMs registered in {time.perf_counter() - started:.1f} s")
    if not args.no_freeze:
        from rm.service.gc_tuning import tune_gc

        tune_gc()  # the RM's own setting, applied once its start-up state is built
    timed = Timed(ledger)
    gc.callbacks.append(pauses)
    rng = Random(args.seed + 1)
    results = {"first": Timings(), "steady": Timings(), "churn": Timings()}
    now = 1.0
    for am in ams:
        call(ledger, timed, am, 0, results["first"], now)
    flipper = HealthFlips(ledger, args.nodes)
    for case in ("steady", "churn"):
        for _ in range(args.rounds):
            now += 1.0
            place(ledger, ams, args.placed, args.nodes, rng)
            for am in ams:
                call(ledger, timed, am, args.releases, results[case], now,
                     flipper.flip if case == "churn" else None)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument("--asks", type=int, default=1000, help="ask entries per AM")
    parser.add_argument("--rounds", type=int, default=5, help="calls per AM in the steady and churn cases")
    parser.add_argument("--placed", type=int, default=20, help="containers placed per app between calls")
    parser.add_argument("--releases", type=int, default=5, help="containers each AM gives back per call")
    parser.add_argument("--no-freeze", action="store_true", help="leave the interpreter's garbage collection")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    pauses = GcPauses()
    results = run(args, pauses)
    print(f"nodes={args.nodes} apps={args.apps} asks/AM={args.asks} placed/round={args.placed} "
          f"releases/call={args.releases} gc={'default' if args.no_freeze else 'frozen'}")
    print(f"{'case':>7} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cpu p99':>8} {'validate':>9} "
          f"{'headroom':>9} {'rest':>8} {'delivered':>9} {'decode':>7} {'encode':>7} {'wire p50':>8} {'wire p99':>8}")
    for case, t in results.items():
        n = len(t.calls)
        mean = statistics.fmean(t.calls)
        print(f"{case:>7} {n:>6} {statistics.median(t.calls) * 1e3:>8.2f} {percentile(t.calls, 99) * 1e3:>8.2f} "
              f"{max(t.calls) * 1e3:>8.2f} {percentile(t.cpu, 99) * 1e3:>8.2f} {t.validate / n * 1e3:>9.3f} {t.headroom / n * 1e3:>9.3f} "
              f"{(mean - (t.validate + t.headroom) / n) * 1e3:>8.3f} {t.allocated:>9} {t.decode / n * 1e3:>7.3f} "
              f"{t.encode / n * 1e3:>7.3f} {statistics.median(t.wire) * 1e3:>8.2f} {percentile(t.wire, 99) * 1e3:>8.2f}")
    print("(p50/p99/max: am_allocate, wall-clock; cpu p99: its CPU time; validate / headroom / rest: mean ms per "
          "call in it; decode / encode: mean ms to parse the request and build its asks / to build and serialize "
          "the answer, as the gRPC servicer does; wire: the three together)")
    print(f"collections during the calls: {pauses}")


if __name__ == "__main__":
    main()
