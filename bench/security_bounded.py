"""S19, huge and invalid requests, measured on a live local cluster: what each request of the catalogue gets, how
much the RM's memory grows, and whether other callers notice.

A local cluster (one RM, one NodeManager, real processes) serves three well-behaved callers, each a process of
its own calling every 50 ms: a REST client listing the apps, a gRPC client listing them, and an ApplicationMaster
heartbeating (``Allocate`` with no asks). An attacker process (``bench/s19_attacker.py``), holding credentials
(it is a cluster user with an AM of its own: the worst case, since it gets past authentication), sends the S19
catalogue of the reliability notes in a loop, one request after another, each built once beforehand so the
attacker's own CPU goes into sending:

* allocate with 100,000 asks (gRPC, and Hadoop IPC's ApplicationMasterProtocol), 100,001 releases, one ask
  of 1,000,001 containers, one of 1,000,000 containers of the node's whole memory (within the documented
  rule, so it is taken and waits), a resource above the maximum allocation, negative and overflowing values,
  a 10 MB AM checkpoint;
* submissions with a 10 MB name (gRPC, Hadoop IPC, REST), 100,000 tags (gRPC, REST), NaN, negative and
  2^64 resources (REST), JSON nested 100,000 deep, 50 MB bodies with and without a Content-Length (REST),
  a 50 MB gRPC message and a 50 MB Hadoop IPC call (SIMPLE, no credentials);
* a kill with 1 MB of diagnostics (gRPC) and, once per attack phase, an AM finishing with 1 MB of
  diagnostics (Hadoop IPC).

Baseline and attack phases alternate (B A B A ... B), so that the machine's other load falls on both alike.
Measured: per request kind the answers and how long they took; the RM's RSS (psutil, every 20 ms) before,
at its peak and after; the callers' latency p50/p99 under baseline and attack (pooled over the phases, and per
phase to show the noise); the RM's own scheduling-cycle, event-loop-lag and node-heartbeat histograms
(``/metrics``) per phase kind. At the end the RM is restarted on its store (it must recover every app) and
the stored diagnostics are checked against the 64 KB cap.

The attacker runs under SCHED_IDLE (and nice 19) by default: on this one machine its client-side work (pushing
50 MB bodies) would otherwise compete with the RM for the same two cores, which a remote attacker's would not.

How far one run can be trusted: each caller's baseline phases are also split in two alternate halves and the
p99 of one compared with the other's ("baseline halves"), a ratio that is noise alone. And the attack-phase
calls are split into those made while one of the attacker's requests was in flight and the others. The kinds
``control 4.0 MB to a sink, not the RM`` and ``control 5.6 MB to a sink, not the RM`` (sent only when named)
push the same bytes as the two 100,000-ask allocates to a process that drops them: what the machine itself pays
for traffic of that size, with no part of the RM in it.

    python bench/security_bounded.py [--rounds 6] [--phase-s 10] [--attacker-nice 19] [--interval S] \
        [--only "KIND|KIND"] [--json FILE]
    python bench/security_bounded.py --per-kind 4      # each kind alone, 4 s after 4 s of baseline
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import grpc
import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load.stats import quantile  # nearest rank, as the load harness reports
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.local import LocalCluster

APPS = "/ws/v1/cluster/apps"
CLIENT = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
MASTER = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
MB = 1024 * 1024
NODE_MEMORY_MB = 4096
VICTIM_PERIOD_S = 0.05
TARGET_RSS_MB = 50.0
TARGET_LATENCY = 1.2  # attack p50/p99 at most 20 % above baseline
DIAGNOSTICS_CAP = 64 * 1024


# ------------------------------------------------------------------------------------------ shared helpers
def token_dumping_am(rest: str, secret: str, token_file: Path, name: str) -> str:
    """Submit an app whose AM container writes its AMRM token to ``token_file`` and sleeps: whoever reads the
    file can act as that AM over gRPC. Returns the app id once the token is there."""
    headers = {"Authorization": f"Bearer {secret}"}
    with httpx.Client(base_url=rest, headers=headers, timeout=30) as http:
        app_id = http.post(f"{APPS}/new-application").json()["application-id"]
        tmp = token_file.with_suffix(".tmp")
        command = f'echo "$SHEPHERD_AMRM_TOKEN" > {tmp} && mv {tmp} {token_file} && exec sleep 3600'
        body = {"application-id": app_id, "application-name": name, "resource": {"memory": 256, "vCores": 1},
                "am-container-spec": {"commands": {"command": command}}}
        resp = http.post(APPS, json=body, params={"user.name": name})
        if resp.status_code != 202:
            raise RuntimeError(f"submitting {name}: {resp.status_code} {resp.text}")
    deadline = time.monotonic() + 60
    while not token_file.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the AM of {name} did not start within 60 s")
        time.sleep(0.1)
    return str(app_id)


def amrm_metadata(token_file: Path) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token_file.read_text().strip()}")]


def split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


SINK = """
import socket, sys, threading
def serve(conn):
    buf, n = bytearray(1 << 20), 0
    with conn:
        while (got := conn.recv_into(buf)):
            n += got
        conn.sendall(str(n).encode())
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""


