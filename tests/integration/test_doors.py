"""One request, one answer, through every door: the same submissions and bad requests sent over REST, gRPC and
Hadoop IPC to one in-process ResourceManager. For each row the same app appears (name, queue, type, user, AM
resource), or the same error class comes back (as each door spells it), and a known id is answered as
accepted without changing anything.

The cluster's only NodeManager registers over gRPC and then reports itself unhealthy, so nothing is ever
placed and every app stays as its submission left it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import grpc
import httpx
import pytest
import pytest_asyncio

from common.hadoop import records
from common.hadoop.client import IpcClient, RemoteError
from common.ids import app_id as make_app_id
from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.service.config import RMConfig
from rm.service.server import ResourceManager
from tests.integration.conftest import unhealthy_node

pytestmark = pytest.mark.asyncio

QUEUES = {"default": {"capacity": 50}, "batch": {"capacity": 30}, "closed": {"capacity": 20, "state": "STOPPED"}}
NODE = Resources.of(memory_mb=4096, vcores=4)
USER = "alice"
IPC_CLIENT = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"

Canonical = Literal["BadRequest", "InvalidResourceRequest", "ApplicationNotFound"]
# how each door spells each error class: REST (status, RemoteException.exception), gRPC (status, the Java class
# its details start with), Hadoop IPC (the Java class clients re-throw; YARN's webapp.* classes are REST-only)
SPELLING: dict[Canonical, dict[str, object]] = {
    "BadRequest": {"rest": (400, "BadRequestException"),
                   "grpc": ("INVALID_ARGUMENT", "org.apache.hadoop.yarn.webapp.BadRequestException"),
                   "ipc": "org.apache.hadoop.yarn.exceptions.YarnException"},
    "InvalidResourceRequest": {
        "rest": (400, "InvalidResourceRequestException"),
        "grpc": ("INVALID_ARGUMENT", "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException"),
        "ipc": "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException"},
    "ApplicationNotFound": {
        "rest": (404, "NotFoundException"),
        "grpc": ("NOT_FOUND", "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"),
        "ipc": "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"},
}


@dataclass(frozen=True)
class Refused:
    spelling: object  # as the door spells the error class


@dataclass(frozen=True)
class Seen:
    """An app as a door's report shows it (queue by leaf name: Hadoop reports name the leaf)."""

    name: str
    queue: str
    app_type: str
    user: str
    state: str


Answer = Refused | None


@dataclass(frozen=True)
class Submission:
    name: str = "etl"
    queue: str = "batch"
    app_type: str = "SPARK"
    memory: int = 512
    vcores: int = 1
    command: str = "sleep 60"  # "" = the AM container spec holds no command
    job: str = ""  # a DAG job file (JSON); only gRPC's submission context has a field for one
    tags: tuple[str, ...] = ()


class Door(Protocol):
    name: str

    async def new_id(self) -> str: ...

    async def submit(self, app_id: str, s: Submission) -> Answer: ...

    async def report(self, app_id: str) -> Seen | Refused: ...

    async def kill(self, app_id: str) -> Answer: ...


def leaf(queue: str) -> str:
    return queue.rsplit(".", 1)[-1]


class Rest:
    name = "rest"

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    @staticmethod
    def _refused(resp: httpx.Response) -> Refused:
        return Refused((resp.status_code, resp.json()["RemoteException"]["exception"]))

    async def new_id(self) -> str:
        resp = await self.http.post("/ws/v1/cluster/apps/new-application")
        assert resp.status_code == 200, resp.text
        return str(resp.json()["application-id"])

    async def submit(self, app_id: str, s: Submission) -> Answer:
        body = {"application-id": app_id, "application-name": s.name, "queue": s.queue,
                "application-type": s.app_type, "resource": {"memory": s.memory, "vCores": s.vcores},
                "am-container-spec": {"commands": {"command": s.command}}}
        if s.tags:
            body["application-tags"] = {"tag": list(s.tags)}
        resp = await self.http.post("/ws/v1/cluster/apps", params={"user.name": USER}, json=body)
        return None if resp.status_code == 202 else self._refused(resp)

    async def report(self, app_id: str) -> Seen | Refused:
        resp = await self.http.get(f"/ws/v1/cluster/apps/{app_id}")
        if resp.status_code != 200:
            return self._refused(resp)
        a = resp.json()["app"]
        return Seen(a["name"], leaf(a["queue"]), a["applicationType"], a["user"], a["state"])

    async def kill(self, app_id: str) -> Answer:
        resp = await self.http.put(f"/ws/v1/cluster/apps/{app_id}/state", params={"user.name": USER},
                                   json={"state": "KILLED"})
        return None if resp.status_code in (200, 202) else self._refused(resp)


