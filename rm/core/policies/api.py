"""The scheduler's extension points: one small Protocol each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from common.ids import AppId
from common.resources import Resources
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView

if TYPE_CHECKING:
    from rm.core.cycle import CycleContext


class ShareCalculator(Protocol):
    """Divides capacity among apps (DRF); the result is each app's fair share vector."""

    name: ClassVar[str]

    def shares(self, snap: ClusterSnapshot) -> Mapping[AppId, Resources]: ...


class NodeScorer(Protocol):
    """Scores a feasible node for an ask; higher is better (packing, locality)."""

    name: ClassVar[str]

    def score(self, ask: AskView, node: NodeView, ctx: CycleContext) -> float: ...


class Stage(Protocol):
    """One step of the scheduling pipeline: adds placements and rejections to the context."""

    name: ClassVar[str]

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None: ...


class AppOrder(Protocol):
    """Orders apps competing inside a queue (DRF, FIFO, EDF)."""

    name: ClassVar[str]

    def sort_key(self, app: AppView, ctx: CycleContext) -> tuple[float | int | str, ...]: ...


def app_tiebreak(app: AppView) -> tuple[float, str]:
    """Every ordering ends in (submit_time, app_id) so decisions replay exactly."""
    return (app.submit_time, app.app_id)


Pipeline = Sequence[Stage]
