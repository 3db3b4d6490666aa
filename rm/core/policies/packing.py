"""Multi-resource packing across jobs (Tetris, Grandl et al., SIGCOMM 2014), with its fairness knob.

The baseline the Carbyne paper calls Tetris: every cycle, repeatedly take the (ask, node) pair with the
highest packing score over *all* jobs, place one container, and go again until nothing fits. The score is the
scorer's (``TetrisPacker``: alignment of the demand with the node's free resources, so larger and better
aligned tasks go first). Inside a job the order is breadth-first: a job offers only its most important ask
that fits somewhere (lowest priority number, i.e. the shallowest runnable stage).

Fairness knob ``f`` in [0, 1): with N jobs waiting, only the ceil((1 - f) × N) jobs furthest below their
fair share — smallest weighted dominant share of what they hold, the DRF order — may be picked. ``f = 0``
(the default, what Carbyne compares with: "f → 0") is pure packing; larger ``f`` trades packing for fairness.

AM containers go first, oldest app first, within each queue's AM limit; an app's tasks cannot run before its
AM does, and a small AM container would otherwise always lose to larger tasks. Ties between pairs go to the
older app, then to the more important ask.

Cost: the best node of each distinct demand (capability, locality, blacklist) is kept for the cycle; after a
placement only the demands whose best node was that node are rescanned, the others compare their best with
the changed node, so a cycle costs about O(placements × (apps + nodes)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from common.ids import AppId
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView
from rm.core.policies.api import NOTHING, AppOrder, Input, NodeScorer, PolicyArgs, Stage, app_tiebreak
from rm.core.policies.drf import DrfOrder, ask_importance
from rm.core.policies.fifo import FitKey, GreedyFiller, fit_key
from rm.core.policies.tetris import best_node

if TYPE_CHECKING:
    from rm.core.context import CycleContext

DEFAULT_FAIRNESS = 0.0
_SCORE_DIGITS = 9


def check_fairness(fairness: float) -> None:
    if not 0.0 <= fairness < 1.0:
        raise ValueError(f"the packing fairness knob must be in [0, 1), got {fairness}")


@dataclass(frozen=True, slots=True)
class PackingArgs:
    """The packing stage's setting: the fairness knob ``fairness`` in [0, 1) (``tetris:0.25``)."""

    name: ClassVar[str] = "packing"
    knob: ClassVar[str] = "fairness"
    fairness: float = DEFAULT_FAIRNESS

    def validate(self) -> None:
        check_fairness(self.fairness)

    def with_knob(self, text: str) -> PackingArgs:
        try:
            return replace(self, fairness=float(text))
        except ValueError:
            raise ValueError(f"tetris fairness knob must be a number in [0, 1), got {text!r}") from None


@dataclass(slots=True)
class _Best:
    ask: AskView  # an ask with this demand, to rescan with
    node: NodeView | None  # None: fits nowhere for the rest of the cycle


class PackingStage:
    """Highest-scoring (ask, node) pair across jobs, one container at a time; see the module docstring."""

    name: ClassVar[str] = "packing"

    def __init__(self, scorer: NodeScorer, fairness: float = DEFAULT_FAIRNESS, *,
                 order: AppOrder | None = None) -> None:
        check_fairness(fairness)
        self.scorer = scorer
        self.fairness = fairness
        self.order: AppOrder = DrfOrder() if order is None else order  # who may pick when fairness > 0

    @property
    def reads(self) -> frozenset[Input]:
        return self.order.reads if self.fairness > 0 else NOTHING

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        filler = GreedyFiller(snap, ctx, self.scorer)
        apps = sorted((a for a in snap.apps.values() if a.asks), key=app_tiebreak)
        for app in apps:
            for ask in app.asks:
                if ask.is_am:
                    _place_am(filler, ask)
        tasks = {a.app_id: sorted((k for k in a.asks if not k.is_am), key=ask_importance) for a in apps}
        waiting = [a for a in apps if tasks[a.app_id]]
        best: dict[FitKey, _Best] = {}
        while True:
            pick = self._pick(filler, self._eligible(waiting, ctx), tasks, best)
            if pick is None:
                break
            ask, node = pick
            filler.place(ask, node)
            self._refresh(filler, best, node)
        for app in waiting:
            for ask in tasks[app.app_id]:
                if ctx.remaining(ask) > 0:
                    filler.reject(ask)

    def _eligible(self, apps: list[AppView], ctx: CycleContext) -> list[AppView]:
        if self.fairness <= 0.0 or not apps:
            return apps
        keep = math.ceil((1.0 - self.fairness) * len(apps))
        return sorted(apps, key=lambda a: self.order.sort_key(a, ctx))[:keep]

    def _pick(
        self,
        filler: GreedyFiller,
        apps: list[AppView],
        tasks: dict[AppId, list[AskView]],
        best: dict[FitKey, _Best],
    ) -> tuple[AskView, NodeView] | None:
        ctx = filler.ctx
        chosen: tuple[AskView, NodeView] | None = None
        chosen_key: tuple[float, float, str, tuple[int, bool, bool, int]] | None = None
        for app in apps:
            for ask in tasks[app.app_id]:
                if ctx.remaining(ask) <= 0:
                    continue
                key = fit_key(ask, app)
                entry = best.get(key)
                if entry is None:
                    entry = best[key] = _Best(ask, filler.best(ask))
                if entry.node is None:
                    continue
                score = round(self.scorer.score(ask, entry.node, ctx), _SCORE_DIGITS)
                mine = (-score, app.submit_time, app.app_id, ask_importance(ask))
                if chosen_key is None or mine < chosen_key:
                    chosen, chosen_key = (ask, entry.node), mine
                break  # breadth-first inside a job: only its most important ask that fits
        return chosen

    def _refresh(self, filler: GreedyFiller, best: dict[FitKey, _Best], changed: NodeView) -> None:
        """Only ``changed`` lost free resources: rescan the demands it was best for, compare the rest."""
        for entry in best.values():
            if entry.node is None:
                continue
            if entry.node.node_id == changed.node_id:
                entry.node = filler.best(entry.ask)
            else:
                entry.node = best_node(entry.ask, [entry.node, changed], filler.ctx, self.scorer,
                                       capacity=filler.capacity, free=filler.free)


def _place_am(filler: GreedyFiller, ask: AskView) -> None:
    while filler.ctx.remaining(ask) > 0:
        node = filler.best(ask) if filler.am_allowed(ask) else None
        if node is None:
            filler.reject(ask)
            return
        filler.place(ask, node)


_stage: type[Stage] = PackingStage
_args: type[PolicyArgs] = PackingArgs
