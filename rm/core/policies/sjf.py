"""Shortest job first: apps by remaining size, smallest first, each taking all it can.

Carbyne's upper bound for average job completion time: the job with the shortest remaining critical path
(the Critical Path Method over its DAG, with exact task durations) gets every container that fits before
the next. The size is ``AppView.size_hint_s`` (the order declares it reads ``SIZES``); the simulator fills
it in exactly, and an app without one counts as infinitely large, so among unknown sizes the order falls
back to FIFO. The live RM has no size signal yet, so it refuses a pipeline that reads sizes. Ties go to the higher app
priority, then ``(submit_time, app_id)``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from rm.core.model import AppView
from rm.core.policies.api import SIZES, AppOrder, Input, NodeScorer, Stage, app_tiebreak
from rm.core.policies.drf import SortKey
from rm.core.policies.fifo import OrderedStage

if TYPE_CHECKING:
    from rm.core.context import CycleContext


class SjfOrder:
    """Smallest remaining size first (unknown sizes last), then higher priority, then the oldest."""

    name: ClassVar[str] = "sjf"
    reads: frozenset[Input] = frozenset({SIZES})

    def sort_key(self, app: AppView, ctx: CycleContext) -> SortKey:
        size = app.size_hint_s if app.size_hint_s is not None else math.inf
        return (size, -app.priority, *app_tiebreak(app))


class SjfStage(OrderedStage):
    """Shortest (remaining critical path) job first, each job taking all it can."""

    name: ClassVar[str] = "sjf"

    def __init__(self, scorer: NodeScorer) -> None:
        super().__init__(scorer, SjfOrder())


_order: type[AppOrder] = SjfOrder
_stage: type[Stage] = SjfStage
