"""Policies by short name, so configuration, the simulator and tests pick them the same way.

Each table maps a policy's ``name`` to a factory. ``PipelineArgs`` names a whole pipeline (its stages, the
node scorer they share, the share calculator, and the typed settings of the policies that take any) and is
checked in full before anything is built, so a typo in a config file fails at startup with the list of known
names rather than half-way through building. ``SchedulerArgs`` is what a scheduler name
(``shepherd.resourcemanager.scheduler``, ``shepherd sim --policies``) means: a pipeline *and* the AM ask
policy its jobs use unless they name one, so a name means the same live and in the simulator.

A policy with settings has a frozen args dataclass (``LeftoverArgs``, ``PackingArgs``) registered in
``ARGS`` under the policy's name; a stage factory reads its own args from the pipeline's ``settings`` (the
defaults when none are given). The short knob syntax ``NAME:VALUE`` (``carbyne:1.5``, ``tetris:0.25``) sets
the ``knob`` field of the first of the pipeline's stages that has args.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from rm.core.admission import Admission, AdmitAll
from rm.core.deadlines.admission import DeadlineAdmission
from rm.core.deadlines.stage import DeadlineStage, EdfOrder, EdfStage
from rm.core.policies.api import (
    AppOrder,
    Input,
    NodeScorer,
    PolicyArgs,
    ShareCalculator,
    Stage,
    pipeline_reads,
)
from rm.core.policies.drf import DrfOrder, DrfStage
from rm.core.policies.drf_shares import DrfShares
from rm.core.policies.fifo import FifoOrder, FifoStage
from rm.core.policies.gs import GsArgs, GsStage
from rm.core.policies.guarantee import GuaranteeStage
from rm.core.policies.leftover import LeftoverArgs, LeftoverStage, RemainingWorkOrder
from rm.core.policies.packing import PackingArgs, PackingStage
from rm.core.policies.size_order import EstimateOrder
from rm.core.policies.sjf import SjfOrder, SjfStage
from rm.core.policies.tetris import TetrisPacker
from rm.core.reservation.stage import ReservationStage
from rm.core.sizes.stage import SamplingStage

A = TypeVar("A", bound=PolicyArgs)


class Settings:
    """The typed settings a pipeline was given, by args class; the defaults for the others."""

    def __init__(self, given: Iterable[PolicyArgs] = ()) -> None:
        self._given = {type(a): a for a in given}

    def get(self, kind: type[A]) -> A:
        found = self._given.get(kind)
        return found if isinstance(found, kind) else kind()


StageFactory = Callable[[NodeScorer, Settings], Stage]


@dataclass(frozen=True, slots=True)
class StageEntry:
    build: StageFactory
    args: type[PolicyArgs] | None = None  # the stage's typed settings, if it takes any


def _leftover(mode: str) -> StageFactory:
    def build(scorer: NodeScorer, settings: Settings) -> Stage:
        args = settings.get(LeftoverArgs)
        args.validate()
        return LeftoverStage(scorer, "pack" if mode == "pack" else "srtf", cap=args.cap,
                             order=EstimateOrder() if args.order == EstimateOrder.name else None)
    return build


SCORERS: dict[str, Callable[[], NodeScorer]] = {TetrisPacker.name: TetrisPacker}
SHARES: dict[str, Callable[[], ShareCalculator]] = {DrfShares.name: DrfShares}
ORDERS: dict[str, Callable[[], AppOrder]] = {DrfOrder.name: DrfOrder, FifoOrder.name: FifoOrder,
                                             SjfOrder.name: SjfOrder, RemainingWorkOrder.name: RemainingWorkOrder,
                                             EdfOrder.name: EdfOrder, EstimateOrder.name: EstimateOrder}
ADMISSIONS: dict[str, Callable[[], Admission]] = {AdmitAll.name: AdmitAll, DeadlineAdmission.name: DeadlineAdmission}
ARGS: dict[str, type[PolicyArgs]] = {LeftoverArgs.name: LeftoverArgs, PackingArgs.name: PackingArgs,
                                     GsArgs.name: GsArgs}
STAGES: dict[str, StageEntry] = {
    DrfStage.name: StageEntry(lambda scorer, _: DrfStage(scorer)),
    "drf-share": StageEntry(lambda scorer, _: DrfStage(scorer, frozenset({"DEFAULT"}), within_share=True)),
    LeftoverStage.name: StageEntry(_leftover("srtf"), LeftoverArgs),
    "leftover-pack": StageEntry(_leftover("pack"), LeftoverArgs),
    # Morpheus: reservations first, what they leave is lent
    ReservationStage.name: StageEntry(lambda scorer, _: ReservationStage(scorer)),
    # MRM: admitted deadline apps, EDF, get what their claims are owed now
    DeadlineStage.name: StageEntry(lambda scorer, _: DeadlineStage(scorer)),
    # Jockey: the guarantee each app's AM asks for, a floor from its own queue (above an MRM claim: free room only)
    GuaranteeStage.name: StageEntry(lambda scorer, _: GuaranteeStage(scorer)),
    # SLearn: what apps held to their pilots wait for, on capacity nothing else wants
    SamplingStage.name: StageEntry(lambda scorer, _: SamplingStage(scorer)),
    # SLearn's generic scheduler: weighted priority queues by estimated size, FIFO inside each
    GsStage.name: StageEntry(lambda scorer, settings: GsStage(scorer, settings.get(GsArgs)), GsArgs),
    # baselines the simulator compares with: FIFO, shortest job first, cross-job packing
    FifoStage.name: StageEntry(lambda scorer, _: FifoStage(scorer)),
    EdfStage.name: StageEntry(lambda scorer, _: EdfStage(scorer)),
    SjfStage.name: StageEntry(lambda scorer, _: SjfStage(scorer)),
    PackingStage.name: StageEntry(
        lambda scorer, settings: PackingStage(scorer, settings.get(PackingArgs).fairness), PackingArgs),
}


def _check(kind: str, table: Mapping[str, object], name: str) -> None:
    if name not in table:
        known = ", ".join(sorted(table)) or "(none)"
        raise ValueError(f"unknown {kind} {name!r}; known: {known}")


def make_scorer(name: str) -> NodeScorer:
    _check("node scorer", SCORERS, name)
    return SCORERS[name]()


def make_shares(name: str) -> ShareCalculator:
    _check("share calculator", SHARES, name)
    return SHARES[name]()


def make_admission(name: str) -> Admission:
    _check("admission rule", ADMISSIONS, name)
    return ADMISSIONS[name]()


def make_order(name: str) -> AppOrder:
    _check("app order", ORDERS, name)
    return ORDERS[name]()


def make_stage(name: str, scorer: NodeScorer, settings: Settings | None = None) -> Stage:
    _check("stage", STAGES, name)
    return STAGES[name].build(scorer, settings or Settings())


@dataclass(frozen=True, slots=True)
class PipelineArgs:
    stages: tuple[str, ...] = (DrfStage.name,)
    scorer: str = TetrisPacker.name
    shares: str = DrfShares.name
    settings: tuple[PolicyArgs, ...] = ()  # typed settings of the stages that take any (``ARGS``)

    def validate(self) -> None:
        if not self.stages:
            raise ValueError("a pipeline needs at least one stage")
        for s in self.stages:
            _check("stage", STAGES, s)
        _check("node scorer", SCORERS, self.scorer)
        _check("share calculator", SHARES, self.shares)
        for a in self.settings:
            a.validate()

    def with_settings(self, *given: PolicyArgs) -> PipelineArgs:
        """These settings in place of any of the same kind."""
        kinds = {type(a) for a in given}
        return replace(self, settings=(*(a for a in self.settings if type(a) not in kinds), *given))

    def knob_args(self) -> type[PolicyArgs] | None:
        """The args class the short ``NAME:VALUE`` syntax sets: the first stage's that has one."""
        for s in self.stages:
            entry = STAGES.get(s)
            if entry is not None and entry.args is not None:
                return entry.args
        return None

    def with_knob(self, text: str) -> PipelineArgs:
        kind = self.knob_args()
        if kind is None:
            raise ValueError("takes no parameter")
        current = Settings(self.settings).get(kind)
        return self.with_settings(current.with_knob(text))


