"""Carbyne's altruistic asks: keep the job's completion time under its fair share, yield the rest.

Given the job's current fair share A_k (sent by the RM in every allocate response) and its remaining
DAG with duration estimates, the policy

1. packs the remaining DAG forward within A_k to find the completion time T_k it is entitled to;
2. packs it backwards from T_k, so each task starts as late as it can without moving T_k;
3. asks DEFAULT for the runnable tasks whose latest start falls within ``horizon_s`` (they must start
   now), and ALTRUISTIC for every other runnable task — those run only on capacity that other jobs
   yielded (the RM's leftover), and otherwise wait without slowing the job.

At each scheduling event — the first call after the job's share, its task states or its runnable set
changed (an arrival or departure moves the share; a task finished, failed or became runnable) — it yields
with probability ``p_altruism`` and otherwise behaves greedily (everything DEFAULT) until the next event,
so ``p_altruism = 0`` is plain DRF. With ``floor`` > 0 a yielding job still asks DEFAULT for runnable tasks,
most urgent first, until what it runs and asks DEFAULT reaches ``floor`` times its share in some resource
(the last task may go past it, so a task larger than that fraction still runs): it never yields below that
fraction of its share (0, the paper's behaviour, lets it yield everything that can wait). A job with no
share yet asks everything DEFAULT. A job whose share is
non-zero but cannot hold one of its tasks (many jobs, large containers) is entitled to run its tasks only
part of the time: it plans as if time-sharing a share stretched by the smallest factor f that holds its
largest task — capacity f·A_k, every duration ×f, so its completion time is what DRF's progress rate
1/f gives it — and yields what that plan does not need now. Pure: time and randomness come in as
arguments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from random import Random
from typing import ClassVar

from am.dag_state import DagState
from am.policies.api import AskDecision, AskPolicy, AskType, declared, request_id
from am.policies.greedy import GreedyAsks
from am.policies.timepack import INFINITE, StagePlan, must_start_now, pack_forward, pack_reverse
from common.resources import Resources
from common.terms import AmSignals


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
    floor: float = 0.0
    seed: int = 0
    name: ClassVar[str] = "carbyne"
    last: AltruismOutcome | None = field(default=None, init=False)
    _rng: Random = field(init=False, repr=False)
    # the last packing, reused while the job's task states and its share stay the same: until then the
    # schedule only slides in time, so latest starts are kept on an absolute clock
    _memo_key: object = field(default=None, init=False, repr=False)
    _memo_at: float = field(default=0.0, init=False, repr=False)
    _memo: tuple[float, dict[str, list[float]]] | None = field(default=None, init=False, repr=False)
    _event_key: object = field(default=None, init=False, repr=False)  # the inputs at the last coin flip
    _yielding: bool = field(default=False, init=False, repr=False)
    # T_k as an absolute time, and the share it was planned under: the completion the job holds itself to
    _commit: float | None = field(default=None, init=False, repr=False)
    _commit_share: Resources = field(default_factory=Resources, init=False, repr=False)
    _remaining: float | None = field(default=None, init=False, repr=False)  # as of the last decision

    def __post_init__(self) -> None:
        if not 0.0 <= self.p_altruism <= 1.0:
            raise ValueError("p_altruism must be between 0 and 1")
        if self.horizon_s < 0:
            raise ValueError("horizon_s must not be negative")
        if not 0.0 <= self.floor <= 1.0:
            raise ValueError("floor must be between 0 and 1")
        self._rng = Random(self.seed)

    def signals(self) -> AmSignals:
        return declared(self._remaining)

    def asks(self, dag: DagState, fair_share: Resources, now: float) -> list[AskDecision]:
        plans, runnable, remaining = scan(dag, now)
        self._remaining = remaining
        if not any(runnable.values()):
            self.last = None
            return []
        key = (fair_share, tuple((p.name, p.pending, len(p.running_remaining_s), p.duration_s) for p in plans),
               tuple(sorted(runnable.items())))
        if key != self._event_key:
            self._event_key = key
            self._yielding = self.p_altruism > 0 and self._rng.random() < self.p_altruism
        if not self._yielding or fair_share.is_zero():
            self.last = AltruismOutcome(INFINITE, runnable, {}, yielded=False)
            return GreedyAsks().asks(dag, fair_share, now)
        if key == self._memo_key and self._memo is not None:
            shift = now - self._memo_at
            makespan = self._memo[0] - shift
            latest = {name: [t - shift for t in starts] for name, starts in self._memo[1].items()}
        else:
            forward, capacity, shaped = forward_completion(plans, fair_share)
            if forward == INFINITE:  # the share cannot run the job: take what it can get
                self._memo_key = self._commit = None
                self.last = AltruismOutcome(INFINITE, runnable, {}, yielded=False)
                return GreedyAsks().asks(dag, fair_share, now)
            makespan = self._committed(now, forward, plans, fair_share) - now
            latest = pack_reverse(shaped, capacity, makespan)
            self._memo_key, self._memo_at, self._memo = key, now, (makespan, latest)
        default = must_start_now(latest, runnable, self.horizon_s)
        if self.floor > 0:
            floor = Resources({r: int(v * self.floor + 1e-9) for r, v in fair_share.amounts.items()})
            default = keep_floor(dag, default, latest, runnable, floor)
        altruistic = {name: runnable[name] - default.get(name, 0) for name in runnable}
        self.last = AltruismOutcome(makespan, default, altruistic, yielded=True)
        return stage_decisions(dag, default, altruistic, remaining)

    def _committed(self, now: float, forward: float, plans: list[StagePlan], share: Resources) -> float:
        """The completion time to reverse-pack from: the one held to since the job first planned, moved
        only by what the job does not control — the share change moves it by as much as it moves the
        forward packing of the job's present state — and pulled in when the job is ahead of it (a task
        ended early, or leftover came its way). Re-planning from the forward packing alone would let the
        job yield its packing slack again at every event, so its completion would slide with each yield."""
        done = now + forward
        commit = self._commit
        if commit is not None and share != self._commit_share:
            # a change the packing cannot see leaves the forward packing, so T_k, as it was
            same = same_packing(plans, share, self._commit_share)
            before = done if same else now + forward_completion(plans, self._commit_share)[0]
            commit = None if before == INFINITE else commit + (done - before)
        commit = done if commit is None else min(commit, done)
        self._commit, self._commit_share = commit, share
        return commit


def forward_completion(plans: list[StagePlan], share: Resources) -> tuple[float, Resources, list[StagePlan]]:
    """T_k from now under ``share`` (INFINITE when the share cannot run a task), with the capacity and the
    stage plans it was packed with: a share too small for a task is planned as a stretched, time-shared
    one (``stretch_factor``)."""
    factor = stretch_factor(plans, share)
    capacity = stretched_share(share, factor)
    if factor not in (1.0, INFINITE):
        plans = [stretched_plan(p, factor) for p in plans]
    return pack_forward(plans, capacity).makespan, capacity, plans


def same_packing(plans: list[StagePlan], a: Resources, b: Resources) -> bool:
    """Whether shares ``a`` and ``b`` pack ``plans`` alike: both hold every task (no stretching) and agree
    once rounded down to the grain of the job's task sizes (per resource, the greatest common divisor of
    its stages' demands). The packers only compare a share with sums of whole tasks' demands, which are
    multiples of the grain, so such shares give the same packing to the bit."""
    if stretch_factor(plans, a) != 1.0 or stretch_factor(plans, b) != 1.0:
        return False
    grain: dict[str, int] = {}
    for p in plans:
        for rtype, amount in p.demand.amounts.items():
            grain[rtype] = math.gcd(grain.get(rtype, 0), amount)
    return all(a.get(r) // g == b.get(r) // g for r, g in grain.items() if g > 0)


def keep_floor(dag: DagState, default: dict[str, int], latest: dict[str, list[float]],
               runnable: dict[str, int], floor: Resources) -> dict[str, int]:
    """``default`` topped up with runnable tasks, the earliest latest start first, while the job's running
    tasks plus its DEFAULT asks are below ``floor`` in every resource it sets. The last task added may go
    past the floor: a task larger than the floor is still asked for rather than leaving the job with nothing."""
    held = Resources()
    for t in dag.running():
        held = held + dag.capability(t.stage)
    for name, count in default.items():
        held = held + dag.capability(name) * count
    out = dict(default)
    waiting = sorted((start, name) for name, count in runnable.items()
                     for start in sorted(latest.get(name, []))[out.get(name, 0):count])
    for _, name in waiting:
        if not _below(held, floor):
            break
        held = held + dag.capability(name)
        out[name] = out.get(name, 0) + 1
    return out


def _below(held: Resources, floor: Resources) -> bool:
    return any(v > 0 for v in floor.amounts.values()) and all(
        held.get(r) < v for r, v in floor.amounts.items() if v > 0)


def stretch_factor(plans: list[StagePlan], share: Resources) -> float:
    """The smallest f >= 1 with every pending task's demand within f·share (inf when a needed type is 0)."""
    factor = 1.0
    for p in plans:
        if not p.pending:
            continue
        for rtype, amount in p.demand.amounts.items():
            have = share.get(rtype)
            if amount <= 0 or amount <= have:
                continue
            factor = max(factor, amount / have) if have > 0 else INFINITE
    return factor


