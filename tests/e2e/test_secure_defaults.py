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
    assert stat.S_IMODE(os.stat(creds).st_mode) == 0o600
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
