"""Stock-client flows over Hadoop IPC against a live local cluster, driven by shepherd's own Python
IPC client (so they run without Java): the client protocol's views, an unmanaged AM's register /
allocate / finish with its AMRMToken, containers started on a NodeManager with NM and container
tokens (ContainerLaunchContext semantics included), stops, releases, kills and bad tokens."""

from __future__ import annotations

import asyncio
import base64
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from google.protobuf.message import Message

from common.hadoop import credentials, records
from common.hadoop import tokens as hadoop_tokens
from common.hadoop.client import IpcClient, RemoteError
from common.resources import Resources
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.client import RMClient
from rm.local import LocalCluster
from tests.e2e.conftest import kill_strays, sleep_job, submit_job, wait_until, write_job

CLIENT = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
MASTER = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
CM = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"
R = TypeVar("R", bound=Message)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path / "cluster", allow_root_containers=True,
                     nodes=1, grpc_port=0, rest_port=0, ipc_client_port=0,
                     ipc_scheduler_port=0, node_memory_mb=2048, node_vcores=4)
    c.start()
    try:
        yield c
    finally:
        c.stop()
        kill_strays(tmp_path)


def split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def call(address: str, protocol: str, method: str, request: Message, response: type[R], *,
         user: str = "root", token: ipc.Token | None = None) -> R:
    async def run() -> R:
        async with IpcClient(*split(address), protocol, user=user, token=token) as c:
            return await c.call(method, request, response)
    return asyncio.run(run())


def client_call(c: LocalCluster, method: str, request: Message, response: type[R], user: str = "root") -> R:
    """A call as ``user``, authenticated with an RM delegation token for that user (as the RM issues to a holder
    of the client secret, and writes for `shepherd up`'s user into hadoop.token)."""
    token = hadoop_tokens.issue_rm_delegation(c.client_secret, user, c.ipc_client_address,
                                              now_ms=int(time.time() * 1000))
    return call(c.ipc_client_address, CLIENT, method, request, response, user=user, token=token)


def report(c: LocalCluster, app: yr.ApplicationId, user: str = "root") -> yr.ApplicationReport:
    return client_call(c, "getApplicationReport", yp.GetApplicationReportRequest(application_id=app),
                       yp.GetApplicationReportResponse, user).application_report


def new_app(c: LocalCluster) -> yp.GetNewApplicationResponse:
    return client_call(c, "getNewApplication", yp.GetNewApplicationRequest(), yp.GetNewApplicationResponse)


def submit(c: LocalCluster, ctx: yr.ApplicationSubmissionContext) -> None:
    client_call(c, "submitApplication", yp.SubmitApplicationRequest(application_submission_context=ctx),
                yp.SubmitApplicationResponse)


def clc(commands: list[str], env: dict[str, str] | None = None, files: dict[str, tuple[Path, int]] | None = None,
        tokens: bytes = b"") -> yr.ContainerLaunchContext:
    out = yr.ContainerLaunchContext(command=commands, tokens=tokens)
    for k, v in (env or {}).items():
        out.environment.add(key=k, value=v)
    for name, (path, kind) in (files or {}).items():
        out.local_resources.add(key=name, value=yr.LocalResource(
            resource=yr.Url(scheme="file", port=-1, file=str(path)), size=path.stat().st_size, type=kind,  # type: ignore[arg-type]
            visibility=yr.PRIVATE))
    return out


