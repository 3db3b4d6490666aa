"""The real service under simulated load (perf-anchors M3, M4, M8): a ResourceManager process on one core, the
load generators of ``bench/load`` (K simulated NodeManagers, N simulated ApplicationMasters) in this process
on the other, over the real gRPC protocols.

Prints client-side heartbeat RTT p50/p99/p99.9, containers delivered to AMs per second, AM allocate RTT p50/p99,
the RM's CPU % and RSS, and one JSON line per run (``--json FILE`` appends it there too).

    python bench/scale_service.py --nodes 1000                      # heartbeats only
    python bench/scale_service.py --nodes 250 --ams 20 --asks 200   # AMs holding 200 asks each
    python bench/scale_service.py --m8 --nodes 100 --node-vcores 32 # 20,000 no-op containers end to end

Each simulated node offers ``--node-vcores`` / ``--node-memory-mb``; containers take ``--container-vcores`` /
``--container-mb`` and run a time drawn from an exponential of mean ``--run-s`` (0: they end at once), so the
delivery rate a cluster can sustain is about nodes x slots per node / run time. Latencies ``*_late`` count
from the time a call was due on the open-loop schedule, not from when it was sent.

The RM is pinned to CPU 0 and this process to CPU 1 (``--no-pin`` leaves both to the kernel); the machine's
load average and steal time over the run are printed, since other work on a shared machine shows there.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load.am_sim import AmShape
from bench.load.harness import LoadConfig, run_batch, run_load
from bench.load.nm_sim import NodeShape
from rm.local import LocalCluster

MAX_RUN_S = 60.0


def pin(pid: int, cpus: set[int]) -> None:
    """Pin every thread of ``pid`` to ``cpus`` (threads started later inherit it from their creator)."""
    with contextlib.suppress(OSError, psutil.Error):
        for thread in psutil.Process(pid).threads():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(thread.id, cpus)


def steal_jiffies() -> tuple[int, int]:
    """(steal, total) jiffies of all CPUs since boot."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [int(v) for v in fields[:8]]
    return values[7], sum(values)


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpus": os.cpu_count(), "cpu_model": model, "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def config(args: argparse.Namespace, cluster: LocalCluster, rm_pid: int) -> LoadConfig:
    am = AmShape(backlog=args.asks, memory_mb=args.container_mb, vcores=args.container_vcores, run_s=args.run_s,
                 release_fraction=args.release_fraction, interval_s=args.am_interval)
    return LoadConfig(
        rm_address=cluster.rm_address, node_secret=cluster.node_secret, client_secret=cluster.client_secret,
        nodes=args.nodes, node=NodeShape(memory_mb=args.node_memory_mb, vcores=args.node_vcores),
        heartbeat_s=args.heartbeat_s, jitter=args.jitter, nodes_per_channel=args.nodes_per_channel,
        out_of_band=not args.no_out_of_band,
        ams=args.ams, am=am, ramp_s=args.ramp_s, warmup_s=args.warmup_s, duration_s=args.duration, rm_pid=rm_pid,
        rest_url=cluster.rest_url)


