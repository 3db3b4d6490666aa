"""Every read command of the CLI against one live cluster (a running job, a reservation, an SLO proposal from
seeded run history): ``-o wide`` prints the table with its extra columns, ``-o json`` still prints the REST
API's objects, and ``--watch`` prints one YAML document per update (each command in this process, stopped at
its second wait; a few as their own processes into a pipe, stopped with Ctrl-C)."""

from __future__ import annotations

import json
import math
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from am.policies.jockey.profile import StageRun
from common.resources import Resources
from rm import cli
from rm.commands import output
from rm.core import job_profiles
from rm.core.records import JobRunRecord
from rm.service.store import Store, default_sqlite_url
from tests.e2e.conftest import sleep_job, submit_job, wait_until, write_job

pytestmark = pytest.mark.slow

DAY = 86_400


def seed_history(cluster_dir: Path) -> None:
    """Five daily runs of ``nightly`` in the store the cluster's RM will open: enough for an SLO proposal."""
    today = math.floor(time.time() / DAY) * DAY
    runs = [JobRunRecord(app_id=f"application_1000_{n:04d}", job="nightly", queue="root.default", user="etl",
                         submit_time=start, start_time=start + 30, finish_time=start + 330, succeeded=True,
                         skyline=(2.0, 3.0, 2.0), unit={"memory-mb": 256, "vcores": 1}, step_s=60)
            for n, start in enumerate(today - (5 - d) * DAY + 2 * 3600 for d in range(5))]
    # and the same runs' per-stage reports, which make the job's profile
    unit = Resources.of(memory_mb=256, vcores=1)
    report = job_profiles.check_report([StageRun("extract", 2, (55.0, 65.0), attempts=2, container=unit),
                                        StageRun("load", 1, (170.0,), parents=("extract",), container=unit)])
    stages = [job_profiles.record_of(r.app_id, r.job, r.queue, r.user, r.finish_time, True, report) for r in runs]
    store = Store(default_sqlite_url(cluster_dir / "rm"))  # where LocalCluster's RM keeps its SQLite store
    try:
        store.migrate()
        store.write([*runs, *stages])
    finally:
        store.close()


@dataclass(frozen=True)
class Read:
    """A read command: its words, what -o wide prints that the table does not (``extra``; else words of the
    table, where -o wide is the table), and what its -o json must hold."""
    args: tuple[str, ...]
    wide: tuple[str, ...]
    holds: Callable[[Any], bool]
    extra: bool = True


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli.app, list(args))
    assert result.exit_code == 0, f"shepherd {' '.join(args)}: {result.output}"
    return result.output


def watched_here(monkeypatch: pytest.MonkeyPatch, *args: str) -> list[Any]:
    """The YAML documents ``args --watch`` prints in this process when Ctrl-C comes during its second wait."""
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(output, "time", SimpleNamespace(sleep=wait, strftime=time.strftime))
        printed = invoke(*args, "-o", "yaml", "--watch", "--interval", "5")
    assert waits == [5.0, 5.0]
    return list(yaml.safe_load_all(printed))