def test_client_protocol_sees_what_shepherd_sees(cluster: LocalCluster) -> None:
    nodes = client_call(cluster, "getClusterNodes", yp.GetClusterNodesRequest(node_states=[yr.NS_RUNNING]),
                        yp.GetClusterNodesResponse).node_reports
    nm_log = (cluster.data_dir / "logs" / "nm0.log").read_text()
    (node,) = nodes
    assert f"ipc={records.node_id_str(node.node_id)}" in nm_log  # the NodeId is the NM's IPC listener
    assert records.resources_from_pb(node.capability) == Resources.of(memory_mb=2048, vcores=4)
    metrics = client_call(cluster, "getClusterMetrics", yp.GetClusterMetricsRequest(), yp.GetClusterMetricsResponse)
    assert metrics.cluster_metrics.num_node_managers == 1
    assert metrics.cluster_metrics.num_active_nms == 1
    new = new_app(cluster)
    assert records.resources_from_pb(new.maximum_capability) == Resources.of(memory_mb=2048, vcores=4)
    ctx = yr.ApplicationSubmissionContext(
        application_id=new.application_id, application_name="sleeper", application_type="MAPREDUCE",
        am_container_spec=clc(["sleep", "60"]), resource=records.resource_pb(Resources.of(memory_mb=256, vcores=1)),
        application_tags=["t1"])
    submit(cluster, ctx)
    app_id = records.app_id_str(new.application_id)
    with RMClient(cluster.rm_address) as rm:
        wait_until(lambda: rm.app(app_id).state == "ACCEPTED" and rm.app(app_id).am_container_id, 20,
                   "the AM container")
        apps = client_call(cluster, "getApplications", yp.GetApplicationsRequest(application_types=["mapreduce"]),
                           yp.GetApplicationsResponse).applications
        assert [records.app_id_str(a.application_id) for a in apps] == [app_id]
        (a,) = apps
        assert (a.name, a.user, a.queue, a.yarn_application_state, a.application_type) == (
            "sleeper", "root", "default", yr.ACCEPTED, "MAPREDUCE")
        assert not a.HasField("am_rm_token")  # only unmanaged AMs get theirs here
        assert client_call(cluster, "getApplications", yp.GetApplicationsRequest(
            application_states=[yr.FINISHED]), yp.GetApplicationsResponse).applications == []
        kill = yp.KillApplicationRequest(application_id=new.application_id)
        assert client_call(cluster, "forceKillApplication", kill, yp.KillApplicationResponse).is_kill_completed
        assert rm.app(app_id).state == "KILLED"
        assert report(cluster, new.application_id).yarn_application_state == yr.KILLED
        queue = client_call(cluster, "getQueueInfo", yp.GetQueueInfoRequest(queue_name="default"),
                            yp.GetQueueInfoResponse).queue_info
        assert queue.queue_name == "default"
        assert queue.state == yr.Q_RUNNING
    with pytest.raises(RemoteError) as missing:
        report(cluster, yr.ApplicationId(id=999, cluster_timestamp=new.application_id.cluster_timestamp))
    assert missing.value.java_class == "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"


def attempts_of(c: LocalCluster, app_id: str) -> list[yr.ApplicationAttemptReport]:
    return list(client_call(c, "getApplicationAttempts", yp.GetApplicationAttemptsRequest(
        application_id=records.app_id_pb(app_id)), yp.GetApplicationAttemptsResponse).application_attempts)


def containers_of(c: LocalCluster, attempt: yr.ApplicationAttemptId) -> list[yr.ContainerReport]:
    return list(client_call(c, "getContainers", yp.GetContainersRequest(application_attempt_id=attempt),
                            yp.GetContainersResponse).containers)


