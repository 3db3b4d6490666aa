"""Jockey's ApplicationMaster policy: ask to be guaranteed what the job's deadline needs, yield the rest.

A job with a deadline (``deadline_s``, which gets ``default_utility``) or a ``utility`` runs a
``JockeyController`` (``am.policies.jockey``). At its first decision the policy builds the job's profile
from the job file (``profile_from_job``) and, once, its remaining-time model: the C(p, a) table from the
job simulator, or with ``jockey-amdahl`` the Amdahl model. From then on, at every call:

1. the DAG's task states (with the finished tasks' run times) become a ``JobState`` and the controller,
   which holds the job's profile and so scales its predictions by the run's observed pace, steps with the
   injected clock (it acts once a period and holds its decision in between); ``jockey-static`` keeps its
   first decision for ever;
2. the requested guarantee is ``requested_units × allocation unit`` (the job's most common container),
   sent to the RM in ``signals().guarantee``; it never exceeds the ceiling the RM tells with its grant (the
   most the job's queue can guarantee, ``set_granted``), so a job that looks late asks for what it could get,
   not for the widest allocation its model knows;
3. the asks are planned back from the deadline with Carbyne's reverse packing: the target is the time
   left before the controller's planning deadline d − D, divided by its slack, and the capacity the job
   can count on is the larger, per resource, of its fair share and its floor (the RM's ``guarantee`` stage
   serves the floor first, and the fair-share stage counts it as the app's use, so together they give the
   larger of the two, not their sum). The floor is the guarantee the RM grants (``set_granted``, from every
   allocate answer), never more than the one asked for now; until the RM tells one (an older RM, or a
   scheduler without the stage) it is the guarantee asked for. DEFAULT goes to the tasks whose latest start
   is now, topped up until the running tasks and DEFAULT asks fill the floor (the controller's model assumes
   the job uses all of it), and ALTRUISTIC to the rest, so above its floor the job is an ordinary altruistic
   one. When even that capacity cannot finish by the target, packed or along the job's longest remaining
   chain of tasks (the packer sees a stage's tasks as alike), the job is behind and asks everything
   DEFAULT: it takes its fair share, the paper's fallback to fair sharing;
4. the asks go in critical-path order: a stage's priority is its rank by the longest chain of longest tasks
   from it to the job's end, so the stage that holds up the end longest is served first.

A job with neither deadline nor utility is an ordinary Carbyne job (``CarbyneAsks``). Pure: the clock and
the seed come in as arguments.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import ClassVar

from am.dag_state import DagState
from am.jobspec import Job
from am.policies.altruism import CarbyneAsks, forward_completion, keep_floor, scan, stage_decisions
from am.policies.api import AskDecision, AskPolicy, FollowsGrant, TakesProfile, declared
from am.policies.jockey.controller import ControlConfig, Decision, JockeyController
from am.policies.jockey.model import Amdahl, CpaTable, RemainingModel, build_table
from am.policies.jockey.profile import JobProfile, allocation_unit, profile_from_job
from am.policies.jockey.progress import job_state_from_dag
from am.policies.jockey.utility import Utility, default_utility
from am.policies.timepack import INFINITE, must_start_now, pack_reverse
from common.resources import Resources, component_max, component_min, whole_units
from common.terms import AmSignals, ControlStep

TASK_OVERHEAD_S = 1.0
"""What the profile adds to every task as initialisation: a container is held beyond its task's run time
until the NodeManager's next heartbeat reports the end (1 s apart) and the AM hears of it; a job file's
durations do not include that."""
TABLE_CACHE = 64
"""Tables kept per profile: recurring jobs with the same profile build theirs once per process."""
DEADLINE_TOLERANCE_S = 1.0
"""A deadline the RM reports within this of the one the controller plans for is the same one (the RM sends
it as seconds from its now, so each answer's network delay moves it a little)."""
TABLE_SEED = 0  # the table's simulations are seeded by the profile alone, so equal profiles share a table


def job_utility(job: Job) -> Utility | None:
    """The job's utility: its own points, else the paper's shape at its deadline, else None."""
    points = job.utility_points_s()
    if points is not None:
        return Utility(points)
    return default_utility(job.deadline_s) if job.deadline_s is not None else None


@lru_cache(maxsize=TABLE_CACHE)
def cached_table(profile: JobProfile) -> CpaTable:
    return build_table(profile, seed=TABLE_SEED)


@dataclass(frozen=True, slots=True)
class JockeyOutcome:
    """What the last call decided, for logs and tests."""

    decision: Decision
    guarantee: Resources
    count_on: Resources  # the capacity the asks were planned with
    floor: Resources  # the part of the guarantee the asks counted on being served first (see ``set_granted``)
    behind: bool  # the plan cannot finish by its target: everything asked DEFAULT
    default: dict[str, int]
    altruistic: dict[str, int]


class JockeyAsks:
    """The ``jockey`` ask policy; see the module docstring."""

    name: ClassVar[str] = "jockey"
    adaptive: ClassVar[bool] = True  # False: the first decision is held (``jockey-static``)
    amdahl: ClassVar[bool] = False  # True: Amdahl's model instead of the C(p, a) table (``jockey-amdahl``)

    def __init__(self, *, seed: int = 0, started_at: float | None = None, config: ControlConfig | None = None,
                 horizon_s: float = 1.0, p_altruism: float = 1.0, floor: float = 0.0,
                 overhead_s: float = TASK_OVERHEAD_S, profile: JobProfile | None = None) -> None:
        self.seed = seed
        self.profile = profile  # the job's profile from earlier runs; None: from its job file
        self.overhead_s = overhead_s
        self.started_at = started_at  # the job's submission; None: the first call
        self.config = config
        self.horizon_s = horizon_s
        self._carbyne = CarbyneAsks(p_altruism=p_altruism, seed=seed, floor=floor)
        self._started = False
        self.controller: JockeyController | None = None  # None: no deadline, an ordinary altruistic job
        self.unit = Resources()
        self._deadline = 0.0  # absolute: the end of the utility's flat top
        self._job: Job | None = None
        self._t0 = 0.0  # the controller's start: the job's submission, else the first call
        self._heard: float | None = None  # a deadline the RM reported before the first call
        self._now = 0.0  # of the last ``asks``
        self._reported = 0  # controller decisions already sent in ``signals``
        self._first: Decision | None = None
        self._guarantee: Resources | None = None
        self._granted: Resources | None = None  # what the RM last said it grants; None: it did not say
        self._ceiling: Resources | None = None  # the most the RM said the job's queue can guarantee
        self._remaining: float | None = None
        self._model_build_s: float | None = None  # the model's build time, until ``signals`` has sent it
        self.last: JockeyOutcome | None = None

    def start(self, job: Job, now: float) -> None:
        """Build the profile, the model and the controller (once, at the AM's start)."""
        self._started = True
        self._job = job
        self._t0 = started = now if self.started_at is None else self.started_at
        utility = job_utility(job)
        if utility is None and self._heard is not None and self._heard > started:
            utility = default_utility(self._heard - started)
        if utility is not None:
            self._control(job, utility)
        if self._heard is not None:
            self.set_deadline(self._heard)

    def _control(self, job: Job, utility: Utility) -> None:
        given = self.profile
        if given is not None and {s.name for s in given.stages} == {s.name for s in job.stages}:
            profile = given
        else:  # none, or one of another shape of the job (its stages changed since those runs)
            profile = profile_from_job(job, queue_s=self.overhead_s)
        t0 = time.perf_counter()
        model: RemainingModel = Amdahl(profile) if self.amdahl else cached_table(profile)
        self._model_build_s = time.perf_counter() - t0  # what this AM paid (about 0 when the table was cached)
        self.controller = JockeyController(model, utility, self.config, started_at=self._t0, profile=profile)
        self.unit = allocation_unit(profile)
        if self._ceiling is not None:
            self.controller.set_ceiling(whole_units(self._ceiling, self.unit))
        self._deadline = self._t0 + utility.deadline

    def set_deadline(self, deadline: float) -> None:
        """The RM's deadline for the job (changed at run time, §5.2), in the clock of ``now``. The controller
        plans for it from its next step: the paper's utility at the new deadline when the job file gave
        none of its own, else the job's utility moved by the change. A job without a deadline so far starts
        its control loop now."""
        if not self._started:
            self._heard = deadline
            return
        self._heard = None
        rel = deadline - self._t0
        ctl = self.controller
        if ctl is None:
            if self._job is not None and rel > 0:
                self._control(self._job, default_utility(rel))
            return
        if abs(deadline - self._deadline) <= DEADLINE_TOLERANCE_S:
            return
        own = self._job is not None and self._job.utility is not None
        utility = default_utility(rel) if rel > 0 and not own else ctl.utility.shifted(self._deadline - deadline)
        ctl.set_utility(utility)
        self._deadline = deadline

    def set_profile(self, profile: JobProfile) -> None:
        """A profile of the job's earlier runs (the RM's, at registration): the model is built from it instead
        of from the job file. Heard after the first decision it changes nothing: the model is built once."""
        if not self._started:
            self.profile = profile

    def set_granted(self, granted: Resources | None, ceiling: Resources | None = None) -> None:
        """The guarantee the RM grants the job (the floor its ``guarantee`` stage serves, from the last allocate
        answer); the asks count on it, never on more than the guarantee asked for. None (the answer carries
        none): count on the guarantee asked for, as with an RM that does not tell.

        ``ceiling``, the most the job's queue lets guarantees hold, caps the controller's requests from its
        next step (in whole allocation units); None leaves the cap as it was."""
        self._granted = granted
        if ceiling is not None:
            self._ceiling = ceiling
            if self.controller is not None:
                self.controller.set_ceiling(whole_units(ceiling, self.unit))

    def signals(self) -> AmSignals:
        """The remaining work, the guarantee, the controller's decisions since the last call (their times
        relative to the last ``asks``), and in the first call after the model was built, its build time."""
        if self.controller is None:
            return self._carbyne.signals()
        base = declared(self._remaining)
        trace = self.controller.trace
        new, self._reported = trace[self._reported:], len(trace)
        control = tuple(ControlStep(
            age_s=max(0.0, self._now - d.time), progress=d.progress, raw_units=d.raw_units,
            smoothed_units=d.smoothed_units, requested_units=d.requested_units,
            finish_in_s=d.predicted_finish - self._now, status=d.status, held=d.held, pace=d.pace) for d in new)
        built, self._model_build_s = self._model_build_s, None
        return AmSignals(size=base.size, guarantee=self._guarantee, control=control, model_build_s=built)

    def decide(self, dag: DagState, now: float) -> Decision:
        """The controller's decision now (the first one for ever when the policy does not adapt)."""
        assert self.controller is not None
        if not self.adaptive and self._first is not None:
            return self._first
        decision = self.controller.step(now, job_state_from_dag(dag, now))
        if self._first is None:
            self._first = decision
        return decision

    def asks(self, dag: DagState, fair_share: Resources, now: float) -> list[AskDecision]:
        if not self._started:
            self.start(dag.job, now)
        self._now = now
        ctl = self.controller
        if ctl is None:
            return self._carbyne.asks(dag, fair_share, now)
        decision = self.decide(dag, now)
        guarantee = self._guarantee = self.unit * decision.requested_units
        plans, runnable, remaining = scan(dag, now)
        self._remaining = remaining
        if not any(runnable.values()):
            self.last = None
            return []
        floor = guarantee if self._granted is None else component_min(self._granted, guarantee)
        count_on = component_max(fair_share, floor)
        target = (self._deadline - ctl.dead_zone_s - now) / ctl.config.slack
        forward, capacity, shaped = forward_completion(plans, count_on)
        longest = dag.longest_remaining_s(now)
        # the packer sees a stage's tasks as alike: its plan can be shorter than the job's longest tasks allow
        behind = forward == INFINITE or max(forward, dag.remaining_critical_path_s(now, longest)) > target
        if behind:
            default = dict(runnable)
        else:
            latest = pack_reverse(shaped, capacity, target)
            default = keep_floor(dag, must_start_now(latest, runnable, self.horizon_s), latest, runnable, floor)
        altruistic = {name: runnable[name] - default.get(name, 0) for name in runnable}
        self.last = JockeyOutcome(decision, guarantee, count_on, floor, behind, default, altruistic)
        return stage_decisions(dag, default, altruistic, remaining, critical_first(dag.tails_s(now, longest)))


def critical_first(tails: Mapping[str, float]) -> dict[str, int]:
    """Ask priorities (lower first) that put the stages with the longest tail to the job's end first; ties keep
    the order of ``tails``."""
    order = sorted(tails, key=lambda name: -tails[name])
    return {name: rank for rank, name in enumerate(order)}


class JockeyStaticAsks(JockeyAsks):
    """Jockey without adaptation: the controller's first decision is held to the end (the paper's
    "max allocation"-style static baseline, sized by the model at the start)."""

    name: ClassVar[str] = "jockey-static"
    adaptive: ClassVar[bool] = False


class JockeyAmdahlAsks(JockeyAsks):
    """Jockey with Amdahl's model (remaining = S + P / a) in place of the simulated C(p, a) table."""

    name: ClassVar[str] = "jockey-amdahl"
    amdahl: ClassVar[bool] = True


class JockeyMaxAsks(JockeyAsks):
    """The paper's "max allocation" baseline: the job is guaranteed the most it may ask for (the controller's
    ``max_units`` and its queue's ceiling, else the largest allocation its model knows) from start to end,
    whatever its progress."""

    name: ClassVar[str] = "jockey-max"

    def decide(self, dag: DagState, now: float) -> Decision:
        decision = super().decide(dag, now)
        assert self.controller is not None
        cap = self.controller.max_units
        most = int(cap if cap is not None else max(self.controller.model.allocations))
        return replace(decision, raw_units=most, smoothed_units=float(most), requested_units=most)


_: type[AskPolicy] = JockeyAsks
_grant: type[FollowsGrant] = JockeyAsks
_profiled: type[TakesProfile] = JockeyAsks
_static: type[AskPolicy] = JockeyStaticAsks
_amdahl: type[AskPolicy] = JockeyAmdahlAsks
_max: type[AskPolicy] = JockeyMaxAsks
