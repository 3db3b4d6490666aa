"""The pipeline's last step under SLearn sampling: work conservation for apps held to their pilots.

An app behind its sampling gate shows the earlier stages only as many task containers as it has pilots left
(``AppView.asks``); the rest of its asks (``AppView.held``) wait here, after every other stage: apps in
arrival order (FIFO, SLearn's work-conserving rule) take what still fits, so capacity nobody else wants is
never left idle while pilots run. A held ask that finds no room is rejected with ``SAMPLING_PILOTS``, which
``explain`` shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rm.core.model import ClusterSnapshot
from rm.core.policies.api import NOTHING, Input, NodeScorer, Stage, app_tiebreak
from rm.core.policies.drf import ask_importance
from rm.core.policies.node_index import choose_node

if TYPE_CHECKING:
    from rm.core.context import CycleContext

SAMPLING_PILOTS = "SAMPLING_PILOTS"  # held back until the app's pilot tasks finish (idle capacity only)


class SamplingStage:
    name: ClassVar[str] = "sampling"
    reads: frozenset[Input] = NOTHING

    def __init__(self, scorer: NodeScorer) -> None:
        self.scorer = scorer

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        gated = sorted((a for a in snap.apps.values() if a.held), key=app_tiebreak)
        for app in gated:
            for ask in sorted(app.held, key=ask_importance):
                while ctx.remaining(ask) > 0:
                    node = choose_node(ask, ctx, self.scorer)
                    if node is None:
                        ctx.reject(ask, SAMPLING_PILOTS, pilots_pending=True)
                        break
                    ctx.place(ask, node)
                    ctx.plan.counters["placed_while_sampling"] += 1


_: type[Stage] = SamplingStage
