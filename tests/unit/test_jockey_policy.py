"""Jockey's AM policy end to end: the job file's utility and policy, the guarantee its AM asks for (rising when
tasks run slower than the profile, falling when faster), its DEFAULT / ALTRUISTIC split (on the guarantee the
RM grants, when it says), the static and Amdahl variants, and a deadline that fair sharing misses and
``jockey`` meets on a cluster full of greedy jobs."""

from __future__ import annotations

from typing import Any

import pytest

from am.dag_state import DagState
from am.jobspec import Job, JobSpecError, parse_job
from am.policies import (
    ASK_POLICIES,
    CarbyneAsks,
    JockeyAmdahlAsks,
    JockeyAsks,
    JockeyMaxAsks,
    JockeyStaticAsks,
    make_ask_policy,
)
from am.policies.jockey import Amdahl, CpaTable
from am.policies.jockey.controller import ControlConfig
from am.policies.jockey.profile import profile_from_job
from common.resources import Resources
from sim.engine import Faults, SimConfig, Simulator, uniform_nodes
from sim.metrics import JobRecord
from sim.policies import make_policy
from sim.report import deadline_summary

GB = 1024
NODES = uniform_nodes(2, 16 * GB, 16)  # 32 containers of 1 GB / 1 vcore


def hog(i: int, scale: float = 1.0) -> Job:
    """A greedy best-effort job that keeps the whole cluster busy; its tasks end at staggered times. ``scale``
    multiplies its durations (to undo a slowdown the simulator applies to every job)."""
    durations = [(20.0 + (7 * k + 5 * i) % 21) * scale for k in range(300)]
    return parse_job({"id": f"hog{i}", "arrival_s": 0.0, "am_policy": "greedy",
                      "stages": [{"name": "s", "tasks": 300, "durations_s": durations, "memory_mb": GB}]})


def slo_job(arrival: float = 10.0, **extra: Any) -> Job:
    return parse_job({"id": "slo", "arrival_s": arrival, **extra,
                      "stages": [{"name": "map", "tasks": 60, "duration_s": 10.0, "memory_mb": GB},
                                 {"name": "reduce", "tasks": 10, "duration_s": 10.0, "memory_mb": GB,
                                  "parents": ["map"]}]})


def run(jobs: list[Job], policy: str, slowdown: float = 1.0) -> dict[str, JobRecord]:
    sim = Simulator(jobs, NODES, make_policy(policy), SimConfig(seed=1, faults=Faults(slowdown=slowdown)))
    return {r.job_id: r for r in sim.run().jobs}


def units(record: JobRecord) -> list[int]:
    return [g.vcores for _, g in record.guarantees]


# ------------------------------------------------------------------------------------------ the job file


def test_the_job_file_takes_a_utility_in_minutes_and_the_jockey_policies() -> None:
    job = slo_job(utility=[[0, 1], [3, 1], [4, -1]], am_policy="jockey-amdahl")
    assert job.utility_points_s() == ((0.0, 1.0), (180.0, 1.0), (240.0, -1.0))
    assert parse_job(job.to_dict()) == job
    with pytest.raises(JobSpecError, match=r"utility: utility point 2: value rises from -1\.0 to 0\.0"):
        slo_job(utility=[[0, 1], [3, -1], [4, 0]])
    with pytest.raises(JobSpecError, match="am_policy"):
        slo_job(am_policy="jockey-fast")
    assert {"jockey", "jockey-static", "jockey-amdahl"} <= set(ASK_POLICIES)


# ------------------------------------------------------------------------------------------ the policy alone