class Grpc:
    name = "grpc"

    def __init__(self, stub: pbg.ApplicationClientStub, secret: str) -> None:
        self.stub = stub
        self.metadata = [("authorization", f"Bearer {secret}")]

    async def _call(self, method: str, request: Any) -> Any:
        try:
            return await getattr(self.stub, method)(request, timeout=10, metadata=self.metadata)
        except grpc.aio.AioRpcError as exc:
            return Refused((exc.code().name, (exc.details() or "").split(":", 1)[0]))

    async def new_id(self) -> str:
        resp = await self._call("GetNewApplication", pb.GetNewApplicationRequest())
        assert not isinstance(resp, Refused), resp
        return str(resp.application_id)

    async def submit(self, app_id: str, s: Submission) -> Answer:
        ctx = pb.ApplicationSubmissionContext(
            application_id=app_id, name=s.name, queue=s.queue, user=USER, application_type=s.app_type,
            am_resource=pb.Resource(values=Resources.of(memory_mb=s.memory, vcores=s.vcores).to_dict()),
            am_container_spec=pb.ContainerLaunchContext(commands=[s.command] if s.command else []),
            job_spec_json=s.job, tags=s.tags)
        resp = await self._call("SubmitApplication", pb.SubmitApplicationRequest(context=ctx))
        return resp if isinstance(resp, Refused) else None

    async def report(self, app_id: str) -> Seen | Refused:
        resp = await self._call("GetApplicationReport", pb.GetApplicationReportRequest(application_id=app_id))
        if isinstance(resp, Refused):
            return resp
        r = resp.report
        return Seen(r.name, leaf(r.queue), r.application_type, r.user, r.state)

    async def kill(self, app_id: str) -> Answer:
        resp = await self._call("KillApplication", pb.KillApplicationRequest(application_id=app_id))
        if isinstance(resp, Refused):
            return resp
        assert resp.is_kill_completed
        return None


class Ipc:
    name = "ipc"

    def __init__(self, port: int, token: ipc.Token | None) -> None:
        self.port = port
        self.token = token  # an RM delegation token for USER, as in a HADOOP_TOKEN_FILE_LOCATION file

    async def _call(self, method: str, request: Any, response: type[Any]) -> Any:
        try:
            async with IpcClient("127.0.0.1", self.port, IPC_CLIENT, user=USER, token=self.token) as c:
                return await c.call(method, request, response)
        except RemoteError as exc:
            return Refused(exc.java_class)

    async def new_id(self) -> str:
        resp = await self._call("getNewApplication", yp.GetNewApplicationRequest(), yp.GetNewApplicationResponse)
        assert not isinstance(resp, Refused), resp
        return str(records.app_id_str(resp.application_id))

    async def submit(self, app_id: str, s: Submission) -> Answer:
        ctx = yr.ApplicationSubmissionContext(
            application_id=records.app_id_pb(app_id), application_name=s.name, queue=s.queue,
            application_type=s.app_type, resource=records.resource_pb(Resources.of(memory_mb=s.memory,
                                                                                    vcores=s.vcores)),
            am_container_spec=yr.ContainerLaunchContext(command=[s.command] if s.command else []),
            application_tags=s.tags)
        resp = await self._call("submitApplication", yp.SubmitApplicationRequest(application_submission_context=ctx),
                                yp.SubmitApplicationResponse)
        return resp if isinstance(resp, Refused) else None

    async def report(self, app_id: str) -> Seen | Refused:
        resp = await self._call("getApplicationReport",
                                yp.GetApplicationReportRequest(application_id=records.app_id_pb(app_id)),
                                yp.GetApplicationReportResponse)
        if isinstance(resp, Refused):
            return resp
        r = resp.application_report
        return Seen(r.name, leaf(r.queue), r.application_type, r.user,
                    yr.YarnApplicationState.Name(r.yarn_application_state))

    async def kill(self, app_id: str) -> Answer:
        resp = await self._call("forceKillApplication",
                                yp.KillApplicationRequest(application_id=records.app_id_pb(app_id)),
                                yp.KillApplicationResponse)
        if isinstance(resp, Refused):
            return resp
        assert resp.is_kill_completed
        return None


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      queues=QUEUES, ipc_client_port=0, ipc_scheduler_port=-1))
    await server.start()
    try:
        await unhealthy_node(server, NODE)
        assert server.state.max_allocation() == NODE
        yield server
    finally:
        await server.stop()


