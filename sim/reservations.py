"""Morpheus in the simulator: the reservation plan on the virtual clock, jobs inside reservations, dynamic
reprovisioning, and SLO inference from the simulated runs.

The engine turns this on when the policy's pipeline has a ``ReservationStage`` (``morpheus``). It does what
the live RM's glue does (``rm/core/reservations_glue.py``, ``rm/service/server.py``):

* one ``ReservationSystem``; every leaf queue's plan has capacity = the simulated cluster × the queue's
  absolute capacity;
* the reservations of ``MorpheusConfig.reservations`` are submitted at their time; a job that names one
  (``Job.reservation_id``) is attached to it when it arrives and detached when it ends;
* at every plan step boundary (a ``PlanTick``) the plan rolls; every ``dra.period_s`` DRA runs over the
  apps' used + pending demand (``dra.demands_from_snapshot``);
* each cycle's snapshot carries ``system.view(now)``; the engine applies the stage's ``Plan.preemptions``.

**Inference mode** (``MorpheusConfig.inference``): every finished run of a named job becomes a
``RunRecord`` — its skyline is built from the simulated containers it held (allocation to release, the AM
container included), per plan step, in containers of the job's main task size — and every finished job's
declared inputs and outputs become ``DatasetAccess``es (read at its start, written at its end), next to
the external ingress/egress accesses the config gives. Once a job name has ``after_runs`` finished runs
(history given up front counts), the real ``inference.propose`` runs over the accesses seen so far; an
actionable proposal is signed off: ``to_definition(now=)`` is submitted as a periodic reservation and
later instances of the job run inside it. With ``replace`` the proposal instead replaces the reservation the
job already runs in (one its runs named, or one carrying the job's name), by a try-and-swap update — the
user's manual provisioning gives way to the inferred one, or stays when the plan has no room for it. A
proposal that is not actionable is tried again after the next run; one the plan rejects after ``after_runs``
more.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from am.jobspec import Job
from common.errors import BadRequest
from common.ids import QueuePath
from common.resources import Resources
from rm.core.model import ClusterSnapshot, QueueView
from rm.core.reservation import dra
from rm.core.reservation.inference import (
    DatasetAccess,
    InferenceConfig,
    RunRecord,
    SloProposal,
    accesses_from_runs,
    propose,
    skyline_from_containers,
)
from rm.core.reservation.requests import ReservationDefinition, ReservationId
from rm.core.reservation.system import ReservationConfig, ReservationSystem
from rm.core.reservation.view import EMPTY_VIEW, ReservationView

Usage = tuple[float, float, Resources]  # (allocated, released, resource) of one container


@dataclass(frozen=True, slots=True)
class SimReservation:
    """A reservation submitted to the plan at simulated time ``at`` (the first plan step at or after it)."""

    reservation_id: str
    definition: ReservationDefinition
    queue: str = "default"
    user: str = "sim"
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class InferenceMode:
    after_runs: int = 3  # k: finished runs of a job name before its SLO is inferred
    config: InferenceConfig = field(default_factory=InferenceConfig)
    history: tuple[RunRecord, ...] = ()  # runs from before the simulation (they count towards k)
    accesses: tuple[DatasetAccess, ...] = ()  # ingress/egress by no simulated job (visible once in the past)
    sign_off: bool = True  # False: only record runs (e.g. to build a history)
    replace: bool = True  # the proposal replaces the job's own reservation (its runs named it / it has the name)
    solver: Any = None  # a PuLP solver for the skyline LP; None: CBC

    def validate(self) -> None:
        if self.after_runs < 1:
            raise ValueError("inference needs at least one run (after_runs >= 1)")


@dataclass(frozen=True, slots=True)
class MorpheusConfig:
    reservation: ReservationConfig = field(default_factory=ReservationConfig)
    dra: dra.DraConfig | None = field(default_factory=dra.DraConfig)  # None: no dynamic reprovisioning
    reservations: tuple[SimReservation, ...] = ()
    inference: InferenceMode | None = None

    def validate(self) -> None:
        self.reservation.validate()
        if self.dra is not None:
            self.dra.validate()
        if self.inference is not None:
            self.inference.validate()


@dataclass(slots=True)
class ReservationStats:
    submitted: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)  # reservation id -> why
    attached: int = 0  # jobs that ran inside a reservation
    unknown: int = 0  # jobs that named a reservation the plan does not have (they run without one)
    preempted: int = 0  # containers preempted for reservations
    dra_rounds: int = 0
    dra_extended: int = 0  # decisions that granted extra containers (fully or partly)
    dra_no_room: int = 0  # decisions that wanted extra but the plan had none
    dra_container_steps: float = 0.0  # extra containers × DRA periods granted
    missed_instances: list[tuple[str, int]] = field(default_factory=list)
    inferred: dict[str, dict[str, Any]] = field(default_factory=dict)  # job name -> the signed-off proposal
    not_actionable: dict[str, list[str]] = field(default_factory=dict)  # job name -> reasons, last attempt

    def to_dict(self) -> dict[str, Any]:
        return {
            "submitted": len(self.submitted), "rejected": dict(self.rejected), "attached": self.attached,
            "unknown": self.unknown, "preempted": self.preempted, "dra_rounds": self.dra_rounds,
            "dra_extended": self.dra_extended, "dra_no_room": self.dra_no_room,
            "dra_container_steps": round(self.dra_container_steps, 3),
            "missed_instances": [list(m) for m in self.missed_instances],
            "inferred": self.inferred, "not_actionable": self.not_actionable,
        }


def main_unit(job: Job) -> Resources:
    """The container size a job's skyline is counted in: that of its stage with the most task-seconds."""
    return max(job.stages, key=lambda s: s.tasks * s.estimated_task_s).capability