def test_a_deadline_job_asks_for_its_guarantee_and_uses_it_before_yielding() -> None:
    job = slo_job(arrival=0.0, deadline_s=600.0)
    policy = make_ask_policy("jockey", seed=3, started_at=0.0)
    assert isinstance(policy, JockeyAsks)
    dag = DagState(job)
    asks = policy.asks(dag, Resources.of(memory_mb=20 * GB, vcores=20), 0.0)
    assert policy.controller is not None
    decision = policy.controller.trace[0]
    first = policy.signals()
    assert first.guarantee == Resources.of(memory_mb=GB, vcores=1) * decision.requested_units
    assert first.model_build_s is not None  # the model's build time goes once, with the first call's signals
    assert first.model_build_s >= 0.0
    later = policy.signals()
    assert later.size is not None
    assert later.model_build_s is None
    default = sum(a.num_containers for a in asks if a.ask_type == "DEFAULT")
    altruistic = sum(a.num_containers for a in asks if a.ask_type == "ALTRUISTIC")
    assert decision.requested_units < 60  # 700 task-seconds due in 10 minutes need a few units, not 60
    assert default == decision.requested_units  # it fills its guarantee now and no more: it is on track
    assert altruistic == 60 - default  # the rest of the runnable map tasks can wait
    assert policy.last is not None
    assert not policy.last.behind


def test_the_asks_count_on_the_guarantee_the_rm_grants_never_more_than_the_one_asked_for() -> None:
    job = slo_job(arrival=0.0, deadline_s=150.0)
    unit = Resources.of(memory_mb=GB, vcores=1)

    def split(granted: Resources | None, *, told: bool = True) -> tuple[int, int, JockeyAsks]:
        policy = make_ask_policy("jockey", seed=3, started_at=0.0)
        assert isinstance(policy, JockeyAsks)
        if told:
            policy.set_granted(granted)
        asks = policy.asks(DagState(job), Resources(), 0.0)
        return (sum(a.num_containers for a in asks if a.ask_type == "DEFAULT"),
                sum(a.num_containers for a in asks if a.ask_type == "ALTRUISTIC"), policy)

    default, altruistic, untold = split(None, told=False)  # an RM that does not say: the request
    assert untold.controller is not None
    requested = untold.controller.trace[0].requested_units
    assert requested == 8
    assert (default, altruistic) == (8, 52)
    assert split(None)[:2] == (8, 52)  # an answer without a grant: the same
    assert split(unit * 12)[:2] == (8, 52)  # a grant above the request counts as the request
    default, altruistic, cut = split(unit * 7)  # granted less: the floor it fills is the grant
    assert (default, altruistic) == (7, 53)
    assert cut.last is not None
    assert (cut.last.floor, cut.last.count_on, cut.last.behind) == (unit * 7, unit * 7, False)
    assert cut.signals().guarantee == unit * 8  # it still asks for what its controller wants
    default, altruistic, short = split(unit * 4)  # too little to finish by the target: behind, all DEFAULT
    assert (default, altruistic) == (60, 0)
    assert short.last is not None
    assert short.last.behind


def test_a_job_that_cannot_make_its_deadline_asks_everything_default() -> None:
    job = slo_job(arrival=0.0, deadline_s=30.0)  # 10 s tasks then 10 s tasks: 20 s at full width, slack 1.2
    policy = make_ask_policy("jockey", started_at=0.0)
    assert isinstance(policy, JockeyAsks)
    asks = policy.asks(DagState(job), Resources.of(memory_mb=4 * GB, vcores=4), 0.0)
    assert {a.ask_type for a in asks} == {"DEFAULT"}
    assert sum(a.num_containers for a in asks) == 60


