"""An example of extending the scheduler at each of its extension points, in one file: an admission rule, an
app order, and a stage that uses the order, bundled as the scheduler ``newest-first``. ``register`` is the
registry line; after it the name works live (``shepherd.resourcemanager.scheduler``), in the simulator
(``shepherd sim --policies newest-first``) and in the harness, with the same decisions.
"""

from __future__ import annotations

from typing import ClassVar

from common.ids import QueuePath
from rm.core.admission import Admission, AdmissionDecision, Admit, Refuse
from rm.core.context import CycleContext
from rm.core.events import LedgerView
from rm.core.model import AppView
from rm.core.policies.api import NOTHING, AppOrder, Input, NodeScorer, Stage
from rm.core.policies.fifo import FifoStage
from rm.core.policies.registry import (
    ADMISSIONS,
    ORDERS,
    SCHEDULERS,
    STAGES,
    PipelineArgs,
    SchedulerArgs,
    Settings,
    StageEntry,
)
from rm.core.state_types import SubmitSpec

REFUSED_USER = "mallory"


class NoMallory:
    """Admits everybody's apps but mallory's, and says whose would be admitted."""

    name: ClassVar[str] = "no-mallory"

    def admit(self, spec: SubmitSpec, queue: QueuePath, ledger: LedgerView, now: float) -> AdmissionDecision:
        if spec.user == REFUSED_USER:
            return Refuse(f"{REFUSED_USER} may not run here", {"user": "anyone else"})
        return Admit(spec.terms)


class NewestFirst:
    """The most recently submitted app first (higher priority first among equals)."""

    name: ClassVar[str] = "newest-first"
    reads: frozenset[Input] = NOTHING

    def sort_key(self, app: AppView, ctx: CycleContext) -> tuple[float | int | str, ...]:
        return (-app.priority, -app.submit_time, app.app_id)


def newest_first_stage(scorer: NodeScorer, settings: Settings) -> Stage:
    """FIFO's stage, which lets one app take all it can before the next, in newest-first order."""
    return FifoStage(scorer, NewestFirst())


def register() -> None:
    ADMISSIONS[NoMallory.name] = NoMallory
    ORDERS[NewestFirst.name] = NewestFirst
    STAGES["newest-first"] = StageEntry(newest_first_stage)
    SCHEDULERS["newest-first"] = SchedulerArgs(PipelineArgs(stages=("newest-first",)), admission=NoMallory.name)


def unregister() -> None:
    for table, name in ((ADMISSIONS, NoMallory.name), (ORDERS, NewestFirst.name), (STAGES, "newest-first"),
                        (SCHEDULERS, "newest-first")):
        table.pop(name, None)  # type: ignore[attr-defined]


_admission: type[Admission] = NoMallory
_order: type[AppOrder] = NewestFirst