def build_pipeline(args: PipelineArgs) -> tuple[list[Stage], ShareCalculator]:
    args.validate()
    scorer = make_scorer(args.scorer)
    settings = Settings(args.settings)
    return [make_stage(s, scorer, settings) for s in args.stages], make_shares(args.shares)


def default_pipeline() -> tuple[list[Stage], ShareCalculator]:
    """One DRF stage packing with Tetris, and DRF shares: ([DrfStage(TetrisPacker())], DrfShares())."""
    return build_pipeline(PipelineArgs())


GREEDY = "greedy"  # am.policies.GreedyAsks: DEFAULT asks for every runnable task
ALTRUISTIC = "carbyne"  # am.policies.CarbyneAsks: DEFAULT only for what must start now, ALTRUISTIC the rest
JOCKEY = "jockey"  # am.policies.JockeyAsks: asks for the guarantee its deadline needs, plans to it, yields the rest


@dataclass(frozen=True, slots=True)
class SchedulerArgs:
    """What a scheduler name means: the RM pipeline, the AM ask policy (``am.policies.ASK_POLICIES``) its
    jobs use unless a job names its own (``am_policy``), and the rule that admits submissions."""

    pipeline: PipelineArgs
    ask_policy: str = GREEDY
    admission: str = AdmitAll.name

    def validate(self) -> None:
        self.pipeline.validate()
        if not self.ask_policy:
            raise ValueError("a scheduler needs an AM ask policy")
        _check("admission rule", ADMISSIONS, self.admission)