def test_a_long_task_the_stage_mean_hides_makes_the_job_behind_and_its_stage_goes_first() -> None:
    """Two stages side by side: ``wide`` (40 tasks of 5 s) and ``long`` (2 tasks, one of 5 s and one of 100 s,
    a mean of 52.5 s), then ``end`` after ``long``, due in 130 s: planning deadline 123.5 s, over slack 1.2 a
    target of 102.9 s. Packed with the stage means on the share the job looks in time (about 63 s), but its
    longest chain is 100 + 10 = 110 s: it is behind and asks everything DEFAULT, and ``long`` (the longer tail
    to the end) is asked before ``wide``, which the stages' depths would tie. Without the chain both fail."""
    job = parse_job({"id": "cp", "arrival_s": 0.0, "deadline_s": 130.0, "stages": [
        {"name": "wide", "tasks": 40, "duration_s": 5.0, "memory_mb": GB},
        {"name": "long", "tasks": 2, "durations_s": [5.0, 100.0], "memory_mb": GB},
        {"name": "end", "tasks": 1, "duration_s": 10.0, "memory_mb": GB, "parents": ["long"]}]})
    policy = make_ask_policy("jockey", started_at=0.0)
    assert isinstance(policy, JockeyAsks)
    asks = policy.asks(DagState(job), Resources.of(memory_mb=16 * GB, vcores=16), 0.0)
    assert policy.last is not None
    assert policy.last.behind
    assert {a.ask_type for a in asks} == {"DEFAULT"}
    priority = {a.stage: a.priority for a in asks}
    assert priority["long"] < priority["wide"]


def test_a_job_without_deadline_or_utility_is_an_ordinary_altruistic_job() -> None:
    job = slo_job(arrival=0.0)
    share = Resources.of(memory_mb=8 * GB, vcores=8)
    jockey = make_ask_policy("jockey", seed=5)
    carbyne = CarbyneAsks(seed=5)
    assert jockey.asks(DagState(job), share, 0.0) == carbyne.asks(DagState(job), share, 0.0)
    assert jockey.signals().guarantee is None
    assert jockey.signals().model_build_s is None  # no deadline: no model


def test_the_variants_pick_their_model_and_adaptation() -> None:
    job = slo_job(arrival=0.0, deadline_s=600.0)
    table = make_ask_policy("jockey", started_at=0.0)
    amdahl = make_ask_policy("jockey-amdahl", started_at=0.0)
    static = make_ask_policy("jockey-static", started_at=0.0)
    assert isinstance(table, JockeyAsks)
    assert isinstance(amdahl, JockeyAmdahlAsks)
    assert isinstance(static, JockeyStaticAsks)
    for p in (table, amdahl, static):
        p.asks(DagState(job), Resources(), 0.0)
    assert isinstance(table.controller._model, CpaTable)
    assert isinstance(amdahl.controller._model, Amdahl)
    assert amdahl.signals().guarantee is not None
    assert not amdahl.signals().guarantee.is_zero()


# ------------------------------------------------------------------------------------------ in the simulator


def test_the_requested_guarantee_rises_when_tasks_run_slower_than_the_profile_and_falls_when_faster() -> None:
    """Only the job's own tasks change speed: the greedy jobs' durations undo the slowdown."""
    due = {"utility": [[0, 1], [200 / 60, 1], [240 / 60, -1]]}

    def guarantees(slowdown: float, **extra: Any) -> list[int]:
        jobs = [hog(i, 1.0 / slowdown) for i in range(3)]
        return units(run([*jobs, slo_job(**due, **extra)], "jockey", slowdown=slowdown)["slo"])

    slow, fast = guarantees(2.0), guarantees(0.5)
    assert slow[0] == fast[0]  # the same first decision: the same profile, the same start
    assert max(slow) >= slow[0] + 3  # twice as slow as the profile: it asks for more
    assert min(fast) < fast[0]
    assert fast[-1] < fast[0]
    assert guarantees(2.0, am_policy="jockey-static") == [slow[0]]  # jockey-static holds its first decision


