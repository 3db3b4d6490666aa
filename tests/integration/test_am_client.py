"""The DAG ApplicationMaster and its client library against a fake RM and a fake NodeManager.

The fake RM (a grpc.aio ApplicationMaster servicer on loopback) checks the AMRM token, keeps the
ask table the way the contract says, hands out containers up to a fixed capacity and reports
completions; the fake NodeManager checks NM and container tokens, records every launch and
"runs" it by reporting an exit status through the fake RM (or really runs the command).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from am.client import AMEnvironment, AMRMClient
from am.dag import format_command, run_am
from am.jobspec import Job, load_job, parse_job
from am.policies import JockeyAsks
from common import ids
from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
AMRM_TOKEN = "amrm-secret"
NM_TOKEN = "nm-secret"
APP = ids.app_id(1_700_000_000_000, 1)
ATTEMPT = ids.attempt_id(APP, 1)
AM_CONTAINER = ids.container_id(ATTEMPT, 1)

Outcome = Callable[["Launch"], int]


@dataclass
class Launch:
    container_id: str
    stage: str
    task: int
    attempt: int
    command: str
    env: dict[str, str]


@dataclass
class FakeCluster:
    """Shared state of the fake RM and NodeManager; ``events`` is the order things happened in."""

    nm_port: int = 0
    capacity: int = 3
    outcome: Outcome = lambda launch: 0
    run_commands: bool = False
    resync_on_allocate: int | None = None  # answer this allocate call (1-based) with AM_RESYNC
    resync_by_error: bool = False  # ... with YARN's ApplicationMasterNotRegisteredException instead
    deadline_in_s: float | None = None  # the app's deadline, as seconds from now in every answer
    granted: dict[str, int] | None = None  # the guarantee the RM grants the app, in every answer
    ceiling: dict[str, int] | None = None  # the most its queue could guarantee it, with the grant
    asks: dict[int, pb.ResourceAsk] = field(default_factory=dict)
    live: dict[str, pb.Container] = field(default_factory=dict)
    completed: list[pb.ContainerStatus] = field(default_factory=list)
    delivered: list[pb.Container] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    events: list[tuple[Any, ...]] = field(default_factory=list)
    allocate_requests: list[pb.AllocateRequest] = field(default_factory=list)
    registrations: int = 0
    finish: pb.FinishApplicationMasterRequest | None = None
    next_container: int = 2
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def complete(self, container_id: str, exit_status: int, diagnostics: str = "") -> None:
        if self.live.pop(container_id, None) is None:
            return
        launch = next((x for x in self.launches if x.container_id == container_id), None)
        if launch is not None:
            self.events.append(("done", launch.stage, launch.task, exit_status))
        self.completed.append(
            pb.ContainerStatus(container_id=container_id, state=pb.CONTAINER_COMPLETE, exit_status=exit_status,
                               diagnostics=diagnostics)
        )


async def _check_token(context: grpc.aio.ServicerContext[Any, Any], token: str) -> None:
    metadata = dict(context.invocation_metadata() or ())
    if metadata.get("authorization") != f"Bearer {token}":
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "invalid token")


class FakeRM(pbg.ApplicationMasterServicer):
    def __init__(self, cluster: FakeCluster) -> None:
        self.c = cluster

    async def RegisterApplicationMaster(self, request: Any, context: Any) -> pb.RegisterApplicationMasterResponse:
        await _check_token(context, AMRM_TOKEN)
        self.c.registrations += 1
        self.c.events.append(("register",))
        return pb.RegisterApplicationMasterResponse(application_id=APP, attempt_id=ATTEMPT, queue="root.default")

    async def Allocate(self, request: pb.AllocateRequest, context: Any) -> pb.AllocateResponse:
        await _check_token(context, AMRM_TOKEN)
        c = self.c
        c.allocate_requests.append(request)
        c.events.extend(("ask", a.stage, a.num_containers) for a in request.asks)
        if c.resync_on_allocate == len(c.allocate_requests):
            c.asks.clear()  # the RM forgot the attempt, as after a restart
            c.events.append(("resync",))
            if c.resync_by_error:
                await context.abort(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException: re-register",
                )
            return pb.AllocateResponse(am_command=pb.AM_RESYNC)
        for ask in request.asks:
            if ask.num_containers > 0:
                c.asks[ask.allocation_request_id] = pb.ResourceAsk()
                c.asks[ask.allocation_request_id].CopyFrom(ask)
            else:
                c.asks.pop(ask.allocation_request_id, None)
        for cid in request.releases:
            c.events.append(("release", cid))
            c.complete(cid, -100, "Container released by the application")
        allocated = []
        while len(c.live) < c.capacity and c.asks:
            rid, ask = min(c.asks.items(), key=lambda kv: (kv[1].priority, kv[0]))
            cid = ids.container_id(ATTEMPT, c.next_container)
            c.next_container += 1
            container = pb.Container(
                container_id=cid, node_id=pb.NodeId(host="127.0.0.1", port=c.nm_port),
                resource=ask.capability, priority=ask.priority, allocation_request_id=rid,
                container_token=f"ctoken-{cid}", ask_type=ask.ask_type,
            )
            c.live[cid] = container
            allocated.append(container)
            if ask.num_containers <= 1:
                del c.asks[rid]
            else:
                ask.num_containers -= 1
        c.delivered.extend(allocated)
        completed, c.completed = c.completed, []
        return pb.AllocateResponse(
            response_id=request.response_id + 1, allocated_containers=allocated,
            completed_container_statuses=completed, fair_share=pb.Resource(values={"memory-mb": 4096}),
            nm_tokens=[pb.NMToken(node_id=pb.NodeId(host="127.0.0.1", port=c.nm_port), token=NM_TOKEN)],
            deadline_in_s=c.deadline_in_s,
            granted_guarantee=None if c.granted is None else pb.Resource(values=c.granted),
            guarantee_ceiling=None if c.ceiling is None else pb.Resource(values=c.ceiling),
        )

    async def FinishApplicationMaster(self, request: Any, context: Any) -> pb.FinishApplicationMasterResponse:
        await _check_token(context, AMRM_TOKEN)
        self.c.finish = request
        return pb.FinishApplicationMasterResponse(is_unregistered=True)


class FakeNM(pbg.ContainerManagerServicer):
    def __init__(self, cluster: FakeCluster) -> None:
        self.c = cluster

    async def StartContainers(self, request: pb.StartContainersRequest, context: Any) -> pb.StartContainersResponse:
        await _check_token(context, NM_TOKEN)
        response = pb.StartContainersResponse()
        for r in request.requests:
            cid = r.container_token.removeprefix("ctoken-")
            if cid not in self.c.live:
                response.failed.add(container_id=cid, exception="InvalidToken", message="unknown container")
                continue
            env = dict(r.launch_context.environment)
            launch = Launch(cid, env["SHEPHERD_STAGE"], int(env["SHEPHERD_TASK_INDEX"]),
                            int(env["SHEPHERD_TASK_ATTEMPT"]), " ".join(r.launch_context.commands), env)
            self.c.launches.append(launch)
            self.c.events.append(("launch", launch.stage, launch.task, launch.attempt))
            self.c.tasks.append(asyncio.create_task(self._run(launch)))
            response.succeeded.append(cid)
        return response

    async def _run(self, launch: Launch) -> None:
        if self.c.run_commands:
            proc = await asyncio.create_subprocess_exec(
                "/bin/bash", "-c", launch.command, env={**os.environ, **launch.env},
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )
            _, err = await proc.communicate()
            self.c.complete(launch.container_id, proc.returncode or 0, err.decode()[-300:])
        else:
            await asyncio.sleep(0)
            self.c.complete(launch.container_id, self.c.outcome(launch))


async def drive(job: Job, cluster: FakeCluster, *, token: str = AMRM_TOKEN, extra_env: dict[str, str] | None = None,
                timeout: float = 30.0, as_process: list[str] | None = None) -> int:
    """Serve the fake RM and NodeManager on loopback and run the real AM against them: its main
    coroutine, or with ``as_process`` (which collects its stdout) ``python -m am.dag``."""
    server = grpc.aio.server()
    pbg.add_ApplicationMasterServicer_to_server(FakeRM(cluster), server)
    pbg.add_ContainerManagerServicer_to_server(FakeNM(cluster), server)
    port = server.add_insecure_port("127.0.0.1:0")
    cluster.nm_port = port
    await server.start()
    environ = {
        "SHEPHERD_RM_ADDRESS": f"127.0.0.1:{port}",
        "SHEPHERD_AMRM_TOKEN": token,
        "SHEPHERD_JOB_JSON": job.to_json(),
        "APPLICATION_ID": APP,
        "CONTAINER_ID": AM_CONTAINER,
        "SHEPHERD_PYTHON": sys.executable,
        "NM_HOST": "127.0.0.1",
        **(extra_env or {}),
    }
    try:
        if as_process is None:
            return await asyncio.wait_for(run_am(environ, interval_s=0.05, retry_s=1.0), timeout)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "am.dag", "--interval", "0.05", cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **environ},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        as_process.append(out.decode())
        return proc.returncode if proc.returncode is not None else -1
    finally:
        for t in cluster.tasks:
            t.cancel()
        await server.stop(None)


def three_stage_job(**overrides: Any) -> Job:
    def s(name: str, tasks: int, *parents: str, **fields: Any) -> dict[str, Any]:
        return {"name": name, "tasks": tasks, "memory_mb": 128, "parents": list(parents),
                "command": "run {stage} {task} of {tasks} try {attempt} for {job} ${HOME} {not_a_placeholder}",
                **fields, **overrides.get(name, {})}

    return parse_job({
        "id": "etl", "env": {"OUTPUT_DIR": "/out"},
        "stages": [s("extract", 3), s("transform", 2, "extract"), s("load", 1, "transform", max_attempts=1)],
    })


def assert_parents_first(job: Job, events: list[tuple[Any, ...]]) -> None:
    succeeded: set[tuple[str, int]] = set()
    for event in events:
        if event[0] == "done" and event[3] == 0:
            succeeded.add((event[1], event[2]))
        if event[0] == "launch":
            for parent in job.stage(event[1]).parents:
                for t in range(job.stage(parent).tasks):
                    assert (parent, t) in succeeded, f"{event} launched before {parent}/{t} succeeded"


def test_dag_runs_in_order_with_retry_and_lost_container() -> None:
    job = three_stage_job()

    def outcome(launch: Launch) -> int:
        if (launch.stage, launch.task, launch.attempt) == ("transform", 1, 0):
            return 1  # fails once
        if (launch.stage, launch.task, launch.attempt) == ("load", 0, 0):
            return -100  # its node is lost
        return 0

    cluster = FakeCluster(outcome=outcome)
    assert asyncio.run(drive(job, cluster)) == 0

    assert cluster.finish is not None
    assert cluster.finish.final_status == pb.SUCCEEDED
    assert_parents_first(job, cluster.events)
    tries = [(x.stage, x.task, x.attempt) for x in cluster.launches]
    assert sorted(tries) == [
        ("extract", 0, 0), ("extract", 1, 0), ("extract", 2, 0),
        ("load", 0, 0), ("load", 0, 1),
        ("transform", 0, 0), ("transform", 1, 0), ("transform", 1, 1),
    ]
    # The lost load container was asked for again (load allows one attempt, so it did not count).
    lost_at = cluster.events.index(("done", "load", 0, -100))
    relaunched_at = cluster.events.index(("launch", "load", 0, 1))
    assert ("ask", "load", 1) in cluster.events[lost_at:relaunched_at]
    # Every allocated container was used or released; progress only grew.
    used = {x.container_id for x in cluster.launches}
    released = {e[1] for e in cluster.events if e[0] == "release"}
    assert {c.container_id for c in cluster.delivered} <= used | released
    progress = [r.progress for r in cluster.allocate_requests]
    assert progress == sorted(progress)
    assert progress[-1] == pytest.approx(5 / 6)


def test_a_jockey_am_follows_the_deadline_the_rm_sends() -> None:
    """A job file without a deadline, under the jockey policy: an ordinary altruistic job until the RM's
    answers carry a deadline, then its control loop runs and it asks to be guaranteed capacity."""
    slow = {"duration_s": 30.0, "command": "true"}
    job = parse_job({**three_stage_job().to_dict(), "am_policy": "jockey"})
    job = parse_job({**job.to_dict(), "stages": [{**s, **slow} for s in job.to_dict()["stages"]]})
    cluster = FakeCluster(deadline_in_s=600.0)
    assert asyncio.run(drive(job, cluster)) == 0
    asked = [r for r in cluster.allocate_requests if r.HasField("guarantee")]
    assert asked, "the AM never asked for a guarantee"
    assert not cluster.allocate_requests[0].HasField("guarantee")  # before it heard the deadline
    steps = [c for r in cluster.allocate_requests for c in r.control]  # its control decisions, each sent once
    assert steps
    assert steps[0].requested_units == asked[0].guarantee.values["vcores"]


def test_a_jockey_am_plans_with_the_guarantee_the_rm_grants(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DAG AM hands its policy the granted guarantee and the ceiling of every allocate answer, and None when
    an answer carries none (an RM that does not tell)."""
    heard: list[tuple[Resources | None, Resources | None]] = []
    told = JockeyAsks.set_granted

    def set_granted(self: JockeyAsks, granted: Resources | None, ceiling: Resources | None = None) -> None:
        heard.append((granted, ceiling))
        told(self, granted, ceiling)

    monkeypatch.setattr(JockeyAsks, "set_granted", set_granted)
    job = parse_job({**three_stage_job().to_dict(), "am_policy": "jockey", "deadline_s": 600.0})
    cluster = FakeCluster(granted={"memory-mb": 256, "vcores": 2}, ceiling={"memory-mb": 512, "vcores": 4})
    assert asyncio.run(drive(job, cluster)) == 0
    assert len(heard) == len(cluster.allocate_requests)  # once per answer
    assert set(heard) == {(Resources.of(memory_mb=256, vcores=2), Resources.of(memory_mb=512, vcores=4))}
    heard.clear()
    assert asyncio.run(drive(job, FakeCluster())) == 0
    assert heard
    assert set(heard) == {(None, None)}