LEFTOVER_CAP = 3.0
"""What one job takes from the leftover before the next job closest to completion, × its fair share."""
CARBYNE = ("drf-share", LeftoverStage.name)
_CAPPED = (LeftoverArgs(LEFTOVER_CAP),)

SCHEDULERS: dict[str, SchedulerArgs] = {
    "drf": SchedulerArgs(PipelineArgs()),
    # Carbyne: DEFAULT asks by DRF, yielding jobs' within their fair shares, then the leftover to the jobs
    # closest to completion (up to LEFTOVER_CAP × their shares first); its AMs yield what can wait
    "carbyne": SchedulerArgs(PipelineArgs(stages=CARBYNE, settings=_CAPPED), ALTRUISTIC),
    # the same with the leftover ordered by the RM's own size estimate (SLearn's signal: finished tasks, the DAG
    # hybrid, history, else the job file), bucketed, instead of the remaining work each AM reports
    "carbyne:estimate": SchedulerArgs(PipelineArgs(stages=CARBYNE, settings=(
        LeftoverArgs(LEFTOVER_CAP, order=EstimateOrder.name),)), ALTRUISTIC),
    # the same with the leftover's two steps swapped: pack for efficiency first
    "carbyne-pack": SchedulerArgs(PipelineArgs(stages=("drf-share", "leftover-pack"), settings=_CAPPED),
                                  ALTRUISTIC),
    # Morpheus: capacity the reservation plan promises now goes to reservation apps first, then Carbyne
    "morpheus": SchedulerArgs(PipelineArgs(stages=(ReservationStage.name, *CARBYNE), settings=_CAPPED),
                              ALTRUISTIC),
    # all of it: reservations, then bought deadlines (EDF), then Carbyne; deadlines are admitted only when
    # feasible (MRM)
    "mrm": SchedulerArgs(PipelineArgs(stages=(ReservationStage.name, DeadlineStage.name, *CARBYNE),
                                      settings=_CAPPED), ALTRUISTIC, DeadlineAdmission.name),
    # the same, learning job sizes: wide apps of unknown size run a few pilot tasks first (SLearn's gate;
    # held tasks take idle capacity only)
    "slearn": SchedulerArgs(PipelineArgs(stages=(ReservationStage.name, DeadlineStage.name, *CARBYNE,
                                                 SamplingStage.name), settings=_CAPPED),
                            ALTRUISTIC, DeadlineAdmission.name),
    # Jockey on MRM: the same, with each app's requested guarantee served as a floor after the claims; its AMs
    # run the control loop (jobs without a deadline are ordinary altruistic ones)
    "jockey": SchedulerArgs(PipelineArgs(stages=(ReservationStage.name, DeadlineStage.name, GuaranteeStage.name,
                                                 *CARBYNE), settings=_CAPPED), JOCKEY, DeadlineAdmission.name),
    # MRM's scheduler on its own: feasible deadlines only, then earliest deadline first takes all it can
    "edf": SchedulerArgs(PipelineArgs(stages=(EdfStage.name,)), admission=DeadlineAdmission.name),
    "fifo": SchedulerArgs(PipelineArgs(stages=(FifoStage.name,))),
    "sjf": SchedulerArgs(PipelineArgs(stages=(SjfStage.name,))),
    "tetris": SchedulerArgs(PipelineArgs(stages=(PackingStage.name,))),  # fairness f = 0, Carbyne's baseline
    # SLearn's generic scheduler (GS) with each size estimator it is compared with; ``gs`` is ``gs:slearn``.
    # ``gs:ESTIMATOR:Q0`` sets the top queue's bound in task-seconds. The oracle is for the simulator only.
    **{name: SchedulerArgs(PipelineArgs(stages=stages, settings=(GsArgs(estimator),)))
       for name, estimator, stages in (("gs", "slearn", (GsStage.name, SamplingStage.name)),
                                       ("gs:slearn", "slearn", (GsStage.name, SamplingStage.name)),
                                       ("gs:history", "history", (GsStage.name,)),
                                       ("gs:las", "las", (GsStage.name,)),
                                       ("gs:oracle", "oracle", (GsStage.name,)))},
}