def stretched_share(share: Resources, factor: float) -> Resources:
    if factor in (1.0, INFINITE):
        return share
    return Resources({r: math.ceil(v * factor - 1e-9) for r, v in share.amounts.items()})


def stretched_plan(plan: StagePlan, factor: float) -> StagePlan:
    """A stage as seen through a share time-shared at rate 1/factor: every duration ``factor`` times longer."""
    return replace(plan, duration_s=plan.duration_s * factor,
                   running_remaining_s=tuple(r * factor for r in plan.running_remaining_s))


def scan(dag: DagState, now: float) -> tuple[list[StagePlan], dict[str, int], float]:
    """One pass over the job's tasks: its unfinished work per stage as the time packer wants it, the
    runnable tasks per stage, and the remaining work (``DagState.remaining_work_s``)."""
    plans = []
    runnable: dict[str, int] = {}
    total = 0.0
    for stage in dag.stages:
        name = stage.name
        runnable[name] = 0
        if dag.stage_done(name):
            continue
        tally = dag.tally(name, now)
        running, work = tally.running_s, tally.work_s
        pending = tally.runnable + tally.waiting
        runnable[name] = tally.runnable
        total += work
        if not pending and not running:
            continue
        plans.append(StagePlan(
            name=name, demand=stage.capability, duration_s=max(dag.estimate_s(name), 1e-3),
            pending=pending, running_remaining_s=tuple(running), parents=tuple(stage.parents),
            priority=dag.depth(name),
        ))
    names = {p.name for p in plans}
    plans = [replace(p, parents=tuple(x for x in p.parents if x in names)) for p in plans]
    return plans, runnable, total


_: type[AskPolicy] = CarbyneAsks


def stage_decisions(dag: DagState, default: dict[str, int], altruistic: dict[str, int],
                    remaining: float, priorities: Mapping[str, int] | None = None) -> list[AskDecision]:
    """Per stage, a DEFAULT and an ALTRUISTIC ask for the given numbers of containers (none for zero), at the
    stage's priority in ``priorities`` (lower first), else its depth."""
    out: list[AskDecision] = []
    for stage in dag.stages:
        index = dag.stage_index(stage.name)
        priority = priorities[stage.name] if priorities is not None else dag.depth(stage.name)
        for ask_type, count in (("DEFAULT", default.get(stage.name, 0)), ("ALTRUISTIC", altruistic.get(stage.name, 0))):
            if count > 0:
                kind: AskType = "DEFAULT" if ask_type == "DEFAULT" else "ALTRUISTIC"
                out.append(AskDecision(
                    allocation_request_id=request_id(index, kind), stage=stage.name,
                    priority=priority, capability=stage.capability, num_containers=count,
                    ask_type=kind, remaining_work_s=remaining,
                ))
    return out