def watch(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "rm.cli", *args, "--watch", "--interval", "0.3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def documents(proc: subprocess.Popen[str], separator: str, wanted: int, timeout: float) -> str:
    """Read a watching command's output until it has started ``wanted`` + 1 documents, then Ctrl-C it; the
    complete documents (exit 0 asserted)."""
    lines: queue.Queue[str] = queue.Queue()
    out = proc.stdout
    assert out is not None

    def pump() -> None:
        for line in out:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while sum(1 for line in seen if re.match(separator, line)) < wanted and time.monotonic() < deadline:
        try:
            seen.append(lines.get(timeout=max(0.0, deadline - time.monotonic())))
        except queue.Empty:
            break
    proc.send_signal(signal.SIGINT)
    assert proc.wait(20) == 0, proc.stderr.read() if proc.stderr else ""
    cut = [i for i, line in enumerate(seen) if re.match(separator, line)]
    assert len(cut) >= wanted, f"{proc.args!r}: {''.join(seen)}"
    return "".join(seen[:cut[wanted - 1]])


def test_every_read_command_prints_wide_json_and_watches(  # type: ignore[no-untyped-def]
        make_cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_history(tmp_path / "cluster0")  # make_cluster's first cluster lives there
    cluster = make_cluster(nodes=1)
    rm, rest = ("--rm", cluster.rm_address), ("--rest", cluster.rest_url)
    app_id = submit_job(cluster, write_job(tmp_path, sleep_job("sleeper", 120, tasks=1)), tmp_path)
    wait_until(lambda: httpx.get(f"{cluster.rest_url}/ws/v1/cluster/apps/{app_id}").json()["app"]["state"]
               == "RUNNING", 60, "the job to run")
    made = invoke("reservation", "create", "--queue", "default", "--name", "nightly-window", "--deadline", "+2h",
                  "--stage", "containers=1,duration=10m,memory=256", *rest)
    rid = made.split()[1]
    node = cluster.node_ids[0]

    reads = [
        Read(("apps", *rm), ("PRIORITY", "FAIR SHARE", "CONTAINERS", "PENDING", "STARTED", "ELAPSED", "AM HOST"),
             lambda d: [a["id"] for a in d] == [app_id]),
        Read(("app", "list", *rm), ("PRIORITY", "FAIR SHARE", "ELAPSED", "AM HOST"),
             lambda d: [a["id"] for a in d] == [app_id]),
        Read(("app", "status", app_id, *rm, *rest), ("am host", "launched", "elapsed", "aggregate usage"),
             lambda d: d["id"] == app_id and d["appAttempts"]),
        Read(("app", "attempts", app_id, *rm), ("FINISHED", "NODE HTTP"),
             lambda d: d[0]["appAttemptId"].startswith("appattempt_")),
        Read(("app", "containers", app_id, *rm), ("FINISHED", "ELAPSED", "DIAGNOSTICS"),
             lambda d: d and all(c["containerId"].startswith("container_") for c in d)),
        Read(("app", "explain", app_id, *rest), ("reason", "used / fair share"), lambda d: d["appId"] == app_id,
             extra=False),
        Read(("app", "slo", app_id, *rest), ("status", "predicted finish"), lambda d: d["id"] == app_id,
             extra=False),
        Read(("nodes", *rm), ("RACK", "AVAILABLE", "HEALTH UPDATED"), lambda d: [n["id"] for n in d] == [node]),
        Read(("node", "list", *rm), ("RACK", "AVAILABLE", "HEALTH UPDATED"), lambda d: [n["id"] for n in d] == [node]),
        Read(("node", "status", node, *rm), ("rack", "last health update"), lambda d: d["id"] == node,
             extra=False),
        Read(("queue", "status", *rm), ("weight",), lambda d: d["path"] == "root"),
        Read(("deadlines", *rest), ("USER", "STATE", "ESTIMATE", "EARLIEST FINISH"), lambda d: d == []),
        Read(("slo", "list", *rest), ("QUEUE", "USER", "STEP", "CONTAINER-S", "DECIDED BY"),
             lambda d: [p["job"] for p in d] == ["nightly"]),
        Read(("slo", "show", "nightly", *rest), ("reasons:", "skyline"), lambda d: d["job"] == "nightly",
             extra=False),
        Read(("reservation", "list", *rest), ("ACCEPTED", "PRIORITY", "HOLDS NOW"),
             lambda d: [r["reservation-id"] for r in d] == [rid]),
        Read(("reservation", "show", rid, *rest), ("nightly-window", "allocation"),
             lambda d: d["reservation-id"] == rid, extra=False),
        Read(("job", "profile", "nightly", *rest), ("per stage", "extract", "load"),
             lambda d: d["job"] == "nightly" and [st["name"] for st in d["stages"]] == ["extract", "load"],
             extra=False),
        Read(("sampling", *rest), ("RATIO", "JOBS SAMPLED", "SCORE"),
             lambda d: d["rule"] == "adaptive" and [r["ratio"] for r in d["ratios"]] == [0.01, 0.02, 0.03, 0.04, 0.05],
             extra=False),
        Read(("admin", "service-state", *rest), ("ID", "VERSION", "STARTED"),
             lambda d: d[0]["url"] == cluster.rest_url and d[0]["clusterInfo"]["haState"] == "ACTIVE"),
    ]
    from tests.unit.test_cli_output import READ_COMMANDS

    assert {" ".join(w for w in r.args[:2] if not w.startswith("-") and w not in (app_id, node))
            for r in reads} == READ_COMMANDS  # every read command is checked here

    for r in reads:
        table = invoke(*r.args)
        wide = invoke(*r.args, "-o", "wide")
        for header in r.wide:
            assert header in wide, f"{r.args}: {header!r} not in\n{wide}"
        if r.extra:  # the table has none of them
            assert not [h for h in r.wide if re.search(rf"\b{re.escape(h)}\b", table)], f"{r.args}:\n{table}"
        assert r.holds(json.loads(invoke(*r.args, "-o", "json"))), r.args
        docs = watched_here(monkeypatch, *r.args)
        assert len(docs) == 2, r.args
        assert all(r.holds(d) for d in docs), (r.args, docs)

    piped = {r.args: watch([*r.args, "-o", "yaml"]) for r in reads  # over gRPC, over REST, several RMs' REST
             if r.args[:2] in (("app", "containers"), ("slo", "list"), ("admin", "service-state"))}
    wide_watch = watch(["apps", *rm, "-o", "wide"])
    for r in reads:
        if r.args in piped:
            docs = list(yaml.safe_load_all(documents(piped[r.args], r"^---$", 2, 60)))
            assert len(docs) == 2, r.args
            assert all(r.holds(d) for d in docs), (r.args, docs)
    updates = documents(wide_watch, r"^─+ \d\d:\d\d:\d\d ─+$", 2, 60)  # a time rule before each next table
    assert updates.count(app_id) == 2
    assert updates.count("AM HOST") == 2
