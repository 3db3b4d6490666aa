"""S7 with a real partition, for ``bench_reliability.py``: the RM and two NodeManagers each run in a network
namespace of their own (``rm.netns``), off loopback with their secrets, and the drill takes one NodeManager's
link down for 5 s or 25 s (node expiry 10 s). Unlike S7's SIGSTOP, the partitioned NodeManager keeps running:
its tasks go on, and only the RM's answer once the link is back can stop them.

The drill itself runs in a fifth namespace (the client's host), so that it reaches the RM as any client would;
it re-executes this file there with ``--inner``. Process checks need no network: every namespace shares the
machine's process table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_reliability import wait
from reliability_scenarios import _alive, _am, _final, _marks, _node_of, _seq, _stage, _tasks, _twice

from rm.client import RMClient
from rm.local import NM_READY, RM_READY, Daemon
from rm.netns import SUBNET, Network, in_ns, unavailable

EXPIRY_S = 10.0
RM_IP = f"{SUBNET}.1"


def s7_partition(work: Path, *, outage_s: float, stop_on_disconnect: bool = False) -> dict[str, Any]:
    """One run: make the hosts, run the drill on the client's host, remove the hosts. ``stop_on_disconnect``:
    the NodeManagers stop their containers once the RM has not answered for the node expiry."""
    name = f"S7net-{outage_s:g}s" + ("-stop" if stop_on_disconnect else "")
    why = unavailable()
    if why:
        return {"scenario": name, "skipped": why}
    net = Network()
    refused = net.make()
    if refused:
        return {"scenario": name, "skipped": refused}
    try:
        rm_ns = net.add_host(1)
        nm_ns = [net.add_host(2), net.add_host(3)]
        client_ns = net.add_host(5)
        spec = {"work": str(work), "prefix": net.prefix, "hosts": net.hosts, "rm": rm_ns, "nms": nm_ns,
                "outage_s": outage_s,
                "stop_on_disconnect": stop_on_disconnect, "scenario": name}
        env = dict(os.environ, PYTHONPATH=str(ROOT), SHEPHERD_NODE_SECRET=uuid.uuid4().hex,
                   SHEPHERD_CLIENT_SECRET=uuid.uuid4().hex)
        done = subprocess.run(in_ns(client_ns, __file__, "--inner", json.dumps(spec)), capture_output=True,
                              text=True, timeout=600, env=env, cwd=ROOT, check=False)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise RuntimeError(f"the drill failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n"
                               f"{done.stderr[-3000:]}")
        return dict(json.loads(lines[-1]))
    finally:
        net.remove()


def _container_flags() -> list[str]:
    """As root a NodeManager runs containers as an unprivileged account; the drill's files are private to it."""
    return ["--allow-root-containers"] if os.geteuid() == 0 else []


def _drill(spec: dict[str, Any]) -> dict[str, Any]:
    work, outage_s = Path(spec["work"]), float(spec["outage_s"])
    net = Network(prefix=spec["prefix"], hosts=spec["hosts"])
    marks = _marks(work)
    daemons: list[Daemon] = []
    try:
        rm = Daemon("rm", in_ns(spec["rm"], "-m", "rm.cli", "rm", "--host", RM_IP, "--grpc-port", "7030",
                                "--rest-port", "8088", "--ipc-client-port", "-1", "--ipc-scheduler-port", "-1",
                                "--data-dir", str(work / "rm"), "--create-store", "--nm-expiry", str(EXPIRY_S)),
                    work / "logs" / "rm.log", RM_READY, env=dict(os.environ))
        daemons.append(rm)
        rm.start(timeout=90)
        nm_of: dict[str, str] = {}  # node id -> namespace
        for i, ns in enumerate(spec["nms"]):
            address = net.hosts[ns]
            nm = Daemon(f"nm{i}", in_ns(ns, "-m", "rm.cli", "nm", "--rm", f"{RM_IP}:7030", "--host", address,
                                        "--port", "7040", "--http-port", "8042", "--memory-mb", "4096",
                                        "--vcores", "4", "--work-dir", str(work / f"nm{i}"), "--no-cgroups",
                                        *_container_flags(),
                                        *(["--stop-on-disconnect"] if spec["stop_on_disconnect"] else [])),
                        work / "logs" / f"nm{i}.log", NM_READY, env=dict(os.environ))
            daemons.append(nm)
            nm_of[nm.start(timeout=90).group(1)] = ns
        job = {"id": "s7net", "stages": [_stage(marks, "work", 4, 40)]}
        path = work / "s7net.yaml"
        path.write_text(json.dumps(job))
        out = subprocess.run([sys.executable, "-m", "rm.cli", "submit", str(path), "--rm", f"{RM_IP}:7030",
                              "--data-dir", str(work)], capture_output=True, text=True, timeout=60, check=True)
        app_id = re.search(r"application_\d+_\d+", out.stdout).group(0)  # type: ignore[union-attr]
        with RMClient(f"{RM_IP}:7030") as client:
            return {"scenario": spec["scenario"], **_partition(client, net, nm_of, app_id, outage_s, marks)}
    finally:
        for d in reversed(daemons):
            d.stop()


