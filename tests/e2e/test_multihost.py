"""A cluster across hosts: network namespaces made by the test, joined by veth pairs to a bridge, each with its
own address (only these namespaces are ever addressed). The RM runs in one, three NodeManagers in three others
and the client in a fifth, all off loopback, so the secrets are in force. The demo DAG runs across the nodes;
a NodeManager whose link goes down for longer than the expiry is LOST, and RUNNING again once it comes back,
with none of its old copies left. From the client's host, the stock `yarn` CLI and Spark's pi.py in cluster
mode run with a HADOOP_CONF_DIR and token made there (`shepherd config hadoop-client`).

Needs root and iproute2 (``ip netns``); skipped, saying which, without them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from rm.local import NM_READY, RM_READY, Daemon
from rm.netns import SUBNET, Network, in_ns
from tests.e2e.conftest import ROOT, kill_strays, sleep_job, wait_until, write_job
from tests.e2e.test_yarn_clients import (
    JAVA,
    PYSPARK,
    SPARK_TIMEOUT_S,
    app_of,
    java_home,
    pyspark_home,
    spark_args,
)

RM_IP = f"{SUBNET}.1"
CLIENT_IP = f"{SUBNET}.5"
EXPIRY_S = 6.0


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


def _tasks_under(work_dir: Path, app_seq: str) -> list[int]:
    """The pids of an app's task processes (not its AM's) a NodeManager with this work dir runs."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cwd"]):
        with contextlib.suppress(psutil.Error):
            cid = proc.environ().get("CONTAINER_ID", "") if proc.info["name"] == "sleep" else ""
            if (f"_{app_seq}_" in cid and not cid.endswith("_000001")
                    and str(proc.info["cwd"] or "").startswith(str(work_dir))):
                found.append(proc.info["pid"])
    return found


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting for its parent does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _app(client_ns: str, rest: str, env: dict[str, str], app_id: str) -> dict[str, object]:
    code = "import httpx, sys; print(httpx.get(sys.argv[1], timeout=5).text)"
    out = _run_in(client_ns, ["-c", code, f"{rest}/ws/v1/cluster/apps/{app_id}"], env, timeout=30)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout)["app"])


@dataclass
class Cluster:
    """The RM on host 1, three NodeManagers on hosts 2-4, the client's host 5."""

    network: Network
    daemons: list[Daemon]
    rest: str
    env: dict[str, str]
    nm_ns: list[str]
    client_ns: str

    def logs(self) -> str:
        return "".join(f"\n--- {d.name}:\n{d.log_path.read_text()[-2000:]}" for d in self.daemons)


@contextlib.contextmanager
def cluster(network: Network, tmp_path: Path) -> Iterator[Cluster]:
    secrets = {"SHEPHERD_NODE_SECRET": uuid.uuid4().hex, "SHEPHERD_CLIENT_SECRET": uuid.uuid4().hex}
    rm_ns = network.add_host(1)
    nm_ns = [network.add_host(n) for n in (2, 3, 4)]
    client_ns = network.add_host(5)
    env = _env(**secrets)
    container_flags = _container_flags()
    daemons: list[Daemon] = []
    try:
        # the Hadoop IPC listeners on YARN's default ports, for the stock clients
        rm = Daemon("rm", _in(rm_ns, "-m", "rm.cli", "rm", "--host", RM_IP, "--grpc-port", "7030",
                              "--rest-port", "8088", "--ipc-client-port", "8032", "--ipc-scheduler-port", "8030",
                              "--data-dir", str(tmp_path / "rm"), "--create-store", "--nm-expiry", str(EXPIRY_S)),
                    tmp_path / "logs" / "rm.log", RM_READY, env=env)
        daemons.append(rm)
        match = rm.start(timeout=90)
        assert match.group(1) == f"{RM_IP}:7030"
        rest = match.group(2)
        for i, ns in enumerate(nm_ns):
            address = network.hosts[ns]
            nm = Daemon(f"nm{i}", _in(ns, "-m", "rm.cli", "nm", "--rm", f"{RM_IP}:7030", "--host", address,
                                      "--port", "7040", "--http-port", "8042", "--memory-mb", "2048", "--vcores", "2",
                                      "--work-dir", str(tmp_path / f"nm{i}"), "--no-cgroups", *container_flags),
                        tmp_path / "logs" / f"nm{i}.log", NM_READY, env=env)
            daemons.append(nm)
            assert nm.start(timeout=90).group(1) == f"{address}:7040"
        assert _nodes(client_ns, rest, env) == {network.hosts[ns]: "RUNNING" for ns in nm_ns}
        yield Cluster(network, daemons, rest, env, nm_ns, client_ns)
    finally:
        for d in reversed(daemons):
            d.stop()
        kill_strays(tmp_path)


