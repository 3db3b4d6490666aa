"""Tokens on a live cluster: an AM acts only for its own app, a container starts only with its token,
and bad input changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from common import tokens
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.client import ClientError, RMClient
from tests.e2e.conftest import am_process, sleep_job, submit_job, wait_until, write_job

pytestmark = pytest.mark.slow


def _am_env(client: RMClient, app_id: str) -> dict[str, str]:
    wait_until(lambda: client.app(app_id).state == "RUNNING", 30, f"{app_id} to run")
    cid = client.app(app_id).am_container_id
    return wait_until(lambda: _environ(cid), 20, "the AM process")


def _environ(container_id: str) -> dict[str, str] | None:
    try:
        return dict(am_process(container_id).environ())
    except LookupError:
        return None


def _md(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


def test_am_and_container_tokens_are_enforced(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1)
    a = submit_job(cluster, write_job(tmp_path, sleep_job("a", 60, tasks=1)), tmp_path)
    b = submit_job(cluster, write_job(tmp_path, sleep_job("b", 60, tasks=1)), tmp_path)
    with RMClient(cluster.rm_address) as client:
        env_a = _am_env(client, a)
        _am_env(client, b)
        token_a = env_a["SHEPHERD_AMRM_TOKEN"]
        wait_until(lambda: any(c.state == "RUNNING" and c.container_id != client.app(b).am_container_id
                               for c in client.containers(b)), 30, "b's task to run")
        b_task = next(c for c in client.containers(b) if c.container_id != client.app(b).am_container_id)

        with grpc.insecure_channel(cluster.rm_address) as ch:
            am = pbg.ApplicationMasterStub(ch)
            # A's token cannot register a second AM, nor release B's container
            with pytest.raises(grpc.RpcError) as err:
                am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(), metadata=_md(token_a))
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            # whatever response id A's AM is at, the release is refused (a replayed duplicate changes nothing)
            for response_id in range(400):
                try:
                    am.Allocate(pb.AllocateRequest(response_id=response_id, releases=[b_task.container_id]),
                                metadata=_md(token_a))
                    continue
                except grpc.RpcError as exc:
                    refused = exc.code(), exc.details() or ""
                if refused[0] not in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION):
                    pytest.fail(f"unexpected refusal {refused}")
                if "does not belong" in refused[1]:
                    break
            else:
                pytest.fail("never reached the release check")
            # a token re-signed to name B's attempt, or no token at all, is refused
            body, _, mac = token_a.partition(".")
            forged_fields = json.loads(tokens._unb64(body))
            forged_fields["attempt_id"] = client.attempts(b)[-1].attempt_id
            forged = tokens._b64(json.dumps(forged_fields, sort_keys=True, separators=(",", ":")).encode())
            for bad in (f"{forged}.{mac}", "", "garbage"):
                with pytest.raises(grpc.RpcError) as err:
                    am.Allocate(pb.AllocateRequest(response_id=0), metadata=_md(bad))
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED

        # B's task is untouched
        assert next(c for c in client.containers(b) if c.container_id == b_task.container_id).state == "RUNNING"

        # the NodeManager: no start without a valid container token; A's NM token cannot stop B's container
        nm_token_a = tokens.nm_token(b"\0" * 32, client.attempts(a)[-1].attempt_id, cluster.node_ids[0])
        with grpc.insecure_channel(cluster.node_ids[0]) as ch:
            cm = pbg.ContainerManagerStub(ch)
            with pytest.raises(grpc.RpcError) as err:  # NM token not signed by the RM
                cm.StopContainers(pb.ContainerIdsRequest(container_ids=[b_task.container_id]),
                                  metadata=_md(nm_token_a))
            assert err.value.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
            with pytest.raises(grpc.RpcError) as err:
                cm.StartContainers(pb.StartContainersRequest(requests=[pb.StartContainerRequest(
                    container_token="", launch_context=pb.ContainerLaunchContext(commands=["touch pwned"]))]))
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert not list(tmp_path.rglob("pwned"))


def test_bad_client_requests_get_yarn_errors_and_change_nothing(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1, node_memory_mb=2048, node_vcores=2)
    with RMClient(cluster.rm_address) as client:
        before = client.apps()
        with pytest.raises(ClientError) as err:
            client.app("application_1_0001")
        assert err.value.code == "NOT_FOUND"
        assert "ApplicationNotFoundException" in err.value.message
        with pytest.raises(ClientError) as err:
            client.kill("not-an-id")
        assert err.value.code == "INVALID_ARGUMENT"
        app_id = client.new_application()
        too_big = pb.ApplicationSubmissionContext(
            application_id=app_id, am_resource=pb.Resource(values={"memory-mb": 64_000, "vcores": 1}),
            am_container_spec=pb.ContainerLaunchContext(commands=["true"]))
        with pytest.raises(ClientError) as err:
            client.submit(too_big)
        assert "InvalidResourceRequestException" in err.value.message
        with pytest.raises(ClientError) as err:
            client.submit(pb.ApplicationSubmissionContext(
                application_id=app_id, queue="nope", am_container_spec=pb.ContainerLaunchContext(commands=["true"])))
        assert "unknown queue" in err.value.message
        assert client.apps() == before
        # a job asking for tasks bigger than any node is refused at submission with a clear reason, instead of
        # waiting forever; nothing is created
        huge = sleep_job("huge", 1, tasks=1, memory_mb=100_000)
        refused = subprocess.run([sys.executable, "-m", "rm.cli", "submit", str(write_job(tmp_path, huge)), "--rm",
                                  cluster.rm_address, "--data-dir", str(tmp_path)],
                                 capture_output=True, text=True, timeout=60, check=False)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "exceeds the maximum allocation" in refused.stderr
        assert client.apps() == before
        # the RM still serves
        assert client.metrics().active_nodes == 1
