"""The dry run (Nomad's ``job plan``, Slurm's ``--test-only``): what would happen if a job were submitted now.

:func:`plan_job` takes a fork of the live ledger (``Ledger.fork()``: a deep copy, non-durable) and runs the
simulator's engine on it twice from the ledger's ``now`` (``sim.resume.ResumedSimulator``: the running apps
continued), once without the job and once with it submitted at ``now``, under the RM's own pipeline, share
calculator and AM ask policies, until every DAG job has ended or ``horizon_s`` of simulated time has passed.
The answer (:class:`PlanReport`): the queue the job would run in, where its AM container and its first
stage would be placed, its predicted start (its first task running) and finish, and the running apps it
would delay — those whose predicted finish is later with it than without it by more than ``DELAY_MIN_S``
(a NodeManager heartbeat: less is within the model's resolution). The ledger it is given is changed (it is
the fork); nothing else is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from am.jobspec import Job
from common.errors import BadRequest
from common.ids import AppId, NodeId
from rm.core.events import Event, Journal, PlanApplied
from rm.core.ledger import Ledger
from rm.core.queues import QueueConfigError, resolve_queue
from sim.config import SimConfig
from sim.policies import SimPolicy
from sim.resume import HOLD_FLOOR_S, RESUME_FLOOR_S, ResumedSimulator

HORIZON_S = 24 * 3600.0
DELAY_MIN_S = 1.0


@dataclass(frozen=True, slots=True)
class Placement:
    time: float
    node: NodeId
    stage: str  # "" for the AM container


@dataclass(frozen=True, slots=True)
class Delay:
    app_id: AppId
    name: str
    finish_without: float
    finish_with: float | None  # None: not finished within the horizon with the job

    @property
    def delay_s(self) -> float | None:
        return None if self.finish_with is None else self.finish_with - self.finish_without


@dataclass(slots=True)
class PlanReport:
    job: str
    queue: str
    user: str
    scheduler: str
    now: float
    status: str  # SUCCEEDED, FAILED, REFUSED, or UNFINISHED (not finished within the horizon)
    am: Placement | None = None
    first_stage: str = ""
    first_stage_placements: list[Placement] = field(default_factory=list)
    start: float | None = None  # its first task running
    finish: float | None = None
    delays: list[Delay] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    horizon_s: float = HORIZON_S
    simulated_s: float = 0.0
    deadline_s: float | None = None  # the job file's deadline_s: seconds after submission

    @property
    def duration_s(self) -> float | None:
        return None if self.finish is None else self.finish - self.now

    @property
    def deadline_feasible(self) -> bool | None:
        """None without a deadline; else whether the predicted finish is at or before submission + deadline_s
        (a job that does not finish within the horizon, or is refused, is not)."""
        if self.deadline_s is None:
            return None
        return self.duration_s is not None and self.status == "SUCCEEDED" and self.duration_s <= self.deadline_s

    def to_dict(self) -> dict[str, Any]:
        """The REST shape (``/ws/v1/shepherd/plan``): times in ms since the epoch, durations in seconds."""
        by_node: dict[str, int] = {}
        for p in self.first_stage_placements:
            by_node[p.node] = by_node.get(p.node, 0) + 1
        return {
            "job": self.job, "queue": self.queue, "user": self.user, "scheduler": self.scheduler,
            "planTime": _ms(self.now), "status": self.status,
            "amContainer": None if self.am is None else {"node": self.am.node, "time": _ms(self.am.time)},
            "firstStage": {
                "name": self.first_stage,
                "placements": [{"node": n, "tasks": k} for n, k in sorted(by_node.items())],
                "firstStartTime": _ms(self.first_stage_placements[0].time) if self.first_stage_placements
                else None,
            },
            "predictedStartTime": _ms(self.start), "predictedFinishTime": _ms(self.finish),
            "predictedDurationSec": _round(self.duration_s),
            "deadlineSec": self.deadline_s, "deadlineFeasible": self.deadline_feasible,
            "delays": [{"id": d.app_id, "name": d.name, "finishTimeWithout": _ms(d.finish_without),
                        "finishTimeWith": _ms(d.finish_with), "delaySec": _round(d.delay_s)} for d in self.delays],
            "notes": list(self.notes),
            "horizonSec": self.horizon_s, "simulatedSec": round(self.simulated_s, 3),
        }


class _Placements:
    """Hears applied plans: where one app's containers were placed, in order (its AM container's among them;
    its tasks' are where they start, ``ResumedSimulator.started``, since an AM may release a container)."""

    hears: frozenset[type] = frozenset({PlanApplied})

    def __init__(self, app_id: AppId) -> None:
        self.app_id = app_id
        self.placed: list[Placement] = []

    def on_event(self, event: Event, journal: Journal) -> None:
        if isinstance(event, PlanApplied):
            for p in event.applied:
                if p.app_id == self.app_id:
                    self.placed.append(Placement(event.now, p.node_id, "" if p.is_am else p.stage))


