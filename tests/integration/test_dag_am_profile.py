"""The DAG ApplicationMaster and a recurring job's profile (against the fake RM and NodeManager of
``test_am_client``): it reports its run per stage when it unregisters, and hands the profile the RM sends at
registration to its policy."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from am.jobspec import parse_job
from am.policies.jockey.profile import JobProfile, StageRun, profile_from_runs
from am.policies.jockey_policy import TASK_OVERHEAD_S, JockeyAsks
from am.profile_wire import profile_to_pb, report_from_pb
from common.resources import Resources
from proto import shepherd_pb2 as pb
from tests.integration.test_am_client import FakeCluster, FakeRM, Launch, drive, three_stage_job


def test_the_dag_am_reports_its_run_per_stage_when_it_unregisters() -> None:
    def outcome(launch: Launch) -> int:
        return 1 if (launch.stage, launch.task, launch.attempt) == ("transform", 1, 0) else 0

    cluster = FakeCluster(outcome=outcome)
    assert asyncio.run(drive(three_stage_job(), cluster)) == 0
    assert cluster.finish is not None
    stages = {s.name: s for s in report_from_pb(cluster.finish.stages)}
    assert list(stages) == ["extract", "transform", "load"]
    assert [(s.tasks, s.attempts, s.failed_attempts) for s in stages.values()] == [(3, 3, 0), (2, 3, 1), (1, 1, 0)]
    assert stages["transform"].parents == ("extract",)
    assert stages["load"].container == Resources.of(memory_mb=128, vcores=1)


def test_the_dag_am_hands_the_profile_the_rm_sends_to_its_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    run = [StageRun(name, tasks, (20.0,) * tasks, parents=parents, container=Resources.of(memory_mb=128, vcores=1))
           for name, tasks, parents in (("extract", 3, ()), ("transform", 2, ("extract",)), ("load", 1, ("transform",)))]
    sent = profile_from_runs("etl", [run])
    registered = FakeRM.RegisterApplicationMaster

    async def with_profile(self: FakeRM, request: Any, context: Any) -> pb.RegisterApplicationMasterResponse:
        response = await registered(self, request, context)
        response.profile.CopyFrom(profile_to_pb(sent, ["application_1_0001"], ()))
        return response

    heard: list[JobProfile] = []
    take = JockeyAsks.set_profile

    def set_profile(self: JockeyAsks, profile: JobProfile) -> None:
        heard.append(profile)
        take(self, profile)

    monkeypatch.setattr(FakeRM, "RegisterApplicationMaster", with_profile)
    monkeypatch.setattr(JockeyAsks, "set_profile", set_profile)
    job = parse_job({**three_stage_job().to_dict(), "am_policy": "jockey", "deadline_s": 600.0})
    assert asyncio.run(drive(job, FakeCluster())) == 0
    assert len(heard) == 1
    (got,) = heard
    assert [s.name for s in got.stages] == ["extract", "transform", "load"]
    assert got.stages[0].run_s == (20.0, 20.0, 20.0)
    assert got.stages[0].init_s == (TASK_OVERHEAD_S,)  # the runs measured none: the AM's own
