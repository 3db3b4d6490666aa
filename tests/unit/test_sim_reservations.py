"""Morpheus in the simulator: reserved jobs get their capacity, lent capacity is preempted back, DRA stretches
a slow run when the plan has room, and inference turns k runs of a recurring job into a reservation."""

from __future__ import annotations

from typing import Any

import pytest

from am.jobspec import Job, parse_job
from common.resources import Resources
from rm.core.reservation.dra import DraConfig
from rm.core.reservation.inference import DatasetAccess, InferenceConfig
from rm.core.reservation.requests import ReservationDefinition, ReservationRequest, reservation_id
from sim.engine import CLUSTER_TS, SimConfig, Simulator, uniform_nodes
from sim.metrics import RunResult
from sim.policies import make_policy
from sim.reservations import InferenceMode, MorpheusConfig, SimReservation

UNIT = Resources.of(memory_mb=1024, vcores=1)
RID = reservation_id(CLUSTER_TS, 1)
OTHER = reservation_id(CLUSTER_TS, 2)


def job(job_id: str, arrival: float, tasks: int, seconds: float, **extra: Any) -> Job:
    return parse_job({"id": job_id, "arrival_s": arrival, **extra,
                      "stages": [{"name": "s", "tasks": tasks, "duration_s": seconds, "memory_mb": 1024}]})


def block(containers: int, start_s: int, end_s: int, name: str = "prod") -> ReservationDefinition:
    """``containers`` containers held over exactly [start, end): the plan has one way to place it."""
    length = (end_s - start_s) * 1000
    return ReservationDefinition(start_s * 1000, end_s * 1000, (ReservationRequest(UNIT, containers, length,
                                                                                   containers),), name=name)


def simulate(jobs: list[Job], policy: str = "morpheus", nodes: int = 2, **morpheus: Any) -> tuple[Simulator, RunResult]:
    sim = Simulator(jobs, uniform_nodes(nodes, 16384, 8), make_policy(policy),
                    SimConfig(seed=1, record_decisions=True, morpheus=MorpheusConfig(**morpheus)))
    return sim, sim.run()


def test_a_reserved_job_gets_its_capacity_while_ad_hoc_jobs_fill_the_rest() -> None:
    # 16 vcores; the reservation holds 9 (the AM and 8 tasks) for ten minutes; two ad-hoc jobs want far more
    w = [job("prod", 0.0, 8, 100.0, reservation_id=RID), job("adhoc1", 0.0, 40, 100.0),
         job("adhoc2", 0.0, 40, 100.0)]
    sim, result = simulate(w, reservations=(SimReservation(RID, block(9, 0, 600)),))
    first_wave = [d for d in sim.decisions if d[0] < 5.0 and d[2] == "s"]
    assert sum(1 for d in first_wave if d[1] == "prod") == 8  # every task of the reserved job at once
    assert sum(1 for d in first_wave if d[1] != "prod") == 16 - 3 - 8  # the rest (less three AMs) is lent
    assert result.jcts()["prod"] < 110.0  # one wave: as on an empty cluster
    (prod,) = [j for j in result.jobs if j.job_id == "prod"]
    assert prod.reservation == RID
    assert result.reservations is not None
    assert result.reservations["attached"] == 1
    _, drf = simulate(w, policy="drf")
    assert drf.jcts()["prod"] > 1.5 * result.jcts()["prod"]  # sharing alone does not give it that


def test_preemption_reclaims_capacity_lent_to_ad_hoc_jobs() -> None:
    # an ad-hoc job fills the whole cluster with long tasks before the reserved job arrives
    w = [job("adhoc", 0.0, 60, 300.0), job("prod", 30.0, 8, 100.0, reservation_id=RID)]
    sim, result = simulate(w, reservations=(SimReservation(RID, block(9, 0, 600)),))
    assert result.reservations is not None
    assert result.reservations["preempted"] == 9
    assert result.jcts()["prod"] < 110.0
    assert all(j.status == "SUCCEEDED" for j in result.jobs)  # the preempted tasks ran again
    assert result.task_completions == 60 + 8
    assert all(n.allocated.is_zero() for n in sim.ledger.nodes.values())
    _, drf = simulate(w, policy="drf")
    assert drf.jcts()["prod"] > 250.0  # without the reservation it waits for the ad-hoc tasks to end


def test_a_job_naming_an_unknown_reservation_runs_without_one() -> None:
    _, result = simulate([job("prod", 0.0, 4, 10.0, reservation_id=OTHER)])
    assert result.reservations is not None
    assert result.reservations["unknown"] == 1
    assert result.jobs[0].reservation is None
    assert result.jobs[0].status == "SUCCEEDED"


def slow_run(**morpheus: Any) -> tuple[float, dict[str, Any]]:
    # reserved: 5 containers (the AM and 4 tasks) for five minutes, but the job has 12 tasks of 200 s;
    # an ad-hoc job keeps every other container busy
    w = [job("adhoc", 0.0, 200, 200.0), job("prod", 10.0, 12, 200.0, reservation_id=RID)]
    _, result = simulate(w, **morpheus)
    assert result.reservations is not None
    return result.jcts()["prod"], result.reservations


