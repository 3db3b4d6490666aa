"""Deadlines scheduled on the ledger (MRM): EDF meets a feasible set FIFO misses; the deadline stage keeps a
bought deadline while a greedy best-effort job fills the cluster; infeasible deadlines are refused."""

from __future__ import annotations

from typing import Any

import pytest

from am.jobspec import Job, parse_job
from common.errors import AdmissionRefused
from common.resources import Resources
from common.terms import AppTerms
from rm.core.harness import Harness
from rm.core.policies.registry import make_admission
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.policies import make_policy


def job(job_id: str, arrival: float, tasks: int, seconds: float, deadline_s: float | None = None) -> Job:
    spec: dict[str, Any] = {"id": job_id, "arrival_s": arrival,
                            "stages": [{"name": "s", "tasks": tasks, "duration_s": seconds, "memory_mb": 1024}]}
    if deadline_s is not None:
        spec["deadline_s"] = deadline_s
    return parse_job(spec)


def finish(policy: str, jobs: list[Job]) -> dict[str, tuple[str, float]]:
    sim = Simulator(jobs, uniform_nodes(1, 5 * 1024, 5), make_policy(policy), SimConfig(seed=1))
    result = sim.run()
    return {r.job_id: (r.status, r.finish if r.finish is not None else float("inf")) for r in result.jobs}


def test_edf_meets_a_feasible_set_that_fifo_misses() -> None:
    # one node of 5 containers: AM + 4 task slots; a long job first, then a short one due soon
    jobs = [job("long", 0.0, 4, 100.0, deadline_s=2000.0), job("short", 5.0, 4, 10.0, deadline_s=80.0)]
    fifo = finish("fifo", jobs)
    edf = finish("edf", jobs)
    assert fifo["short"][1] > 5.0 + 80.0  # behind the long job's tasks
    assert edf["short"][0] == "SUCCEEDED"
    assert edf["short"][1] <= 5.0 + 80.0
    assert edf["long"][1] <= 2000.0


def test_a_deadline_before_the_earliest_finish_is_refused_and_creates_no_app() -> None:
    h = Harness(admission=make_admission("deadlines"))
    h.node("n1", vcores=8, memory_mb=8192)
    spec = ('{"id": "j", "stages": [{"name": "s", "tasks": 4, "duration_s": 10, "memory_mb": 1024}]}')
    before = set(h.ledger.apps)
    with pytest.raises(AdmissionRefused) as refused:
        h.ledger.submit(_spec(h, spec, deadline=5.0), 0.0)
    assert refused.value.status == 409
    assert float(refused.value.quote["earliestFinish"]) >= 10.0 * (1 + 1.96 * 0.5)  # the critical path, PI bound
    assert set(h.ledger.apps) == before
    app = h.ledger.submit(_spec(h, spec, deadline=float(refused.value.quote["earliestFinish"])), 0.0)
    assert app.terms.claim is not None
    assert app.terms.claim.method == "declared"


def _spec(h: Harness, job_json: str, *, deadline: float) -> Any:
    from rm.core.state_types import SubmitSpec

    aid = h.ledger.new_application(0.0)
    return SubmitSpec(app_id=aid, name="j", am_launch={"commands": ["am"]}, job_spec_json=job_json,
                      terms=AppTerms(deadline=deadline))


def test_the_deadline_stage_keeps_a_bought_deadline_while_a_greedy_job_fills_the_cluster() -> None:
    hog = parse_job({"id": "hog", "arrival_s": 0.0, "am_policy": "greedy",
                     "stages": [{"name": "s", "tasks": 400, "duration_s": 100.0, "memory_mb": 1024}]})
    jobs = [hog, job("dl", 20.0, 20, 10.0, deadline_s=80.0)]
    nodes = uniform_nodes(1, 21 * 1024, 21)
    results = {}
    for policy in ("drf", "mrm"):
        sim = Simulator(jobs, nodes, make_policy(policy), SimConfig(seed=1))
        out = {r.job_id: r for r in sim.run().jobs}
        results[policy] = (out["dl"].finish, sim.ledger.preempted_by_reason.get("DEADLINE_CAPACITY_LENT", 0))
    assert results["drf"][0] is not None
    assert results["drf"][0] > 20.0 + 80.0  # behind the hog's 100 s tasks
    assert results["mrm"][0] is not None
    assert results["mrm"][0] <= 20.0 + 80.0
    assert results["mrm"][1] > 0  # taken back from beyond the hog's fair share