def test_attempts_and_containers_as_shepherd_holds_them(cluster: LocalCluster, tmp_path: Path) -> None:
    """getApplicationAttempts, getApplicationAttemptReport, getContainers and getContainerReport for a finished
    and a running DAG job: the ids, states, times and nodes shepherd's own API shows."""
    (node,) = client_call(cluster, "getClusterNodes", yp.GetClusterNodesRequest(),
                          yp.GetClusterNodesResponse).node_reports
    done = submit_job(cluster, write_job(tmp_path, sleep_job("quick", 0.1, tasks=1)), tmp_path / "s1")
    with RMClient(cluster.rm_address) as rm:
        wait_until(lambda: rm.app(done).state == "FINISHED", 60, "the quick job to finish")
        running = submit_job(cluster, write_job(tmp_path, sleep_job("sleepy", 60, tasks=1)), tmp_path / "s2")
        wait_until(lambda: sum(c.state == "RUNNING" for c in rm.containers(running)) == 2, 60,
                   "the sleeping job's AM and task to run")
        for app_id, attempt_state, live in ((done, yr.APP_ATTEMPT_FINISHED, 0), (running, yr.APP_ATTEMPT_RUNNING, 2)):
            (mine,) = rm.attempts(app_id)
            (attempt,) = attempts_of(cluster, app_id)
            assert records.attempt_id_str(attempt.application_attempt_id) == mine.attempt_id
            assert records.container_id_str(attempt.am_container_id) == mine.am_container_id
            assert attempt.yarn_application_attempt_state == attempt_state
            assert (attempt.start_time, attempt.finish_time) == (mine.start_time_ms, mine.finish_time_ms)
            assert attempt.host == node.node_id.host  # the DAG AM registers from its NodeManager's host
            assert client_call(cluster, "getApplicationAttemptReport", yp.GetApplicationAttemptReportRequest(
                application_attempt_id=attempt.application_attempt_id),
                yp.GetApplicationAttemptReportResponse).application_attempt_report == attempt
            held = {c.container_id: c for c in rm.containers(app_id)}
            containers = containers_of(cluster, attempt.application_attempt_id)
            assert [records.container_id_str(c.container_id) for c in containers] == sorted(held)
            assert sum(c.container_state == yr.C_RUNNING for c in containers) == live  # the AM and the task
            for c in containers:
                theirs = held[records.container_id_str(c.container_id)]
                container_state = yr.C_COMPLETE if theirs.state == "COMPLETED" else yr.C_RUNNING  # as YARN's RM
                assert c.container_state == container_state
                assert c.node_id == node.node_id  # the NodeManager's Hadoop id, as getClusterNodes names it
                assert c.node_http_address == f"http://{node.http_address}"
                assert c.log_url == f"http://{node.http_address}/ws/v1/node/containers/{theirs.container_id}/logs"
                assert records.resources_from_pb(c.resource).to_dict() == dict(theirs.resource.values)
                assert c.finish_time == theirs.finish_time_ms
                if container_state == yr.C_RUNNING:
                    assert (c.container_exit_status, c.diagnostics_info) == (0, "N/A")
                else:
                    assert (c.container_exit_status, c.diagnostics_info) == (theirs.exit_status, theirs.diagnostics)
                assert client_call(cluster, "getContainerReport", yp.GetContainerReportRequest(
                    container_id=c.container_id), yp.GetContainerReportResponse).container_report == c
        done_attempt = attempts_of(cluster, done)[0]
        exits = {records.container_id_str(c.container_id): c.container_exit_status
                 for c in containers_of(cluster, done_attempt.application_attempt_id)}
        am = records.container_id_str(done_attempt.am_container_id)
        assert exits.pop(am) == -107  # stopped after its app ended, as YARN's KILLED_AFTER_APP_COMPLETION
        assert 0 in exits.values()  # the task (a spare container the AM let go would be -105)
        assert rm.app(running).state == "RUNNING"  # reading changed nothing


class AM:
    """An unmanaged AM speaking ApplicationMasterProtocol with its AMRMToken."""

    def __init__(self, cluster: LocalCluster, token: ipc.Token) -> None:
        self.address = cluster.ipc_scheduler_address
        self.token = token
        self.response_id = 0

    def call(self, method: str, request: Message, response: type[R]) -> R:
        return call(self.address, MASTER, method, request, response, token=self.token)

    def allocate(self, **kw: Any) -> yp.AllocateResponse:
        resp = self.call("allocate", yp.AllocateRequest(response_id=self.response_id, **kw), yp.AllocateResponse)
        self.response_id = resp.response_id
        return resp

    def allocate_until(self, what: str, pred: Callable[[yp.AllocateResponse], bool], **kw: Any) -> yp.AllocateResponse:
        box: list[yp.AllocateResponse] = []

        def step() -> bool:
            box.append(self.allocate(**(kw if not box else {})))
            return pred(box[-1])
        wait_until(step, 30, what, interval=0.3)
        return box[-1]


