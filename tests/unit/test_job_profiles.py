"""A recurring job's profile from its stored stage reports (``rm.core.job_profiles``) and on the wire
(``am.profile_wire``), and the jockey policy modelling a job from one."""

from __future__ import annotations

import math

import pytest

from am.dag_state import DagState
from am.jobspec import parse_job
from am.policies import make_ask_policy
from am.policies.jockey.profile import StageRun, profile_from_job
from am.policies.jockey_policy import TASK_OVERHEAD_S, JockeyAsks
from am.profile_wire import profile_from_pb, profile_to_pb, report_from_pb, report_to_pb
from common.errors import BadRequest
from common.resources import Resources
from rm.core import job_profiles as jp

GB = 1024
UNIT = Resources.of(memory_mb=GB, vcores=1)


def report(scale: float = 1.0, failed: int = 0) -> list[StageRun]:
    return [StageRun("map", 4, tuple(scale * x for x in (10.0, 12.0, 14.0, 16.0)), attempts=4 + failed,
                     failed_attempts=failed, container=UNIT),
            StageRun("reduce", 2, (20.0 * scale, 22.0 * scale), queue_s=(1.0, 3.0), init_s=(0.5, 1.5), attempts=2,
                     parents=("map",), container=UNIT)]


def record(app: int, *, scale: float = 1.0, failed: int = 0, ok: bool = True, queue: str = "root.default",
           user: str = "alice", job: str = "daily") -> jp.StageRunsRecord:
    return jp.record_of(f"application_1_{app:04d}", job, queue, user, 1000.0 + app, ok,
                        jp.check_report(report(scale, failed)))


def test_a_report_is_checked_and_its_samples_thinned_to_quantiles() -> None:
    many = StageRun("s", 10_000, tuple(float(i) for i in range(10_000)), attempts=10_000)
    (kept,) = jp.check_report([many])
    assert len(kept.run_s) == jp.MAX_SAMPLES
    assert kept.run_s == tuple(sorted(kept.run_s))
    assert kept.run_s[0] < 100  # the spread survives
    assert kept.run_s[-1] > 9_900
    assert abs(sum(kept.run_s) / len(kept.run_s) - 4_999.5) < 50
    for bad, why in [(StageRun("s", 0, (1.0,)), "tasks"), (StageRun("s", 1, (math.nan,)), "finite"),
                     (StageRun("s", 1, (-1.0,)), "finite"), (StageRun("s", 1, (1.0,), parents=("x",)), "parent"),
                     (StageRun("", 1, (1.0,)), "name"), (StageRun("s", 1, (1.0,), attempts=-1), "attempts")]:
        with pytest.raises(BadRequest, match=why):
            jp.check_report([bad])
    with pytest.raises(BadRequest, match="twice"):
        jp.check_report([StageRun("s", 1, (1.0,)), StageRun("s", 1, (1.0,))])


def test_a_record_round_trips_through_its_json() -> None:
    rec = record(1, failed=1)
    assert [jp.stage_from_dict(d) for d in rec.stages] == list(jp.check_report(report(failed=1)))


def test_the_profile_pools_the_newest_successful_runs_of_the_same_job_queue_and_user() -> None:
    records = [record(1), record(2, scale=2.0, failed=2), record(3, ok=False, scale=9.0),
               record(4, queue="root.other", scale=9.0), record(5, user="bob", scale=9.0)]
    sp = jp.profile_of("daily", "root.default", "alice", records)
    assert sp is not None
    assert sp.runs == ("application_1_0001", "application_1_0002")  # oldest first; the others do not count
    m, r = sp.profile.stages
    assert (m.name, r.name, r.parents) == ("map", "reduce", ("map",))
    assert sorted(m.run_s) == [10.0, 12.0, 14.0, 16.0, 20.0, 24.0, 28.0, 32.0]
    assert m.failure_p == pytest.approx(2 / 10)  # failed / all attempts
    assert sp.attempts == {"map": (10, 2), "reduce": (4, 0)}
    assert r.queue_s == pytest.approx(2.0)
    assert sp.init_measured == frozenset({"reduce"})
    assert m.container == UNIT
    only_newest = jp.profile_of("daily", "root.default", "alice", records, runs=1)
    assert only_newest is not None
    assert only_newest.runs == ("application_1_0002",)
    assert jp.profile_of("daily", "root.default", "carol", records) is None
    assert jp.profile_of("weekly", "root.default", "alice", records) is None