@pytest_asyncio.fixture
async def doors(rm: ResourceManager) -> AsyncIterator[list[Door]]:
    secret = rm.cfg.client_secret or ""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10,
                                 headers={"Authorization": f"Bearer {secret}"}) as http, \
            grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        yield [Rest(http), Grpc(pbg.ApplicationClientStub(channel), secret),
               Ipc(rm.ipc.client_port, rm.ipc.delegation_token(USER))]


def expect(error: Canonical | None, door: Door) -> Answer:
    return None if error is None else Refused(SPELLING[error][door.name])


# (row, submission, the error class every door must answer, or None: accepted)
SUBMISSIONS: list[tuple[str, Submission, Canonical | None]] = [
    ("valid", Submission(), None),
    ("no type: YARN's default", Submission(name="untyped", app_type=""), None),
    ("a long type is cut to 20 characters", Submission(name="long", app_type="T" * 30), None),
    ("queue by full path", Submission(name="full", queue="root.default"), None),
    ("zero resource: the default AM resource", Submission(name="zero", memory=0, vcores=0), None),
    ("unknown queue", Submission(queue="nope"), "BadRequest"),
    ("a parent queue", Submission(queue="root"), "BadRequest"),
    ("a stopped queue", Submission(queue="closed"), "BadRequest"),
    ("negative memory", Submission(memory=-1), "InvalidResourceRequest"),
    ("negative vcores", Submission(vcores=-2), "InvalidResourceRequest"),
    ("larger than any node", Submission(memory=99_999), "InvalidResourceRequest"),
    ("no AM command", Submission(command=""), "BadRequest"),
]


async def test_the_same_submissions_get_the_same_answers(rm: ResourceManager, doors: list[Door]) -> None:
    for door in doors:
        for row, sub, error in SUBMISSIONS:
            app_id = await door.new_id()
            assert await door.submit(app_id, sub) == expect(error, door), (door.name, row)
            if error is not None:
                assert app_id not in rm.state.apps, (door.name, row)
                continue
            app = rm.state.apps[app_id]  # type: ignore[index]
            want_type = (sub.app_type or "YARN")[:20]
            assert (app.name, app.queue, app.app_type, app.user) == (
                sub.name, f"root.{leaf(sub.queue)}", want_type, USER), (door.name, row)
            assert app.am_resource == (Resources.of(memory_mb=1024, vcores=1) if sub.memory == 0 else
                                       Resources.of(memory_mb=sub.memory, vcores=sub.vcores)), (door.name, row)
            # the app as every door reports it, whichever door submitted it
            for other in doors:
                assert await other.report(app_id) == Seen(sub.name, leaf(sub.queue), want_type, USER,
                                                          "ACCEPTED"), (door.name, row, other.name)
    names = sorted(a.name for a in rm.state.apps.values())
    accepted = sorted(s.name for _, s, e in SUBMISSIONS if e is None)
    assert names == sorted(accepted * len(doors))