def test_completed_tasks_that_ran_long_raise_the_claim_and_later_quotes_see_it() -> None:
    from common.ids import AppId, QueuePath
    from rm.core.deadlines.estimate import JobFeatures, PhaseShape
    from rm.core.deadlines.features import Declared
    from rm.core.deadlines.system import DeadlineConfig, DeadlineSystem

    system = DeadlineSystem(DeadlineConfig(margin_s=0.0))
    queue = QueuePath("root.default")
    system.set_capacity(queue, Resources.of(memory_mb=10 * 1024, vcores=10))
    job = JobFeatures("etl", (PhaseShape(8, 1.0),))
    declared = Declared((80.0,), (10.0,))  # 8 tasks of 10 s, one unit each
    terms = system.admit(AppId("application_1_0001"), queue, AppTerms(deadline=200.0), job, declared, 0.0)
    assert terms.claim is not None
    claimed = system.remaining_work(AppId("application_1_0001"))
    before = system.quote(job, declared, queue, 0.0).price.curve[0].price
    unit = Resources.of(memory_mb=1024, vcores=1)
    spans = [(1, 0.0, 60.0, unit), (1, 0.0, 62.0, unit)]  # two tasks took 60 s: 8 of them need ~480 unit-s
    assert system.refresh(AppId("application_1_0001"), spans)
    system.container_done(AppId("application_1_0001"), 122.0)
    system.view(62.0)
    assert system.remaining_work(AppId("application_1_0001")) > claimed
    assert system.remaining_work(AppId("application_1_0001")) == pytest.approx(8 * 61.0 - 122.0)
    assert system.quote(job, declared, queue, 62.0).price.curve[0].price > before  # it takes more slack now


def test_a_reservation_that_would_break_an_admitted_deadline_is_refused_and_changes_nothing() -> None:
    from rm.core.deadlines.book import no_fixed_load
    from rm.core.reservation.requests import ReservationDefinition, ReservationRequest
    from rm.core.reservation.system import ReservationRejected
    from rm.core.state_types import SubmitSpec

    minute = 60_000
    h = Harness(admission=make_admission("deadlines"))
    h.node("n1", vcores=10, memory_mb=10 * 1024)
    now = 1_800_000_000.0
    # 8 tasks of 100 s, one unit each, due in 10 minutes: the claim (PI bound ~1584 unit-s) needs the queue's
    # 8 claimable units for about 200 s before its deadline
    spec = '{"id": "j", "stages": [{"name": "s", "tasks": 8, "duration_s": 100, "memory_mb": 1024}]}'
    aid = h.ledger.new_application(now)
    h.ledger.submit(SubmitSpec(app_id=aid, name="j", am_launch={"commands": ["am"]}, job_spec_json=spec,
                               terms=AppTerms(deadline=now + 600)), now)
    plan = h.ledger.reservation_plan()

    def six_cores(start_min: int, end_min: int) -> ReservationDefinition:
        core = Resources.of(memory_mb=1024, vcores=1)
        return ReservationDefinition(int(now * 1000) + start_min * minute, int(now * 1000) + end_min * minute,
                                     (ReservationRequest(core, 6, end_min * minute - start_min * minute, 6),),
                                     "R_ALL", name="r")

    rid = plan.new_reservation_id()
    with pytest.raises(ReservationRejected, match="admitted deadlines"):  # over the claim's last minutes
        h.ledger.submit_reservation(rid, "default", six_cores(0, 10), user="u", now=now)
    assert rid not in plan.reservations
    assert all(book.fits_with(no_fixed_load) for book in h.ledger.deadline_system().books.values())
    later = plan.new_reservation_id()
    h.ledger.submit_reservation(later, "default", six_cores(11, 20), user="u", now=now)  # after the deadline
    assert later in plan.reservations