def check_job(ledger: Ledger, job: Job) -> str:
    """Refuse what a submission of ``job`` would be refused (its queue; a task no node could ever hold, by the
    submission's own check), as a ``BadRequest`` / ``InvalidResourceRequest``; returns the leaf queue's path."""
    try:
        queue = resolve_queue(ledger.queues, job.queue)
    except QueueConfigError as exc:
        raise BadRequest(str(exc)) from exc
    if not queue.running:
        raise BadRequest(f"queue {queue.path} is STOPPED")
    ledger.check_tasks((s.name, s.capability) for s in job.stages)
    return str(queue.path)


def plan_job(fork: Ledger, job: Job, policy: SimPolicy, *, now: float, user: str,
             config: SimConfig | None = None, horizon_s: float = HORIZON_S) -> PlanReport:
    """See the module docstring; ``fork`` is used up (the run without the job takes a fork of it)."""
    queue = check_job(fork, job)
    job = job.model_copy(update={"user": user, "queue": queue})
    without = ResumedSimulator(fork.fork(), policy, now=now, config=config)
    sim = ResumedSimulator(fork, policy, now=now, config=config)
    app_id = sim.add_job(job, now)
    placements = _Placements(app_id)
    fork.subscribe(placements)
    until = now + horizon_s
    reached = sim.run_until(until)
    without.run_until(until)
    record = sim.record_of(app_id)
    assert record is not None  # it arrived first thing
    app = fork.apps.get(app_id)
    report = PlanReport(job=job.id, queue=app.queue if app is not None else queue, user=user,
                        scheduler=policy.name, now=now, status=record.status if record.finish is not None
                        or record.status == "REFUSED" else "UNFINISHED", start=record.first_task_start,
                        finish=record.finish, horizon_s=horizon_s, simulated_s=reached - now,
                        deadline_s=job.deadline_s)
    first = job.topological_order()[0].name
    report.first_stage = first
    report.am = next((p for p in placements.placed if not p.stage), None)
    report.first_stage_placements = [Placement(s.time, s.node, s.stage) for s in sim.started
                                     if s.app_id == app_id and s.stage == first]
    for aid in sim.resumed:
        before, after = without.record_of(aid), sim.record_of(aid)
        if before is None or after is None or before.finish is None:
            continue
        if after.finish is None or after.finish - before.finish > DELAY_MIN_S:
            report.delays.append(Delay(aid, fork.apps[aid].name, before.finish, after.finish))
    report.notes = _notes(sim, report)
    return report


def _notes(sim: ResumedSimulator, report: PlanReport) -> list[str]:
    notes: list[str] = []
    if sim.resumed:
        notes.append(f"{len(sim.resumed)} running DAG app(s) continued from their progress (running tasks end "
                     f"after their stage's task estimate, at least {RESUME_FLOOR_S:g} s from now)")
    for h in sim.held:
        notes.append(f"{h.app_id} ({h.name}) has no job spec: assumed to keep its {h.containers} container(s) "
                     f"for as long again as it has held them (at least {HOLD_FLOOR_S:g} s) and to ask for "
                     f"nothing more; it ends in {h.until - report.now:.0f} s")
    for aid in sim.left_out:
        notes.append(f"{aid} has no job spec and waits for its AM container: left out")
    if report.status == "UNFINISHED":
        notes.append(f"the job does not finish within the {report.horizon_s:g} s horizon")
    if report.status == "REFUSED":
        notes.append("the scheduler's admission rule would refuse the job")
    if sim.ledger.reservations.reservations:
        notes.append("reservations are read as they stand now (the plan is not rolled forward)")
    return notes


def _ms(t: float | None) -> int | None:
    return None if t is None else round(t * 1000)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