def split_scheduler(spec: str) -> tuple[str, str | None]:
    """A scheduler spec as (registered name, knob or None): the longest registered name that is the spec or
    its prefix before a colon (``gs:history:500`` is ``gs:history`` with 500, ``carbyne:1.5`` is ``carbyne``
    with 1.5); an unknown name as it is written before its first colon."""
    parts = spec.split(":")
    for n in range(len(parts), 0, -1):
        name = ":".join(parts[:n])
        if name in SCHEDULERS:
            return name, ":".join(parts[n:]) if n < len(parts) else None
    return parts[0], ":".join(parts[1:]) if len(parts) > 1 else None


def scheduler(spec: str) -> SchedulerArgs:
    """A scheduler by name, with an optional knob: ``carbyne``, ``carbyne:1.5``, ``tetris:0.25``."""
    name, knob = split_scheduler(spec)
    _check("scheduler", SCHEDULERS, name)
    args = SCHEDULERS[name]
    if knob is not None:
        try:
            args = replace(args, pipeline=args.pipeline.with_knob(knob))
        except ValueError as exc:
            raise ValueError(f"policy {name!r}: {exc} (got {spec!r})") from None
    args.validate()
    return args


def named_pipeline(name: str, leftover_cap: float | None = None, *,
                   settings: Iterable[PolicyArgs] = ()) -> tuple[list[Stage], ShareCalculator]:
    """The pipeline of a scheduler name, with some of its policies' settings replaced (``leftover_cap``
    is ``LeftoverArgs(cap=...)``)."""
    given = [*settings, *leftover_cap_of(name, leftover_cap)]
    return build_pipeline(scheduler(name).pipeline.with_settings(*given))


def leftover_cap_of(name: str, cap: float | None) -> tuple[LeftoverArgs, ...]:
    """The scheduler's leftover settings with ``cap`` in place of its own (its leftover order stays); none
    without a cap."""
    if cap is None:
        return ()
    known = SCHEDULERS.get(name)
    return (replace(Settings(known.pipeline.settings if known is not None else ()).get(LeftoverArgs), cap=cap),)


def reads(args: PipelineArgs) -> frozenset[Input]:
    """What the pipeline's stages read from the cycle (``api.Input``)."""
    stages, _ = build_pipeline(args)
    return pipeline_reads(stages)