# ------------------------------------------------------------------------------------------------- victims
class Victims:
    """Three well-behaved callers, each a process of its own (so that no caller waits on another's interpreter
    lock, nor on this process's RSS sampler and scrapes), each calling in a loop; every call's (monotonic time,
    latency) is kept. ``time.monotonic`` is the system's one monotonic clock, so the times line up with the
    phases this process marks."""

    NAMES = ("rest GET apps", "grpc GetApplications", "AM allocate heartbeat")

    def __init__(self, cluster: LocalCluster, am_token: Path) -> None:
        self.spec = {"rest": cluster.rest_url, "grpc": cluster.rm_address, "am_token": str(am_token)}
        self.samples: dict[str, list[tuple[float, float]]] = {name: [] for name in self.NAMES}
        self.errors: dict[str, int] = defaultdict(int)
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self) -> None:
        for name in self.NAMES:
            proc = subprocess.Popen([sys.executable, __file__, "--victim", json.dumps({**self.spec, "name": name})],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the caller {name!r} did not start")
            self.procs[name] = proc

    def halt(self) -> None:
        for name, proc in self.procs.items():
            out, _ = proc.communicate("quit\n", timeout=60)
            got = json.loads(out.strip().splitlines()[-1])
            self.samples[name] = [(t, x) for t, x in got["samples"]]
            for err, n in got["errors"].items():
                self.errors[f"{name}: {err}"] += n


def victim_main(spec: dict[str, Any]) -> None:
    """One caller's loop, until its parent writes a line (or closes stdin); then its samples, as JSON."""
    name = spec["name"]
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    http = httpx.Client(base_url=spec["rest"], timeout=30)
    channel = grpc.insecure_channel(spec["grpc"])
    client, am = pbg.ApplicationClientStub(channel), pbg.ApplicationMasterStub(channel)
    amrm = amrm_metadata(Path(spec["am_token"]))
    response_id = 0
    if name == "AM allocate heartbeat":
        am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(host="victim"), metadata=amrm)
    samples: list[tuple[float, float]] = []
    errors: dict[str, int] = defaultdict(int)
    print("ready", flush=True)
    while not stop.is_set():
        started = time.monotonic()
        try:
            if name == "rest GET apps":
                http.get(APPS).raise_for_status()
            elif name == "grpc GetApplications":
                client.GetApplications(pb.GetApplicationsRequest(), timeout=30)
            else:
                response_id = am.Allocate(pb.AllocateRequest(response_id=response_id, progress=0.5),
                                          metadata=amrm, timeout=30).response_id
        except (httpx.HTTPError, grpc.RpcError) as err:
            errors[type(err).__name__] += 1
        done = time.monotonic()
        samples.append((started, done - started))
        stop.wait(max(0.0, VICTIM_PERIOD_S - (done - started)))
    http.close()
    channel.close()
    print(json.dumps({"samples": samples, "errors": errors}), flush=True)


class RssSampler:
    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True, name="rss")

    def _loop(self) -> None:
        while not self.stop.is_set():
            try:
                self.samples.append((time.monotonic(), self.proc.memory_info().rss / MB))
            except psutil.Error:
                return
            self.stop.wait(0.02)

    def within(self, start: float, end: float) -> list[float]:
        return [v for t, v in self.samples if start <= t < end]


