"""An active/standby pair of ResourceManagers on one PostgreSQL store: the standby serves only its web port
(STANDBY, redirects), takes over when the active one dies, and the NodeManagers, the AM and `submit --wait`
follow it without a manual step; the running job keeps its containers. A paused old active that wakes up after
being replaced writes nothing and stops."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from rm.client import RMClient
from rm.local import Daemon
from tests.e2e.conftest import fresh_pg_database, wait_final, wait_until, write_job
from tests.e2e.test_rm_restart import _task_processes

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LEASE_S = 4.0
STANDING_BY = re.compile(r"standing by")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, dict[str, object], str]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=5) as r:
            return r.status, json.loads(r.read() or b"{}"), ""
    except urllib.error.HTTPError as e:
        return e.code, {}, e.headers.get("Location", "")


def test_the_standby_takes_over_and_everyone_follows(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store_url, drop = fresh_pg_database()
    grpc_a, grpc_b, rest_a, rest_b = (_free_port() for _ in range(4))
    pair = f"127.0.0.1:{grpc_a},127.0.0.1:{grpc_b}"
    conf = tmp_path / "ha.yaml"
    conf.write_text(f"yarn.resourcemanager.ha.enabled: true\nshepherd.resourcemanager.ha.grpc-addresses: '{pair}'\n"
                    f"shepherd.resourcemanager.store.lease-ms: {int(LEASE_S * 1000)}\n")
    marks = tmp_path / "marks"
    marks.mkdir(mode=0o777)
    marks.chmod(0o777)
    stage = {"tasks": 2, "memory_mb": 128, "vcores": 1, "duration_s": 12,
             "command": f"echo {{attempt}} >> {marks}/{{stage}}-{{task}}; sleep 12"}
    job = {"id": "followed", "stages": [{"name": "s0", **stage}, {"name": "s1", "parents": ["s0"], **stage}]}
    standby: list[Daemon] = []

    def rm_daemon(name: str, grpc_port: int, rest_port: int, ready: re.Pattern[str]) -> Daemon:
        args = [sys.executable, "-m", "rm.cli", "rm", "--grpc-port", str(grpc_port), "--rest-port", str(rest_port),
                "--data-dir", str(tmp_path / name), "--store-url", store_url, "--config", str(conf),
                "--credentials", str(cluster.credentials_path), "--ipc-client-port", "-1",
                "--ipc-scheduler-port", "-1"]
        d = Daemon(name, args, tmp_path / "logs" / f"{name}.log", ready)
        standby.append(d)
        return d

    try:
        cluster = make_cluster(nodes=0, grpc_port=grpc_a, rest_port=rest_a, store_url=store_url,
                               rm_args=["--config", str(conf)], ipc_client_port=-1, ipc_scheduler_port=-1)
        b = rm_daemon("rm-b", grpc_b, rest_b, STANDING_BY)
        b.start()
        status, body, _ = _get(f"http://127.0.0.1:{rest_b}/ws/v1/cluster/info")
        assert status == 200
        assert body["clusterInfo"]["haState"] == "STANDBY"  # type: ignore[index]
        states = subprocess.run([sys.executable, "-m", "rm.cli", "admin", "service-state", "--rest",
                                 f"{cluster.rest_url},http://127.0.0.1:{rest_b}"], capture_output=True, text=True,
                                check=False)
        assert states.returncode == 0, states.stdout + states.stderr
        rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in states.stdout.splitlines()
                if line.count("│") >= 3}
        assert rows == {cluster.rest_url: "active", f"http://127.0.0.1:{rest_b}": "standby"}, states.stdout
        status, _, location = _get(f"http://127.0.0.1:{rest_b}/ws/v1/cluster/apps?states=RUNNING")
        assert status == 307
        assert location == f"{cluster.rest_url}/ws/v1/cluster/apps?states=RUNNING"

        cluster.rm_address = pair  # the NodeManagers know both RMs
        cluster.num_nodes = 2
        for i in range(2):
            cluster.start_nm(i)
        waiting = subprocess.Popen(
            [sys.executable, "-m", "rm.cli", "submit", str(write_job(tmp_path, job)), "--rm", pair,
             "--data-dir", str(tmp_path), "--wait"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert waiting.stdout is not None
        first = waiting.stdout.readline()
        m = re.search(r"(application_\d+_\d+)", first)
        assert m, first + waiting.communicate(timeout=30)[0]
        app_id = m.group(1)
        seq = app_id.removeprefix("application_")
        tasks = wait_until(lambda: len(t := _task_processes(seq)) == 2 and t, 60, "both first-stage tasks")

        # the active RM dies: the standby takes over, and the NodeManagers, the AM and the client follow
        assert cluster.rm is not None
        killed_at = time.monotonic()
        cluster.rm.signal(signal.SIGKILL)
        wait_until(lambda: "resourcemanager ready" in (tmp_path / "logs" / "rm-b.log").read_text(),
                   LEASE_S + 10, "the standby to become active")
        takeover_s = time.monotonic() - killed_at
        assert takeover_s <= LEASE_S + 5
        status, body, _ = _get(f"http://127.0.0.1:{rest_b}/ws/v1/cluster/info")
        assert body["clusterInfo"]["haState"] == "ACTIVE"  # type: ignore[index]
        with RMClient(pair) as client:
            assert {c: p for c, p in _task_processes(seq).items() if c in tasks} == tasks  # work kept
            final = wait_final(client, app_id, 120)
            assert (final.state, final.final_status) == ("FINISHED", "SUCCEEDED"), final.diagnostics
            assert final.attempts == 1
        out = first + waiting.communicate(timeout=60)[0]
        assert waiting.returncode == 0, out
        runs = {f.name: f.read_text().split() for f in marks.iterdir()}
        assert all(len(lines) == 1 for lines in runs.values()), runs

        # the old active comes back as a standby; the new active is paused past its lease and replaced, and
        # when it wakes up it writes nothing and stops
        a = rm_daemon("rm-a", grpc_a, rest_a, STANDING_BY)
        a.start()
        b.signal(signal.SIGSTOP)
        wait_until(lambda: "resourcemanager ready" in (tmp_path / "logs" / "rm-a.log").read_text(),
                   LEASE_S + 15, "the old active to take over from the paused one")
        b.signal(signal.SIGCONT)
        woke = time.monotonic()
        assert b.proc is not None
        assert b.proc.wait(10) == 3  # stepped down: another RM holds the store
        stepped_down_s = time.monotonic() - woke
        assert stepped_down_s <= 5
        assert "no longer holds the state store" in (tmp_path / "logs" / "rm-b.log").read_text()
        with RMClient(pair) as client:
            assert client.app(app_id).final_status == "SUCCEEDED"
        print(f"takeover {takeover_s:.1f} s after SIGKILL; a paused active stepped down {stepped_down_s:.1f} s "
              "after it woke")
    finally:
        for d in standby:
            if d.proc is not None and d.proc.poll() is None:
                d.signal(signal.SIGCONT)
            d.stop()
        drop()
