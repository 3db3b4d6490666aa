"""Peers side by side (perf-anchors M8): 20,000 no-op tasks through Ray local (``ray.init(num_cpus=2)``) and a
Dask LocalCluster (default, and tuned with ``distributed.scheduler.worker-saturation: inf``), back to back on
this machine, each in a fresh process; optionally shepherd's own end-to-end run (``bench/scale_service.py
--m8``) in the same sequence, so the ratios come from one run.

Ray and Dask are not project dependencies. Install them into any Python 3.11 environment, for instance a
scratch one, and run this script with it; a peer whose package is missing is skipped, naming what to install:

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install ray dask distributed
    /tmp/peers/bin/python bench/peers.py [--tasks 20000] [--peers ray dask dask-tuned] \
        [--shepherd-python .venv/bin/python --shepherd-args "--nodes 100 --node-vcores 32 ..."]

Setups follow perf-anchors §3.8: Dask ``LocalCluster(n_workers=1, threads_per_worker=1, processes=False)``,
``client.map(noop, range(n), pure=False)`` then ``wait``; Ray ``ray.get([noop.remote(i) for i in range(n)])``.
The clock runs from the first submission to the last result; start-up is timed apart.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NEEDS = {"ray": ("ray",), "dask": ("dask", "distributed"), "dask-tuned": ("dask", "distributed")}
PEER_TIMEOUT_S = 180.0


def noop(i: int) -> int:
    return i


def run_ray(tasks: int) -> dict[str, Any]:
    import ray  # type: ignore[import-not-found]  # not a project dependency

    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    remote_noop = ray.remote(noop)
    ray.get(remote_noop.remote(0))  # the workers are up
    up = time.perf_counter() - started
    t0 = time.perf_counter()
    ray.get([remote_noop.remote(i) for i in range(tasks)])
    seconds = time.perf_counter() - t0
    ray.shutdown()
    return {"startup_s": up, "seconds": seconds, "version": ray.__version__}


def run_dask(tasks: int, *, tuned: bool) -> dict[str, Any]:
    import dask  # type: ignore[import-not-found]  # not a project dependency
    import distributed  # type: ignore[import-not-found]
    from distributed import Client, LocalCluster, wait  # type: ignore[import-not-found]

    settings = {"distributed.scheduler.worker-saturation": float("inf")} if tuned else {}
    with dask.config.set(settings):
        started = time.perf_counter()
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
        client = Client(cluster)
        client.submit(noop, -1, pure=False).result()
        up = time.perf_counter() - started
        t0 = time.perf_counter()
        futures = client.map(noop, range(tasks), pure=False)
        wait(futures)
        seconds = time.perf_counter() - t0
        client.close()
        cluster.close()
    return {"startup_s": up, "seconds": seconds, "version": distributed.__version__}


def child(peer: str, tasks: int) -> None:
    """Run one peer in this (fresh) process and print its result as JSON."""
    out = run_ray(tasks) if peer == "ray" else run_dask(tasks, tuned=peer == "dask-tuned")
    out.update(peer=peer, tasks=tasks, tasks_per_s=tasks / out["seconds"])
    print(json.dumps(out), flush=True)


def missing(peer: str) -> list[str]:
    return [m for m in NEEDS[peer] if importlib.util.find_spec(m) is None]


def run_peer(peer: str, tasks: int) -> dict[str, Any]:
    lacking = missing(peer)
    if lacking:
        return {"peer": peer, "skipped": f"not installed in {sys.executable}: {', '.join(lacking)} "
                                         f"(pip install {' '.join(lacking)})"}
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", peer, "--tasks", str(tasks)],
                              capture_output=True, text=True, timeout=PEER_TIMEOUT_S, cwd=ROOT, check=False)
    except subprocess.TimeoutExpired:
        return {"peer": peer, "skipped": f"did not finish within {PEER_TIMEOUT_S:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            result: dict[str, Any] = json.loads(line)
            return result
    return {"peer": peer, "skipped": f"failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}"}


def run_shepherd(python: str, extra: str, tasks: int) -> dict[str, Any]:
    command = [python, str(ROOT / "bench" / "scale_service.py"), "--m8", "--containers", str(tasks),
               *shlex.split(extra)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=PEER_TIMEOUT_S, cwd=ROOT, check=False)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            r = json.loads(line)
            return {"peer": "shepherd", "tasks": tasks, "done": r.get("done"),
                    "seconds": r.get("first_ask_to_last_done_s"), "tasks_per_s": r.get("containers_per_s"),
                    "command": " ".join(command[1:])}
    return {"peer": "shepherd", "skipped": f"failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--peers", nargs="+", default=["ray", "dask", "dask-tuned"], choices=sorted(NEEDS))
    parser.add_argument("--shepherd-python", help="also run bench/scale_service.py --m8 with this interpreter")
    parser.add_argument("--shepherd-args", default="", help="more arguments for scale_service.py --m8")
    parser.add_argument("--pause-s", type=float, default=5.0, help="rest between two runs")
    parser.add_argument("--json", type=Path, help="append the results as JSON lines to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.tasks)
        return
    results = []
    order = ([] if not args.shepherd_python else ["shepherd"]) + list(args.peers)
    for i, peer in enumerate(order):
        if i:
            time.sleep(args.pause_s)
        r = run_shepherd(args.shepherd_python, args.shepherd_args, args.tasks) if peer == "shepherd" \
            else run_peer(peer, args.tasks)
        r["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        results.append(r)
        if "skipped" in r:
            print(f"{peer:<11} skipped: {r['skipped']}", flush=True)
        else:
            print(f"{peer:<11} {r['tasks_per_s']:>9,.0f} tasks/s  ({r['tasks']} in {r['seconds']:.2f} s"
                  + (f", start-up {r['startup_s']:.1f} s, {r['version']})" if "startup_s" in r else ")"), flush=True)
    ran = {r["peer"]: r["tasks_per_s"] for r in results if "skipped" not in r and r.get("tasks_per_s")}
    if "shepherd" in ran:
        for peer, rate in ran.items():
            if peer != "shepherd":
                print(f"shepherd / {peer}: {ran['shepherd'] / rate:.2f}x")
    if args.json:
        with args.json.open("a") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