def job_file(memory_mb: int, vcores: int = 1, **resources: int) -> str:
    return json.dumps({"id": "dag", "stages": [
        {"name": "extract", "tasks": 2, "memory_mb": 256},
        {"name": "join", "tasks": 2, "memory_mb": memory_mb, "vcores": vcores, "resources": resources,
         "parents": ["extract"]}]})


# (row, job file, the error class, or None: accepted) -- the node has 4096 MB and 4 vcores
JOB_FILES: list[tuple[str, str, Canonical | None]] = [
    ("a task as large as the node", job_file(4096, 4), None),
    ("a task 10x the node's memory", job_file(40_960), "InvalidResourceRequest"),
    ("a task above the node's vcores", job_file(256, 5), "InvalidResourceRequest"),
    ("a resource type no node has", job_file(256, gpu=1), "InvalidResourceRequest"),
]


async def test_a_job_file_no_node_could_run_is_refused_naming_its_stage(rm: ResourceManager,
                                                                        doors: list[Door]) -> None:
    """The submit operation reads the DAG job file it is given; only gRPC carries one (REST's and Hadoop IPC's
    submission contexts have no field for it), so this table runs through that door."""
    door = next(d for d in doors if isinstance(d, Grpc))
    for row, job, error in JOB_FILES:
        app_id = await door.new_id()
        before = len(rm.state.apps)
        answer = await door.submit(app_id, Submission(name="dag", job=job))
        assert answer == expect(error, door), row
        if error is None:
            assert rm.state.apps[app_id].job_spec_json == job, row  # type: ignore[index]
            continue
        assert (app_id not in rm.state.apps, len(rm.state.apps)) == (True, before), row
    context = pb.ApplicationSubmissionContext(application_id=await door.new_id(), name="dag", queue="batch",
                                              am_container_spec=pb.ContainerLaunchContext(commands=["sleep 60"]),
                                              job_spec_json=job_file(40_960))
    with pytest.raises(grpc.aio.AioRpcError) as refused:  # the message names the stage and the amount
        await door.stub.SubmitApplication(pb.SubmitApplicationRequest(context=context), timeout=10,
                                          metadata=door.metadata)
    assert "stage 'join': a task of <memory-mb=40960, vcores=1> exceeds" in (refused.value.details() or "")

async def test_a_known_id_is_accepted_again_and_changes_nothing(rm: ResourceManager, doors: list[Door]) -> None:
    ids = {door.name: await door.new_id() for door in doors}
    for door in doors:
        assert await door.submit(ids[door.name], Submission(name="first")) is None
    count, seq = len(rm.state.apps), rm.state.meta.next_app_seq
    for door in doors:
        for app_id in ids.values():  # every door, every id, whichever door submitted it
            retry = Submission(name="second", queue="default", app_type="OTHER", memory=99_999)
            assert await door.submit(app_id, retry) is None, (door.name, app_id)
    assert (len(rm.state.apps), rm.state.meta.next_app_seq) == (count, seq)
    for app_id in ids.values():
        app = rm.state.apps[app_id]  # type: ignore[index]
        assert (app.name, app.queue, app.app_type, app.state) == ("first", "root.batch", "SPARK", "ACCEPTED")
        assert len(app.attempts) == 1