def ask(n: int, priority: int = 1, memory: int = 256) -> yr.ResourceRequest:
    return yr.ResourceRequest(priority=yr.Priority(priority=priority), resource_name="*", num_containers=n,
                              capability=records.resource_pb(Resources.of(memory_mb=memory, vcores=1)))


def start(container: yr.Container, nm_token: ipc.Token, launch: yr.ContainerLaunchContext,
          container_token: ipc.Token | None = None) -> yp.StartContainersResponse:
    request = yp.StartContainersRequest(start_container_request=[yp.StartContainerRequest(
        container_launch_context=launch, container_token=container_token or container.container_token)])
    address = records.node_id_str(container.node_id)
    attempt = "appattempt"  # the Java NMClient's UGI is named after the attempt; shepherd does not care
    return call(address, CM, "startContainers", request, yp.StartContainersResponse, user=attempt, token=nm_token)


def test_unmanaged_am_runs_containers_with_yarn_launch_semantics(cluster: LocalCluster, tmp_path: Path) -> None:
    new = new_app(cluster)
    submit(cluster, yr.ApplicationSubmissionContext(application_id=new.application_id, application_name="um",
                                                    unmanaged_am=True, application_type="SPARK"))
    rep = report(cluster, new.application_id)
    assert rep.yarn_application_state == yr.ACCEPTED
    assert rep.HasField("am_rm_token")
    assert rep.am_rm_token.kind == "YARN_AM_RM_TOKEN"
    assert not report(cluster, new.application_id, user="mallory").HasField("am_rm_token")
    forged = ipc.Token()
    forged.CopyFrom(rep.am_rm_token)
    forged.password = b"x" * 32
    with pytest.raises(RemoteError) as bad:
        AM(cluster, forged).call("registerApplicationMaster", yp.RegisterApplicationMasterRequest(),
                                 yp.RegisterApplicationMasterResponse)
    assert bad.value.fatal
    assert "DIGEST-MD5" in bad.value.message

    am = AM(cluster, rep.am_rm_token)
    reg = am.call("registerApplicationMaster", yp.RegisterApplicationMasterRequest(host="localhost", rpc_port=0),
                  yp.RegisterApplicationMasterResponse)
    assert reg.queue == "default"
    assert reg.maximum_capability.memory == 2048
    assert report(cluster, new.application_id).yarn_application_state == yr.RUNNING

    got = am.allocate_until("two containers", lambda r: len(r.allocated_containers) >= 2, ask=[ask(2, priority=7)])
    assert am.allocate(ask=[ask(0, priority=7)]).allocated_containers == []  # the AM's table drops to zero
    first, second = got.allocated_containers[:2]
    assert first.priority.priority == 7
    assert first.allocation_request_id == -1
    nm_tokens = {records.node_id_str(t.node_id): t.token for t in got.nm_tokens}
    nm_token = nm_tokens[records.node_id_str(first.node_id)]

    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("inside/hello.txt", "hello from the archive")
    plain = tmp_path / "plain.txt"
    plain.write_text("plain file")
    creds = credentials.Credentials()
    creds.add("svc", ipc.Token(identifier=b"I", password=b"P", kind="TEST", service="svc"))
    launch = clc(
        ["(", "cat", "bundle/inside/hello.txt", "plain.txt", "&&", "echo", "&&", "echo", "cid=$CONTAINER_ID",
         "logs=<LOG_DIR>", "value=$MYVAR", "&&", "test", "-d", "{{PWD}}/tmp", "&&", "echo",
         "tokens=$HADOOP_TOKEN_FILE_LOCATION", "local=$LOCAL_DIRS", ")", "1>", "<LOG_DIR>/stdout", "2>",
         "<LOG_DIR>/stderr"],
        env={"MYVAR": "{{PWD}}/a<CPS>$NM_HOST"},
        files={"bundle": (archive, yr.ARCHIVE), "plain.txt": (plain, yr.FILE)},
        tokens=credentials.encode(creds),
    )
    bad_token = ipc.Token()
    bad_token.CopyFrom(first.container_token)
    bad_token.password = b"forged"
    refused = start(first, nm_token, launch, container_token=bad_token)
    assert refused.failed_requests[0].exception.class_name.endswith("InvalidToken")
    ok = start(first, nm_token, launch)
    assert [records.container_id_str(c) for c in ok.succeeded_requests] == [records.container_id_str(first.id)]
    assert start(first, nm_token, launch).failed_requests  # the same container twice

    forged_nm = ipc.Token()
    forged_nm.CopyFrom(nm_token)
    forged_nm.password = b"forged"
    with pytest.raises(RemoteError) as bad_nm:
        start(second, forged_nm, launch)
    assert bad_nm.value.fatal

    done = am.allocate_until("the first container to complete", lambda r: len(r.completed_container_statuses) > 0)
    (status,) = done.completed_container_statuses
    assert status.exit_status == 0
    assert records.container_id_str(status.container_id) == \
        records.container_id_str(first.id)
    cid = records.container_id_str(first.id)
    app_id = records.app_id_str(new.application_id)
    logs = cluster.data_dir / "nm0" / "logs" / app_id / cid
    out = (logs / "stdout").read_text()
    work = cluster.data_dir / "nm0" / "containers" / app_id / cid
    assert "hello from the archiveplain file" in out, out
    assert f"cid={cid}" in out
    assert f"logs={logs}" in out
    assert f"value={work}/a:127.0.0.1" in out
    tokens_line = next(line for line in out.splitlines() if line.startswith("tokens="))
    tokens_file = Path(tokens_line.split()[0].removeprefix("tokens="))
    assert credentials.decode(tokens_file.read_bytes()).tokens["svc"].kind == "TEST"

    sleeper = start(second, nm_token, clc(["sleep", "60"]))
    assert sleeper.succeeded_requests
    wait_until(lambda: call(records.node_id_str(second.node_id), CM, "getContainerStatuses",
                            yp.GetContainerStatusesRequest(container_id=[second.id]),
                            yp.GetContainerStatusesResponse, token=nm_token).status[0].state == yr.C_RUNNING,
               20, "the sleeper to run")
    stopped = call(records.node_id_str(second.node_id), CM, "stopContainers",
                   yp.StopContainersRequest(container_id=[second.id]), yp.StopContainersResponse, token=nm_token)
    assert len(stopped.succeeded_requests) == 1
    done = am.allocate_until("the stopped container", lambda r: len(r.completed_container_statuses) > 0)
    assert done.completed_container_statuses[0].exit_status == -105  # KILLED_BY_APPMASTER

    third = am.allocate_until("one more", lambda r: len(r.allocated_containers) > 0, ask=[ask(1, priority=2)])
    (extra,) = third.allocated_containers
    released = am.allocate_until("the released container", lambda r: len(r.completed_container_statuses) > 0,
                                 ask=[ask(0, priority=2)], release=[extra.id])
    assert records.container_id_str(released.completed_container_statuses[0].container_id) == \
        records.container_id_str(extra.id)

    fin = am.call("finishApplicationMaster", yp.FinishApplicationMasterRequest(
        final_application_status=yr.APP_SUCCEEDED, diagnostics="done"), yp.FinishApplicationMasterResponse)
    assert fin.is_unregistered
    final = report(cluster, new.application_id)
    assert (final.yarn_application_state, final.final_application_status) == (yr.FINISHED, yr.APP_SUCCEEDED)
    assert not final.HasField("am_rm_token")


