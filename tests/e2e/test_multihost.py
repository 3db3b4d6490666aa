"""A cluster across hosts: network namespaces made by the test, joined by veth pairs to a bridge, each with its
own address (only these namespaces are ever addressed). The RM runs in one, three NodeManagers in three others
and the client in a fifth, all off loopback, so the secrets are in force. The demo DAG runs across the nodes;
a NodeManager whose link goes down for longer than the expiry is LOST, and RUNNING again once it comes back.

Needs root and iproute2 (``ip netns``); skipped, saying which, without them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rm.local import Daemon
from rm.netns import SUBNET, Network, in_ns, unavailable
from tests.e2e.conftest import ROOT, kill_strays, sleep_job, wait_until, write_job

RM_IP = f"{SUBNET}.1"
CLIENT_IP = f"{SUBNET}.5"
EXPIRY_S = 6.0
_RM_READY = re.compile(r"resourcemanager ready grpc=(\S+) rest=(\S+)")
_NM_READY = re.compile(r"nodemanager ready node_id=(\S+) http=(\S+)")


@pytest.fixture
def network() -> Iterator[Network]:
    why = unavailable()
    if why:
        pytest.skip(why)
    net = Network()
    refused = net.make()
    if refused:
        pytest.skip(refused)
    try:
        yield net
    finally:
        net.remove()


def _container_flags() -> list[str]:
    """As root, a NodeManager runs containers as an unprivileged account unless told otherwise; this job's
    files are in the test's private temporary directory, as a local cluster's are."""
    if os.geteuid() != 0:
        return []
    usage = subprocess.run([sys.executable, "-m", "nodemanager", "--help"], capture_output=True, text=True,
                           timeout=60, check=False, cwd=ROOT).stdout
    return ["--allow-root-containers"] if "--allow-root-containers" in usage else []


_in = in_ns


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


def _run_in(ns: str, args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_in(ns, *args), capture_output=True, text=True, timeout=timeout, env=env, check=False,
                          cwd=ROOT)


def _nodes(client_ns: str, rest: str, env: dict[str, str]) -> dict[str, str]:
    """node host -> state, as the RM's REST API says (asked from the client's namespace)."""
    code = ("import httpx, json, sys; r = httpx.get(sys.argv[1] + '/ws/v1/cluster/nodes?states=NEW,RUNNING,"
            "UNHEALTHY,LOST,SHUTDOWN,DECOMMISSIONED', timeout=5); "
            "print(json.dumps({n['nodeHostName']: n['state'] for n in (r.json()['nodes'] or {}).get('node', [])}))")
    out = _run_in(client_ns, ["-c", code, rest], env, timeout=30)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


_WATCH = """
import json, sys, time
import httpx
url, host, state, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
print("watching", flush=True)
deadline, seen = time.monotonic() + timeout, {}
while time.monotonic() < deadline:
    try:
        nodes = (httpx.get(url, timeout=2).json()["nodes"] or {}).get("node", [])
        seen = {n["nodeHostName"]: n["state"] for n in nodes}
    except (httpx.HTTPError, ValueError):
        pass
    if seen.get(host) == state:
        print(json.dumps({"at": time.monotonic(), "nodes": seen}), flush=True)
        sys.exit(0)
    time.sleep(0.1)