def cycle_args(work: Path, *, on_loop: bool) -> list[str]:
    """The RM's arguments for where its scheduling cycles run: none for the default (a thread of their own), or a
    config file in ``work`` that puts them on the event loop (``--cycle-on-loop``)."""
    if not on_loop:
        return []
    conf = work / "rm.yaml"
    conf.write_text("shepherd.resourcemanager.scheduling-off-loop: false\n")
    return ["--config", str(conf)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="shepherd-scale-"))
    rm_args = ["--log-level", args.rm_log_level, *cycle_args(work, on_loop=args.cycle_on_loop)]
    cluster = LocalCluster(work / "cluster", allow_root_containers=True,
                           nodes=0, grpc_port=0, rest_port=0, ipc_client_port=0,
                           ipc_scheduler_port=0, rm_args=rm_args)
    load_before = os.getloadavg()
    steal_before = steal_jiffies()
    started = time.monotonic()
    try:
        cluster.start()
        assert cluster.rm is not None
        assert cluster.rm.proc is not None
        rm_pid = cluster.rm.proc.pid
        if not args.no_pin and (os.cpu_count() or 1) >= 2:
            pin(rm_pid, {0})
            pin(os.getpid(), {1})
        cfg = config(args, cluster, rm_pid)
        if args.m8:
            result = asyncio.run(run_batch(cfg, args.containers, ams=args.m8_ams,
                                           timeout_s=min(args.duration, MAX_RUN_S)))
        else:
            result = asyncio.run(run_load(cfg))
        with contextlib.suppress(psutil.Error):
            result["rm_rss_mb_after"] = psutil.Process(rm_pid).memory_info().rss / 2**20
        if not cluster.alive():
            result["rm_died"] = True
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    steal_after = steal_jiffies()
    total = steal_after[1] - steal_before[1]
    result.update({
        "case": "m8" if args.m8 else "load", "wall_s": round(time.monotonic() - started, 1),
        "loadavg_before": load_before[0], "loadavg_after": os.getloadavg()[0],
        "steal_pct": 100.0 * (steal_after[0] - steal_before[0]) / total if total else math.nan,
        "pinned": not args.no_pin, "args": {k: v for k, v in vars(args).items() if k != "json"}, **machine()})
    return result


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:,.1f}"
    return str(value)


def _own(r: dict[str, Any], prefix: str, unit: str = " ms") -> str:
    """One of the RM's histograms over the window (from its /metrics): count, mean / p99 bound."""
    if f"{prefix}_count" not in r:
        return "not read"
    return f"{r[f'{prefix}_count']:,.0f}, {fmt(r[f'{prefix}_mean_ms'])} / {fmt(r[f'{prefix}_p99_le_ms'])}{unit}"