async def test_unknown_and_finished_apps_get_the_same_answers(rm: ResourceManager, doors: list[Door]) -> None:
    ts = rm.state.meta.cluster_timestamp
    unknown = make_app_id(1, 1)  # well formed, from another ResourceManager
    never = make_app_id(ts, 9_999)  # this RM's, never handed out
    for door in doors:
        want = expect("ApplicationNotFound", door)
        assert await door.report(unknown) == want, door.name
        assert await door.kill(unknown) == want, door.name
        assert await door.report(never) == want, door.name
        assert await door.kill(never) == want, door.name
        # an id this RM never handed out cannot be submitted
        assert await door.submit(never, Submission()) == expect("BadRequest", door), door.name
        assert never not in rm.state.apps
    for door in doors[:2]:  # a malformed id (Hadoop IPC's ids are structured: it cannot send one)
        assert await door.report("application_bogus") == expect("BadRequest", door), door.name
        assert await door.kill("application_bogus") == expect("BadRequest", door), door.name
    # killing: the first time the app ends KILLED; again, through any door, it is done already and changes nothing
    for door in doors:
        app_id = await door.new_id()
        assert await door.submit(app_id, Submission(name="victim")) is None
        assert await door.kill(app_id) is None, door.name
        app = rm.state.apps[app_id]  # type: ignore[index]
        assert (app.state, app.final_status) == ("KILLED", "KILLED")
        finished = app.finish_time
        for other in doors:
            assert await other.kill(app_id) is None, (door.name, other.name)
            assert (app.state, app.finish_time) == ("KILLED", finished)
            assert await other.report(app_id) == Seen("victim", "batch", "SPARK", USER, "KILLED"), (
                door.name, other.name)


async def test_no_door_changes_anything_without_credentials(rm: ResourceManager,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """S15 in process: REST without or with a forged secret, gRPC likewise, Hadoop IPC with SIMPLE authentication
    or a token signed with a guessed key: every write refused, one audit denial each, nothing stored."""
    from common.hadoop import tokens

    caplog.set_level("INFO", logger="shepherd.rm.audit")
    known = make_app_id(rm.state.meta.cluster_timestamp, 1)
    sub = Submission(name="intruder", command="touch /tmp/pwned")
    forged = tokens.rm_delegation_token(b"guessed" * 4, tokens.Delegation("root", "root", 0, 2**62, 1),
                                        f"127.0.0.1:{rm.ipc.client_port}")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10) as anonymous, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}", timeout=10,
                              headers={"Authorization": "Bearer forged"}) as forger, \
            grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        for http in (anonymous, forger):
            assert (await http.post("/ws/v1/cluster/apps/new-application")).status_code in (401, 403)
            assert await Rest(http).submit(known, sub) in (Refused((401, "AuthorizationException")),
                                                            Refused((403, "ForbiddenException")))
            assert isinstance(await Rest(http).kill(known), Refused)
        for secret in ("", "forged"):
            grpc_door = Grpc(pbg.ApplicationClientStub(channel), secret)
            refused = await grpc_door.submit(known, sub)
            assert isinstance(refused, Refused)
            assert refused.spelling[0] in ("UNAUTHENTICATED", "PERMISSION_DENIED")
        simple = Ipc(rm.ipc.client_port, None)
        assert await simple.submit(known, sub) == Refused("org.apache.hadoop.security.AccessControlException")
        assert await simple.kill(known) == Refused("org.apache.hadoop.security.AccessControlException")
        assert isinstance(await Ipc(rm.ipc.client_port, forged).submit(known, sub), Refused)
        # reads stay open
        assert (await anonymous.get("/ws/v1/cluster/apps")).status_code == 200
        assert isinstance(await simple.report(known), Refused)  # not found, not refused for lack of credentials
    assert not rm.state.apps
    denials = [r.getMessage() for r in caplog.records if r.name == "shepherd.rm.audit" and "RESULT=FAILURE"
               in r.getMessage()]
    # REST: 2 × (new, submit, kill); gRPC: 2 submits; IPC SIMPLE: submit, kill (the forged token fails SASL)
    assert len(denials) == 10, denials
    assert sum("TARGET=ClientRMService" in d for d in denials) == 4
    assert all("IP=127.0.0.1" in d for d in denials)