def test_managed_am_container_gets_its_credentials_file(cluster: LocalCluster) -> None:
    new = new_app(cluster)
    app_id = records.app_id_str(new.application_id)
    script = ["(", "test", "-d", "tmp", "&&", "base64", "-w0", "$HADOOP_TOKEN_FILE_LOCATION", "&&", "echo",
              "&&", "echo", "attempts=$MAX_APP_ATTEMPTS", ")", "1>", "<LOG_DIR>/stdout", "2>", "<LOG_DIR>/stderr"]
    submit(cluster, yr.ApplicationSubmissionContext(
        application_id=new.application_id, am_container_spec=clc(script, tokens=credentials.encode(
            credentials.Credentials())), resource=records.resource_pb(Resources.of(memory_mb=256, vcores=1)),
        max_app_attempts=1))
    with RMClient(cluster.rm_address) as rm:
        wait_until(lambda: rm.app(app_id).state in ("FINISHED", "FAILED"), 30, "the AM command to end")
        cid = rm.attempts(app_id)[0].am_container_id
    out = (cluster.data_dir / "nm0" / "logs" / app_id / cid / "stdout").read_text().splitlines()
    creds = credentials.decode(base64.b64decode(out[0]))
    (token,) = creds.tokens.values()
    assert token.kind == "YARN_AM_RM_TOKEN"
    assert "attempts=1" in out



