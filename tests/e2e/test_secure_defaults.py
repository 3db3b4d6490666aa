"""S15 on the default local cluster: every door refuses an unauthenticated submission, the command never
runs, each attempt is one audit denial; with the credentials `shepherd up` wrote, the same submission runs."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import grpc
import httpx
import pytest

from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.client import RMClient
from rm.local import LocalCluster
from tests.e2e.conftest import wait_until

pytestmark = pytest.mark.slow
APPS = "/ws/v1/cluster/apps"


def _audit(cluster: LocalCluster) -> list[str]:
    log = cluster.data_dir / "logs" / "rm.log"
    return [line for line in log.read_text().splitlines() if "shepherd.rm.audit" in line] if log.exists() else []


def _rest_submission(rest: str, marker: Path, headers: dict[str, str], params: dict[str, str]
                     ) -> tuple[int, int]:
    """new-application then submit; the two status codes."""
    new = httpx.post(f"{rest}{APPS}/new-application", headers=headers, params=params)
    app_id = new.json().get("application-id", "application_1_0001") if new.status_code == 200 else \
        "application_1_0001"
    body = {"application-id": app_id, "application-name": "s15", "am-container-spec": {
        "commands": {"command": f"touch {marker}"}}, "resource": {"memory": 128, "vCores": 1}}
    sub = httpx.post(f"{rest}{APPS}", json=body, headers=headers, params=params)
    return new.status_code, sub.status_code


def test_no_door_runs_a_command_without_the_credentials(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster: LocalCluster = make_cluster(nodes=1)
    creds = cluster.credentials_path
    # the secrets, the Hadoop token and the store (which holds the token-signing keys): the RM's user's only
    for private in (creds, cluster.hadoop_token_path, *(cluster.data_dir / "rm").glob("rm-state.db*")):
        assert stat.S_IMODE(os.stat(private).st_mode) == 0o600, private
    assert (cluster.data_dir / "rm" / "rm-state.db").exists()
    marker = tmp_path / "pwned"
    before = len(_audit(cluster))

    attempts = [
        ({}, {}),  # no credentials at all
        ({}, {"user.name": "dr.who"}),
        ({}, {"user.name": "root"}),
        ({"Authorization": "Bearer forged"}, {"user.name": "root"}),
    ]
    for headers, params in attempts:
        new, sub = _rest_submission(cluster.rest_url, marker, headers, params)
        assert new in (401, 403), (headers, params, new)
        assert sub in (401, 403), (headers, params, sub)
    refused = httpx.post(f"{cluster.rest_url}{APPS}/new-application").json()["RemoteException"]
    assert refused["exception"] == "AuthorizationException"

    with grpc.insecure_channel(cluster.rm_address) as ch:
        stub = pbg.ApplicationClientStub(ch)
        for md in ([], [("authorization", "Bearer forged")]):
            with pytest.raises(grpc.RpcError) as err:
                stub.GetNewApplication(pb.GetNewApplicationRequest(), metadata=md)
            assert err.value.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
            with pytest.raises(grpc.RpcError) as err:
                stub.SubmitApplication(pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
                    application_id="application_1_0001",
                    am_container_spec=pb.ContainerLaunchContext(commands=[f"touch {marker}"]))), metadata=md)
            assert err.value.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)

    # reads stay open on loopback
    assert httpx.get(f"{cluster.rest_url}{APPS}").status_code == 200
    with RMClient(cluster.rm_address, secret="") as anonymous:
        assert anonymous.apps() == []
    time.sleep(2)  # a heartbeat or two: nothing was launched
    assert not marker.exists()

    # one audit denial per refused write: 4 × 2 REST + 1 REST + 2 × 2 gRPC
    denials = [line for line in _audit(cluster)[before:] if "RESULT=FAILURE" in line]
    assert len(denials) == 13, denials
    assert sum("TARGET=RMWebService" in d for d in denials) == 9
    assert sum("TARGET=ClientRMService" in d for d in denials) == 4
    assert any("USER=root" in d and "OPERATION=Submit Application Request" in d for d in denials)
    assert all("IP=127.0.0.1" in d for d in denials)
    assert not any(cluster.client_secret in line or cluster.node_secret in line
                   for line in (cluster.data_dir / "logs" / "rm.log").read_text().splitlines())

    # with the credentials file the RM wrote, the same submission runs (the client finds it on its own)
    secret = cluster.client_secret
    new, sub = _rest_submission(cluster.rest_url, marker, {"Authorization": f"Bearer {secret}"},
                                {"user.name": "alice"})
    assert (new, sub) == (200, 202)
    wait_until(marker.exists, 60, "the marker of the authenticated submission")
    ok = [line for line in _audit(cluster) if "RESULT=SUCCESS" in line]
    assert any("USER=alice" in line and "OPERATION=Submit Application Request" in line and "APPID=application_"
               in line for line in ok), ok
    with RMClient(cluster.rm_address) as client:
        assert client.secret == secret
        app_id = client.new_application()
        assert app_id.startswith("application_")


def test_insecure_mode_is_explicit_and_logged(make_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster: LocalCluster = make_cluster(nodes=1, insecure=True)
    assert not cluster.credentials_path.exists()
    new = httpx.post(f"{cluster.rest_url}{APPS}/new-application")
    assert new.status_code == 200
    log = (cluster.data_dir / "logs" / "rm.log").read_text()
    assert "INSECURE" in log
    assert "need no secret" in log


def test_a_node_without_the_node_secret_is_refused(make_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster: LocalCluster = make_cluster(nodes=1)
    with grpc.insecure_channel(cluster.rm_address) as ch:
        tracker = pbg.ResourceTrackerStub(ch)
        for md in ([], [("authorization", f"Bearer {cluster.client_secret}")]):
            with pytest.raises(grpc.RpcError) as err:
                tracker.RegisterNodeManager(pb.RegisterNodeRequest(
                    node_id=pb.NodeId(host="127.0.0.1", port=1), http_address="127.0.0.1:2",
                    capability=pb.Resource(values={"memory-mb": 999_999, "vcores": 99})), metadata=md)
            assert err.value.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
    with RMClient(cluster.rm_address) as client:
        assert len(client.nodes()) == 1
    assert any("OPERATION=Register Node" in line and "RESULT=FAILURE" in line for line in _audit(cluster))


def test_a_node_cannot_pass_for_another_live_node(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """S16: with the node secret, a rogue NodeManager still cannot register under a live node's id, heartbeat
    for it, or report its containers."""
    from tests.e2e.conftest import sleep_job, submit_job, write_job

    cluster: LocalCluster = make_cluster(nodes=1)
    live_host, live_port = cluster.node_ids[0].rsplit(":", 1)
    live = pb.NodeId(host=live_host, port=int(live_port))
    node_md = [("authorization", f"Bearer {cluster.node_secret}")]
    app = submit_job(cluster, write_job(tmp_path, sleep_job("victim", 60, tasks=1)), tmp_path)
    with RMClient(cluster.rm_address) as client:
        wait_until(lambda: client.app(app).state == "RUNNING", 60, "the victim to run")
        am = client.app(app).am_container_id
        wait_until(lambda: next(c for c in client.containers(app) if c.container_id == am).state == "RUNNING", 30,
                   "the victim's AM container to run")
        before = client.nodes()[0]
    with grpc.insecure_channel(cluster.rm_address) as ch:
        tracker = pbg.ResourceTrackerStub(ch)
        with pytest.raises(grpc.RpcError) as err:  # registering as the live node
            tracker.RegisterNodeManager(pb.RegisterNodeRequest(
                node_id=live, http_address="127.0.0.1:2",
                capability=pb.Resource(values={"memory-mb": 999_999, "vcores": 99})), metadata=node_md)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "registered and alive" in (err.value.details() or "")
        # heartbeating for it, claiming its AM container ended: told to register, nothing changes
        reply = tracker.NodeHeartbeat(pb.NodeHeartbeatRequest(node_id=live, response_id=0, container_statuses=[
            pb.ContainerStatus(container_id=am, state=pb.CONTAINER_COMPLETE, exit_status=0)]), metadata=node_md)
        assert reply.action == pb.NODE_ACTION_RESYNC
        # a node of its own reporting the live node's container
        rogue = pb.NodeId(host="127.0.0.1", port=1)
        with pytest.raises(grpc.RpcError) as err:
            tracker.RegisterNodeManager(pb.RegisterNodeRequest(
                node_id=rogue, http_address="127.0.0.1:2", capability=pb.Resource(values={"memory-mb": 512, "vcores": 1}),
                container_statuses=[pb.ContainerStatus(container_id=am, state=pb.CONTAINER_COMPLETE)]),
                metadata=node_md)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        call = tracker.RegisterNodeManager.with_call(pb.RegisterNodeRequest(
            node_id=rogue, http_address="127.0.0.1:2", capability=pb.Resource(values={"memory-mb": 512, "vcores": 1})),
            metadata=node_md)
        session = [(k, v) for k, v in call[1].trailing_metadata() if k == "x-shepherd-node-session"]
        assert session
        with pytest.raises(grpc.RpcError) as err:
            tracker.NodeHeartbeat(pb.NodeHeartbeatRequest(node_id=rogue, response_id=0, container_statuses=[
                pb.ContainerStatus(container_id=am, state=pb.CONTAINER_COMPLETE)]), metadata=node_md + session)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with RMClient(cluster.rm_address) as client:
        assert client.app(app).state == "RUNNING"
        assert next(c for c in client.containers(app) if c.container_id == am).state == "RUNNING"
        after = next(n for n in client.nodes() if f"{n.node_id.host}:{n.node_id.port}" == cluster.node_ids[0])
        assert after.capability == before.capability
        assert after.state == "RUNNING"


@pytest.mark.skipif(os.geteuid() != 0, reason="switching containers to another account needs root")
def test_a_root_nodemanager_runs_containers_as_an_unprivileged_account() -> None:
    import pwd
    import shutil
    import tempfile

    nobody = pwd.getpwnam("nobody")
    base = Path(tempfile.mkdtemp(prefix="shepherd-run-as-"))  # pytest's tmp dirs are private to root
    base.chmod(0o755)
    drop = base / "drop"
    drop.mkdir()
    drop.chmod(0o1777)
    cluster = LocalCluster(base / "cluster", nodes=1, grpc_port=0, rest_port=0, ipc_client_port=-1,
                           ipc_scheduler_port=-1)  # as `shepherd up` makes it: no container user named
    try:
        cluster.start()
        marker = drop / "marker"
        writer = {"Authorization": f"Bearer {cluster.client_secret}"}
        app_id = httpx.post(f"{cluster.rest_url}{APPS}/new-application", headers=writer).json()["application-id"]
        body = {"application-id": app_id, "application-name": "whoami", "resource": {"memory": 128, "vCores": 1},
                "am-container-spec": {"commands": {
                    "command": f"id -u > {marker}.tmp && touch {drop}/owned && mv {marker}.tmp {marker}"}}}
        submitted = httpx.post(f"{cluster.rest_url}{APPS}", json=body, params={"user.name": "root"}, headers=writer)
        assert submitted.status_code == 202, submitted.text
        wait_until(marker.exists, 60, "the container's marker")
        assert marker.read_text().strip() == str(nobody.pw_uid)  # the process ran as nobody, not root
        assert (drop / "owned").stat().st_uid == nobody.pw_uid
        assert marker.stat().st_uid == nobody.pw_uid
        assert "containers run as nobody" in (cluster.data_dir / "logs" / "nm0.log").read_text()
        assert (cluster.data_dir / "output").stat().st_uid == nobody.pw_uid  # where jobs write by default
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching containers to another account needs root")
def test_a_root_cluster_refuses_a_data_dir_its_container_account_cannot_enter(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    cluster = LocalCluster(private / "cluster", nodes=1, grpc_port=0, rest_port=0, ipc_client_port=-1,
                           ipc_scheduler_port=-1)
    with pytest.raises(ValueError, match=r"nobody, who cannot enter .*: choose a data dir"):
        cluster.start()
    assert cluster.rm is None
    assert not (private / "cluster" / "logs").exists()
    asked = LocalCluster(private / "other", nodes=1, allow_root_containers=True)
    assert asked.container_account() is None
    assert asked.prepare_for_containers() == []


@pytest.mark.skipif(os.geteuid() != 0, reason="switching containers to another account needs root")
def test_with_limit_users_off_each_container_runs_as_its_app_s_user() -> None:
    """YARN's nonsecure-mode.limit-users=false: an app submitted for daemon runs as daemon (allowed here by a
    lowest uid of 1), one for nobody as nobody; root, and a user with no account on the host, are refused at
    launch with the reason in the app's diagnostics, and nothing of theirs runs."""
    import pwd
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="shepherd-limit-users-"))
    base.chmod(0o755)
    drop = base / "drop"
    drop.mkdir()
    drop.chmod(0o1777)
    cluster = LocalCluster(base / "cluster", nodes=1, grpc_port=0, rest_port=0, ipc_client_port=-1,
                           ipc_scheduler_port=-1, limit_users=False, nm_args=["--min-user-id", "1"])
    try:
        cluster.start()
        writer = {"Authorization": f"Bearer {cluster.client_secret}"}

        def submit(user: str) -> str:
            app_id = httpx.post(f"{cluster.rest_url}{APPS}/new-application", headers=writer).json()["application-id"]
            body = {"application-id": app_id, "application-name": f"as-{user}", "max-app-attempts": 1,
                    "resource": {"memory": 128, "vCores": 1}, "am-container-spec": {"commands": {
                        "command": f"id -u > {drop}/{user}.tmp && mv {drop}/{user}.tmp {drop}/{user}"}}}
            done = httpx.post(f"{cluster.rest_url}{APPS}", json=body, params={"user.name": user}, headers=writer)
            assert done.status_code == 202, done.text
            return str(app_id)

        apps = {user: submit(user) for user in ("daemon", "nobody", "root", "no-such-user-here")}
        for user in ("daemon", "nobody"):
            wait_until((drop / user).exists, 60, f"the container of {user}'s app")
            assert (drop / user).read_text().strip() == str(pwd.getpwnam(user).pw_uid)
            assert (drop / user).stat().st_uid == pwd.getpwnam(user).pw_uid
        with RMClient(cluster.rm_address) as rm:
            for user, reason in (("root", "maps to root"), ("no-such-user-here", "has no account on this host")):
                wait_until(lambda a=apps[user]: rm.app(a).state in ("FAILED", "FINISHED", "KILLED"), 60,
                           f"{user}'s app to end")
                report = rm.app(apps[user])
                assert report.state == "FAILED"
                assert reason in report.diagnostics, report.diagnostics
                assert not (drop / user).exists()
        assert "containers run as their app's user" in (cluster.data_dir / "logs" / "nm0.log").read_text()
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)