def test_launch_context_fills_placeholders_and_environment() -> None:
    job = three_stage_job()
    cluster = FakeCluster()
    assert asyncio.run(drive(job, cluster, extra_env={"SHEPHERD_JOB_DIR": "/jobs"})) == 0
    launch = next(x for x in cluster.launches if (x.stage, x.task) == ("transform", 1))
    assert launch.command == "run transform 1 of 2 try 0 for etl ${HOME} {not_a_placeholder}"
    assert launch.env["SHEPHERD_STAGE"] == "transform"
    assert launch.env["SHEPHERD_TASK_INDEX"] == "1"
    assert launch.env["SHEPHERD_TASK_ATTEMPT"] == "0"
    assert launch.env["OUTPUT_DIR"] == "/out"
    assert launch.env["SHEPHERD_PYTHON"] == sys.executable
    assert launch.env["SHEPHERD_JOB_DIR"] == "/jobs"
    ask = next(a for r in cluster.allocate_requests for a in r.asks if a.stage == "extract")
    assert (ask.allocation_request_id, ask.priority, ask.num_containers, ask.ask_type) == (1, 0, 3, pb.DEFAULT)
    assert dict(ask.capability.values) == {"memory-mb": 128, "vcores": 1}
    assert ask.remaining_work_s > 0


