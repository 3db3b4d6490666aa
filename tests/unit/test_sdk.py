"""The SDK's pure parts: riding through an RM outage, which reports a progress callback hears and when a wait
gives up (sync and async over scripted RMs), log file names and tails, the submission a job becomes, and the
typed plan and explanation read from the very objects the RM renders."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path
from random import Random
from typing import Any

import pytest

from am.jobspec import parse_job
from proto import shepherd_pb2 as pb
from rm.client import ClientError
from rm.sdk import AppReport, AsyncClient, Client, Explanation, JobPlan, Outage, WaitProgress, WaitTimeout
from rm.sdk.follow import RideThrough, Watch, last_lines, log_names
from rm.sdk.jobs import submission_context, task_env

APP = "application_1_0001"


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def report(state: str = "RUNNING", progress: float = 0.0, final: str = "UNDEFINED",
           stages: tuple[tuple[str, int, int, str], ...] = ()) -> AppReport:
    return AppReport.from_proto(pb.ApplicationReport(
        application_id=APP, state=state, progress=progress, final_status=final,
        stages=[pb.StageProgress(name=n, tasks=t, done=d, state=s) for n, t, d, s in stages]))


# ---------------------------------------------------------------------------------------- riding through


def test_an_outage_is_told_once_when_it_starts_and_once_when_it_ends() -> None:
    clock, heard = Clock(), list[Outage]()
    ride = RideThrough(lambda: "rm:1", heard.append, clock=clock, rng=Random(1))
    delays = []
    for _ in range(6):
        delays.append(ride.failed(ClientError("UNAVAILABLE", "restarting")))
        clock.t += 1.0
    assert heard == [Outage("rm:1", "UNAVAILABLE", 0.0, over=False)]
    assert 0.125 <= delays[0] <= 0.375  # 0.25 s, jittered by half either way
    assert delays[3] > delays[0] * 2  # doubling...
    assert max(delays) <= 5.0 * 1.5  # ...up to 5 s
    ride.answered()
    ride.answered()  # no outage any more: nothing more to tell
    assert heard[1:] == [Outage("rm:1", "UNAVAILABLE", 6.0, over=True)]
    assert ride.failed(ClientError("DEADLINE_EXCEEDED", "slow")) <= 0.375  # a new outage starts the backoff again


def test_a_refusal_is_raised_and_a_retriable_exception_ridden_through() -> None:
    ride = RideThrough(lambda: "rm:1", None, clock=Clock())
    refusal = ClientError("NOT_FOUND", "ApplicationNotFoundException: no such app")
    with pytest.raises(ClientError) as raised:
        ride.failed(refusal)
    assert raised.value is refusal
    assert ride.failed(ClientError("UNKNOWN", "RetriableException: the RM is failing over")) > 0


# ---------------------------------------------------------------------------------------- watching


def test_the_callback_hears_the_first_report_and_each_change_only() -> None:
    clock, heard = Clock(), list[WaitProgress]()
    watch = Watch(APP, heard.append, None, clock=clock)
    stage = ("load", 4, 0, "RUNNING")
    for rep in (report("ACCEPTED"), report("ACCEPTED"), report(progress=0.2, stages=(stage,)),
                report(progress=0.2, stages=(stage,)), report(progress=0.2, stages=(("load", 4, 1, "RUNNING"),)),
                report(progress=0.5)):
        clock.t += 0.5
        assert not watch.seen(rep)
    assert watch.seen(report("FINISHED", 1.0, "SUCCEEDED"))
    assert [(p.state, p.progress, [(s.name, s.done) for s in p.stages]) for p in heard] == [
        ("ACCEPTED", 0.0, []), ("RUNNING", pytest.approx(0.2), [("load", 0)]),
        ("RUNNING", pytest.approx(0.2), [("load", 1)]), ("RUNNING", 0.5, []), ("FINISHED", 1.0, [])]
    assert heard[0].elapsed_s == 0.5
    assert heard[-1].report.succeeded


def test_a_wait_gives_up_at_its_timeout_with_the_last_report() -> None:
    clock = Clock()
    watch = Watch(APP, None, 10.0, clock=clock)
    watch.seen(report(progress=0.3))
    assert watch.pause(0.5) == 0.5
    clock.t += 9.8
    assert watch.pause(0.5) == pytest.approx(0.2)  # no sleeping past the timeout
    clock.t += 0.2
    with pytest.raises(WaitTimeout) as timed_out:
        watch.pause(0.5)
    assert timed_out.value.code == "DEADLINE_EXCEEDED"
    assert timed_out.value.last is not None
    assert timed_out.value.last.progress == pytest.approx(0.3)
    assert "did not end within 10 s (it is RUNNING)" in str(timed_out.value)
    with pytest.raises(ValueError, match="positive"):
        Watch(APP, None, 0.0, clock=clock)


class ScriptedClient(Client):
    """The synchronous client over a scripted RM: reports, or errors raised in their place."""

    address = "rm:1"  # type: ignore[assignment]

    def __init__(self, steps: list[AppReport | ClientError]) -> None:  # no RM
        self.steps = steps

    def app(self, app_id: str) -> AppReport:
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, ClientError):
            raise step
        return step


class ScriptedAsyncClient(AsyncClient):
    address = "rm:1"

    def __init__(self, steps: list[AppReport | ClientError]) -> None:  # no RM
        self.steps = steps

    async def app(self, app_id: str) -> AppReport:
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, ClientError):
            raise step
        return step


def _script() -> list[AppReport | ClientError]:
    return [report("ACCEPTED"), report(progress=0.5), ClientError("UNAVAILABLE", "failing over"),
            report(progress=0.5), report("FINISHED", 1.0, "SUCCEEDED")]


def test_wait_rides_through_an_outage_and_returns_the_final_report() -> None:
    heard: list[float] = []
    outages: list[Outage] = []
    final = ScriptedClient(_script()).wait(APP, progress=lambda p: heard.append(p.progress), interval=0.01,
                                           on_outage=outages.append)
    assert final.state == "FINISHED"
    assert final.succeeded
    assert heard == [0.0, 0.5, 1.0]
    assert [o.over for o in outages] == [False, True]
    with pytest.raises(WaitTimeout):
        ScriptedClient([report(progress=0.1)]).wait(APP, timeout=0.05, interval=0.01)
    with pytest.raises(ClientError, match="no such app"):
        ScriptedClient([ClientError("NOT_FOUND", "no such app")]).wait(APP)


@pytest.mark.asyncio
async def test_the_async_wait_does_the_same() -> None:
    heard: list[float] = []
    outages: list[Outage] = []
    final = await ScriptedAsyncClient(_script()).wait(APP, progress=lambda p: heard.append(p.progress),
                                                      interval=0.01, on_outage=outages.append)
    assert final.succeeded
    assert heard == [0.0, 0.5, 1.0]
    assert [o.over for o in outages] == [False, True]
    with pytest.raises(WaitTimeout):
        await ScriptedAsyncClient([report(progress=0.1)]).wait(APP, timeout=0.05, interval=0.01)


# ---------------------------------------------------------------------------------------- logs


def test_log_names_and_tails() -> None:
    assert log_names("stdout") == ["stdout"]
    assert log_names(["stdout,stderr", "stderr", "syslog"]) == ["stdout", "stderr", "syslog"]
    assert log_names(["all"]) == ["stdout", "stderr"]
    assert log_names([]) == ["stdout"]
    for bad in ("../etc/passwd", "a/b", ".hidden"):
        with pytest.raises(ValueError, match="not a log file name"):
            log_names(bad)
    assert last_lines("a\nb\nc", 2) == "b\nc"
    assert last_lines("a\nb\n", 0) == ""
    assert last_lines("a\nb\n", None) == "a\nb\n"


# ---------------------------------------------------------------------------------------- submitting


def test_without_user_in_the_environment_a_job_runs_as_the_user_of_the_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("USER", raising=False)
    job = parse_job({"id": "etl", "stages": [{"name": "s", "tasks": 1, "memory_mb": 128, "command": "true"}]})
    ctx = submission_context(job, APP, job_dir=tmp_path)
    assert ctx.user == pwd.getpwuid(os.getuid()).pw_name  # not the anonymous dr.who
    assert submission_context(parse_job({**job.to_dict(), "user": "bo"}), APP, job_dir=tmp_path).user == "bo"


def test_a_job_becomes_a_dag_am_submission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "ada")
    job = parse_job({"id": "etl", "name": "nightly", "queue": "prod", "env": {"A": "1", "OUTPUT_DIR": "/kept"},
                     "stages": [{"name": "s", "tasks": 2, "memory_mb": 128, "command": "true"}]})
    ctx = submission_context(job, APP, job_dir=tmp_path, data_dir=tmp_path / "data", queue="adhoc",
                             env={"B": "2"}, deadline=1234.5)
    assert (ctx.application_id, ctx.name, ctx.queue, ctx.user) == (APP, "nightly", "adhoc", "ada")
    assert ctx.application_type == "SHEPHERD-DAG"
    assert list(ctx.am_container_spec.commands) == ["$SHEPHERD_PYTHON -m am.dag"]
    assert ctx.deadline == 1234.5
    spec = json.loads(ctx.job_spec_json)
    assert spec["queue"] == "adhoc"
    assert spec["env"] == {"A": "1", "B": "2", "OUTPUT_DIR": "/kept", "SHEPHERD_JOB_DIR": str(tmp_path)}
    plain = parse_job({"id": "etl", "stages": [{"name": "s", "tasks": 1, "memory_mb": 128}]})
    env = task_env(plain, APP, job_dir=tmp_path, data_dir=tmp_path / "data", env={})
    assert env["OUTPUT_DIR"] == str(tmp_path / "data" / "output" / APP)


# ---------------------------------------------------------------------------------------- typed REST answers


def test_a_plan_is_read_from_the_dry_runs_own_rest_shape() -> None:
    from sim.dryrun import Delay, Placement, PlanReport

    rep = PlanReport(job="etl", queue="root.default", user="ada", scheduler="drf", now=1000.0, status="SUCCEEDED",
                     am=Placement(1001.0, "n1:1", ""), first_stage="load",
                     first_stage_placements=[Placement(1003.0, "n1:1", "load"), Placement(1003.0, "n2:1", "load"),
                                             Placement(1004.0, "n1:1", "load")],
                     start=1003.0, finish=1030.0, deadline_s=60.0, notes=["a note"],
                     delays=[Delay("application_1_0007", "other", 1100.0, 1112.5), Delay("application_1_0008", "x",
                                                                                         1200.0, None)])
    plan = JobPlan.from_dict(rep.to_dict())
    assert (plan.job, plan.queue, plan.user, plan.status, plan.plan_time_ms) == (
        "etl", "root.default", "ada", "SUCCEEDED", 1_000_000)
    assert plan.am_container is not None
    assert (plan.am_container.node, plan.am_container.time_ms) == ("n1:1", 1_001_000)
    assert plan.first_stage.name == "load"
    assert [(p.node, p.tasks) for p in plan.first_stage.placements] == [("n1:1", 2), ("n2:1", 1)]
    assert (plan.predicted_start_time_ms, plan.predicted_finish_time_ms) == (1_003_000, 1_030_000)
    assert plan.predicted_duration_s == 30.0
    assert (plan.deadline_s, plan.deadline_feasible) == (60.0, True)
    assert [(d.app_id, d.delay_s, d.finish_time_with_ms) for d in plan.delays] == [
        ("application_1_0007", 12.5, 1_112_500), ("application_1_0008", None, None)]
    assert plan.notes == ("a note",)
    assert plan.raw == rep.to_dict()


def test_an_explanation_is_read_from_the_rms_own_rest_shape() -> None:
    from rm.core import explain as core

    limits: dict[str, Any] = {
        "queue": {"path": "root.a", "guaranteed": {"memory-mb": 4096, "vcores": 4}, "max": {"memory-mb": 8192},
                  "used": {"memory-mb": 8192, "vcores": 8}, "state": "RUNNING"},
        "am": {"maxAmResourcePercent": 10.0, "limit": {"memory-mb": 819}, "used": {"memory-mb": 512}}}
    e = core.Explanation(
        app_id=APP, state="ACCEPTED", queue="root.a", user="ada",
        reason=core.Reason("QUEUE_AT_MAX_CAPACITY", "the queue is at its max", {"queueUsedMB": 8192}),
        asks=(core.AskWait(0, True, {"memory-mb": 256, "vcores": 1}, 1, "QUEUE_AT_MAX_CAPACITY", {"x": 1}),),
        position=2, waiting_in_queue=3, used={}, fair_share={"memory-mb": 2048}, dominant_share=0.0,
        fair_dominant_share=0.25, limits=limits, cycle_version=17,
        deadline={"deadline": 5_000, "status": "AT_RISK", "price": 3.0, "owedUnitsNow": 2.0, "remainingWork": 40.0,
                  "laxity": None})
    got = Explanation.from_dict(e.to_dict())
    assert (got.app_id, got.state, got.reason, got.message) == (APP, "ACCEPTED", "QUEUE_AT_MAX_CAPACITY",
                                                                "the queue is at its max")
    assert got.numbers == {"queueUsedMB": 8192}
    assert (got.position_in_queue, got.waiting_in_queue, got.plan_version) == (2, 3, 17)
    assert got.fair_share == {"memory-mb": 2048}
    assert got.fair_dominant_share == 0.25
    assert got.queue_limit is not None
    assert got.queue_limit.max == {"memory-mb": 8192}
    assert got.am_limit is not None
    assert got.am_limit.used == {"memory-mb": 512}
    (ask,) = got.asks
    assert (ask.am, ask.capability, ask.reason, ask.detail) == (True, {"memory-mb": 256, "vcores": 1},
                                                                "QUEUE_AT_MAX_CAPACITY", {"x": 1})
    assert got.deadline is not None
    assert (got.deadline.deadline_ms, got.deadline.status, got.deadline.laxity_s) == (5_000, "AT_RISK", None)
    assert got.raw["appId"] == APP
