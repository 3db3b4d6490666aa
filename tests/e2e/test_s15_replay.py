"""S15, the DemonBot replay, through every door of a default cluster: new-application then a submission whose
AM command writes a marker file, over REST (no credentials, ``user.name=dr.who``, ``user.name=root``, a forged
bearer token), over gRPC (no credentials, a forged bearer token) and over Hadoop IPC (SIMPLE authentication, no
token, claiming ``dr.who`` and ``root``). Every attempt is refused (or finds nothing listening), the marker never
appears, no NodeManager starts a process, and every attempt that reached the RM is one audit denial.

* On loopback, against the cluster `shepherd up` starts (`make_cluster`): then, with the RM delegation token
  the RM wrote (``hadoop.token``), the same submission over Hadoop IPC runs.
* From another host (network namespaces, rm/netns.py): the default `shepherd up` run on host 1 offers nothing
  to host 2 (every connection refused); an RM told to listen on its bridge address refuses every write host 3
  sends, audited with host 3's address, while its reads stay open; with the client secret copied to host 3,
  the same submission runs.

"0 processes started" is read where a NodeManager keeps it: one state directory per container it ever launched
(``<work dir>/nmstate/containers/``, nodemanager/statefiles.py), its child processes, its launch counter.

Run as a script (``python -m tests.e2e.test_s15_replay``), this module is the attacker: the namespace tests
start it on the attacker's host and read its findings as JSON from its output.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import grpc
import httpx
import psutil
import pytest

from common.credentials import load
from common.hadoop import credentials as hadoop_credentials
from common.hadoop import records
from common.hadoop.client import IpcClient, RemoteError
from common.resources import Resources
from nodemanager.statefiles import containers_root
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.local import NM_READY, RM_READY, Daemon, LocalCluster
from rm.netns import SUBNET, Network, in_ns
from tests.e2e.conftest import ROOT, kill_strays, wait_until

pytestmark = pytest.mark.slow

APPS = "/ws/v1/cluster/apps"
CLIENT_PROTOCOL = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"
NOTHING_LISTENS = "connection refused"
DENIED = {"401", "403", "UNAUTHENTICATED", "PERMISSION_DENIED", ACCESS_CONTROL}
OPERATION = {"new-application": "Get New App", "submit": "Submit Application Request"}
TARGET = {"rest": "RMWebService", "grpc": "ClientRMService", "ipc": "ClientRMService"}

# (variant, headers, query): DemonBot's two requests as it sends them, then with the names it tries
REST_VARIANTS: list[tuple[str, dict[str, str], dict[str, str]]] = [
    ("no credentials", {}, {}),
    ("user.name=dr.who", {}, {"user.name": "dr.who"}),
    ("user.name=root", {}, {"user.name": "root"}),
    ("forged bearer token", {"Authorization": "Bearer forged"}, {"user.name": "root"}),
]
GRPC_VARIANTS: list[tuple[str, list[tuple[str, str]]]] = [
    ("no credentials", []),
    ("forged bearer token", [("authorization", "Bearer forged")]),
]
IPC_USERS = ("dr.who", "root")  # SIMPLE authentication: a claimed name and no token


@dataclass(frozen=True)
class Attempt:
    door: str  # rest | grpc | ipc
    variant: str
    call: str  # new-application | submit
    outcome: str  # the HTTP status, gRPC code or Java exception class; NOTHING_LISTENS; "OK" if it was taken

    @property
    def reached(self) -> bool:
        return self.outcome != NOTHING_LISTENS


# ---------------------------------------------------------------------------------------------- the attacker
def guess_app_id(rest: str) -> str:
    """The id the RM will hand out next, as an attacker reads it off the open cluster info."""
    with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
        started = httpx.get(f"{rest}/ws/v1/cluster/info", timeout=5).json()["clusterInfo"]["startedOn"]
        return f"application_{int(started)}_0001"
    return "application_1_0001"


def rest_attempts(rest: str, marker: Path, app_id: str) -> list[Attempt]:
    out = []
    with httpx.Client(base_url=rest, timeout=10) as http:
        for variant, headers, params in REST_VARIANTS:
            submission = {"application-id": app_id, "application-name": "s15", "application-type": "YARN",
                          "am-container-spec": {"commands": {"command": f"touch {marker}"}},
                          "resource": {"memory": 128, "vCores": 1}}
            for call, path, body in (("new-application", f"{APPS}/new-application", None),
                                     ("submit", APPS, submission)):
                try:
                    outcome = str(http.post(path, headers=headers, params=params, json=body).status_code)
                except httpx.ConnectError:
                    outcome = NOTHING_LISTENS
                out.append(Attempt("rest", variant, call, outcome))
    return out


def _grpc_outcome(err: grpc.RpcError) -> str:
    code = err.code()  # type: ignore[attr-defined]
    if code == grpc.StatusCode.UNAVAILABLE and "connection refused" in (err.details() or "").lower():  # type: ignore[attr-defined]
        return NOTHING_LISTENS
    return str(code.name)


def grpc_attempts(address: str, marker: Path, app_id: str) -> list[Attempt]:
    out = []
    with grpc.insecure_channel(address) as channel:
        stub = pbg.ApplicationClientStub(channel)
        submission = pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
            application_id=app_id, name="s15", user="root",
            am_resource=pb.Resource(values=Resources.of(memory_mb=128, vcores=1).to_dict()),
            am_container_spec=pb.ContainerLaunchContext(commands=[f"touch {marker}"])))
        for variant, metadata in GRPC_VARIANTS:
            for call, method, request in (("new-application", stub.GetNewApplication, pb.GetNewApplicationRequest()),
                                          ("submit", stub.SubmitApplication, submission)):
                try:
                    method(request, metadata=metadata, timeout=10)
                    outcome = "OK"
                except grpc.RpcError as err:
                    outcome = _grpc_outcome(err)
                out.append(Attempt("grpc", variant, call, outcome))
    return out


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def ipc_submission(app_id: str, command: str) -> yp.SubmitApplicationRequest:
    return yp.SubmitApplicationRequest(application_submission_context=yr.ApplicationSubmissionContext(
        application_id=records.app_id_pb(app_id), application_name="s15", application_type="YARN",
        am_container_spec=yr.ContainerLaunchContext(command=[command]),
        resource=records.resource_pb(Resources.of(memory_mb=128, vcores=1))))


async def _ipc_attempts(address: str, marker: Path, app_id: str) -> list[Attempt]:
    out = []
    calls = (("new-application", "getNewApplication", yp.GetNewApplicationRequest(), yp.GetNewApplicationResponse),
             ("submit", "submitApplication", ipc_submission(app_id, f"touch {marker}"), yp.SubmitApplicationResponse))
    for user in IPC_USERS:
        variant = f"SIMPLE as {user}"
        try:
            async with IpcClient(*_split(address), CLIENT_PROTOCOL, user=user, timeout=10) as client:
                for call, method, request, response in calls:
                    try:
                        await client.call(method, request, response)
                        outcome = "OK"
                    except RemoteError as err:
                        outcome = err.java_class
                    out.append(Attempt("ipc", variant, call, outcome))
        except ConnectionRefusedError:
            out += [Attempt("ipc", variant, call, NOTHING_LISTENS) for call, *_ in calls]
    return out


def ipc_attempts(address: str, marker: Path, app_id: str) -> list[Attempt]:
    return asyncio.run(_ipc_attempts(address, marker, app_id))


def replay(rest: str, grpc_address: str, ipc_address: str, marker: Path) -> list[Attempt]:
    """Every door's attempts, in turn."""
    app_id = guess_app_id(rest)
    return [*rest_attempts(rest, marker, app_id), *grpc_attempts(grpc_address, marker, app_id),
            *ipc_attempts(ipc_address, marker, app_id)]