HISTOGRAMS = {"scheduling cycle": "shepherd_scheduling_cycle_seconds",
              "event-loop lag": "shepherd_event_loop_lag_seconds",
              "node heartbeat handling": "shepherd_node_heartbeat_seconds"}


def scrape(rest: str) -> dict[str, list[tuple[float, float]]]:
    """Each histogram's cumulative (upper bound, count) buckets."""
    text = httpx.get(f"{rest}/metrics", timeout=30).text
    out: dict[str, list[tuple[float, float]]] = {}
    for family in text_string_to_metric_families(text):
        if family.name in HISTOGRAMS.values():
            out[family.name] = [(float(s.labels["le"]), s.value) for s in family.samples
                                if s.name.endswith("_bucket")]
    return out


def bucket_quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """The upper bound of the bucket the q-quantile falls in (cumulative counts)."""
    total = buckets[-1][1] if buckets else 0
    if not total:
        return math.nan
    for bound, count in buckets:
        if count >= q * total:
            return bound
    return math.inf


# ---------------------------------------------------------------------------------------------------- run
def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="shepherd-s19-"))
    work.chmod(0o755)
    cluster = LocalCluster(work / "cluster", allow_root_containers=True,
                           nodes=1, grpc_port=0, rest_port=0, ipc_client_port=0,
                           ipc_scheduler_port=0, node_memory_mb=NODE_MEMORY_MB, node_vcores=4)
    attacker: subprocess.Popen[str] | None = None
    sink: subprocess.Popen[str] | None = None
    try:
        cluster.start()
        assert cluster.rm is not None
        assert cluster.rm.proc is not None
        rm_pid = cluster.rm.proc.pid
        sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
        assert sink.stdout is not None
        sink_address = f"127.0.0.1:{int(sink.stdout.readline())}"
        victim_token = work / "victim.amrm"
        token_dumping_am(cluster.rest_url, cluster.client_secret, victim_token, "alice")
        spec = {"rest": cluster.rest_url, "secret": cluster.client_secret, "grpc": cluster.rm_address,
                "ipc_client": cluster.ipc_client_address, "ipc_scheduler": cluster.ipc_scheduler_address,
                "hadoop_token": str(cluster.hadoop_token_path), "work": str(work), "interval": args.interval, "sink": sink_address,
                "idle": args.attacker_idle}
        nice = ["nice", "-n", str(args.attacker_nice)] if args.attacker_nice else []
        attacker = subprocess.Popen([*nice, sys.executable, "-m", "bench.s19_attacker", json.dumps(spec)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert attacker.stdin is not None
        assert attacker.stdout is not None
        ready = attacker.stdout.readline().strip()
        if not ready.startswith("ready "):
            raise RuntimeError("the attacker did not get ready")
        kinds = ["ipc AM finish with 1 MB diagnostics", *json.loads(ready.removeprefix("ready "))]

        rss = RssSampler(rm_pid)
        rss.thread.start()
        victims = Victims(cluster, victim_token)
        victims.start()
        time.sleep(args.warmup_s)
        phases: list[dict[str, Any]] = []
        metrics = scrape(cluster.rest_url)
        if args.per_kind:  # each kind alone, after a baseline of its own
            plan = [(phase, only) for k in kinds for phase, only in (("baseline", ""), ("attack", k))]
        else:
            plan = [*[("baseline", ""), ("attack", args.only)] * args.rounds]
        plan.append(("baseline", ""))
        for kind, only in plan:
            start = time.monotonic()
            if kind == "attack":
                attacker.stdin.write(f"attack {args.per_kind or args.phase_s} {only}".strip() + "\n")
                attacker.stdin.flush()
                if attacker.stdout.readline().strip() != "done":
                    raise RuntimeError("the attacker stopped")
            else:
                time.sleep(args.per_kind or args.phase_s)
            end = time.monotonic()
            now = scrape(cluster.rest_url)
            delta = {name: [(b, c - dict(metrics.get(name, [])).get(b, 0.0)) for b, c in buckets]
                     for name, buckets in now.items()}
            metrics = now
            phases.append({"kind": kind, "only": only, "start": start, "end": end, "histograms": delta})
        victims.halt()
        rss.stop.set()
        attacker.stdin.write("quit\n")
        attacker.stdin.flush()
        attacked = json.loads(attacker.stdout.read().strip().splitlines()[-1])
        attacker.wait(60)
        alive = cluster.alive()

        # what was stored: the diagnostics cut; then the RM restarted on its store recovers every app
        # read as the cluster's client (an anonymous reader gets other users' apps without their diagnostics)
        owner = {"Authorization": f"Bearer {cluster.client_secret}"}
        with httpx.Client(base_url=cluster.rest_url, headers=owner, timeout=30) as http:
            apps = {a["id"]: a for a in (http.get(APPS).json()["apps"] or {}).get("app", []) or []}
        diag = {app_id: len(apps[app_id]["diagnostics"]) for app_id in [*attacked["finished_apps"],
                                                                      attacked["killed_app"]] if app_id in apps}
        names = max((len(a["name"]) for a in apps.values()), default=0)
        tags = max((len(a.get("applicationTags", "").split(",")) for a in apps.values()), default=0)
        restart_started = time.monotonic()
        cluster.restart_rm()
        restart_s = time.monotonic() - restart_started
        with httpx.Client(base_url=cluster.rest_url, headers=owner, timeout=30) as http:
            after = {a["id"] for a in (http.get(APPS).json()["apps"] or {}).get("app", []) or []}
        return summarize(args, phases, victims, rss, attacked, alive=alive, diagnostics=diag, longest_name=names,
                         most_tags=tags, apps_before=len(apps), recovered=len(after & set(apps)),
                         restart_s=restart_s)
    finally:
        for proc in (attacker, sink):
            if proc is not None and proc.poll() is None:
                proc.kill()
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


def summarize(args: argparse.Namespace, phases: list[dict[str, Any]], victims: Victims, rss: RssSampler,
              attacked: dict[str, Any], **facts: Any) -> dict[str, Any]:
    def of(kind: str) -> list[dict[str, Any]]:
        return [p for p in phases if p["kind"] == kind]

    spans = [(s, e) for s, e in attacked["spans"]]  # the attacker's requests, sending to answer, in order
    callers: dict[str, Any] = {}
    for name, samples in victims.samples.items():
        row: dict[str, Any] = {}
        per_kind = {kind: [[(t, lat) for t, lat in samples if p["start"] <= t < p["end"]] for p in of(kind)]
                    for kind in ("baseline", "attack")}
        for kind, per in per_kind.items():
            lats = [[lat for _, lat in xs] for xs in per]
            pooled = [x for xs in lats for x in xs]
            row[kind] = {"n": len(pooled), "p50_ms": 1000 * quantile(pooled, 0.5),
                         "p99_ms": 1000 * quantile(pooled, 0.99),
                         "per_phase_p50_ms": [round(1000 * quantile(xs, 0.5), 2) for xs in lats],
                         "per_phase_p99_ms": [round(1000 * quantile(xs, 0.99), 2) for xs in lats]}
        row["p50_ratio"] = row["attack"]["p50_ms"] / row["baseline"]["p50_ms"]
        row["p99_ratio"] = row["attack"]["p99_ms"] / row["baseline"]["p99_ms"]
        # attack-phase calls that overlapped one of the attacker's requests (from its sending to its answer), and
        # those that did not: what the RM's handling of a request costs a caller in flight beside it, apart
        # from what the attack costs everyone else
        split: dict[bool, list[float]] = {True: [], False: []}
        for t, lat in (x for xs in per_kind["attack"] for x in xs):
            i = bisect.bisect_right(spans, (t + lat, math.inf))
            split[any(s < t + lat and e > t for s, e in spans[max(0, i - 3):i])].append(lat)
        for key, calls in (("attack_overlapping", split[True]), ("attack_apart", split[False])):
            row[key] = {"n": len(calls), "p50_ms": 1000 * quantile(calls, 0.5), "p99_ms": 1000 * quantile(calls, 0.99)}
        # the noise floor: the baseline phases split in two alternate halves, compared with each other as the
        # attack is compared with them all (no attack in either, so any ratio away from 1 is noise)
        halves = [[lat for xs in per_kind["baseline"][side::2] for _, lat in xs] for side in (0, 1)]
        row["baseline_halves_p99_ratio"] = quantile(halves[1], 0.99) / quantile(halves[0], 0.99)
        callers[name] = row
    histograms: dict[str, Any] = {}
    for label, name in HISTOGRAMS.items():
        row = {}
        for kind in ("baseline", "attack"):
            summed: dict[float, float] = defaultdict(float)
            for p in of(kind):
                for bound, count in p["histograms"].get(name, []):
                    summed[bound] += count
            buckets = sorted(summed.items())
            row[kind] = {"n": buckets[-1][1] if buckets else 0, "p50_le_s": bucket_quantile(buckets, 0.5),
                         "p99_le_s": bucket_quantile(buckets, 0.99)}
        histograms[label] = row
    first = of("baseline")[0]
    before = rss.within(first["start"], first["end"])
    during = [v for p in of("attack") for v in rss.within(p["start"], p["end"])]
    last = phases[-1]
    after = rss.within(last["start"], last["end"])
    memory: dict[str, Any] = {"before_mb": statistics.median(before), "peak_mb": max(during),
                              "after_mb": statistics.median(after), "baseline_peak_mb": max(before)}
    memory["growth_mb"] = memory["peak_mb"] - memory["before_mb"]
    # the highest RSS of each phase in turn: a leak climbs phase after phase, a high-water mark levels off
    memory["per_phase_peak_mb"] = [round(max(rss.within(p["start"], p["end"]), default=math.nan), 1) for p in phases]
    alone: dict[str, Any] = {}  # --per-kind: each kind against the baseline just before it
    for i, p in enumerate(phases):
        if p["kind"] != "attack" or not args.per_kind:
            continue
        base = phases[i - 1]

        def lat(phase: dict[str, Any]) -> list[float]:
            return [1000 * x for xs in victims.samples.values() for t, x in xs if phase["start"] <= t < phase["end"]]

        b_rss = rss.within(base["start"], base["end"])
        alone[p["only"]] = {"baseline_p99_ms": quantile(lat(base), 0.99), "attack_p99_ms": quantile(lat(p), 0.99),
                            "attack_max_ms": max(lat(p), default=math.nan),
                            "rss_growth_mb": max(rss.within(p["start"], p["end"]), default=math.nan)
                            - statistics.median(b_rss)}
    return {"per_kind": alone, "rounds": args.rounds, "phase_s": args.phase_s, "attacker_nice": args.attacker_nice,
            "attacker_idle": args.attacker_idle,
            "interval_s": args.interval, "only": args.only,
            "requests": attacked["kinds"], "memory": memory, "callers": callers, "rm_histograms": histograms,
            "victim_errors": dict(victims.errors), **facts}


def markdown(result: dict[str, Any]) -> str:
    if result["per_kind"]:
        lines = ["| request, alone | callers' p99 before | p99 during | slowest call during | RSS growth MB |",
                 "|---|---|---|---|---|"]
        for kind, r in result["per_kind"].items():
            lines.append(f"| {kind} | {r['baseline_p99_ms']:.1f} ms | {r['attack_p99_ms']:.1f} ms | "
                         f"{r['attack_max_ms']:.0f} ms | {r['rss_growth_mb']:.1f} |")
        return "\n".join(lines)
    lines = ["| request | answers | n | p50 to answer | slowest |", "|---|---|---|---|---|"]
    for kind, r in result["requests"].items():
        answers = ", ".join(f"{a} ×{n}" for a, n in sorted(r["answers"].items()))
        lines.append(f"| {kind} | {answers} | {r['n']} | {1000 * r['p50_s']:.1f} ms | {1000 * r['max_s']:.0f} ms |")
    m = result["memory"]
    lines += ["", "| RM RSS | MB |", "|---|---|", f"| before (median of the first baseline) | {m['before_mb']:.1f} |",
              f"| peak during the attack phases | {m['peak_mb']:.1f} |",
              f"| growth (peak − before) | {m['growth_mb']:.1f} |",
              f"| after (median of the last baseline) | {m['after_mb']:.1f} |",
              f"| each phase's peak, B A B A ... B | {' '.join(map(str, m['per_phase_peak_mb']))} |"]
    lines += ["", ("| caller | baseline p50 | attack p50 | ratio | baseline p99 | attack p99 | ratio | "
                   "p99 ratio, baseline halves | per-phase p99 baseline / attack (ms) |"),
              "|---|---|---|---|---|---|---|---|---|"]
    for name, r in result["callers"].items():
        b, a = r["baseline"], r["attack"]
        lines.append(f"| {name} | {b['p50_ms']:.1f} ms | {a['p50_ms']:.1f} ms | {r['p50_ratio']:.2f} | "
                     f"{b['p99_ms']:.1f} ms | {a['p99_ms']:.1f} ms | {r['p99_ratio']:.2f} | "
                     f"{r['baseline_halves_p99_ratio']:.2f} | "
                     f"{' '.join(map(str, b['per_phase_p99_ms']))} / {' '.join(map(str, a['per_phase_p99_ms']))} |")
    lines += ["", ("| caller, attack phases | calls beside an attacker's request: n, p50, p99 | the other calls: n, p50, "
                   "p99 |"), "|---|---|---|"]
    for name, r in result["callers"].items():
        o, a = r["attack_overlapping"], r["attack_apart"]
        lines.append(f"| {name} | {o['n']}, {o['p50_ms']:.1f} ms, {o['p99_ms']:.1f} ms | "
                     f"{a['n']}, {a['p50_ms']:.1f} ms, {a['p99_ms']:.1f} ms |")
    lines += ["", "| RM histogram | baseline p50 ≤ | attack p50 ≤ | baseline p99 ≤ | attack p99 ≤ | n (b/a) |",
              "|---|---|---|---|---|---|"]
    for label, r in result["rm_histograms"].items():
        b, a = r["baseline"], r["attack"]
        lines.append(f"| {label} | {b['p50_le_s'] * 1000:g} ms | {a['p50_le_s'] * 1000:g} ms | "
                     f"{b['p99_le_s'] * 1000:g} ms | {a['p99_le_s'] * 1000:g} ms | {b['n']:.0f}/{a['n']:.0f} |")
    lines += ["", (f"RM alive after the attack: {result['alive']}; apps {result['apps_before']}, recovered after "
                   f"a restart {result['recovered']} ({result['restart_s']:.1f} s); longest stored name "
                   f"{result['longest_name']} characters, most tags {result['most_tags']}; stored diagnostics "
                   f"(characters): {sorted(set(result['diagnostics'].values()))}; victim errors: "
                   f"{result['victim_errors'] or 'none'}")]
    worst = max(max(r["p50_ratio"], r["p99_ratio"]) for r in result["callers"].values())
    stored = max(result["diagnostics"].values(), default=0)
    lines += ["", (f"targets: RSS growth {m['growth_mb']:.0f} MB at the peak, "
                   f"{m['after_mb'] - m['before_mb']:.0f} MB after (≤ {TARGET_RSS_MB:g}); callers' worst "
                   f"attack/baseline ratio {worst:.2f} (≤ {TARGET_LATENCY:g}); stored diagnostics {stored} "
                   f"characters (≤ {DIAGNOSTICS_CAP})")]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6, help="baseline/attack pairs")
    ap.add_argument("--phase-s", type=float, default=10.0, help="seconds of each phase")
    ap.add_argument("--warmup-s", type=float, default=5.0)
    ap.add_argument("--attacker-nice", type=int, default=19, help="the attacker's niceness (0: as the RM)")
    ap.add_argument("--attacker-idle", action=argparse.BooleanOptionalAction, default=True,
                    help="run the attacker under SCHED_IDLE (default): it gets a core only when nothing else wants "
                         "one, as a remote attacker's own work would not take this machine's")
    ap.add_argument("--per-kind", type=float, default=0.0, metavar="S",
                    help="instead: each request kind alone for S seconds, after S seconds of baseline")
    ap.add_argument("--interval", type=float, default=0.0, metavar="S",
                    help="the attacker waits S seconds after each request (default: none, a flood)")
    ap.add_argument("--only", default="", metavar="KIND|KIND",
                    help="attack with these request kinds only (their names as the table gives them)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--victim", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.victim:
        victim_main(json.loads(args.victim))
        return
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str))
    print(markdown(result))


if __name__ == "__main__":
    main()