def test_runs_that_cannot_make_a_profile_are_skipped() -> None:
    empty = jp.record_of("application_1_0009", "daily", "root.default", "alice", 2000.0, True,
                         [StageRun("map", 4, (), container=UNIT)])  # a stage that never ran
    sp = jp.profile_of("daily", "root.default", "alice", [record(1), empty])
    assert sp is not None
    assert sp.runs == ("application_1_0001",)


def test_the_rendered_profile_shows_task_times_init_and_failures_per_stage() -> None:
    sp = jp.profile_of("daily", "root.default", "alice", [record(1, failed=1)])
    assert sp is not None
    out = jp.render(sp)
    assert out["runs"] == ["application_1_0001"]
    assert out["totalTasks"] == 6
    m, r = out["stages"]
    assert (m["meanTaskTime"], m["p90TaskTime"], m["longestTaskTime"]) == (13_000, 16_000, 16_000)
    assert m["initTime"] is None  # not measured
    assert m["queueTime"] is None
    assert (m["attempts"], m["failedAttempts"], m["failureProbability"]) == (5, 1, 0.2)
    assert (r["initTime"], r["queueTime"], r["parents"]) == (1_000, 2_000, ["map"])
    assert m["container"] == {"memory": GB, "vCores": 1}


def test_the_profile_and_the_report_survive_the_wire() -> None:
    runs = jp.check_report(report(failed=1))
    assert report_from_pb(report_to_pb(runs)) == list(runs)
    sp = jp.profile_of("daily", "root.default", "alice", [record(1)])
    assert sp is not None
    back = profile_from_pb(profile_to_pb(sp.profile, sp.runs, sp.init_measured), unmeasured_init_s=TASK_OVERHEAD_S)
    assert back.name == "daily"
    for got, sent in zip(back.stages, sp.profile.stages, strict=True):
        assert (got.name, got.tasks, got.run_s, got.parents, got.container, got.failure_p, got.queue_s) == (
            sent.name, sent.tasks, sent.run_s, sent.parents, sent.container, sent.failure_p, sent.queue_s)
    assert back.stages[0].init_s == (TASK_OVERHEAD_S,)  # not measured: the AM's own estimate
    assert back.stages[1].init_s == sp.profile.stages[1].init_s


JOB = {"id": "daily", "arrival_s": 0.0, "utility": [[0, 1], [200 / 60, 1], [240 / 60, -1]],
       "stages": [{"name": "map", "tasks": 4, "duration_s": 13.0, "memory_mb": GB},
                  {"name": "reduce", "tasks": 2, "duration_s": 21.0, "memory_mb": GB, "parents": ["map"]}]}


def first_guarantee(policy: JockeyAsks) -> Resources:
    policy.asks(DagState(parse_job(JOB)), Resources(), 0.0)
    g = policy.signals().guarantee
    assert g is not None
    return g


def test_a_jockey_policy_models_the_job_from_the_profile_it_is_handed() -> None:
    """Runs four times slower than the job file says make it ask for more at once; a profile of other stages
    (the job changed since) is not used; one heard after the first decision changes nothing."""
    sp = jp.profile_of("daily", "root.default", "alice", [record(1, scale=4.0)])
    assert sp is not None
    own, given, other = (make_ask_policy("jockey", started_at=0.0) for _ in range(3))
    assert isinstance(own, JockeyAsks)
    assert isinstance(given, JockeyAsks)
    assert isinstance(other, JockeyAsks)
    given.set_profile(sp.profile)
    other.set_profile(profile_from_job(parse_job({**JOB, "stages": [{"name": "x", "tasks": 40, "duration_s": 90.0,
                                                                      "memory_mb": GB}]})))
    mine = first_guarantee(own)
    assert first_guarantee(given).vcores > mine.vcores
    assert first_guarantee(other) == mine
    own.set_profile(sp.profile)  # too late: the model is built
    assert own.profile is None