def report(r: dict[str, Any]) -> None:
    heartbeat = (f"{fmt(r['heartbeat_rtt_p50_ms'])} / {fmt(r['heartbeat_rtt_p99_ms'])} / "
                 f"{fmt(r['heartbeat_rtt_p999_ms'])} / {fmt(r['heartbeat_rtt_max_ms'])} ms")
    rows: list[tuple[str, str]] = [
        ("nodes / AMs", f"{r['nodes']} / {r['ams']}"),
        ("registration of all nodes", f"{fmt(r['register_s'])} s"),
        ("window", f"{fmt(r['window_s'])} s, {r['heartbeats']} heartbeats, {r['heartbeat_errors']} failed"),
        ("heartbeat RTT p50 / p99 / p99.9 / max", heartbeat),
        ("heartbeat p99 from due time", f"{fmt(r['heartbeat_late_p99_ms'])} ms"),
    ]
    if r["ams"] or r["case"] == "m8":
        allocate = (f"{fmt(r['allocate_rtt_p50_ms'])} / {fmt(r['allocate_rtt_p99_ms'])} / "
                    f"{fmt(r['allocate_rtt_max_ms'])} ms ({r['allocates']} calls)")
        rows += [
            ("AM allocate RTT p50 / p99 / max", allocate),
            ("AM allocate p99 from due time", f"{fmt(r['allocate_late_p99_ms'])} ms"),
            ("containers delivered to AMs", f"{fmt(r['delivered_per_s'])} /s ({r['delivered']} in the window)"),
            ("completions heard by AMs", f"{fmt(r['completed_per_s'])} /s"),
            ("started / released / start errors", f"{r['started']} / {r['released']} / {r['start_errors']}"),
            ("StartContainers RTT p50 / p99", f"{fmt(r['start_rtt_p50_ms'])} / {fmt(r['start_rtt_p99_ms'])} ms"),
        ]
    if r["case"] == "m8":
        rows += [("M8 containers done", f"{r['done']} of {r['containers']} ({r['failed']} failed)"),
                 ("M8 first ask -> last completion", f"{fmt(r['first_ask_to_last_done_s'])} s"),
                 ("M8 containers/s", fmt(r["containers_per_s"])),
                 ("M8 incl. app submission", f"{fmt(r['submit_to_last_done_s'])} s")]
    rss = f"{fmt(r.get('rm_rss_mb_max', math.nan))} / {fmt(r.get('rm_rss_mb_after', math.nan))} MiB"
    harness = f"{fmt(r.get('harness_cpu_pct', math.nan))} %, {fmt(r['harness_loop_lag_p99_ms'])} ms"
    load = f"{r['loadavg_before']:.2f} / {r['loadavg_after']:.2f}, {fmt(r['steal_pct'])} %"
    rows += [
        ("RM CPU (of one core)", f"{fmt(r.get('rm_cpu_pct', math.nan))} %"),
        ("RM's own: cycles, mean / p99 <=", _own(r, "rm_cycle")),
        ("RM's own: heartbeat handling", _own(r, "rm_heartbeat")),
        ("RM's own: event-loop lag", _own(r, "rm_loop_lag")),
        ("RM's own: store writes", _own(r, "rm_store_write")),
        ("RM's own: records per store write", _own(r, "rm_store_records", unit="")),
        ("RM RSS max / after", rss),
        ("harness CPU, loop lag p99", harness),
        ("AM errors / node resyncs", f"{r['am_errors']} / {r['node_resyncs']}"),
        ("node heartbeats out of band", f"{r.get('out_of_band_beats', 0):,}"),
        ("other processes' CPU in the window", f"{fmt(r['others_cpu_pct'])} % of one core"),
        ("load avg before / after, steal", load),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    if r["am_error_sample"]:
        print("  first AM errors:", *r["am_error_sample"], sep="\n    ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=100, help="K simulated NodeManagers")
    parser.add_argument("--ams", type=int, default=0, help="N simulated ApplicationMasters (0: heartbeats only)")
    parser.add_argument("--asks", type=int, default=100, help="containers each AM keeps asked for")
    parser.add_argument("--duration", type=float, default=20.0, help="measurement window, seconds")
    parser.add_argument("--warmup-s", type=float, default=3.0)
    parser.add_argument("--ramp-s", type=float, default=2.0, help="AM arrivals spread over this long")
    parser.add_argument("--node-vcores", type=int, default=8)
    parser.add_argument("--node-memory-mb", type=int, default=16_384)
    parser.add_argument("--container-vcores", type=int, default=1)
    parser.add_argument("--container-mb", type=int, default=1024)
    parser.add_argument("--run-s", type=float, default=5.0, help="mean container run time (0: instant)")
    parser.add_argument("--release-fraction", type=float, default=0.05,
                        help="share of allocated containers an AM gives back unused")
    parser.add_argument("--am-interval", type=float, default=1.0, help="seconds between an AM's allocate calls")
    parser.add_argument("--heartbeat-s", type=float, default=1.0)
    parser.add_argument("--jitter", type=float, default=0.1, help="± fraction of the period")
    parser.add_argument("--nodes-per-channel", type=int, default=1)
    parser.add_argument("--no-out-of-band", action="store_true",
                        help="nodes report ended containers only at their scheduled heartbeats")
    parser.add_argument("--m8", action="store_true", help="push --containers no-op containers through and time it")
    parser.add_argument("--containers", type=int, default=20_000)
    parser.add_argument("--m8-ams", type=int, default=1)
    parser.add_argument("--rm-log-level", default="INFO")
    parser.add_argument("--cycle-on-loop", action="store_true",
                        help="the RM runs its scheduling cycles on its event loop (scheduling-off-loop: false)")
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--long", action="store_true",
                        help=f"allow a window beyond {MAX_RUN_S:.0f} s (filling a large cluster to measure the RSS)")
    parser.add_argument("--json", type=Path, help="append the result as a JSON line to this file")
    args = parser.parse_args()
    if not args.m8 and not args.long and args.duration + args.warmup_s + args.ramp_s > MAX_RUN_S:
        parser.error(f"keep warm-up, ramp and window within {MAX_RUN_S:.0f} s")
    result = run(args)
    print(f"scale_service {result['case']}  {result['date']}  ({result['cpus']} CPUs, {result['cpu_model']})")
    report(result)
    line = json.dumps(result, default=str)
    print(line)
    if args.json:
        with args.json.open("a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