async def test_huge_and_malformed_input_is_bounded_or_refused_never_a_500(rm: ResourceManager,
                                                                         doors: list[Door]) -> None:
    """S19: nesting, oversized bodies, a 10 MB name, too many tags and a 100,001-ask allocate."""
    from common import tokens as core_tokens
    from rm.service import limits

    rest = doors[0]
    assert isinstance(rest, Rest)
    http = rest.http
    before = set(rm.state.apps)
    for body in (b"[" * 200_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
                 b'{"application-id": ' + b"[" * 100 + b"]" * 100 + b"}",
                 b'{"application-id": "x", "resource": {"memory": NaN, "vCores": Infinity}}'):
        resp = await http.post("/ws/v1/cluster/apps", content=body, headers={"Content-Type": "application/json"})
        assert resp.status_code == 400, resp.text
        assert resp.json()["RemoteException"]["exception"] == "BadRequestException"
    big = await http.post("/ws/v1/cluster/apps", content=b"x" * (5 * 1024 * 1024),
                          headers={"Content-Type": "application/json"})
    assert big.status_code == 413
    assert "RemoteException" in big.json()
    assert set(rm.state.apps) == before

    # free text is cut before it is stored, through every door
    app_id = await rest.new_id()
    assert await rest.submit(app_id, Submission(name="n" * 10_000_000)) == Refused((413, "BadRequestException"))
    for door in doors:
        app_id = await door.new_id()
        assert await door.submit(app_id, Submission(name="n" * 3_000_000)) is None
        assert len(rm.state.apps[app_id].name) == limits.MAX_NAME  # type: ignore[index]
    many = tuple(f"{i}-" + "t" * 500 for i in range(50)) + tuple(f"x{i}" for i in range(100_000))
    for door in doors:  # the first ten kept, each cut; the other 100,040 never become strings of the RM's
        app_id = await door.new_id()
        assert await door.submit(app_id, Submission(name="tags", command="true", tags=many)) is None
        tags = rm.state.apps[app_id].tags  # type: ignore[index]
        assert tags == tuple(t[:limits.MAX_TAG] for t in many[:limits.MAX_TAGS])

    # an unmanaged AM asking for 100,001 containers in one call is refused whole, and the RM keeps serving
    grpc_door = doors[1]
    assert isinstance(grpc_door, Grpc)
    app_id = await grpc_door.new_id()
    await grpc_door.stub.SubmitApplication(pb.SubmitApplicationRequest(context=pb.ApplicationSubmissionContext(
        application_id=app_id, user=USER, unmanaged_am=True,
        am_resource=pb.Resource(values=Resources.of(memory_mb=512, vcores=1).to_dict()))), metadata=grpc_door.metadata)
    attempt = rm.state.apps[app_id].current  # type: ignore[index]
    assert attempt is not None
    amrm = [("authorization", f"Bearer {core_tokens.amrm_token(rm.state.amrm_key, attempt.attempt_id)}")]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}") as channel:
        am = pbg.ApplicationMasterStub(channel)
        await am.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(), metadata=amrm)
        huge = pb.AllocateRequest(response_id=0, asks=[pb.ResourceAsk(
            allocation_request_id=i, priority=1, num_containers=1,
            capability=pb.Resource(values={"memory-mb": 128, "vcores": 1})) for i in range(100_001)])
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await am.Allocate(huge, metadata=amrm)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "at most" in (refused.value.details() or "")
        ok = await am.Allocate(pb.AllocateRequest(response_id=0), metadata=amrm)
        assert ok.response_id >= 0
    assert (await http.get("/ws/v1/cluster/apps")).status_code == 200


def _junk(rng: Any, depth: int = 0) -> Any:
    """A random JSON value: scalars of every type, odd strings, lists and objects a few levels deep."""
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 2**64, 10**30])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308, float("1e-300")])
    if kind in (4, 5):
        return rng.choice(["", "x", "KILLED", "default", "root", "application_1_0001", "ä" * 50, "\u0000",
                           "2020-01-01T00:00:00.000+0000", "-1", "LIFETIME", "reservation_1_1", "a" * 5000])
    if kind in (6, 7):
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["application-id", "application-name", "queue", "state", "priority", "timeout", "type", "expiryTime",
            "am-container-spec", "commands", "command", "resource", "memory", "vCores", "reservation-id",
            "reservation-definition", "arrival", "deadline", "reservation-requests", "reservation-request",
            "capability", "num-containers", "min-concurrency", "duration", "stages", "tasks", "application-tags",
            "tag", "environment", "entry", "key", "value", "local-resources", "max-app-attempts", "unmanaged-AM"]
    return {rng.choice(keys): _junk(rng, depth + 1) for _ in range(rng.randrange(5))}