print(json.dumps({"at": None, "nodes": seen}), flush=True)
"""


class Watch:
    """A poller on the client's host, started before the change it times: when ``host`` is first seen in
    ``state`` on the system-wide monotonic clock (0.1 s apart, no process start-up in the measurement)."""

    def __init__(self, client_ns: str, rest: str, env: dict[str, str], host: str, state: str,
                 timeout: float) -> None:
        self.what = f"{host} {state}"
        url = f"{rest}/ws/v1/cluster/nodes?states=NEW,RUNNING,UNHEALTHY,LOST,SHUTDOWN,DECOMMISSIONED"
        self.proc = subprocess.Popen(_in(client_ns, "-c", _WATCH, url, host, state, str(timeout)), env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "watching", self.proc.stderr.read() if self.proc.stderr else ""

    def seen_at(self) -> float:
        out, err = self.proc.communicate(timeout=120)
        result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {"at": None, "nodes": err[-2000:]}
        if result["at"] is None:
            raise AssertionError(f"never saw {self.what}; nodes: {result['nodes']}")
        return float(result["at"])


def _app(client_ns: str, rest: str, env: dict[str, str], app_id: str) -> dict[str, object]:
    code = "import httpx, sys; print(httpx.get(sys.argv[1], timeout=5).text)"
    out = _run_in(client_ns, ["-c", code, f"{rest}/ws/v1/cluster/apps/{app_id}"], env, timeout=30)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout)["app"])


def test_cluster_across_namespaces(network: Network, tmp_path: Path) -> None:
    secrets = {"SHEPHERD_NODE_SECRET": uuid.uuid4().hex, "SHEPHERD_CLIENT_SECRET": uuid.uuid4().hex}
    rm_ns = network.add_host(1)
    nm_ns = [network.add_host(n) for n in (2, 3, 4)]
    client_ns = network.add_host(5)
    env = _env(**secrets)
    container_flags = _container_flags()
    daemons: list[Daemon] = []
    try:
        rm = Daemon("rm", _in(rm_ns, "-m", "rm.cli", "rm", "--host", RM_IP, "--grpc-port", "7030",
                              "--rest-port", "8088", "--ipc-client-port", "-1", "--ipc-scheduler-port", "-1",
                              "--data-dir", str(tmp_path / "rm"), "--create-store", "--nm-expiry", str(EXPIRY_S)),
                    tmp_path / "logs" / "rm.log", _RM_READY, env=env)
        daemons.append(rm)
        match = rm.start(timeout=90)
        assert match.group(1) == f"{RM_IP}:7030"
        rest = match.group(2)
        for i, ns in enumerate(nm_ns):
            address = network.hosts[ns]
            nm = Daemon(f"nm{i}", _in(ns, "-m", "rm.cli", "nm", "--rm", f"{RM_IP}:7030", "--host", address,
                                      "--port", "7040", "--http-port", "8042", "--memory-mb", "2048", "--vcores", "2",
                                      "--work-dir", str(tmp_path / f"nm{i}"), "--no-cgroups", *container_flags),
                        tmp_path / "logs" / f"nm{i}.log", _NM_READY, env=env)
            daemons.append(nm)
            assert nm.start(timeout=90).group(1) == f"{address}:7040"
        assert _nodes(client_ns, rest, env) == {network.hosts[ns]: "RUNNING" for ns in nm_ns}
        for address in [f"{RM_IP}:7030", *(f"{network.hosts[ns]}:7040" for ns in nm_ns)]:  # gRPC health
            probe = _run_in(client_ns, ["-m", "proto.probe", address], env)
            assert probe.returncode == 0, probe.stdout + probe.stderr
            assert probe.stdout.strip() == f"{address}: SERVING"

        # the client on its own host, with the client secret; the job's files on a file system all hosts share
        submit = _run_in(client_ns, ["-m", "rm.cli", "submit", str(ROOT / "examples" / "wordcount.yaml"), "--wait",
                                     "--rm", f"{RM_IP}:7030", "--data-dir", str(tmp_path / "client")], env,
                         timeout=300)
        logs = "".join(f"\n--- {d.name}:\n{d.log_path.read_text()[-2000:]}" for d in daemons)
        assert submit.returncode == 0, f"{submit.stdout}\n{submit.stderr}{logs}"
        app_id = re.search(r"application_\d+_\d+", submit.stdout).group(0)  # type: ignore[union-attr]
        (out_dir,) = (tmp_path / "client" / "output").iterdir()
        verify = subprocess.run([sys.executable, str(ROOT / "examples" / "verify_wordcount.py"), str(out_dir)],
                                capture_output=True, text=True, timeout=60, check=False)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        ran = [d.name for d in daemons[1:] if re.search(rf"container_\d+_{app_id.split('_')[2]}_", d.log_path.read_text())]
        assert len(ran) >= 2, f"the job's containers ran on {ran} only{logs}"

        # a partition: a NodeManager running tasks of a job (not its AM) loses its link for longer than the expiry
        job = write_job(tmp_path, sleep_job("partitioned", 10, tasks=5))
        sub = _run_in(client_ns, ["-m", "rm.cli", "submit", str(job), "--rm", f"{RM_IP}:7030", "--data-dir",
                                  str(tmp_path / "client")], env)
        assert sub.returncode == 0, sub.stderr
        sleeper = re.search(r"application_\d+_(\d+)", sub.stdout).group(1)  # type: ignore[union-attr]
        running = re.compile(rf"container_\d+_{sleeper}_01_(\d+)")

        def with_tasks() -> list[int]:
            out = []
            for i, d in enumerate(daemons[1:]):
                ids = {int(m) for m in running.findall(d.log_path.read_text())}
                if ids and 1 not in ids:  # task containers, and not the AM's (container 1)
                    out.append(i)
            return out

        candidates = wait_until(with_tasks, 60, "a NodeManager running tasks but not the AM")
        lost_ns = nm_ns[candidates[0]]
        lost_host = network.hosts[lost_ns]
        watch = Watch(client_ns, rest, env, lost_host, "LOST", EXPIRY_S + 10)
        network.link(lost_ns, up=False)
        down_at = time.monotonic()
        lost_at = watch.seen_at()
        assert EXPIRY_S - 2 <= lost_at - down_at <= EXPIRY_S + 2, f"LOST after {lost_at - down_at:.1f}s"
        watch = Watch(client_ns, rest, env, lost_host, "RUNNING", 30)
        network.link(lost_ns, up=True)
        up_at = time.monotonic()
        back_at = watch.seen_at()
        assert back_at - up_at <= 5, f"RUNNING again {back_at - up_at:.1f}s after the link came back"
        print(f"partition: LOST {lost_at - down_at:.2f}s after the link went down (expiry {EXPIRY_S:g}s), "
              f"RUNNING {back_at - up_at:.2f}s after it came back")
        assert daemons[1 + candidates[0]].alive()
        final = wait_until(lambda: (a := _app(client_ns, rest, env, f"application_{app_id.split('_')[1]}_{sleeper}"))
                           ["state"] in ("FINISHED", "FAILED", "KILLED") and a, 120, "the partitioned job to end")
        assert final["finalStatus"] == "SUCCEEDED", final  # its lost tasks ran again on the other nodes
    finally:
        for d in reversed(daemons):
            d.stop()
        kill_strays(tmp_path)