def test_paced_a_twice_slower_job_raises_its_guarantee_early_and_meets_a_deadline_it_misses_unpaced() -> None:
    """The same slowed job as above, due 200 s after it arrives. Unpaced, its controller sees the slowness only
    as progress arriving late: it asks for 10 units after 127 s and ends just past its deadline. Paced by its
    finished tasks' run times (twice the profile's), it asks for 10 after 53 s and ends well in time."""
    due = {"utility": [[0, 1], [200 / 60, 1], [240 / 60, -1]]}

    def record(prior: float | None) -> JobRecord:
        jobs = [*(hog(i, 0.5) for i in range(3)), slo_job(**due)]
        cfg = SimConfig(seed=1, faults=Faults(slowdown=2.0), control=ControlConfig(pace_prior=prior))
        return {r.job_id: r for r in Simulator(jobs, NODES, make_policy("jockey"), cfg).run().jobs}["slo"]

    def reached(rec: JobRecord, n: int) -> float:
        return min(t - rec.arrival for t, g in rec.guarantees if g.vcores >= n)

    unpaced, paced = record(None), record(0.1)
    assert reached(paced, 10) < reached(unpaced, 10) - 30
    assert paced.met_deadline is True
    assert paced.finish is not None
    assert unpaced.finish is not None
    assert paced.finish < unpaced.finish


@pytest.mark.parametrize("due", [{"deadline_s": 80.0}, {"utility": [[0, 1], [80 / 60, 1], [100 / 60, -1]]}])
def test_a_deadline_fair_sharing_misses_is_met_under_jockey(due: dict[str, Any]) -> None:
    """With greedy jobs filling the cluster, the job's fair share is about 8 of 32 containers, some 90 s for
    its 700 task-seconds once it holds them; it is due 80 s after it arrives. With ``deadline_s`` it has an MRM
    claim too; with only a utility its guarantee alone gets it there."""
    jobs = [hog(0), hog(1), hog(2), slo_job(**due)]
    results = {p: Simulator(jobs, NODES, make_policy(p), SimConfig(seed=1)).run() for p in ("drf", "jockey")}
    drf, jockey = ({r.job_id: r for r in results[p].jobs}["slo"] for p in ("drf", "jockey"))
    assert drf.status == jockey.status == "SUCCEEDED"
    assert drf.met_deadline is False
    assert jockey.met_deadline is True
    assert jockey.guarantees  # its AM asked for a guarantee
    assert jockey.granted  # and the RM granted one: an answer carries the grant of the cycle that saw the ask
    for t, g in jockey.granted:  # before it, so never more than that ask or the one this heartbeat made
        asked = [a.vcores for t0, a in jockey.guarantees if t0 <= t]
        assert g.vcores <= max(asked[-2:])
    missed, met = deadline_summary(results["drf"]), deadline_summary(results["jockey"])
    assert missed is not None
    assert (missed["met"], missed["missed"]) == (0, 1)
    assert met is not None
    assert (met["jobs"], met["met"], met["missed"]) == (1, 1, 0)
    assert met["completion_ratio_avg"] <= 1.0 < missed["completion_ratio_avg"]


def test_a_profile_from_earlier_runs_replaces_the_job_files() -> None:
    """The AM models the job from the profile it is given (its earlier runs), not from its job file: a profile
    whose tasks took twice the job file's time makes it ask for more at once."""
    job = slo_job(arrival=0.0, utility=[[0, 1], [200 / 60, 1], [240 / 60, -1]])
    slower = profile_from_job(_scaled(job, 2.0), queue_s=1.0)
    own, given = make_ask_policy("jockey", started_at=0.0), make_ask_policy("jockey", started_at=0.0, profile=slower)
    for p in (own, given):
        p.asks(DagState(job), Resources(), 0.0)
    first = [p.signals().guarantee for p in (own, given)]
    assert first[0] is not None
    assert first[1] is not None
    assert first[1].vcores > first[0].vcores