async def test_random_bodies_on_every_write_endpoint_are_never_a_500(rm: ResourceManager,
                                                                    doors: list[Door]) -> None:
    """A small fuzz of the REST writes, authenticated (deterministic seed): every answer is < 500, and every
    refusal a RemoteException."""
    import random

    rest = doors[0]
    assert isinstance(rest, Rest)
    http = rest.http
    app_id = await rest.new_id()
    assert await rest.submit(app_id, Submission(name="target")) is None
    paths = [("PUT", f"/ws/v1/cluster/apps/{app_id}/{leaf_}") for leaf_ in ("state", "queue", "priority", "timeout")]
    paths += [("POST", "/ws/v1/cluster/apps"), ("POST", "/ws/v1/cluster/apps/new-application")]
    paths += [("POST", f"/ws/v1/cluster/reservation/{op}") for op in ("new-reservation", "submit", "update",
                                                                       "delete")]
    paths += [("POST", "/ws/v1/shepherd/plan"), ("POST", "/ws/v1/shepherd/slo/nightly/accept"),
              ("POST", "/ws/v1/shepherd/slo/nightly/reject"), ("PUT", "/ws/v1/cluster/apps/nope/state")]
    rng = random.Random(1234)
    for method, path in paths:
        for _ in range(60):
            body = _junk(rng)
            resp = await http.request(method, path, json=body, params={"user.name": USER})
            assert resp.status_code < 500, (method, path, body, resp.text[:500])
            if resp.status_code >= 400:
                assert "RemoteException" in resp.json(), (method, path, body, resp.text[:500])
    assert (await http.get("/ws/v1/cluster/apps")).status_code == 200


async def test_a_refusal_quoting_huge_input_still_reaches_the_grpc_client(rm: ResourceManager,
                                                                          doors: list[Door]) -> None:
    """Found by bench/fuzz_grpc.py: a refusal that quotes a 4 MB id put it whole in the grpc-message trailer,
    which the client drops (RESOURCE_EXHAUSTED, "metadata size exceeds hard limit") instead of the refusal."""
    from rm.service import limits

    grpc_door = doors[1]
    assert isinstance(grpc_door, Grpc)
    for bad in ("x" * 4_000_000, "ü" * 1_000_000):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await grpc_door.stub.GetApplicationAttempts(pb.GetApplicationAttemptsRequest(application_id=bad),
                                                        metadata=grpc_door.metadata)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value.details()
        details = refused.value.details() or ""
        assert details.startswith("org.apache.hadoop.yarn.")
        assert len(details.encode()) < limits.MAX_ERROR_DETAIL + 200


async def test_the_rest_door_answers_keep_alive_requests_without_nagle_delay(rm: ResourceManager) -> None:
    """Found by bench/fuzz_rest.py (17 requests/s): the web server's socket was made without naming TCP, so
    asyncio left Nagle on for its connections, and on a kept-alive connection every answer whose body follows
    its headers waited for the client's delayed ACK: some 40 ms a request."""
    import asyncio
    import time

    reader, writer = await asyncio.open_connection("127.0.0.1", rm.rest_port)
    took = []
    try:
        for _ in range(6):
            t0 = time.monotonic()
            writer.write(b"GET /ws/v1/cluster/info HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(next(line.split(b":", 1)[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:")))
            await reader.readexactly(length)
            took.append(time.monotonic() - t0)
    finally:
        writer.close()
    assert min(took[1:]) < 0.03, took  # the first one sets the connection up