def test_failed_task_fails_the_job_with_a_diagnostic() -> None:
    job = three_stage_job(transform={"max_attempts": 2})
    cluster = FakeCluster(outcome=lambda x: 3 if (x.stage, x.task) == ("transform", 0) else 0)
    assert asyncio.run(drive(job, cluster)) == 0
    assert cluster.finish is not None
    assert cluster.finish.final_status == pb.FAILED
    assert "stage 'transform' task 0 failed 2 time(s); last exit status 3" in cluster.finish.diagnostics
    assert not any(x.stage == "load" for x in cluster.launches)


@pytest.mark.parametrize("by_error", [False, True], ids=["am-resync", "not-registered"])
def test_resync_reregisters_and_resends_the_ask_table(by_error: bool) -> None:
    job = three_stage_job()
    cluster = FakeCluster(capacity=1, resync_on_allocate=2, resync_by_error=by_error)
    assert asyncio.run(drive(job, cluster)) == 0
    assert cluster.registrations == 2
    assert cluster.finish is not None
    assert cluster.finish.final_status == pb.SUCCEEDED
    # The first call after re-registering carried the outstanding extract asks again.
    resent = cluster.allocate_requests[2]
    assert resent.response_id == 0
    assert [(a.stage, a.num_containers) for a in resent.asks] == [("extract", 2)]