def _state(client: RMClient, node: str) -> str:
    return next((n.state for n in client.nodes() if f"{n.node_id.host}:{n.node_id.port}" == node), "")


def _partition(client: RMClient, net: Network, nm_of: dict[str, str], app_id: str, outage_s: float,
               marks: Path) -> dict[str, Any]:
    seq = _seq(app_id)
    wait(lambda: len(_tasks(seq)) == 4, 90, "four tasks")
    am_cid, _ = _am(seq)
    am_node = _node_of(client, app_id, am_cid)
    victim = next(n for n in nm_of if n != am_node)  # keep the AM reachable
    first = _tasks(seq)
    on_victim = {c: p for c, p in first.items() if _node_of(client, app_id, c) == victim}
    row: dict[str, Any] = {"expiry_s": EXPIRY_S, "tasks_on_node": len(on_victim)}
    net.link(nm_of[victim], up=False)
    t0 = time.monotonic()
    lost_at = reported_at = replaced_at = gone_at = None
    while time.monotonic() - t0 < outage_s:
        now = time.monotonic()
        if lost_at is None and _state(client, victim) == "LOST":
            lost_at = now
        if lost_at is not None and reported_at is None and all(
                c.state == "COMPLETED" for c in client.containers(app_id) if c.container_id in on_victim):
            reported_at = now
        if replaced_at is None and set(_tasks(seq)) - set(first):
            replaced_at = now  # a replacement copy of one of the node's tasks runs elsewhere
        if gone_at is None and not _alive(on_victim.values()):
            gone_at = now  # the node's own copies stopped while it was cut off
        time.sleep(0.2)
    row["lost_during"] = lost_at is not None
    if lost_at is not None:
        row["lost_after_s"] = round(lost_at - t0, 2)
        row["reported_after_lost_s"] = round((reported_at or time.monotonic()) - lost_at, 2)
    row["old_copies_running_at_reconnect"] = len(_alive(on_victim.values()))
    if gone_at is not None:
        row["old_copies_gone_after_cut_s"] = round(gone_at - t0, 2)
    net.link(nm_of[victim], up=True)
    back = time.monotonic()
    if lost_at is not None:
        running_at = None
        while (gone_at is None or running_at is None) and time.monotonic() - back < 30:
            if gone_at is None and not _alive(on_victim.values()):
                gone_at = time.monotonic()
            if running_at is None and _state(client, victim) == "RUNNING":
                running_at = time.monotonic()
            time.sleep(0.1)
        if gone_at is None or running_at is None:
            raise RuntimeError("the node did not rejoin, or its old copies did not stop, 30 s after the link")
        row["running_again_after_s"] = round(running_at - back, 2)
        row["old_copies_gone_after_reconnect_s"] = round(max(0.0, gone_at - back), 2)
        row["old_and_new_copies_together_s"] = round(max(0.0, gone_at - replaced_at), 2) if replaced_at else 0.0
    else:
        row["kept_same_pid"] = sum(1 for c, p in _tasks(seq).items() if on_victim.get(c) == p)
    final = _final(client, app_id)
    row["succeeded"] = final.final_status == "SUCCEEDED"
    row["tasks_run_twice"] = _twice(marks)
    return row


PARTITIONS = {
    "S7net-5": lambda work: s7_partition(work, outage_s=5.0),
    "S7net-25": lambda work: s7_partition(work, outage_s=25.0),
    "S7net-5-stop": lambda work: s7_partition(work, outage_s=5.0, stop_on_disconnect=True),
    "S7net-25-stop": lambda work: s7_partition(work, outage_s=25.0, stop_on_disconnect=True),
}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inner", required=True, help="the drill's hosts and outage, as JSON (set by s7_partition)")
    print(json.dumps(_drill(json.loads(ap.parse_args().inner))), flush=True)