def test_max_allocation_asks_for_the_most_its_model_knows_throughout() -> None:
    job = slo_job(arrival=0.0, utility=[[0, 1], [600 / 60, 1], [700 / 60, -1]])
    most = make_ask_policy("jockey-max", started_at=0.0)
    capped = make_ask_policy("jockey-max", started_at=0.0, control=ControlConfig(max_units=12))
    assert isinstance(most, JockeyMaxAsks)
    for p in (most, capped):
        p.asks(DagState(job), Resources(), 0.0)
    assert most.signals().guarantee == Resources.of(memory_mb=60 * GB, vcores=60)  # the widest stage: 60 maps
    assert capped.signals().guarantee == Resources.of(memory_mb=12 * GB, vcores=12)
    assert make_ask_policy("jockey", started_at=0.0) is not None
    assert "jockey-max" in ASK_POLICIES


def test_no_request_exceeds_the_ceiling_the_rm_tells() -> None:
    """A job that cannot make its deadline asks for the most its model knows (60 units), unless the RM has said
    its queue can guarantee no more than 20 (in memory: 20 GB of 1 GB units, though 32 vcores would fit)."""
    job = slo_job(arrival=0.0, deadline_s=20.0)  # 20 s at full width, 24 s with slack 1.2
    ceiling = Resources.of(memory_mb=20 * GB + 512, vcores=32)
    told_first = make_ask_policy("jockey", started_at=0.0)
    assert isinstance(told_first, JockeyAsks)
    told_first.set_granted(None, ceiling)  # heard before the controller exists: it starts capped
    told_first.asks(DagState(job), Resources(), 0.0)
    assert told_first.signals().guarantee == Resources.of(memory_mb=20 * GB, vcores=20)
    told_later = make_ask_policy("jockey", started_at=0.0)
    assert isinstance(told_later, JockeyAsks)
    dag = DagState(job)
    told_later.asks(dag, Resources(), 0.0)
    assert told_later.signals().guarantee == Resources.of(memory_mb=60 * GB, vcores=60)
    told_later.set_granted(Resources.of(memory_mb=20 * GB, vcores=20), ceiling)
    told_later.set_granted(Resources.of(memory_mb=20 * GB, vcores=20))  # an answer without one keeps the cap
    told_later.asks(dag, Resources(), 100.0)
    assert told_later.signals().guarantee == Resources.of(memory_mb=20 * GB, vcores=20)
    most = make_ask_policy("jockey-max", started_at=0.0)  # the max-allocation baseline asks for the ceiling
    assert isinstance(most, JockeyMaxAsks)
    most.set_granted(None, ceiling)
    most.asks(DagState(job), Resources(), 0.0)
    assert most.signals().guarantee == Resources.of(memory_mb=20 * GB, vcores=20)


def test_a_deadline_moved_while_the_job_runs_moves_its_guarantee() -> None:
    """Halving the time to the deadline 10 % of the way in raises the guarantee the AM asks for at once;
    the record is judged against the new deadline."""
    due = {"utility": [[0, 1], [300 / 60, 1], [350 / 60, -1]]}

    def record(moves: dict[str, tuple[float, float]]) -> JobRecord:
        jobs = [hog(i) for i in range(3)] + [slo_job(**due)]
        sim = Simulator(jobs, NODES, make_policy("jockey"), SimConfig(seed=1, deadline_moves=moves))
        return {r.job_id: r for r in sim.run().jobs}["slo"]

    base, halved = record({}), record({"slo": (0.1, 0.5)})
    assert halved.first_deadline == pytest.approx(10.0 + 300.0)
    assert halved.deadline == pytest.approx(10.0 + 150.0)
    moved_at = 10.0 + 30.0
    before = [g.vcores for t, g in halved.guarantees if t < moved_at]
    after = [g.vcores for t, g in halved.guarantees if t >= moved_at]
    assert before == [g.vcores for t, g in base.guarantees if t < moved_at]  # the same run until the move
    assert max(after) > max(before)
    assert halved.met_deadline is True


def _scaled(job: Job, factor: float) -> Job:
    data = job.model_dump(exclude_none=True)
    for s in data["stages"]:
        s["duration_s"] = s["duration_s"] * factor
    return parse_job(data)