def test_python_m_am_dag_runs_the_job_and_logs_to_stdout() -> None:
    job = three_stage_job()
    cluster = FakeCluster()
    output: list[str] = []
    assert asyncio.run(drive(job, cluster, as_process=output)) == 0
    assert cluster.finish is not None
    assert cluster.finish.final_status == pb.SUCCEEDED
    assert "registered " + APP in output[0]
    assert "finishing with SUCCEEDED" in output[0]


def test_wrong_token_exits_nonzero() -> None:
    cluster = FakeCluster()
    assert asyncio.run(drive(three_stage_job(), cluster, token="forged")) == 1
    assert cluster.registrations == 0


def test_invalid_job_is_reported_through_the_rm() -> None:
    cluster = FakeCluster()
    broken = three_stage_job()

    async def go() -> int:
        bad = json.loads(broken.to_json())
        bad["stages"][1]["parents"] = ["nope"]
        server_job = broken.model_copy()  # any Job; the JSON is replaced below
        return await drive(server_job, cluster, extra_env={"SHEPHERD_JOB_JSON": json.dumps(bad)})

    assert asyncio.run(go()) == 0
    assert cluster.finish is not None
    assert cluster.finish.final_status == pb.FAILED
    assert "unknown parent 'nope'" in cluster.finish.diagnostics


