"""Carbyne's altruistic asks: keep the job's completion time under its fair share, yield the rest.

Given the job's current fair share A_k (sent by the RM in every allocate response) and its remaining
DAG with duration estimates, the policy

1. packs the remaining DAG forward within A_k to find the completion time T_k it is entitled to;
2. packs it backwards from T_k, so each task starts as late as it can without moving T_k;
3. asks DEFAULT for the runnable tasks whose latest start falls within ``horizon_s`` (they must start
   now), and ALTRUISTIC for every other runnable task — those run only on capacity that other jobs
   yielded (the RM's leftover), and otherwise wait without slowing the job.

With probability ``1 - p_altruism`` at each call it behaves greedily (everything DEFAULT), so
``p_altruism = 0`` is plain DRF. A job whose share cannot even hold one of its tasks, or that has no
share yet, asks everything DEFAULT. Pure: time and randomness come in as arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from random import Random
from typing import ClassVar

from am.dag_state import DagState
from am.policies.api import AskDecision, AskPolicy, AskType, request_id
from am.policies.greedy import GreedyAsks
from am.policies.timepack import INFINITE, StagePlan, must_start_now, pack_forward, pack_reverse
from rm.core.resources import Resources


@dataclass(frozen=True, slots=True)
class AltruismOutcome:
    """What the last call decided, for logs and tests."""

    completion_s: float  # T_k from now
    default: dict[str, int]
    altruistic: dict[str, int]
    yielded: bool


@dataclass
class CarbyneAsks:
    p_altruism: float = 1.0
    horizon_s: float = 1.0
    seed: int = 0
    name: ClassVar[str] = "carbyne"
    last: AltruismOutcome | None = field(default=None, init=False)
    _rng: Random = field(init=False, repr=False)
    # the last packing, reused while the job's task states and its share stay the same: until then the
    # schedule only slides in time, so latest starts are kept on an absolute clock
    _memo_key: object = field(default=None, init=False, repr=False)
    _memo_at: float = field(default=0.0, init=False, repr=False)
    _memo: tuple[float, dict[str, list[float]]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.p_altruism <= 1.0:
            raise ValueError("p_altruism must be between 0 and 1")
        if self.horizon_s < 0:
            raise ValueError("horizon_s must not be negative")
        self._rng = Random(self.seed)

    def asks(self, dag: DagState, fair_share: Resources, now: float) -> list[AskDecision]:
        runnable = {s.name: len(dag.runnable(s.name)) for s in dag.stages}
        if not any(runnable.values()):
            self.last = None
            return []
        yield_now = self.p_altruism > 0 and self._rng.random() < self.p_altruism
        plans = stage_plans(dag, now)
        if not yield_now or fair_share.is_zero():
            self.last = AltruismOutcome(INFINITE, runnable, {}, yielded=False)
            return GreedyAsks().asks(dag, fair_share, now)
        key = (fair_share, tuple((p.name, p.pending, len(p.running_remaining_s), p.duration_s) for p in plans),
               tuple(sorted(runnable.items())))
        if key == self._memo_key and self._memo is not None:
            shift = now - self._memo_at
            makespan = self._memo[0] - shift
            latest = {name: [t - shift for t in starts] for name, starts in self._memo[1].items()}
        else:
            forward = pack_forward(plans, fair_share)
            makespan = forward.makespan
            if makespan == INFINITE:  # the share cannot run the job: take what it can get
                self._memo_key = None
                self.last = AltruismOutcome(INFINITE, runnable, {}, yielded=False)
                return GreedyAsks().asks(dag, fair_share, now)
            latest = pack_reverse(plans, fair_share, makespan)
            self._memo_key, self._memo_at, self._memo = key, now, (makespan, latest)
        default = must_start_now(latest, runnable, self.horizon_s)
        altruistic = {name: runnable[name] - default.get(name, 0) for name in runnable}
        self.last = AltruismOutcome(makespan, default, altruistic, yielded=True)
        remaining = dag.remaining_work_s(now)
        out: list[AskDecision] = []
        for stage in dag.stages:
            index = dag.stage_index(stage.name)
            for kind, count in (("DEFAULT", default.get(stage.name, 0)),
                                ("ALTRUISTIC", altruistic.get(stage.name, 0))):
                if count <= 0:
                    continue
                ask_type: AskType = "DEFAULT" if kind == "DEFAULT" else "ALTRUISTIC"
                out.append(AskDecision(
                    allocation_request_id=request_id(index, ask_type), stage=stage.name,
                    priority=dag.depth(stage.name), capability=stage.capability, num_containers=count,
                    ask_type=ask_type, remaining_work_s=remaining,
                ))
        return out


def stage_plans(dag: DagState, now: float) -> list[StagePlan]:
    """The job's unfinished work per stage, as the time packer wants it."""
    plans = []
    for stage in dag.stages:
        running = tuple(dag.remaining_task_s(t, now) for t in dag.tasks(stage.name) if t.status == "RUNNING")
        pending = sum(1 for t in dag.tasks(stage.name) if t.status in ("WAITING", "RUNNABLE"))
        if not pending and not running:
            continue
        plans.append(StagePlan(
            name=stage.name, demand=stage.capability, duration_s=max(dag.estimate_s(stage.name), 1e-3),
            pending=pending, running_remaining_s=running, parents=tuple(stage.parents),
            priority=dag.depth(stage.name),
        ))
    names = {p.name for p in plans}
    return [StagePlan(p.name, p.demand, p.duration_s, p.pending, p.running_remaining_s,
                      tuple(x for x in p.parents if x in names), p.priority) for p in plans]


_: type[AskPolicy] = CarbyneAsks
