"""Fault scenarios beyond the RM restart, for ``bench_reliability.py``: each starts a local cluster, runs a DAG job
of sleep tasks, injects one fault and measures what the reliability notes ask of it. Every task appends its
attempt number to a file of its own, so a task that ran twice shows.

* S4  active/standby: the active RM SIGKILLed (takeover time), then the new active SIGSTOPped past its lease and
  resumed (the old one takes over through the lease; the paused one must write nothing and step down);
* S5  a NodeManager SIGKILLed and restarted 3 s later on the same port and work dir;
* S6  a NodeManager killed for good: LOST at the expiry, its containers reported, its orphans;
* S7  a NodeManager partitioned (SIGSTOP) for 5 s and for 25 s with a 10 s expiry;
* S8  the DAG AM SIGKILLed while its second stage runs;
* S9  the DAG AM SIGSTOPped past the AM expiry and resumed; once the next attempt runs, the stale attempt's
  AMRM token is used for an allocate and an unregister call, each of which must be refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import yaml
from bench_reliability import fresh_pg, processes, wait

from am.client import AMClientError, AMRMClient
from proto import shepherd_pb2 as pb
from rm.client import RMClient
from rm.local import Daemon, LocalCluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _marks(work: Path) -> Path:
    marks = work / "marks"
    marks.mkdir(mode=0o777, parents=True, exist_ok=True)
    marks.chmod(0o777)
    return marks


def _stage(marks: Path, name: str, tasks: int, secs: float, *parents: str) -> dict[str, Any]:
    return {"name": name, "tasks": tasks, "memory_mb": 128, "vcores": 1, "duration_s": secs,
            "parents": list(parents),
            "command": f"echo start{{attempt}} >> {marks}/{{stage}}-{{task}}; sleep {secs:g} && "
                       f"echo end{{attempt}} >> {marks}/{{stage}}-{{task}}"}


def _submit(cluster: LocalCluster, work: Path, job: dict[str, Any], rm: str | None = None) -> str:
    path = work / f"{job['id']}.yaml"
    path.write_text(yaml.safe_dump(job))
    out = subprocess.run([sys.executable, "-m", "rm.cli", "submit", str(path), "--rm", rm or cluster.rm_address,
                          "--data-dir", str(work)], capture_output=True, text=True, timeout=60, check=True).stdout
    m = re.search(r"(application_\d+_\d+)", out)
    if m is None:
        raise RuntimeError(out)
    return m.group(1)


def _final(client: RMClient, app_id: str, timeout: float = 180) -> Any:
    return wait(lambda: (r := client.app(app_id)).state in ("FINISHED", "FAILED", "KILLED") and r, timeout,
                f"{app_id} to end")


def _twice(marks: Path) -> str:
    """The tasks that finished more than once ("none" when none did), and those started more than once (a copy
    stopped before it finished, then run again)."""
    finished, started = [], []
    for f in sorted(marks.iterdir()):
        words = f.read_text().split()
        if sum(w.startswith("end") for w in words) > 1:
            finished.append(f.name)
        elif sum(w.startswith("start") for w in words) > 1:
            started.append(f.name)
    out = f"finished twice: {', '.join(finished) or 'none'}"
    return out + (f"; started again after a stop: {', '.join(started)}" if started else "")


def _seq(app_id: str) -> str:
    return app_id.removeprefix("application_")


def _tasks(seq: str) -> dict[str, int]:
    return {c: p for c, p in processes(seq).items() if not c.endswith("_000001")}


def _am(seq: str, besides: str = "") -> tuple[str, int]:
    """The container id and pid of an AM process of the app, other than container ``besides`` (an earlier
    attempt's AM, which may still run)."""
    for p in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if "am.dag" in " ".join(p.info["cmdline"] or []):
                cid = p.environ().get("CONTAINER_ID", "")
                if seq in cid and cid != besides:
                    return cid, p.info["pid"]
    return "", 0  # none runs (yet)


# ---------------------------------------------------------------------------------------------- S5


def s5_nm_restart(work: Path) -> dict[str, Any]:
    marks = _marks(work)
    port = _free_port()
    job = {"id": "s5", "stages": [_stage(marks, "short", 2, 4), _stage(marks, "long", 2, 20)]}
    with LocalCluster(work / "cluster", allow_root_containers=True,
                      nodes=1, node_vcores=8, nm_expiry_s=30, grpc_port=0, rest_port=0,
                      ipc_client_port=-1, ipc_scheduler_port=-1, nm_args=["--port", str(port)]) as cluster, \
            RMClient(cluster.rm_address) as client:
        app_id = _submit(cluster, work, job)
        seq = _seq(app_id)
        before = wait(lambda: len(t := _tasks(seq)) == 4 and t, 60, "four tasks")
        am_before = _am(seq)
        time.sleep(1.0)
        cluster.nms[0].signal(signal.SIGKILL)
        killed = time.monotonic()
        lost_seen = False
        while time.monotonic() - killed < 3.0:
            lost_seen |= any(n.state == "LOST" for n in client.nodes())
            time.sleep(0.2)
        cluster.start_nm(0)
        back = time.monotonic()
        after = _tasks(seq)
        kept = sum(1 for c, p in before.items() if after.get(c) == p) + (_am(seq) == am_before)
        short = [c for c in before if c not in after]  # ended during the outage
        reported = wait(lambda: all((r := {x.container_id: x for x in client.containers(app_id)})[c].state ==
                                    "COMPLETED" and r[c].exit_status == 0 for c in short) or None, 30,
                        "the exits during the outage")
        reported_s = time.monotonic() - back if reported else float("nan")
        final = _final(client, app_id)
        lost_seen |= any(n.state == "LOST" for n in client.nodes())
        launched = {d.name for d in (cluster.data_dir / "nm0" / "nmstate" / "containers").iterdir()}
        return {"scenario": "S5", "running_before": len(before) + 1, "alive_at_restart": len(after) + 1,
                "kept_same_pid": kept,
                "exits_during_outage": len(short), "exits_reported_s": round(reported_s, 2),
                "duplicate_launches": len(launched) - len(set(before) | {am_before[0]}),
                "node_lost": lost_seen, "succeeded_once": final.final_status == "SUCCEEDED" and final.attempts == 1,
                "tasks_run_twice": _twice(marks)}


# ---------------------------------------------------------------------------------------------- S6 / S7


def _alive(pids: Any) -> list[int]:
    out = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
    return out


def _node_of(client: RMClient, app_id: str, cid: str) -> str:
    for c in client.containers(app_id):
        if c.container_id == cid:
            return str(c.node_id)
    return ""


def s67_nm_fault(work: Path, *, outage_s: float | None) -> dict[str, Any]:
    """S6 (``outage_s`` None: the NodeManager is killed for good) or S7 (SIGSTOP for ``outage_s``)."""
    marks = _marks(work)
    expiry = 10.0
    job = {"id": "s67", "stages": [_stage(marks, "work", 4, 40)]}
    with LocalCluster(work / "cluster", allow_root_containers=True,
                      nodes=2, node_vcores=8, nm_expiry_s=expiry, grpc_port=0, rest_port=0,
                      ipc_client_port=-1, ipc_scheduler_port=-1) as cluster, RMClient(cluster.rm_address) as client:
        app_id = _submit(cluster, work, job)
        seq = _seq(app_id)
        wait(lambda: len(_tasks(seq)) == 4, 60, "four tasks")
        am_cid, _ = _am(seq)
        am_node = _node_of(client, app_id, am_cid)
        victim = next(i for i, n in enumerate(cluster.node_ids) if n != am_node)  # keep the AM alive
        victim_id = cluster.node_ids[victim]
        on_victim = {c: p for c, p in _tasks(seq).items() if _node_of(client, app_id, c) == victim_id}
        fault = signal.SIGKILL if outage_s is None else signal.SIGSTOP
        cluster.nms[victim].signal(fault)
        t0 = time.monotonic()
        row: dict[str, Any] = {"scenario": "S6" if outage_s is None else f"S7-{outage_s:g}s",
                               "expiry_s": expiry, "tasks_on_node": len(on_victim)}
        if outage_s is None or outage_s > expiry:
            wait(lambda: any(n.state == "LOST" for n in client.nodes()), expiry + 30, "the node to be LOST")
            row["lost_after_s"] = round(time.monotonic() - t0, 2)
            wait(lambda: all(c.state == "COMPLETED" for c in client.containers(app_id) if c.container_id in on_victim),
                 10, "its containers to be reported")
            row["reported_after_lost_s"] = max(0.0, round(time.monotonic() - t0 - row["lost_after_s"], 2))
        if outage_s is not None:
            gone_at = None  # when the last old copy stopped, if it did during the outage
            while time.monotonic() - t0 < outage_s:
                if gone_at is None and not _alive(on_victim.values()):
                    gone_at = time.monotonic()
                time.sleep(0.2)
            row["lost_during"] = any(n.state == "LOST" for n in client.nodes())
            cluster.nms[victim].signal(signal.SIGCONT)
            back = time.monotonic()
            if row["lost_during"]:
                wait(lambda: not _alive(on_victim.values()), 30, "the lost node's old copies to stop")
                row["old_copies_gone_after_reconnect_s"] = round(max(0.0, (gone_at or time.monotonic()) - back), 2)
                # an upper bound: replacements start at the earliest when the node is declared LOST
                row["old_and_new_copies_together_s"] = round(
                    max(0.0, (gone_at or time.monotonic()) - (t0 + row["lost_after_s"])), 2)
            else:
                row["kept_same_pid"] = sum(1 for c, p in _tasks(seq).items() if on_victim.get(c) == p)
        else:
            time.sleep(5)
            row["orphans_running_5s_after_lost"] = len(_alive(on_victim.values()))
        final = _final(client, app_id)
        row["succeeded"] = final.final_status == "SUCCEEDED"
        row["tasks_run_twice"] = _twice(marks)
        return row


# ---------------------------------------------------------------------------------------------- S8 / S9


def s89_am_fault(work: Path, *, hang: bool) -> dict[str, Any]:
    marks = _marks(work)
    am_expiry = 8.0
    job = {"id": "s89", "stages": [_stage(marks, "s0", 2, 1), _stage(marks, "s1", 2, 25, "s0"),
                                   _stage(marks, "s2", 1, 1, "s1")]}
    with LocalCluster(work / "cluster", allow_root_containers=True,
                      nodes=2, node_vcores=8, am_expiry_s=am_expiry, grpc_port=0, rest_port=0,
                      ipc_client_port=-1, ipc_scheduler_port=-1) as cluster, RMClient(cluster.rm_address) as client:
        app_id = _submit(cluster, work, job)
        seq = _seq(app_id)
        wait(lambda: len(list(marks.glob("s1-*"))) == 2, 60, "the second stage")
        before = wait(lambda: len(t := _tasks(seq)) == 2 and t, 30, "both s1 tasks")
        am_cid, am_pid = _am(seq)
        stale_token = psutil.Process(am_pid).environ()["SHEPHERD_AMRM_TOKEN"]
        t0 = time.monotonic()
        psutil.Process(am_pid).send_signal(signal.SIGSTOP if hang else signal.SIGKILL)
        wait(lambda: len(client.attempts(app_id)) == 2 and _am(seq, besides=am_cid)[0] != "", am_expiry + 30,
             "the next attempt's AM")
        new_am_at = time.time()
        row: dict[str, Any] = {"scenario": "S9" if hang else "S8", "new_attempt_s": round(time.monotonic() - t0, 2),
                               "running_before": len(before),
                               "handed_over_same_pid": sum(1 for c, p in _tasks(seq).items() if before.get(c) == p)}
        if hang:
            row["am_expiry_s"] = am_expiry
            expired_at = _logged_at(cluster.data_dir / "logs" / "rm.log", "expired: no AM heartbeat")
            if expired_at is not None:  # from the RM declaring the attempt dead to the next AM process running
                row["new_am_after_expiry_s"] = round(new_am_at - expired_at, 2)
            row["stale_token_calls_refused"] = asyncio.run(_stale_calls(cluster.rm_address, stale_token))
            row["app_not_ended_by_stale_finish"] = client.app(app_id).state not in ("FINISHED", "FAILED", "KILLED")
            # the RM ended the stale attempt's container: its NodeManager stops the (still stopped) AM process
            gone = _wait_gone(am_pid, 15.0)
            row["stale_am_stopped_by_its_node_after_s"] = \
                round(gone - expired_at, 2) if gone is not None and expired_at is not None else "no"
            if gone is None:  # it still runs: wake it and see its own calls refused
                with contextlib.suppress(psutil.NoSuchProcess):
                    psutil.Process(am_pid).send_signal(signal.SIGCONT)
                with contextlib.suppress(psutil.TimeoutExpired, psutil.NoSuchProcess):
                    psutil.Process(am_pid).wait(30)
                log = "".join(p.read_text(errors="replace") for p in (cluster.data_dir).rglob("stderr*")
                              if am_cid in str(p))
                row["stale_am_own_calls_refused"] = "ApplicationAttemptNotFound" in log or "doesn't exist" in log
        final = _final(client, app_id)
        row["succeeded"] = final.final_status == "SUCCEEDED"
        row["attempts"] = final.attempts
        row["tasks_run_twice"] = _twice(marks)
        return row


def _wait_gone(pid: int, timeout: float) -> float | None:
    """The wall-clock time at which process ``pid`` was seen gone (a zombie counts), or None if it outlived
    ``timeout``."""
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        if not _alive([pid]):
            return time.time()
        time.sleep(0.05)
    return None


def _logged_at(log: Path, text: str) -> float | None:
    """The time of the first line of the RM's JSON log containing ``text``."""
    for line in log.read_text(errors="replace").splitlines():
        if text in line:
            with contextlib.suppress(ValueError, KeyError):
                stamp = json.loads(line)["time"].replace("Z", "+00:00")
                return datetime.datetime.fromisoformat(stamp).timestamp()
    return None


async def _stale_calls(rm_address: str, token: str) -> str:
    """An allocate and an unregister with a superseded attempt's AMRM token: how many of the 2 were refused, and
    with what."""
    amrm = AMRMClient(rm_address, token, retry_s=0.0)
    refused = []
    try:
        for operation, request in (("Allocate", pb.AllocateRequest()),
                                   ("FinishApplicationMaster", pb.FinishApplicationMasterRequest(
                                       final_status=pb.SUCCEEDED))):
            try:
                await amrm._call(operation, request)  # a raw call, as a stale AM sends it
            except AMClientError as exc:
                refused.append(exc.message.split(":", 1)[0][:60])
    finally:
        await amrm.close()
    return f"{len(refused)} of 2 ({'; '.join(refused)})"


# ---------------------------------------------------------------------------------------------- S4


def s4_failover(work: Path, lease_s: float = 4.0) -> dict[str, Any]:
    store_url, drop = fresh_pg()
    marks = _marks(work)
    grpc_a, grpc_b, rest_a, rest_b = (_free_port() for _ in range(4))
    pair = f"127.0.0.1:{grpc_a},127.0.0.1:{grpc_b}"
    conf = work / "ha.yaml"
    conf.write_text(f"yarn.resourcemanager.ha.enabled: true\nshepherd.resourcemanager.ha.grpc-addresses: '{pair}'\n"
                    f"shepherd.resourcemanager.store.lease-ms: {int(lease_s * 1000)}\n")
    job = {"id": "s4", "stages": [_stage(marks, "s0", 2, 15), _stage(marks, "s1", 2, 2, "s0")]}
    daemons: list[Daemon] = []
    cluster = LocalCluster(work / "cluster", allow_root_containers=True,
                           nodes=0, grpc_port=grpc_a, rest_port=rest_a, store_url=store_url,
                           rm_args=["--config", str(conf)], ipc_client_port=-1, ipc_scheduler_port=-1)

    def standby(name: str, grpc_port: int, rest_port: int) -> Daemon:
        d = Daemon(name, [sys.executable, "-m", "rm.cli", "rm", "--grpc-port", str(grpc_port), "--rest-port",
                          str(rest_port), "--data-dir", str(work / name), "--store-url", store_url, "--config",
                          str(conf), "--credentials", str(cluster.credentials_path), "--ipc-client-port", "-1",
                          "--ipc-scheduler-port", "-1"], work / f"{name}.log", re.compile("standing by"))
        daemons.append(d)
        d.start()
        return d

    try:
        cluster.start()
        b = standby("rm-b", grpc_b, rest_b)
        cluster.rm_address, cluster.num_nodes = pair, 2
        for i in range(2):
            cluster.start_nm(i)
        app_id = _submit(cluster, work, job, rm=pair)
        seq = _seq(app_id)
        before = wait(lambda: len(t := _tasks(seq)) == 2 and t, 60, "the first stage")
        assert cluster.rm is not None
        cluster.rm.signal(signal.SIGKILL)
        t0 = time.monotonic()
        wait(lambda: "resourcemanager ready" in (work / "rm-b.log").read_text(), lease_s + 30, "B to take over")
        row: dict[str, Any] = {"scenario": "S4", "lease_s": lease_s,
                               "takeover_after_sigkill_s": round(time.monotonic() - t0, 2),
                               "kept_same_pid": sum(1 for c, p in _tasks(seq).items() if before.get(c) == p),
                               "running_before": len(before)}
        a = standby("rm-a", grpc_a, rest_a)
        b.signal(signal.SIGSTOP)
        t1 = time.monotonic()
        wait(lambda: "resourcemanager ready" in (work / "rm-a.log").read_text(), lease_s + 30, "A to take over")
        row["takeover_of_a_paused_active_s"] = round(time.monotonic() - t1, 2)
        b.signal(signal.SIGCONT)
        woke = time.monotonic()
        assert b.proc is not None
        row["paused_active_exit_status"] = b.proc.wait(30)
        exited_at = time.time()
        row["stepped_down_after_s"] = round(time.monotonic() - woke, 2)
        refused_at = _logged_at(work / "rm-b.log", "no longer holds the state store")
        if refused_at is not None:  # the target: stepped down within 2 s of its first refused write
            row["stepped_down_after_refused_write_s"] = round(exited_at - refused_at, 2)
        row["paused_active_wrote"] = "no longer holds the state store" not in (work / "rm-b.log").read_text()
        with RMClient(pair) as client:
            final = _final(client, app_id)
        row["succeeded_once"] = final.final_status == "SUCCEEDED" and final.attempts == 1
        row["tasks_run_twice"] = _twice(marks)
        del a
        return row
    finally:
        for d in daemons:
            if d.proc is not None and d.proc.poll() is None:
                d.signal(signal.SIGCONT)
            d.stop()
        cluster.stop()
        drop()


SCENARIOS = {
    "S4": s4_failover,
    "S5": s5_nm_restart,
    "S6": lambda work: s67_nm_fault(work, outage_s=None),
    "S7-5": lambda work: s67_nm_fault(work, outage_s=5.0),
    "S7-25": lambda work: s67_nm_fault(work, outage_s=25.0),
    "S8": lambda work: s89_am_fault(work, hang=False),
    "S9": lambda work: s89_am_fault(work, hang=True),
}