async def _ipc_read(address: str) -> str:
    try:
        async with IpcClient(*_split(address), CLIENT_PROTOCOL, user="dr.who", timeout=10) as client:
            await client.call("getApplications", yp.GetApplicationsRequest(), yp.GetApplicationsResponse)
            return "OK"
    except RemoteError as err:
        return err.java_class
    except ConnectionRefusedError:
        return NOTHING_LISTENS


def reads(rest: str, grpc_address: str, ipc_address: str) -> dict[str, str]:
    """What an anonymous caller gets when it lists the apps through each door."""
    try:
        got = {"rest": str(httpx.get(f"{rest}{APPS}", timeout=10).status_code)}
    except httpx.ConnectError:
        got = {"rest": NOTHING_LISTENS}
    with grpc.insecure_channel(grpc_address) as channel:
        try:
            pbg.ApplicationClientStub(channel).GetApplications(pb.GetApplicationsRequest(), timeout=10)
            got["grpc"] = "OK"
        except grpc.RpcError as err:
            got["grpc"] = _grpc_outcome(err)
    got["ipc"] = asyncio.run(_ipc_read(ipc_address))
    return got


def rest_submission(rest: str, secret: str, marker: Path) -> tuple[int, int, str]:
    """The same two requests with the client secret: (new-application status, submit status, app id)."""
    headers = {"Authorization": f"Bearer {secret}"}
    with httpx.Client(base_url=rest, timeout=10, headers=headers) as http:
        new = http.post(f"{APPS}/new-application", params={"user.name": "alice"})
        app_id = new.json().get("application-id", "") if new.status_code == 200 else ""
        body = {"application-id": app_id, "application-name": "s15", "application-type": "YARN",
                "am-container-spec": {"commands": {"command": f"touch {marker}"}},
                "resource": {"memory": 128, "vCores": 1}}
        sub = http.post(APPS, params={"user.name": "alice"}, json=body)
    return new.status_code, sub.status_code, app_id


