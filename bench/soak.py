"""S25-lite soak: a local cluster on PostgreSQL (through a TCP proxy the soak can cut) takes a steady stream of
submissions while a random fault strikes every ``--fault-every`` seconds, then the invariants are checked.

* load: ``--rate`` submissions per second for ``--minutes``: mostly apps whose AM is a plain command
  (``sleep 1-4``), and every ``--dag-every``-th a DAG job of two stages of sleep tasks (each task appends its
  attempt number to a file of its own);
* faults, in turn from a shuffled cycle: the RM SIGKILLed and started again; a NodeManager SIGKILLed and
  restarted 3 s later; a running DAG AM SIGSTOPped past the AM expiry and resumed; the store cut for 10 s;
* invariants: every acknowledged submission is known to the RM afterwards (I-LEDGER) and ends within 5 minutes;
  no DAG task finished twice (I-NODUP); no node ever reported more in use than it offers (I-CAP); the RM's
  cluster-wide use equals the sum of its nodes' within 2.5 s of every check (the two come from separate
  requests), and is zero on every node once every app has ended (I-ACCT); no container process of the cluster left once every
  app has ended (I-ORPHAN);
* responsiveness: the RM's own event-loop lag (``shepherd_event_loop_lag_seconds``, a timer due every 0.25 s,
  scraped every 10 s and summed over the RM's restarts), and the latency of ``/ws/v1/cluster/info`` sampled every
  second, outages of the RM excluded.

Writes ``docs/results/soak.md``.

    python bench/soak.py [--minutes 20] [--rate 2] [--fault-every 30] [--out docs/results/soak.md]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_reliability import fresh_pg

from proto import shepherd_pb2 as pb
from rm.client import ClientError, RMClient
from rm.faultproxy import Proxy
from rm.local import LocalCluster

EXPIRY_S = 20.0
FINAL = ("FINISHED", "FAILED", "KILLED")


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Soak:
    def __init__(self, work: Path, args: argparse.Namespace) -> None:
        self.work, self.args = work, args
        self.marks = work / "marks"
        self.marks.mkdir(mode=0o777, parents=True)
        self.marks.chmod(0o777)
        self.acknowledged: list[str] = []
        self.refused: dict[str, int] = {}
        self.faults: list[dict[str, Any]] = []
        self.latency_ms: list[float] = []
        self.lag = LagBuckets()
        self.accounting: list[str] = []  # checks where the cluster's use was not the sum of its nodes'
        self.accounting_checks = 0  # checks that found them equal
        self.accounting_rechecked = 0  # of those, how many needed more than one sample (containers churned)
        self.over_capacity: list[str] = []
        self.stop = threading.Event()
        self.ports: list[int] = []
        self.started = time.monotonic()
        self.rm_down = threading.Event()
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ load

    def submit_loop(self, cluster: LocalCluster) -> None:
        n = 0
        period = 1.0 / self.args.rate
        next_at = time.monotonic()
        client = RMClient(cluster.rm_address, timeout=5.0)
        while not self.stop.is_set():
            n += 1
            try:
                if n % self.args.dag_every == 0:
                    self._submit_dag(cluster, n)
                else:
                    self._submit_plain(client, n)
            except (ClientError, OSError, RuntimeError) as exc:
                key = getattr(exc, "code", type(exc).__name__)
                with self.lock:
                    self.refused[key] = self.refused.get(key, 0) + 1
            next_at += period
            self.stop.wait(max(0.0, next_at - time.monotonic()))
        client.close()

    def _submit_plain(self, client: RMClient, n: int) -> None:
        app_id = client.new_application()
        ctx = pb.ApplicationSubmissionContext(
            application_id=app_id, name=f"plain-{n}", queue="default", application_type="YARN",
            am_resource=pb.Resource(values={"memory-mb": 64, "vcores": 1}),
            am_container_spec=pb.ContainerLaunchContext(commands=[f"sleep {random.randint(1, 4)}"]))
        for _ in range(30):  # the same id again until it is stored: a retried submission is accepted once
            try:
                client.submit(ctx)
                break
            except ClientError as exc:
                if exc.code not in ("UNAVAILABLE", "DEADLINE_EXCEEDED") and exc.exception != "RetriableException":
                    raise
                time.sleep(1.0)
        else:
            raise RuntimeError("submission never acknowledged")
        with self.lock:
            self.acknowledged.append(app_id)

    def _submit_dag(self, cluster: LocalCluster, n: int) -> None:
        stage = {"tasks": 2, "memory_mb": 64, "vcores": 1, "duration_s": 5,
                 "command": f"sleep 5 && echo end{{attempt}} >> {self.marks}/dag{n}-{{stage}}-{{task}}"}
        job = {"id": f"dag{n}", "stages": [{"name": "a", **stage}, {"name": "b", "parents": ["a"], **stage}]}
        path = self.work / f"dag{n}.yaml"
        path.write_text(yaml.safe_dump(job))
        out = subprocess.run([sys.executable, "-m", "rm.cli", "submit", str(path), "--rm", cluster.rm_address,
                              "--data-dir", str(self.work)], capture_output=True, text=True, timeout=60, check=False)
        m = re.search(r"(application_\d+_\d+)", out.stdout)
        if out.returncode != 0 or m is None:
            raise RuntimeError(out.stdout + out.stderr)
        with self.lock:
            self.acknowledged.append(m.group(1))

    # ------------------------------------------------------------------ watching

    def watch_loop(self, cluster: LocalCluster) -> None:
        ticks = 0
        while not self.stop.wait(1.0):
            if self.rm_down.is_set():
                continue
            ticks += 1
            if ticks % 10 == 0:
                with contextlib.suppress(OSError, ValueError), \
                        urllib.request.urlopen(f"{cluster.rest_url}/metrics", timeout=5) as r:
                    self.lag.scraped(r.read().decode())
            t0 = time.monotonic()
            try:
                with urllib.request.urlopen(f"{cluster.rest_url}/ws/v1/cluster/info", timeout=5) as r:
                    r.read()
                self.latency_ms.append((time.monotonic() - t0) * 1000)
                nodes = _get(f"{cluster.rest_url}/ws/v1/cluster/nodes")["nodes"]["node"] or []
                for node in nodes:  # what a node has in use never exceeds what it offers
                    if node.get("availMemoryMB", 0) < 0 or node.get("availableVirtualCores", 0) < 0:
                        self.over_capacity.append(f"{node.get('id')} at {time.strftime('%H:%M:%S')}")
                self._check_accounting(cluster.rest_url)
            except (OSError, ValueError, KeyError):
                pass

    def _check_accounting(self, rest: str) -> None:
        """I-ACCT: the cluster's allocated memory is the sum of its nodes'. The two come from separate requests,
        between which containers start and end, so one sample can catch them apart; a sample counts as
        consistent when the cluster total held still across it. Off only if no consistent sample is found
        within 2.5 s (two heartbeats and a half)."""
        give_up = time.monotonic() + 2.5
        seen = []
        while True:
            before = _get(f"{rest}/ws/v1/cluster/metrics")["clusterMetrics"]["allocatedMB"]
            used = sum(n.get("usedMemoryMB", 0) for n in _get(f"{rest}/ws/v1/cluster/nodes")["nodes"]["node"] or [])
            after = _get(f"{rest}/ws/v1/cluster/metrics")["clusterMetrics"]["allocatedMB"]
            if before == after == used:
                self.accounting_checks += 1
                self.accounting_rechecked += bool(seen)
                return
            seen.append(f"cluster {before}/{after} MB, nodes {used} MB")
            if time.monotonic() > give_up:
                self.accounting.append(f"{time.strftime('%H:%M:%S')}: " + "; ".join(seen[-3:]))
                return
            time.sleep(0.2)

    # ------------------------------------------------------------------ faults

    def fault_loop(self, cluster: LocalCluster, proxy: Proxy) -> None:
        kinds = ["rm", "nm", "am", "store"]
        while not self.stop.wait(self.args.fault_every):
            if not kinds:
                kinds = ["rm", "nm", "am", "store"]
            random.shuffle(kinds)
            kind = kinds.pop()
            t0 = time.monotonic()
            detail = ""
            try:
                if kind == "rm":
                    self.rm_down.set()
                    assert cluster.rm is not None
                    cluster.rm.signal(signal.SIGKILL)
                    cluster.rm.stop()
                    cluster.start_rm()
                    self.rm_down.clear()
                elif kind == "nm":
                    i = random.randrange(len(cluster.nms))
                    cluster.nms[i].signal(signal.SIGKILL)
                    cluster.nms[i].stop()
                    time.sleep(3)
                    cluster.nm_args = ["--port", str(self.ports[i])]  # the same node id: it takes its work back
                    cluster.start_nm(i)
                    detail = cluster.node_ids[i]
                elif kind == "am":
                    ams = [p for p in psutil.process_iter(["pid", "cmdline"])
                           if "am.dag" in " ".join(p.info["cmdline"] or [])]
                    if ams:
                        victim = random.choice(ams)
                        victim.send_signal(signal.SIGSTOP)
                        time.sleep(EXPIRY_S + 5)
                        with contextlib.suppress(psutil.Error):
                            victim.send_signal(signal.SIGCONT)
                        detail = str(victim.pid)
                else:
                    proxy.cut()
                    time.sleep(10)
                    proxy.restore()
            except (OSError, RuntimeError, psutil.Error) as exc:  # a fault not injected is reported, not fatal
                detail = f"{type(exc).__name__}: {exc}"
                self.rm_down.clear()
            self.faults.append({"kind": kind, "at_s": round(time.monotonic() - self.started, 1),
                                "took_s": round(time.monotonic() - t0, 1), "detail": detail})
            print(json.dumps(self.faults[-1]), flush=True)

    # ------------------------------------------------------------------ the run

    def run(self) -> dict[str, Any]:
        store_url, drop = fresh_pg()
        host_port = store_url.rsplit("@", 1)[1].split("/", 1)[0]
        host, port = host_port.split(":")
        with Proxy(host, int(port)) as proxy:
            proxied = store_url.replace(host_port, f"127.0.0.1:{proxy.port}")
            ports = self.ports = [_free_port() for _ in range(3)]
            cluster = LocalCluster(self.work / "cluster", allow_root_containers=True,
                                   nodes=0, node_vcores=8, node_memory_mb=8192,
                                   nm_expiry_s=EXPIRY_S, am_expiry_s=EXPIRY_S, grpc_port=0, rest_port=0,
                                   ipc_client_port=-1, ipc_scheduler_port=-1, store_url=proxied)
            try:
                cluster.start()
                cluster.num_nodes = 3
                for i, p in enumerate(ports):
                    cluster.nm_args = ["--port", str(p)]
                    cluster.start_nm(i)
                self.started = time.monotonic()
                threads = [threading.Thread(target=self.submit_loop, args=(cluster,), daemon=True),
                           threading.Thread(target=self.watch_loop, args=(cluster,), daemon=True),
                           threading.Thread(target=self.fault_loop, args=(cluster, proxy), daemon=True)]
                for t in threads:
                    t.start()
                time.sleep(self.args.minutes * 60)
                self.stop.set()
                for t in threads:
                    t.join(120)
                return self._check(cluster)
            finally:
                cluster.stop()
                drop()

    def _check(self, cluster: LocalCluster) -> dict[str, Any]:
        soak_end = time.monotonic()
        with RMClient(cluster.rm_address, timeout=30.0) as client:
            unknown: list[str] = []
            states: dict[str, str] = {}
            deadline = soak_end + 300
            pending = list(self.acknowledged)
            while pending and time.monotonic() < deadline:
                still = []
                for app_id in pending:
                    try:
                        rep = client.app(app_id)
                    except ClientError as exc:
                        if exc.code == "NOT_FOUND":
                            unknown.append(app_id)
                            continue
                        still.append(app_id)
                        continue
                    if rep.state in FINAL:
                        states[app_id] = f"{rep.state}/{rep.final_status}"
                    else:
                        still.append(app_id)
                pending = still
                if pending:
                    time.sleep(2)
            drained_s = time.monotonic() - soak_end
        time.sleep(3)
        end = _get(f"{cluster.rest_url}/ws/v1/cluster/metrics")["clusterMetrics"]
        in_use = {n["id"]: (n.get("usedMemoryMB", 0), n.get("numContainers", 0))
                  for n in _get(f"{cluster.rest_url}/ws/v1/cluster/nodes")["nodes"]["node"] or []}
        accounted_at_end = {"allocatedMB": end["allocatedMB"], "allocatedVirtualCores": end["allocatedVirtualCores"],
                            "containersAllocated": end["containersAllocated"],
                            "nodes_in_use": {k: v for k, v in in_use.items() if v != (0, 0)}}
        leftover = 0
        cluster_ts = self.acknowledged[0].split("_")[1] if self.acknowledged else "-"
        for p in psutil.process_iter(["pid"]):
            with contextlib.suppress(psutil.Error):
                if cluster_ts in p.environ().get("CONTAINER_ID", ""):
                    leftover += 1
        twice = sorted(f.name for f in self.marks.iterdir() if len(f.read_text().split()) > 1)
        outcomes: dict[str, int] = {}
        for s in states.values():
            outcomes[s] = outcomes.get(s, 0) + 1
        lat = sorted(self.latency_ms)
        return {
            "minutes": self.args.minutes, "rate_per_s": self.args.rate, "acknowledged": len(self.acknowledged),
            "submissions_refused": self.refused, "faults": len(self.faults),
            "faults_by_kind": {k: sum(1 for f in self.faults if f["kind"] == k) for k in ("rm", "nm", "am", "store")},
            "unknown_after": len(unknown), "not_ended_5min_after": len(pending), "ended_within_s": round(drained_s, 1),
            "outcomes": outcomes, "dag_tasks_finished_twice": twice, "over_capacity_samples": self.over_capacity,
            "container_processes_left": leftover,
            "accounting_samples_off": self.accounting, "accounting_at_end": accounted_at_end,
            "accounting_checks": self.accounting_checks, "accounting_rechecked": self.accounting_rechecked,
            "loop_lag_s": self.lag.summary(),
            "info_latency_ms": {"p50": round(statistics.median(lat), 1) if lat else None,
                                "p99": round(lat[int(0.99 * (len(lat) - 1))], 1) if lat else None,
                                "samples": len(lat)},
            "fault_log": self.faults,
        }


class LagBuckets:
    """The RM's loop-lag histogram, summed over its processes: a count that falls means the RM restarted, so the
    last scrape of the old process is banked."""

    def __init__(self) -> None:
        self.banked: dict[float, float] = {}
        self.last: dict[float, float] = {}

    @staticmethod
    def parse(text: str) -> dict[float, float]:
        out: dict[float, float] = {}
        for m in re.finditer(r'^shepherd_event_loop_lag_seconds_bucket\{le="([^"]+)"\} (\S+)$', text, re.MULTILINE):
            out[float(m.group(1))] = float(m.group(2))
        return out

    def scraped(self, text: str) -> None:
        now = self.parse(text)
        if not now:
            return
        if self.last and now.get(float("inf"), 0) < self.last.get(float("inf"), 0):
            for le, n in self.last.items():
                self.banked[le] = self.banked.get(le, 0) + n
        self.last = now

    def summary(self) -> dict[str, Any]:
        total = {le: self.banked.get(le, 0) + self.last.get(le, 0) for le in set(self.banked) | set(self.last)}
        n = total.get(float("inf"), 0)
        p99 = next((le for le in sorted(total) if n and total[le] >= 0.99 * n), None)
        return {"samples": int(n), "p99_le": p99, "over_1s": int(n - total.get(1.0, 0)) if n else 0}


def write_page(row: dict[str, Any], out: Path, command: str) -> None:
    end = row["accounting_at_end"]
    settled = (end["allocatedMB"], end["allocatedVirtualCores"], end["containersAllocated"]) == (0, 0, 0) \
        and not end["nodes_in_use"]
    ok = (row["unknown_after"] == 0 and row["not_ended_5min_after"] == 0 and not row["dag_tasks_finished_twice"]
          and not row["over_capacity_samples"] and row["container_processes_left"] == 0
          and not row["accounting_samples_off"] and settled)
    lines = [
        "# Soak: steady load with a fault every 30 s (S25-lite)",
        "",
        f"Produced by `{command}` on this 2-core machine ({time.strftime('%Y-%m-%d')}); `bench/soak.py` says how.",
        "",
        (f"* {row['minutes']} minutes at {row['rate_per_s']} submissions/s: {row['acknowledged']} acknowledged; "
        f"refused or failed submissions by error: {row['submissions_refused'] or 'none'}."),
        f"* {row['faults']} faults: {row['faults_by_kind']}.",
        (f"* I-LEDGER: {row['unknown_after']} acknowledged apps unknown afterwards; {row['not_ended_5min_after']} not "
        f"ended 5 minutes after the soak (all ended {row['ended_within_s']} s after it). Outcomes: {row['outcomes']}."),
        f"* I-NODUP: DAG tasks that finished twice: {row['dag_tasks_finished_twice'] or 'none'}.",
        f"* I-CAP: samples with a node over its capacity: {row['over_capacity_samples'] or 'none'}.",
        (f"* I-ACCT: {row.get('accounting_checks', '?')} checks found the cluster's allocated memory equal to the "
         f"sum of its nodes' ({row.get('accounting_rechecked', '?')} of them after a second sample, containers "
         f"having started or ended between the requests); checks that found no equal sample within 2.5 s: "
         f"{row['accounting_samples_off'] or 'none'}; once every app ended: {end['allocatedMB']} MB, "
         f"{end['allocatedVirtualCores']} vcores and {end['containersAllocated']} containers allocated, nodes "
         f"still in use: {end['nodes_in_use'] or 'none'}."),
        f"* I-ORPHAN: container processes left once every app ended: {row['container_processes_left']}.",
        (f"* The RM's event-loop lag (`shepherd_event_loop_lag_seconds`, every RM process of the soak): p99 "
        f"≤ {row['loop_lag_s']['p99_le']} s (the histogram bucket it falls in), {row['loop_lag_s']['over_1s']} of "
        f"{row['loop_lag_s']['samples']} samples over 1 s (target p99 ≤ 1 s)."),
        (f"* `/ws/v1/cluster/info` latency (an upper bound on the RM's event-loop lag): p50 "
        f"{row['info_latency_ms']['p50']} ms, p99 {row['info_latency_ms']['p99']} ms over "
        f"{row['info_latency_ms']['samples']} samples (target p99 ≤ 1 s)."),
        "",
        "Invariants: " + ("all held." if ok else "**some did not hold** (above)."),
        "",
        "| fault | at (s) | took (s) | detail |",
        "|---|---|---|---|",
        *[f"| {f['kind']} | {f['at_s']} | {f['took_s']} | {f['detail']} |" for f in row["fault_log"]],
        "",
    ]
    out.write_text("\n".join(lines))
    out.with_suffix(".json").write_text(json.dumps(row, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--rate", type=float, default=2.0)
    ap.add_argument("--fault-every", type=float, default=30.0)
    ap.add_argument("--dag-every", type=int, default=10)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "soak.md")
    ap.add_argument("--keep", type=Path, help="run in this directory and keep it (the daemons' logs, the marks)")
    args = ap.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        row = Soak(args.keep, args).run()
    else:
        with tempfile.TemporaryDirectory(prefix="shepherd-soak-") as tmp:
            row = Soak(Path(tmp), args).run()
    write_page(row, args.out, "python bench/soak.py " + " ".join(sys.argv[1:]))
    print(json.dumps({k: v for k, v in row.items() if k != "fault_log"}))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