def test_cluster_across_namespaces(network: Network, tmp_path: Path) -> None:
    with cluster(network, tmp_path) as c:
        daemons, rest, env, nm_ns, client_ns = c.daemons, c.rest, c.env, c.nm_ns, c.client_ns
        # off loopback the RM will not run without its secrets
        refused = _run_in(network.switch, ["-m", "rm.cli", "rm", "--host", RM_IP, "--insecure", "--data-dir",
                                           str(tmp_path / "insecure"), "--create-store"], _env(), timeout=60)
        assert refused.returncode != 0
        assert "needs the node and client secrets" in refused.stdout + refused.stderr, refused.stderr[-2000:]
        for address in [f"{RM_IP}:7030", *(f"{network.hosts[ns]}:7040" for ns in nm_ns)]:  # gRPC health
            probe = _run_in(client_ns, ["-m", "proto.probe", address], env)
            assert probe.returncode == 0, probe.stdout + probe.stderr
            assert probe.stdout.strip() == f"{address}: SERVING"

        # the client on its own host, with the client secret; the job's files on a file system all hosts share
        submit = _run_in(client_ns, ["-m", "rm.cli", "submit", str(ROOT / "examples" / "wordcount.yaml"), "--wait",
                                     "--rm", f"{RM_IP}:7030", "--data-dir", str(tmp_path / "client")], env,
                         timeout=300)
        logs = c.logs()
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
        # the copies that ran on through the partition (once the node is back the RM may place new ones there)
        old_copies = set(_tasks_under(tmp_path / f"nm{candidates[0]}", sleeper))
        watch = Watch(client_ns, rest, env, lost_host, "RUNNING", 30)
        network.link(lost_ns, up=True)
        up_at = time.monotonic()
        back_at = watch.seen_at()
        assert back_at - up_at <= 5, f"RUNNING again {back_at - up_at:.1f}s after the link came back"
        print(f"partition: LOST {lost_at - down_at:.2f}s after the link went down (expiry {EXPIRY_S:g}s), "
              f"RUNNING {back_at - up_at:.2f}s after it came back")
        assert daemons[1 + candidates[0]].alive()
        # its old copies, which ran on through the partition, are gone within I-ORPHAN's 10 s of its return
        # (told at its first heartbeat back; the kill takes the process group)
        wait_until(lambda: not [p for p in old_copies if _alive(p)], 10,
                   f"the partitioned node's old copies {sorted(old_copies)} to stop", interval=0.1)
        final = wait_until(lambda: (a := _app(client_ns, rest, env, f"application_{app_id.split('_')[1]}_{sleeper}"))
                           ["state"] in ("FINISHED", "FAILED", "KILLED") and a, 120, "the partitioned job to end")
        assert final["finalStatus"] == "SUCCEEDED", final  # its lost tasks ran again on the other nodes


@pytest.mark.skipif(JAVA is None or PYSPARK is None, reason="needs Java 17+ and the pyspark package")
def test_stock_yarn_cli_and_spark_across_namespaces(network: Network, tmp_path: Path) -> None:
    """From the client's host: a HADOOP_CONF_DIR and token made there with the client secret; the stock `yarn`
    CLI lists the nodes; Spark's pi.py in cluster mode runs its driver and executors on the NodeManagers'
    hosts, which reach each other over the bridge."""
    with cluster(network, tmp_path) as c:
        conf = tmp_path / "hadoop-conf"
        made = _run_in(c.client_ns, ["-m", "rm.cli", "config", "hadoop-client", "--dir", str(conf), "--rm",
                                     f"{RM_IP}:7030"], c.env)
        assert made.returncode == 0, made.stdout + made.stderr
        token = conf / "hadoop.token"
        assert f"export HADOOP_TOKEN_FILE_LOCATION={token}" in made.stdout
        env = {**c.env, "JAVA_HOME": java_home(), "HADOOP_CONF_DIR": str(conf), "HADOOP_TOKEN_FILE_LOCATION": str(token),
               "SPARK_LOCAL_IP": CLIENT_IP}
        classpath = f"{conf}:{pyspark_home() / 'jars'}/*"

        def yarn(tool: str, *args: str) -> str:
            main = {"application": "ApplicationCLI", "node": "NodeCLI"}[tool]
            out = subprocess.run(["ip", "netns", "exec", c.client_ns, JAVA or "java", "-cp", classpath,
                                  f"org.apache.hadoop.yarn.client.cli.{main}", tool, *args], capture_output=True,
                                 text=True, timeout=120, env=env, check=False)
            assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
            return out.stdout

        nodes = yarn("node", "-list")
        assert "Total Nodes:3" in nodes, nodes
        assert all(f"{c.network.hosts[ns]}:" in nodes for ns in c.nm_ns), nodes

        spark = subprocess.run(["ip", "netns", "exec", c.client_ns, *spark_args(tmp_path, "cluster")],
                               capture_output=True, text=True, timeout=SPARK_TIMEOUT_S, env=env, cwd=tmp_path,
                               check=False)
        assert spark.returncode == 0, spark.stderr[-4000:] + c.logs()
        app_id = app_of(spark.stderr)
        listing = yarn("application", "-list", "-appStates", "FINISHED")
        row = next((line.split() for line in listing.splitlines() if line.strip().startswith(app_id)), [])
        assert "SPARK" in row, listing
        assert "SUCCEEDED" in row, listing
        seq = app_id.split("_")[2]
        ran = [d.name for d in c.daemons[1:] if re.search(rf"container_\d+_{seq}_", d.log_path.read_text())]
        assert len(ran) >= 2, f"Spark's containers ran on {ran} only{c.logs()}"
        printed = [f for f in tmp_path.glob("nm*/**/stdout") if "Pi is roughly 3.1" in f.read_text(errors="replace")]
        assert printed, "the driver's output was not found in any container's stdout"
        print(f"spark across namespaces: {app_id} ran on {', '.join(ran)}")