class SimReservations:
    """The reservation side of one simulation run (see the module docstring)."""

    def __init__(self, config: MorpheusConfig, capacity: Resources, queues: Mapping[QueuePath, QueueView],
                 cluster_ts: int) -> None:
        config.validate()
        self.config = config
        self.system = ReservationSystem(config.reservation, cluster_ts=cluster_ts)
        for path, q in sorted(queues.items()):
            if q.is_leaf:
                self.system.set_capacity(path, Resources({r: int(v * q.abs_capacity)
                                                          for r, v in capacity.amounts.items()}))
        self.step_s = config.reservation.step_s
        self.stats = ReservationStats()
        self._pending = sorted(config.reservations, key=lambda r: r.at)
        self._rolled = -1
        self._dra_at = -math.inf
        mode = config.inference
        self.runs: dict[str, list[RunRecord]] = {}  # finished runs by job name
        self.accesses: list[DatasetAccess] = []
        self.inferred: dict[str, ReservationId] = {}
        self.proposals: dict[str, SloProposal] = {}
        self._named: dict[str, set[str]] = {}  # job name -> reservations its runs named
        self._next_try: dict[str, int] = {}  # job name -> runs needed before the next inference attempt
        self._started = False
        if mode is not None:
            for r in mode.history:
                self.runs.setdefault(r.job, []).append(r)
            self.accesses = sorted([*mode.accesses, *accesses_from_runs(mode.history)],
                                   key=lambda a: (a.time, a.path, a.kind, a.app_id))

    # ------------------------------------------------------------------------------ time

    def tick(self, now: float, snapshot: Callable[[], ClusterSnapshot]) -> None:
        """A plan step boundary: due submissions, history-based inference (once), roll, DRA when due."""
        while self._pending and self._pending[0].at <= now + 1e-9:
            r = self._pending.pop(0)
            self._submit(r.reservation_id, r.queue, r.definition, r.user, now)
        if not self._started:
            self._started = True
            if self.config.inference is not None:  # jobs that already hold a reservation first: theirs shrink
                for key in sorted(self.runs, key=lambda k: (not self._held(k), k)):
                    self._maybe_infer(key, now)
        step = int(now // self.step_s)
        if step != self._rolled and self.system.reservations:
            self._rolled = step
            report = self.system.roll(now)
            self.stats.missed_instances.extend((str(rid), k) for rid, k in report.missed)
        cfg = self.config.dra
        if cfg is not None and now - self._dra_at >= cfg.period_s - 1e-9 and self.system.app_reservation:
            self._dra_at = now
            self._reprovision(now, snapshot(), cfg)

    def _reprovision(self, now: float, snap: ClusterSnapshot, cfg: dra.DraConfig) -> None:
        decisions = dra.evaluate(self.system, dra.demands_from_snapshot(snap, self.system), now=now, config=cfg)
        self.stats.dra_rounds += 1
        for d in decisions.decisions:
            if d.granted:
                self.stats.dra_extended += 1
                self.stats.dra_container_steps += d.granted
            elif d.outcome == dra.NO_ROOM:
                self.stats.dra_no_room += 1

    def view(self, now: float) -> ReservationView:
        return self.system.view(now) if self.system.reservations else EMPTY_VIEW

    def _submit(self, rid: str, queue: str, definition: ReservationDefinition, user: str, now: float) -> bool:
        try:
            self.system.submit(rid, queue, definition, user=user, now=now)
        except BadRequest as exc:
            self.stats.rejected[rid] = str(exc)
            return False
        self.stats.submitted.append(rid)
        return True

    # ------------------------------------------------------------------------------ apps

    def choose(self, job: Job) -> str | None:
        """The reservation the arriving job runs in (its inferred one, else the one it names), or None;
        the ledger attaches the app to it when the job is submitted."""
        key = job.key
        if job.reservation_id and key not in self.inferred:
            self._named.setdefault(key, set()).add(job.reservation_id)
        rid = self.inferred.get(key) or job.reservation_id
        if rid is None:
            return None
        if rid not in self.system.reservations:
            self.stats.unknown += 1
            return None
        self.stats.attached += 1
        return rid

    def tracks(self, job: Job) -> bool:
        """Whether the job's container usage is needed (inference: runs of named jobs, dataset accesses)."""
        return self.config.inference is not None and bool(job.name or job.inputs or job.outputs)

    def finished(self, job: Job, app_id: str, *, submit: float, finish: float, usage: Iterable[Usage],
                 succeeded: bool, queue: str, now: float) -> None:
        """The app ended (the ledger detached it): in inference mode record the run and maybe infer the job's
        SLO."""
        if not self.tracks(job):
            return
        held = list(usage)
        if not held:
            return
        start = min(u[0] for u in held)
        unit = main_unit(job)
        skyline = skyline_from_containers(held, start=start, step_s=self.step_s, unit=unit) if job.name else ()
        record = RunRecord(job=job.key, app_id=app_id, submit_time=submit, start_time=start, finish_time=finish,
                           skyline=skyline, unit=unit, queue=queue, user=job.user or "sim", inputs=job.inputs,
                           outputs=job.outputs, succeeded=succeeded)
        self.accesses.extend(accesses_from_runs([record]))
        if job.name:
            self.runs.setdefault(job.key, []).append(record)
            self._maybe_infer(job.key, now)

    # ------------------------------------------------------------------------------ inference

    def _maybe_infer(self, key: str, now: float) -> None:
        mode = self.config.inference
        if mode is None or not mode.sign_off or key in self.inferred:
            return
        runs = self.runs.get(key, [])
        if len(runs) < max(mode.after_runs, self._next_try.get(key, 0)):
            return
        paths = {p for r in runs for p in (*r.inputs, *r.outputs)}
        seen = [a for a in self.accesses if a.time <= now and a.path in paths]
        proposal = propose(key, runs, seen, mode.config, solver=mode.solver)
        if proposal is None or not proposal.actionable:
            why = list(proposal.reasons) if proposal is not None else ["no period in the submissions"]
            self.stats.not_actionable[key] = why
            self._next_try[key] = len(runs) + 1
            return
        definition = proposal.to_definition(now=now)
        held = self._held(key) if mode.replace else []
        if held:  # the user signs off: the proposal replaces the job's reservation if it fits (try-and-swap)
            rid = held[0]
            try:
                self.system.update(rid, definition, now=now)
            except BadRequest as exc:
                self.stats.rejected[f"{rid} (update)"] = str(exc)
                self._next_try[key] = len(runs) + mode.after_runs
                return
            self.stats.submitted.append(rid)
        else:
            rid = self.system.new_reservation_id()
            if not self._submit(rid, proposal.queue, definition, proposal.user or "sim", now):
                self._next_try[key] = len(runs) + mode.after_runs
                return
        self.inferred[key] = ReservationId(rid)
        self.proposals[key] = proposal
        self.stats.not_actionable.pop(key, None)
        self.stats.inferred[key] = {
            "reservation": rid, "at": now, "runs": proposal.runs, "period_s": proposal.period_s,
            "earliest_start_s": round(proposal.earliest_start_s, 3), "deadline_s": round(proposal.deadline_s, 3),
            "skyline": list(proposal.skyline), "alignment": proposal.alignment,
        }
        for old in held[1:]:
            self.system.delete(old)

    def _held(self, key: str) -> list[str]:
        """The reservations a job name runs in before its own inferred one: those its runs named (and no
        other uninferred name does), or that carry its name."""
        mine = {r for r in self._named.get(key, ()) if r in self.system.reservations and not self._shared(r, key)}
        taken = set(self.inferred.values())
        mine |= {rid for rid, res in self.system.reservations.items()
                 if res.definition.name == key and rid not in taken}
        return sorted(mine)

    def _shared(self, rid: str, key: str) -> bool:
        """Whether another job name still runs in reservation ``rid`` without an inferred one of its own."""
        return any(rid in named and other not in self.inferred for other, named in self._named.items()
                   if other != key)

    def history(self) -> tuple[list[RunRecord], list[DatasetAccess]]:
        """The runs recorded so far (named jobs) and every dataset access seen: a later run's ``history``."""
        runs = [r for key in sorted(self.runs) for r in self.runs[key]]
        return runs, sorted(self.accesses, key=lambda a: (a.time, a.path, a.kind, a.app_id))