def test_client_maps_errors_and_keeps_the_table() -> None:
    async def go() -> None:
        cluster = FakeCluster(capacity=0)
        server = grpc.aio.server()
        pbg.add_ApplicationMasterServicer_to_server(FakeRM(cluster), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        client = AMRMClient(f"127.0.0.1:{port}", AMRM_TOKEN, retry_s=0.5)
        try:
            await client.register("h", 0, "")
            ask = pb.ResourceAsk(allocation_request_id=1, num_containers=2, stage="a")
            await client.allocate([ask], [], 0.0)
            assert [a.num_containers for a in client.outstanding_asks()] == [2]
            await client.allocate([pb.ResourceAsk(allocation_request_id=1, num_containers=0)], [], 0.0)
            assert client.outstanding_asks() == []
        finally:
            await client.close()
            await server.stop(None)
        bad = AMRMClient(f"127.0.0.1:{port}", AMRM_TOKEN, retry_s=0.3)
        try:
            with pytest.raises(Exception, match="UNAVAILABLE") as err:
                await bad.register("h", 0, "")
            assert getattr(err.value, "retryable", False)
        finally:
            await bad.close()

    asyncio.run(go())


def test_am_environment() -> None:
    env = AMEnvironment.from_env({
        "SHEPHERD_RM_ADDRESS": "rm:8030", "SHEPHERD_AMRM_TOKEN": "t", "SHEPHERD_JOB_JSON": "{}",
        "CONTAINER_ID": AM_CONTAINER, "LOG_DIRS": "/l1,/l2", "NM_PORT": "45454",
    })
    assert (env.attempt_id, env.application_id, env.log_dirs, env.nm_port) == (ATTEMPT, APP, ("/l1", "/l2"), 45454)
    with pytest.raises(ValueError, match="SHEPHERD_AMRM_TOKEN, SHEPHERD_JOB_JSON"):
        AMEnvironment.from_env({"SHEPHERD_RM_ADDRESS": "rm:8030"})
    job_json = '{"command": "$SHEPHERD_PYTHON x.py"}'
    encoded = AMEnvironment.from_env({
        "SHEPHERD_RM_ADDRESS": "rm:8030", "SHEPHERD_AMRM_TOKEN": "t",
        "SHEPHERD_JOB_JSON_B64": base64.b64encode(job_json.encode()).decode(),
    })
    assert encoded.job_json == job_json


# ---------------------------------------------------------------------- the examples


def _example_env(out: Path) -> dict[str, str]:
    return {**os.environ, "SHEPHERD_PYTHON": sys.executable, "SHEPHERD_JOB_DIR": str(EXAMPLES),
            "OUTPUT_DIR": str(out), "TPCH_SLEEP_SCALE": "0"}


def _run_locally(job: Job, env: dict[str, str]) -> None:
    """Run every stage's tasks as the AM would (same command formatting), stage by stage."""
    for stage in job.topological_order():
        assert stage.command is not None
        procs = [
            subprocess.Popen(
                ["/bin/bash", "-c", format_command(stage.command, job=job.id, stage=stage.name, task=i,
                                                   tasks=stage.tasks, attempt=0)],
                env={**env, "SHEPHERD_TASK_INDEX": str(i)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            for i in range(stage.tasks)
        ]
        for i, proc in enumerate(procs):
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, f"{stage.name}/{i}: {err.decode()}"


def test_wordcount_scripts_produce_a_verified_result(tmp_path: Path) -> None:
    env = _example_env(tmp_path)
    _run_locally(load_job(EXAMPLES / "wordcount.yaml"), env)
    verify = [sys.executable, str(EXAMPLES / "verify_wordcount.py"), str(tmp_path)]
    assert subprocess.run(verify, env=env, capture_output=True, check=False).returncode == 0
    # The checks bite: a lost partial fails merge, a wrong count fails verification.
    result = json.loads((tmp_path / "wordcount.json").read_text())
    result["counts"]["apple"] += 1
    (tmp_path / "wordcount.json").write_text(json.dumps(result))
    assert subprocess.run(verify, env=env, capture_output=True, check=False).returncode == 1
    (tmp_path / "counts" / "part-00002.json").unlink()
    merge = [sys.executable, str(EXAMPLES / "wordcount" / "merge.py")]
    assert subprocess.run(merge, env=env, capture_output=True, check=False).returncode == 1


def test_tpch_scripts_check_their_inputs(tmp_path: Path) -> None:
    env = _example_env(tmp_path)
    job = load_job(EXAMPLES / "tpch-q5.yaml")
    _run_locally(job, env)
    result = json.loads((tmp_path / "tpch-q5.json").read_text())
    assert len(result["checked_stages"]) == len(job.stages) - 1
    assert [r["n_name"] for r in result["rows"]] != []
    (tmp_path / "tpch" / "scan_orders" / "part-00003.json").unlink()
    final = job.topological_order()[-1]
    assert final.command is not None
    cmd = format_command(final.command, job=job.id, stage=final.name, task=0, tasks=1, attempt=1)
    assert subprocess.run(["/bin/bash", "-c", cmd], env=env, capture_output=True, check=False).returncode == 1


def test_am_runs_wordcount_for_real(tmp_path: Path) -> None:
    job = load_job(EXAMPLES / "wordcount.yaml")
    job = job.model_copy(update={"env": {"OUTPUT_DIR": str(tmp_path)}})
    cluster = FakeCluster(capacity=4, run_commands=True)
    assert asyncio.run(drive(job, cluster, extra_env={"SHEPHERD_JOB_DIR": str(EXAMPLES)}, timeout=60)) == 0
    assert cluster.finish is not None
    assert cluster.finish.final_status == pb.SUCCEEDED, cluster.finish.diagnostics
    assert_parents_first(job, cluster.events)
    verify = [sys.executable, str(EXAMPLES / "verify_wordcount.py"), str(tmp_path)]
    assert subprocess.run(verify, capture_output=True, check=False).returncode == 0
