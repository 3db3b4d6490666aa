"""Policies by short name, so configuration, the simulator and tests pick them the same way.

Each table maps a policy's ``name`` to a factory. ``PipelineArgs`` names a whole pipeline (its stages, the
node scorer they share, the share calculator) and is checked in full before anything is built, so a typo in a
config file fails at startup with the list of known names rather than half-way through building.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from rm.core.policies.api import AppOrder, NodeScorer, ShareCalculator, Stage
from rm.core.policies.drf import DrfOrder, DrfShares, DrfStage
from rm.core.policies.fifo import FifoOrder, FifoStage
from rm.core.policies.leftover import LeftoverStage, check_cap
from rm.core.policies.packing import PackingStage
from rm.core.policies.sjf import SjfOrder, SjfStage
from rm.core.policies.tetris import TetrisPacker
from rm.core.reservation.stage import ReservationStage

SCORERS: dict[str, Callable[[], NodeScorer]] = {TetrisPacker.name: TetrisPacker}
SHARES: dict[str, Callable[[], ShareCalculator]] = {DrfShares.name: DrfShares}
ORDERS: dict[str, Callable[[], AppOrder]] = {DrfOrder.name: DrfOrder, FifoOrder.name: FifoOrder,
                                             SjfOrder.name: SjfOrder}
STAGES: dict[str, Callable[[NodeScorer], Stage]] = {
    DrfStage.name: DrfStage,
    "drf-share": lambda scorer: DrfStage(scorer, frozenset({"DEFAULT"}), within_share=True),
    LeftoverStage.name: LeftoverStage,
    "leftover-pack": lambda scorer: LeftoverStage(scorer, "pack"),
    ReservationStage.name: ReservationStage,  # Morpheus: reservations first, what they leave is lent
    # baselines the simulator compares with: FIFO, shortest job first, cross-job packing
    FifoStage.name: FifoStage,
    SjfStage.name: SjfStage,
    PackingStage.name: PackingStage,
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


def make_order(name: str) -> AppOrder:
    _check("app order", ORDERS, name)
    return ORDERS[name]()


def make_stage(name: str, scorer: NodeScorer) -> Stage:
    _check("stage", STAGES, name)
    return STAGES[name](scorer)


@dataclass(frozen=True, slots=True)
class PipelineArgs:
    stages: tuple[str, ...] = (DrfStage.name,)
    scorer: str = TetrisPacker.name
    shares: str = DrfShares.name
    leftover_cap: float | None = None  # bounds what one job takes from the leftover (``LeftoverStage``)

    def validate(self) -> None:
        if not self.stages:
            raise ValueError("a pipeline needs at least one stage")
        check_cap(self.leftover_cap)
        for s in self.stages:
            _check("stage", STAGES, s)
        _check("node scorer", SCORERS, self.scorer)
        _check("share calculator", SHARES, self.shares)


def build_pipeline(args: PipelineArgs) -> tuple[list[Stage], ShareCalculator]:
    args.validate()
    scorer = make_scorer(args.scorer)
    stages = [make_stage(s, scorer) for s in args.stages]
    if args.leftover_cap is not None:
        stages = [s.capped(args.leftover_cap) if isinstance(s, LeftoverStage) else s for s in stages]
    return stages, make_shares(args.shares)


def default_pipeline() -> tuple[list[Stage], ShareCalculator]:
    """One DRF stage packing with Tetris, and DRF shares: ([DrfStage(TetrisPacker())], DrfShares())."""
    return build_pipeline(PipelineArgs())


LEFTOVER_CAP = 3.0
"""What one job takes from the leftover before the next job closest to completion, × its fair share."""
CARBYNE = ("drf-share", LeftoverStage.name)

PIPELINES: dict[str, PipelineArgs] = {
    "drf": PipelineArgs(),
    # Carbyne: DEFAULT asks by DRF, yielding jobs' within their fair shares, then the leftover to the jobs
    # closest to completion (up to LEFTOVER_CAP × their shares first)
    "carbyne": PipelineArgs(stages=CARBYNE, leftover_cap=LEFTOVER_CAP),
    # the same with the leftover's two steps swapped: pack for efficiency first
    "carbyne-pack": PipelineArgs(stages=("drf-share", "leftover-pack"), leftover_cap=LEFTOVER_CAP),
    # Morpheus: capacity the reservation plan promises now goes to reservation apps first, then Carbyne
    "morpheus": PipelineArgs(stages=(ReservationStage.name, *CARBYNE), leftover_cap=LEFTOVER_CAP),
    "fifo": PipelineArgs(stages=(FifoStage.name,)),
    "sjf": PipelineArgs(stages=(SjfStage.name,)),
    "tetris": PipelineArgs(stages=(PackingStage.name,)),  # fairness knob f = 0, as in Carbyne's baseline
}


def named_pipeline(name: str, leftover_cap: float | None = None) -> tuple[list[Stage], ShareCalculator]:
    _check("pipeline", PIPELINES, name)
    args = PIPELINES[name]
    return build_pipeline(args if leftover_cap is None else replace(args, leftover_cap=leftover_cap))

