"""Restarts and failures (fault scenarios of the reliability notes), repeated, with the invariants checked after
each run. Writes ``docs/results/reliability.md``. S1/S2 (RM restarts) are below; S4–S9 are in
``reliability_scenarios.py``, and S7 with a real network partition (``S7net-5``, ``S7net-25``) in
``reliability_netns.py``.

One run: a local cluster (4 NodeManagers, real processes), ``--apps`` DAG jobs of sleep tasks (two stages of two
tasks); once every app's first stage runs, the RM is stopped with SIGKILL (S1) or SIGTERM (S2) and started
again on its store (SQLite, or a fresh PostgreSQL database). Measured per run:

* apps lost (known before, unknown after) and apps not ending SUCCEEDED in one attempt;
* the task and AM containers running before the stop, and how many of them still run afterwards in the same
  process under the same id (kept), and how many recovery killed (ended with -106/-100 or a diagnostic naming
  the restart);
* seconds from the stop to REST and gRPC serving again, and to the first container of the new RM epoch running
  (scheduling resumed);
* tasks that ran more than once (each task appends a line to its own file: I-NODUP).

Scheduling resumed is measured with a probe: right after gRPC and REST answer, a one-container app is
submitted, and the clock stops when its AM container (named with the new RM epoch) runs.

    python bench/bench_reliability.py [--reps 10] [--fault-reps 3] [--scenarios S1,S2,S4,S5,S6,S7-5,S7-25,S7net-5,S7net-25,S8,S9] \
        [--stores sqlite,postgresql] [--apps 10] [--merge] [--out docs/results/reliability.md]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import psutil
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from proto import shepherd_pb2 as pb
from rm.client import ClientError, RMClient
from rm.local import LocalCluster

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
TASK_S = 14.0


def fresh_pg() -> tuple[str, Any]:
    import psycopg

    name = f"shepherd_rel_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", drop


def processes(cluster_ts: str) -> dict[str, int]:
    """container id → pid of every running container process of this cluster (its sleep tasks and DAG AMs)."""
    found: dict[str, int] = {}
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            cmd = " ".join(p.info["cmdline"] or [])
            if p.info["name"] != "sleep" and "am.dag" not in cmd:
                continue
            cid = p.environ().get("CONTAINER_ID", "")
            if cluster_ts in cid:
                found[cid] = p.info["pid"]
    return found


def wait(pred: Any, timeout: float, what: str) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with contextlib.suppress(ClientError, OSError):
            got = pred()
            if got:
                return got
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def one_run(work: Path, store: str, sig: signal.Signals, apps: int) -> dict[str, Any]:
    store_url, drop = fresh_pg() if store == "postgresql" else (None, None)
    marks = work / "marks"
    marks.mkdir(mode=0o777, parents=True)
    marks.chmod(0o777)
    stage = {"tasks": 2, "memory_mb": 128, "vcores": 1, "duration_s": TASK_S,
             "command": f"echo {{attempt}} >> {marks}/{{job}}-{{stage}}-{{task}}; sleep {TASK_S:g}"}
    cluster = LocalCluster(work / "cluster", allow_root_containers=True,
                           nodes=4, node_vcores=8, grpc_port=0, rest_port=0, ipc_client_port=0,
                           ipc_scheduler_port=0, store_url=store_url)
    try:
        cluster.start()
        submits = []
        for i in range(apps):
            job = {"id": f"job{i}", "stages": [{"name": "s0", **stage}, {"name": "s1", "parents": ["s0"], **stage}]}
            path = work / f"job{i}.yaml"
            path.write_text(yaml.safe_dump(job))
            submits.append(subprocess.Popen(
                [sys.executable, "-m", "rm.cli", "submit", str(path), "--rm", cluster.rm_address, "--data-dir",
                 str(work)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        app_ids = []
        for proc in submits:
            out = proc.communicate(timeout=120)[0]
            m = re.search(r"(application_(\d+)_\d+)", out)
            if m is None:
                raise RuntimeError(f"submission failed: {out}")
            app_ids.append(m.group(1))
        cluster_ts = re.search(r"application_(\d+)_", app_ids[0]).group(1)  # type: ignore[union-attr]
        # every app's AM and both first-stage tasks run
        before = wait(lambda: len(p := processes(cluster_ts)) >= 3 * apps and p, 120, "every first stage")
        with RMClient(cluster.rm_address) as client:
            known = {a.application_id for a in client.apps()}
        stopped = time.monotonic()
        assert cluster.rm is not None
        cluster.rm.signal(sig)
        cluster.rm.stop()
        cluster.start_rm()
        rest_url = cluster.rest_url
        with RMClient(cluster.rm_address) as client:
            wait(lambda: client.apps(), 30, "gRPC")
            grpc_s = time.monotonic() - stopped
            wait(lambda: urllib.request.urlopen(f"{rest_url}/ws/v1/cluster/info", timeout=2).status == 200,
                 30, "REST")
            rest_s = time.monotonic() - stopped
            after_stop = processes(cluster_ts)
            kept = sum(1 for cid, pid in before.items() if after_stop.get(cid) == pid)
            # scheduling resumed: a probe app submitted now gets its AM container (of the new epoch) running
            probe = client.new_application()
            client.submit(pb.ApplicationSubmissionContext(
                application_id=probe, name="probe", queue="default", application_type="YARN",
                am_resource=pb.Resource(values={"memory-mb": 128, "vcores": 1}),
                am_container_spec=pb.ContainerLaunchContext(commands=["sleep 3"])))
            wait(lambda: any("container_e" in c for c in processes(cluster_ts)), 120, "the probe's AM to run")
            resumed_s = time.monotonic() - stopped
            finals = {}
            for app_id in app_ids:
                rep = wait(lambda a=app_id: (r := client.app(a)).state in ("FINISHED", "FAILED", "KILLED") and r,
                           240, f"{app_id} to end")
                finals[app_id] = (rep.final_status, rep.attempts)
            lost = len(known - {a.application_id for a in client.apps()})
            killed_by_recovery = 0
            for app_id in app_ids:
                for c in client.containers(app_id):
                    if c.container_id in before and (c.exit_status in (-106, -100) or
                                                     "ResourceManager restarted" in c.diagnostics):
                        killed_by_recovery += 1
        runs = {f.name: len(f.read_text().split()) for f in marks.iterdir()}
        return {
            "store": store, "signal": sig.name, "apps": apps, "lost": lost,
            "not_succeeded_once": sum(1 for s, n in finals.values() if s != "SUCCEEDED" or n != 1),
            "running_before": len(before), "kept": kept, "killed_by_recovery": killed_by_recovery,
            "grpc_s": round(grpc_s, 2), "rest_s": round(rest_s, 2), "resumed_s": round(resumed_s, 2),
            "tasks_run_twice": sum(1 for n in runs.values() if n > 1), "tasks": len(runs),
        }
    finally:
        cluster.stop()
        if drop is not None:
            drop()


TARGETS = {
    "S4": "takeover ≤ lease + 5 s after a SIGKILL of the active; a paused old active makes 0 store writes and "
          "steps down ≤ 2 s after its first refused write; nothing lost, no container doubled",
    "S5": "running containers kept with the same pids, exits during the outage reported with the right codes "
          "≤ 2 heartbeats after re-registration, 0 duplicate launches, the node never LOST",
    "S6": "LOST at the expiry ± 2 s; its containers reported ≤ 2 s later",
    "S7-5s": "a partition shorter than the expiry changes nothing",
    "S7-25s": "LOST at the expiry ± 2 s; no task of the lost node still running 2 heartbeats after it reconnects; "
              "the window in which an old and a replacement copy ran together is reported",
    "S7net-5s": "a partition of the network shorter than the expiry changes nothing",
    "S7net-25s": "LOST at the expiry ± 2 s; its containers reported ≤ 2 s later; no task of the lost node still "
                 "running 2 heartbeats after it reconnects; the window in which an old and a replacement copy ran "
                 "together is reported",
    "S7net-5s-stop": "with stop-on-disconnect, a partition of the network shorter than the expiry changes "
                     "nothing",
    "S7net-25s-stop": "with stop-on-disconnect, the same as S7net-25s, and the old copies stop when the node is "
                      "declared LOST, before their replacements start",
    "S8": "a new attempt ≤ 3 s; with keep-containers 100% of running containers handed over",
    "S9": "a new attempt ≤ 3 s after the AM expiry; 100% of the stale attempt's calls refused",
}


def scenario_of(row: dict[str, Any]) -> str:
    return str(row.get("scenario") or ("S1" if row.get("signal") == "SIGKILL" else "S2"))


READING = "## Reading the figures"


def _reading(page: Path) -> list[str]:
    """The page's hand-written reading of the figures (from its READING heading to the closing line), kept
    when the tables are written again."""
    if not page.exists() or READING not in (text := page.read_text()):
        return []
    section = text[text.index(READING):].split("Every run's figures:")[0].rstrip()
    return [*section.splitlines(), ""]


def write_page(rows: list[dict[str, Any]], out: Path, command: str) -> None:
    restarts = [r for r in rows if scenario_of(r) in ("S1", "S2")]
    lines = [
        "# Reliability: restarts and failures",
        "",
        (f"Produced by `{command}` on this 2-core machine ({time.strftime('%Y-%m-%d')}), with other work running. "
        "`docs/recovery.md` and `docs/nodemanager-recovery.md` explain the mechanisms; the scenarios and their "
        "targets are those of the reliability notes (§8)."),
        "",
        "## S1/S2: the RM stopped mid-workload",
        "",
        (f"Each run: 4 NodeManagers, {restarts[0]['apps'] if restarts else 0} DAG jobs of sleep tasks (two stages "
         f"of two {TASK_S:g} s tasks); the RM is stopped once every first stage runs (SIGKILL: S1, SIGTERM: S2), "
         "then started again on its store."),
        "",
        ("| store | signal | runs | apps lost | apps not SUCCEEDED in 1 attempt | containers kept | killed by "
         "recovery | gRPC back (s, max) | REST back (s, max) | scheduling resumed (s, max) | tasks run twice |"),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in restarts:
        groups.setdefault((r["store"], r["signal"]), []).append(r)
    for (store, sig), rs in sorted(groups.items()):
        before = sum(r["running_before"] for r in rs)
        kept = sum(r["kept"] for r in rs)
        lines.append(
            f"| {store} | {sig} | {len(rs)} | {sum(r['lost'] for r in rs)} | "
            f"{sum(r['not_succeeded_once'] for r in rs)} | {kept}/{before} ({100 * kept / max(1, before):.0f}%) | "
            f"{sum(r['killed_by_recovery'] for r in rs)} | {max(r['grpc_s'] for r in rs):.1f} | "
            f"{max(r['rest_s'] for r in rs):.1f} | {max(r['resumed_s'] for r in rs):.1f} | "
            f"{sum(r['tasks_run_twice'] for r in rs)} of {sum(r['tasks'] for r in rs)} |")
    if restarts:
        med = statistics.median(r["rest_s"] for r in restarts)
        lines += ["", (
            "Targets: 0 apps lost; 100% of running containers and AMs kept, 0 killed by recovery; REST and gRPC "
            f"serving ≤ 5 s after the stop, scheduling resumed ≤ 5 s later; no finished task run twice. Median REST "
            f"back: {med:.1f} s. \"Scheduling resumed\" runs from the stop until a probe app, submitted once the RM "
            "answers, has its AM container running.")]
    others: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if scenario_of(r) not in ("S1", "S2"):
            others.setdefault(scenario_of(r), []).append(r)
    for name, rs in sorted(others.items()):
        keys = [k for k in rs[0] if k != "scenario"]
        lines += ["", f"## {name}", "", f"Target: {TARGETS.get(name, '')}.", "",
                  "| run | " + " | ".join(k.replace("_", " ") for k in keys) + " |",
                  "|---|" + "---|" * len(keys)]
        for n, r in enumerate(rs, 1):
            lines.append(f"| {n} | " + " | ".join(str(r.get(k, "")) for k in keys) + " |")
    lines += ["", *_reading(out), "Every run's figures: `docs/results/reliability.json`.", ""]
    out.write_text("\n".join(lines))
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=10, help="runs of each S1/S2 combination")
    ap.add_argument("--fault-reps", type=int, default=3, help="runs of each other scenario")
    ap.add_argument("--scenarios", default="S1,S2,S4,S5,S6,S7-5,S7-25,S7net-5,S7net-25,S8,S9")
    ap.add_argument("--stores", default="sqlite,postgresql")
    ap.add_argument("--apps", type=int, default=10)
    ap.add_argument("--merge", action="store_true", help="keep the rows of scenarios not run now from the JSON")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "reliability.md")
    args = ap.parse_args()
    from reliability_netns import PARTITIONS
    from reliability_scenarios import SCENARIOS

    scenarios = {**SCENARIOS, **PARTITIONS}

    wanted = args.scenarios.split(",")
    rows: list[dict[str, Any]] = []
    signals = [signal.SIGKILL] * ("S1" in wanted) + [signal.SIGTERM] * ("S2" in wanted)
    for _rep in range(args.reps if signals else 0):
        for store in args.stores.split(","):
            for sig in signals:
                with tempfile.TemporaryDirectory(prefix="shepherd-rel-") as tmp:
                    row = one_run(Path(tmp), store, sig, args.apps)
                rows.append(row)
                print(json.dumps(row), flush=True)
    for name in wanted:
        if name in ("S1", "S2"):
            continue
        for _rep in range(args.fault_reps):
            with tempfile.TemporaryDirectory(prefix="shepherd-rel-") as tmp:
                row = scenarios[name](Path(tmp))
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.merge and args.out.with_suffix(".json").exists():
        ran = {scenario_of(r) for r in rows}
        kept = [r for r in json.loads(args.out.with_suffix(".json").read_text()) if scenario_of(r) not in ran]
        rows = kept + rows
    command = "python bench/bench_reliability.py " + " ".join(sys.argv[1:])
    write_page(rows, args.out, command.strip())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