def main(argv: list[str] | None = None) -> None:
    """The attacker on another host: its findings as one JSON object on stdout."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rest", required=True)
    p.add_argument("--grpc", required=True)
    p.add_argument("--ipc", required=True)
    p.add_argument("--marker", type=Path, required=True)
    p.add_argument("--secret", default="", help="then submit once more, with this client secret, ...")
    p.add_argument("--authorized", type=Path, help="... a command that writes this file")
    args = p.parse_args(argv)
    found: dict[str, object] = {
        "attempts": [asdict(a) for a in replay(args.rest, args.grpc, args.ipc, args.marker)],
        "reads": reads(args.rest, args.grpc, args.ipc),
    }
    if args.secret and args.authorized:
        found["with_secret"] = rest_submission(args.rest, args.secret, args.authorized)
    print(json.dumps(found))


# ------------------------------------------------------------------------------------------ the evidence
def launched(work_dir: Path) -> list[str]:
    """The containers a NodeManager with this work dir ever launched (its per-container state directories)."""
    root = containers_root(work_dir)
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def processes_under(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def audit_denials(rm_log: Path) -> list[str]:
    text = rm_log.read_text() if rm_log.exists() else ""
    return [line for line in text.splitlines() if "shepherd.rm.audit" in line and "RESULT=FAILURE" in line]


def denial_key(line: str) -> tuple[str, str, str]:
    """(target, operation, ip) of an audit line (fields are tab-separated; JSON logs escape the tab)."""
    fields = dict(re.findall(r"(TARGET|OPERATION|IP)=(.*?)(?:\\t|\t|\"|$)", line))
    return fields.get("TARGET", ""), fields.get("OPERATION", ""), fields.get("IP", "")


def expected_denials(attempts: list[Attempt], ip: str) -> Counter[tuple[str, str, str]]:
    return Counter((TARGET[a.door], OPERATION[a.call], ip) for a in attempts if a.reached)


def assert_all_refused(attempts: list[Attempt], *, listening: bool) -> None:
    assert len(attempts) == 2 * (len(REST_VARIANTS) + len(GRPC_VARIANTS) + len(IPC_USERS))
    allowed = DENIED if listening else {NOTHING_LISTENS}
    taken = [a for a in attempts if a.outcome not in allowed]
    assert not taken, taken
    assert all(a.outcome == ACCESS_CONTROL for a in attempts if a.door == "ipc") or not listening


# ------------------------------------------------------------------------------------------------ loopback
def test_every_door_refuses_the_replay_on_loopback_and_no_node_starts_anything(make_cluster,  # type: ignore[no-untyped-def]
                                                                               tmp_path: Path) -> None:
    # as `shepherd up` makes it: as root, its containers run as nobody (a drop dir they can write to)
    cluster: LocalCluster = make_cluster(nodes=2, allow_root_containers=False)
    assert cluster.ipc_client_address, "the default cluster serves Hadoop IPC"
    work_dirs = [cluster.data_dir / f"nm{i}" for i in range(cluster.num_nodes)]
    nm_pids = [nm.proc.pid for nm in cluster.nms if nm.proc is not None]
    drop = tmp_path / "drop"
    drop.mkdir(mode=0o1777)
    drop.chmod(0o1777)
    marker = drop / "pwned"
    rm_log = cluster.data_dir / "logs" / "rm.log"
    before = len(audit_denials(rm_log))

    attempts = replay(cluster.rest_url, cluster.rm_address, cluster.ipc_client_address, marker)
    assert_all_refused(attempts, listening=True)
    assert reads(cluster.rest_url, cluster.rm_address, cluster.ipc_client_address) == {
        "rest": "200", "grpc": "OK", "ipc": "OK"}  # reads stay open on loopback

    # nothing was taken: no app, no container, no process, on the RM and on every NodeManager
    rm_view = httpx.get(f"{cluster.rest_url}/ws/v1/cluster/metrics", timeout=10).json()["clusterMetrics"]
    assert (rm_view["appsSubmitted"], rm_view["containersAllocated"]) == (0, 0), rm_view
    assert httpx.get(f"{cluster.rest_url}{APPS}", timeout=10).json()["apps"]["app"] in ([], None)
    assert [launched(w) for w in work_dirs] == [[], []]
    assert [processes_under(pid) for pid in nm_pids] == [[], []]
    for http in cluster.node_http:
        metrics = httpx.get(f"http://{http}/metrics", timeout=10).text
        assert re.search(r"^shepherd_nodemanager_containers_launched_total 0\.0$", metrics, re.MULTILINE), metrics
    # one denial per attempt, each naming the door, the operation and the caller's address
    denials = audit_denials(rm_log)[before:]
    assert Counter(denial_key(d) for d in denials) == expected_denials(attempts, "127.0.0.1"), denials
    assert sum("USER=dr.who" in d for d in denials if "TARGET=ClientRMService" in d) >= 2  # the claimed names
    assert any("USER=root" in d and "Submit Application" in d and "AccessControlException" in d for d in denials)

    # with the RM delegation token the RM wrote for stock clients, the same submission over Hadoop IPC runs
    (token,) = [t for t in hadoop_credentials.decode(cluster.hadoop_token_path.read_bytes()).tokens.values()
                if t.kind == "RM_DELEGATION_TOKEN"]
    authorized = drop / "authorized"

    async def submit() -> str:
        async with IpcClient(*_split(cluster.ipc_client_address), CLIENT_PROTOCOL, user="root", token=token) as c:
            new = await c.call("getNewApplication", yp.GetNewApplicationRequest(), yp.GetNewApplicationResponse)
            app_id = records.app_id_str(new.application_id)
            await c.call("submitApplication", ipc_submission(app_id, f"touch {authorized}"),
                         yp.SubmitApplicationResponse)
            return app_id

    app_id = asyncio.run(submit())
    wait_until(authorized.exists, 60, "the marker of the authenticated submission")
    # the one container launched is that app's AM; the attacker's marker never appeared
    ran = [c for w in work_dirs for c in launched(w)]
    assert ran == [f"container_{app_id.split('_', 1)[1]}_01_000001"], ran
    assert not marker.exists()
    if os.geteuid() == 0:  # the container ran as the unprivileged account, not as root
        assert authorized.stat().st_uid == pwd.getpwnam("nobody").pw_uid


# ----------------------------------------------------------------------------------- from another host
def _env(tmp_path: Path) -> dict[str, str]:
    # the index of local clusters (~/.shepherd/clusters) stays the test's: a namespace's 127.0.0.1:7030 is not
    # this machine's
    return {**os.environ, "PYTHONPATH": str(ROOT), "SHEPHERD_HOME": str(tmp_path / "home")}


def attack_from(ns: str, env: dict[str, str], *, rest: str, grpc_address: str, ipc_address: str, marker: Path,
                secret: str = "", authorized: Path | None = None) -> dict[str, object]:
    """The attacker's findings from host ``ns``; with ``secret``, then its submission writing ``authorized``."""
    args = ["-m", "tests.e2e.test_s15_replay", "--rest", rest, "--grpc", grpc_address, "--ipc", ipc_address,
            "--marker", str(marker)]
    if secret and authorized is not None:
        args += [f"--secret={secret}", "--authorized", str(authorized)]  # any secret, even one like an option
    done = subprocess.run(in_ns(ns, *args), capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    found["attempts"] = [Attempt(**a) for a in found["attempts"]]  # type: ignore[attr-defined]
    return found


def test_the_default_cluster_offers_nothing_to_another_host(network: Network, tmp_path: Path) -> None:
    """`shepherd up`, unchanged, on host 1: from host 2 every door's connection is refused."""
    host, attacker = network.add_host(1), network.add_host(2)
    env = _env(tmp_path)
    # as root its containers run as nobody, who must reach the data dir (pytest's tmp dirs are private)
    data = Path(tempfile.mkdtemp(prefix="shepherd-s15-"))
    data.chmod(0o755)
    up = Daemon("up", in_ns(host, "-m", "rm.cli", "up", "--nodes", "1", "--data-dir", str(data / "cluster")),
                tmp_path / "logs" / "up.log", re.compile(r"ResourceManager\s+gRPC (\S+)\s+REST/web (\S+)"), env=env)
    try:
        ready = up.start(timeout=90)
        grpc_address, rest = ready.group(1), ready.group(2)
        assert (grpc_address, rest) == ("127.0.0.1:7030", "http://127.0.0.1:8088")
        # it serves on host 1's loopback, every door
        here = subprocess.run(in_ns(host, "-c", "import httpx; print(httpx.get('http://127.0.0.1:8088"
                                                "/ws/v1/cluster/info', timeout=5).status_code)"),
                              capture_output=True, text=True, timeout=60, env=env, check=False)
        assert here.stdout.strip() == "200", here.stderr
        marker = tmp_path / "pwned"
        address = f"{SUBNET}.1"
        found = attack_from(attacker, env, rest=f"http://{address}:8088", grpc_address=f"{address}:7030",
                            ipc_address=f"{address}:8032", marker=marker)
        attempts: list[Attempt] = found["attempts"]  # type: ignore[assignment]
        assert_all_refused(attempts, listening=False)
        assert found["reads"] == {"rest": NOTHING_LISTENS, "grpc": NOTHING_LISTENS, "ipc": NOTHING_LISTENS}
        assert not audit_denials(data / "cluster" / "logs" / "rm.log")  # nothing reached the RM
        assert launched(data / "cluster" / "nm0") == []
        assert not marker.exists()
    finally:
        up.stop()
        shutil.rmtree(data, ignore_errors=True)


def test_a_cluster_on_its_bridge_address_refuses_another_host(network: Network, tmp_path: Path) -> None:
    """The RM told to listen on host 1's address (its secrets in the credentials file it writes, as on a first
    start), a NodeManager on host 2 with that file copied, the attacker on host 3."""
    rm_ns, nm_ns, attacker = network.add_host(1), network.add_host(2), network.add_host(3)
    rm_ip, nm_ip, attacker_ip = (network.hosts[ns] for ns in (rm_ns, nm_ns, attacker))
    env = _env(tmp_path)
    creds = tmp_path / "rm" / "credentials.json"
    rm = Daemon("rm", in_ns(rm_ns, "-m", "rm.cli", "rm", "--host", rm_ip, "--data-dir", str(tmp_path / "rm"),
                            "--create-store", "--credentials", str(creds)),
                tmp_path / "logs" / "rm.log", RM_READY, env=env)
    work_dir = tmp_path / "nm0"
    root_flag = ["--allow-root-containers"] if os.geteuid() == 0 else []  # the job's files are root's
    nm = Daemon("nm0", in_ns(nm_ns, "-m", "rm.cli", "nm", "--rm", f"{rm_ip}:7030", "--host", nm_ip, "--port", "7040",
                             "--http-port", "8042", "--memory-mb", "2048", "--vcores", "2", "--work-dir",
                             str(work_dir), "--no-cgroups", "--credentials", str(creds), *root_flag),
                tmp_path / "logs" / "nm0.log", NM_READY, env=env)
    try:
        ready = rm.start(timeout=90)
        assert ready.group(1) == f"{rm_ip}:7030"
        assert ready.group(3) == f"{rm_ip}:8032", ready.group(0)  # Hadoop IPC on the same address
        rest = ready.group(2)
        nm.start(timeout=90)
        assert nm.proc is not None
        marker = tmp_path / "pwned"
        found = attack_from(attacker, env, rest=rest, grpc_address=f"{rm_ip}:7030",
                            ipc_address=f"{rm_ip}:8032", marker=marker)
        attempts: list[Attempt] = found["attempts"]  # type: ignore[assignment]
        assert_all_refused(attempts, listening=True)
        # reads are open off loopback too (nothing in the product closes them; the README: "reads stay open")
        assert found["reads"] == {"rest": "200", "grpc": "OK", "ipc": "OK"}

        denials = audit_denials(tmp_path / "logs" / "rm.log")
        assert Counter(denial_key(d) for d in denials) == expected_denials(attempts, attacker_ip), denials
        assert attacker_ip == f"{SUBNET}.3"
        assert launched(work_dir) == []
        assert processes_under(nm.proc.pid) == []
        assert not marker.exists()

        # the same submission from the same host, with the client secret copied there, runs
        authorized = tmp_path / "authorized"
        again = attack_from(attacker, env, rest=rest, grpc_address=f"{rm_ip}:7030", ipc_address=f"{rm_ip}:8032",
                            marker=marker, secret=load(creds).client_secret, authorized=authorized)
        assert_all_refused(again["attempts"], listening=True)  # type: ignore[arg-type]
        new, sub, app_id = cast(list[Any], again["with_secret"])
        assert (new, sub) == (200, 202)
        wait_until(authorized.exists, 60, "the marker of the authorized submission")
        assert launched(work_dir) == [f"container_{app_id.split('_', 1)[1]}_01_000001"]
        assert not marker.exists()
    finally:
        nm.stop()
        rm.stop()
        kill_strays(tmp_path)


if __name__ == "__main__":
    main()