def test_the_token_file_the_rm_writes_authenticates_writes_across_an_rm_restart(cluster: LocalCluster) -> None:
    """What HADOOP_TOKEN_FILE_LOCATION hands a stock client: an RM delegation token for the client listener,
    readable only by the RM's user, that still works after a restart (its key comes from the client secret);
    without it, SIMPLE authentication may read but not write."""
    import os
    import stat

    path = cluster.hadoop_token_path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (token,) = credentials.decode(path.read_bytes()).tokens.values()
    assert token.kind == "RM_DELEGATION_TOKEN"
    assert token.service == cluster.ipc_client_address
    owner = hadoop_tokens.read_rm_delegation(token.identifier).owner

    def new_app(token: ipc.Token | None) -> yp.GetNewApplicationResponse:
        return call(cluster.ipc_client_address, CLIENT, "getNewApplication", yp.GetNewApplicationRequest(),
                    yp.GetNewApplicationResponse, user="mallory", token=token)

    assert new_app(token).application_id.id == 1
    with pytest.raises(RemoteError) as refused:
        new_app(None)
    assert refused.value.java_class == "org.apache.hadoop.security.AccessControlException"
    forged = ipc.Token(identifier=token.identifier, password=b"\0" * 32, kind=token.kind, service=token.service)
    with pytest.raises(RemoteError):
        new_app(forged)
    cluster.restart_rm()
    assert new_app(token).application_id.id >= 1  # the old token, after the restart
    app = records.app_id_str(new_app(token).application_id)
    submit_ctx = yr.ApplicationSubmissionContext(application_id=records.app_id_pb(app), application_name="x",
                                                 am_container_spec=clc(["true"]))
    call(cluster.ipc_client_address, CLIENT, "submitApplication",
         yp.SubmitApplicationRequest(application_submission_context=submit_ctx), yp.SubmitApplicationResponse,
         user="mallory", token=token)
    with RMClient(cluster.rm_address) as rm:
        assert rm.app(app).user == owner  # the token's owner, not the name the connection claimed
    # killing another user's app needs yarn.admin.acl (default: the RM's own user, here the token's owner)
    mallory = hadoop_tokens.issue_rm_delegation(cluster.client_secret, "mallory", cluster.ipc_client_address,
                                                now_ms=int(time.time() * 1000))
    kill = yp.KillApplicationRequest(application_id=records.app_id_pb(app))
    with pytest.raises(RemoteError) as refused:
        call(cluster.ipc_client_address, CLIENT, "forceKillApplication", kill, yp.KillApplicationResponse,
             user="mallory", token=mallory)
    assert refused.value.java_class == "org.apache.hadoop.security.AccessControlException"
    assert "cannot perform operation MODIFY_APP" in refused.value.message
    with RMClient(cluster.rm_address) as rm:
        assert rm.app(app).state not in ("KILLED",)
    assert call(cluster.ipc_client_address, CLIENT, "forceKillApplication", kill, yp.KillApplicationResponse,
                user=owner, token=token).is_kill_completed
