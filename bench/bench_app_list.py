"""M5 (issue 25): the REST application list with 10,000 applications, measured from a client.

A real RM (``LocalCluster`` with no NodeManagers, one process) is given N applications over gRPC, of which a
given share is killed (ended) and the others wait in ACCEPTED for an AM container no node offers; each share
given (``--ended``, by default 0.9, a cluster's history, and 0.33) gets a fresh RM. A client in this process
(pinned to the other core when there are two) then reads, one request after another on a kept-alive connection:

* ``/ws/v1/cluster/apps``: every app, as the cluster owner (full reports) and anonymously (the restricted
  reports a reader without VIEW_APP gets);
* ``?limit=100``, ``?states=KILLED&limit=100`` and ``?user=...&limit=100``: filtered queries.

It prints each query's latency (p50, p99, max) and response size, and writes ``docs/results/app-list.md``.
Targets (issue 25): all apps p50 ≤ 50 ms and p99 ≤ 100 ms; a filtered query (limit 100) p99 ≤ 5 ms.

    python bench/bench_app_list.py [--apps 10000] [--ended 0.9,0.33] [--reps 40] [--filtered-reps 300] [--no-write]
                                   [--cycle-on-loop]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx
from load.stats import quantile
from scale_service import cycle_args, machine, pin

from proto import shepherd_pb2 as pb
from rm.client import RMClient
from rm.local import LocalCluster

OUT = ROOT / "docs" / "results" / "app-list.md"
USERS = ("ana", "bo", "cy", "dee")
TARGETS = {"all": (50.0, 100.0), "filtered": (None, 5.0)}  # (p50, p99) ms


def populate(cluster: LocalCluster, n: int, ended: float) -> float:
    """``n`` apps over gRPC (as the cluster owner acting for four users), the share ``ended`` of them killed,
    spread evenly. Seconds taken."""
    began = time.monotonic()
    with RMClient(cluster.rm_address) as rm:
        for i in range(n):
            app_id = rm.new_application()
            rm.submit(pb.ApplicationSubmissionContext(
                application_id=app_id, name=f"job-{i}", queue="default", user=USERS[i % len(USERS)],
                application_type="BENCH", tags=[f"t{i % 7}"],
                am_resource=pb.Resource(values={"memory-mb": 512, "vcores": 1}),
                am_container_spec=pb.ContainerLaunchContext(commands=["sleep 60"])))
            if int((i + 1) * ended) > int(i * ended):
                rm.kill(app_id, "done with it")
    return time.monotonic() - began


def measure(http: httpx.Client, path: str, reps: int, headers: dict[str, str]) -> dict[str, Any]:
    http.get(path, headers=headers)  # warm
    seconds: list[float] = []
    size = rows = 0
    for _ in range(reps):
        began = time.perf_counter()
        resp = http.get(path, headers=headers)
        seconds.append(time.perf_counter() - began)
        assert resp.status_code == 200, resp.text[:500]
        size = len(resp.content)
        rows = len(resp.json()["apps"]["app"])
    ms = [s * 1000 for s in seconds]
    return {"path": path, "reps": reps, "rows": rows, "bytes": size, "p50_ms": quantile(ms, 0.5),
            "p99_ms": quantile(ms, 0.99), "max_ms": max(ms)}


def run(args: argparse.Namespace, ended: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="shepherd-app-list-"))
    rm_args = ["--log-level", "WARNING", *cycle_args(work, on_loop=args.cycle_on_loop)]
    cluster = LocalCluster(work / "cluster", allow_root_containers=True,
                           nodes=0, grpc_port=0, rest_port=0, ipc_client_port=-1,
                           ipc_scheduler_port=-1, rm_args=rm_args)
    try:
        cluster.start()
        assert cluster.rm is not None
        assert cluster.rm.proc is not None
        if (os.cpu_count() or 1) >= 2:
            pin(cluster.rm.proc.pid, {0})
            pin(os.getpid(), {1})
        populate_s = populate(cluster, args.apps, ended)
        owner = {"Authorization": f"Bearer {cluster.client_secret}"}
        anonymous: dict[str, str] = {}
        queries = [
            ("all apps, as the owner (full reports)", "/ws/v1/cluster/apps", args.reps, owner, "all"),
            ("all apps, anonymous (restricted reports)", "/ws/v1/cluster/apps", args.reps, anonymous, "all"),
            ("all apps without resourceRequests", "/ws/v1/cluster/apps?deSelects=resourceRequests", args.reps,
             owner, "all"),
            ("limit=100", "/ws/v1/cluster/apps?limit=100", args.filtered_reps, owner, "filtered"),
            ("states=KILLED&limit=100", "/ws/v1/cluster/apps?states=KILLED&limit=100", args.filtered_reps, owner,
             "filtered"),
            ("user=cy&limit=100", "/ws/v1/cluster/apps?user=cy&limit=100", args.filtered_reps, owner, "filtered"),
        ]
        results = []
        with httpx.Client(base_url=cluster.rest_url, timeout=60) as http:
            for label, path, reps, headers, kind in queries:
                r = measure(http, path, reps, headers) | {"label": label, "kind": kind}
                results.append(r)
                print(f"{label:45s} rows {r['rows']:6d}  {r['bytes'] / 2**20:6.2f} MB  p50 {r['p50_ms']:7.1f} ms  "
                      f"p99 {r['p99_ms']:7.1f} ms  max {r['max_ms']:7.1f} ms", flush=True)
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    return {"apps": args.apps, "ended": ended, "populate_s": populate_s, "results": results,
            "loadavg": os.getloadavg()[0], **machine()}


def page(runs: list[dict[str, Any]], reading: str) -> str:
    first = runs[0]
    lines = [
        "# The REST application list at 10,000 applications (M5)", "",
        ("Measured by `bench/bench_app_list.py`: a real RM with no NodeManagers, the client on the other core, one "
         "request at a time on a kept-alive connection. A share of the apps is KILLED (ended), the others ACCEPTED; "
         "the owner's reads get full reports, anonymous ones the restricted reports of VIEW_APP."), "",
        (f"Machine: {first.get('cpu_model', '?')} ({first.get('cpus')} cores), {first.get('date', '')}."), ""]
    for data in runs:
        lines += [f"## {data['apps']:,} apps, {data['ended']:.0%} ended", "",
                  (f"Submitted over gRPC in {data['populate_s']:.0f} s; load average {data['loadavg']:.2f} after the "
                  "run."), "",
                  "| query | rows | response | p50 | p99 | max | target |", "|---|---|---|---|---|---|---|"]
        for r in data["results"]:
            p50_t, p99_t = TARGETS[r["kind"]]
            target = (f"p50 ≤ {p50_t:g} ms, " if p50_t else "") + f"p99 ≤ {p99_t:g} ms"
            met = (p50_t is None or r["p50_ms"] <= p50_t) and r["p99_ms"] <= p99_t
            lines.append(f"| `{r['path'].removeprefix('/ws/v1/cluster')}` ({r['label']}) | {r['rows']:,} | "
                         f"{r['bytes'] / 2**20:.2f} MB | {r['p50_ms']:.1f} ms | {r['p99_ms']:.1f} ms | "
                         f"{r['max_ms']:.1f} ms | {target}: {'met' if met else '**missed**'} |")
        lines.append("")
    lines += ["## Reading the figures", "", reading.strip(), ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apps", type=int, default=10_000)
    ap.add_argument("--ended", default="0.9,0.33", help="shares of the apps that ended, one RM each")
    ap.add_argument("--reps", type=int, default=40, help="reads of the whole list per query")
    ap.add_argument("--filtered-reps", type=int, default=300, help="reads per filtered query")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--cycle-on-loop", action="store_true",
                    help="the RM runs its scheduling cycles on its event loop (scheduling-off-loop: false)")
    args = ap.parse_args()
    runs = []
    for share in (float(x) for x in args.ended.split(",")):
        print(f"-- {args.apps} apps, {share:.0%} ended", flush=True)
        runs.append(run(args, share))
    if not args.no_write:
        old = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        marker = "## Reading the figures\n"
        reading = old.split(marker, 1)[1] if marker in old else "(to be written after the run)"
        OUT.write_text(page(runs, reading), encoding="utf-8")
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