def test_dra_extends_a_slow_run_when_the_plan_has_room() -> None:
    plain, stats_off = slow_run(reservations=(SimReservation(RID, block(5, 0, 300)),), dra=None)
    stretched, stats = slow_run(reservations=(SimReservation(RID, block(5, 0, 300)),))
    assert stats_off["dra_rounds"] == 0
    assert stats["dra_extended"] > 0
    assert stats["dra_container_steps"] > 0
    assert stretched < 0.75 * plain


def test_dra_cannot_extend_when_the_plan_is_full() -> None:
    full = (SimReservation(RID, block(5, 0, 300)), SimReservation(OTHER, block(11, 0, 900, "other")))
    plain, _ = slow_run(reservations=full, dra=None)
    blocked, stats = slow_run(reservations=full, dra=DraConfig())
    assert stats["dra_extended"] == 0
    assert stats["dra_no_room"] > 0
    assert blocked == pytest.approx(plain)


def hourly_etl(hours: int) -> list[Job]:
    """An hourly job reading ``raw`` (landed at :01) and writing ``etl-out``, read by a report at :40."""
    jobs = []
    for h in range(hours):
        t = h * 3600.0
        jobs.append(job(f"etl-{h}", t + 120.0 + 7 * (h % 3), 20, 90.0 + 5 * (h % 2), name="etl",
                        inputs=["raw"], outputs=["etl-out"]))
        jobs.append(job(f"report-{h}", t + 2400.0, 1, 5.0, inputs=["etl-out"]))
    return jobs


def test_inference_reserves_for_a_recurring_job_after_k_runs() -> None:
    ingress = tuple(DatasetAccess("raw", "write", h * 3600.0 + 60.0, "ingest") for h in range(6))
    mode = InferenceMode(after_runs=3, config=InferenceConfig(min_runs=2), accesses=ingress)
    _, result = simulate(hourly_etl(6), nodes=4, inference=mode)
    stats = result.reservations
    assert stats is not None
    inferred = stats["inferred"]["etl"]
    assert inferred["period_s"] == 3600
    assert inferred["runs"] == 3
    assert 60.0 <= inferred["earliest_start_s"] <= 120.0  # the input lands at :01
    assert inferred["deadline_s"] == pytest.approx(2400.0, abs=5.0)  # the report reads it at :40
    assert max(inferred["skyline"]) >= 15  # about the 20 tasks (and the AM) of one wave
    ran_in = {j.job_id: j.reservation for j in result.jobs if j.job_id.startswith("etl")}
    assert [ran_in[f"etl-{h}"] for h in range(3)] == [None, None, None]
    assert ran_in["etl-3"] == ran_in["etl-4"] == ran_in["etl-5"] == inferred["reservation"]
    assert all(j.status == "SUCCEEDED" for j in result.jobs)


def test_inference_can_only_record_runs_for_a_later_simulation() -> None:
    ingress = tuple(DatasetAccess("raw", "write", h * 3600.0 + 60.0, "ingest") for h in range(6))
    sim, result = simulate(hourly_etl(3), nodes=4, inference=InferenceMode(accesses=ingress, sign_off=False))
    assert result.reservations is not None
    assert result.reservations["inferred"] == {}
    assert sim.morpheus is not None
    runs, accesses = sim.morpheus.history()
    assert [r.job for r in runs] == ["etl"] * 3
    assert all(r.skyline for r in runs)
    assert {a.path for a in accesses if a.kind == "read"} == {"raw", "etl-out"}
    later = [j.model_copy(update={"arrival_s": j.arrival_s + 3 * 3600}) for j in hourly_etl(2)]
    mode = InferenceMode(after_runs=3, config=InferenceConfig(min_runs=2), history=tuple(runs),
                         accesses=tuple(accesses) + ingress)
    _, again = simulate(later, nodes=4, inference=mode)
    assert again.reservations is not None
    assert "etl" in again.reservations["inferred"]
    assert all(j.reservation is not None for j in again.jobs if j.job_id.startswith("etl"))


def test_an_inferred_reservation_replaces_the_users_own() -> None:
    """Runs name the user's hourly reservation; after k runs the proposal takes its place (same id)."""
    user = ReservationDefinition(60_000, 1_800_000, (ReservationRequest(UNIT, 30, 1_500_000, 30),), name="etl",
                                 recurrence_ms=3_600_000)
    ingress = tuple(DatasetAccess("raw", "write", h * 3600.0 + 60.0, "ingest") for h in range(6))
    jobs = [j.model_copy(update={"reservation_id": RID}) if j.name == "etl" else j for j in hourly_etl(6)]
    mode = InferenceMode(after_runs=3, config=InferenceConfig(min_runs=2), accesses=ingress)
    sim, result = simulate(jobs, nodes=4, reservations=(SimReservation(RID, user),), inference=mode)
    assert result.reservations is not None
    assert result.reservations["inferred"]["etl"]["reservation"] == RID
    assert sim.morpheus is not None
    assert sim.morpheus.system.reservations[RID].definition.interpreter == "R_ORDER_NO_GAP"
    assert all(j.reservation == RID for j in result.jobs if j.job_id.startswith("etl"))
