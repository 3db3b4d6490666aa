"""The scheduler's extension points: one small Protocol each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable

from common.ids import AppId
from common.resources import Resources
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView

if TYPE_CHECKING:
    from rm.core.context import CycleContext

Input = Literal["shares", "sizes", "estimates", "wakes"]
"""What a policy reads from the cycle beyond the snapshot's usage and asks, so a driver provides it:

* ``shares`` — ``CycleContext.fair_share``: the cycle must compute fresh fair shares (``run_cycle(shares=)``);
* ``sizes`` — ``AppView.size_hint_s``: the driver must keep every app's remaining size current (the simulator
  knows it exactly; the live RM has no size signal yet, so a pipeline that reads sizes is refused there);
* ``estimates`` — ``AppTerms.size`` as the RM's own size tracker measures it (SLearn's signal, live and
  simulated): the simulator must not hand the RM exact sizes, and must give it the job files it reads;
* ``wakes`` — the policy leaves asks waiting until a time and returns ``WakeAt`` hints: the driver must run a
  cycle at those times even if nothing else happens.
"""
SHARES: Input = "shares"
SIZES: Input = "sizes"
ESTIMATES: Input = "estimates"
WAKES: Input = "wakes"
NOTHING: frozenset[Input] = frozenset()


class PolicyArgs(Protocol):
    """A policy's typed settings: a frozen dataclass, registered under the policy's name and checked in full
    by ``validate`` before anything is built. ``knob`` names the field that the short ``NAME:VALUE`` syntax
    sets (``carbyne:1.5``, ``tetris:0.25``); ``with_knob`` returns the args with that field read from text."""

    name: ClassVar[str]
    knob: ClassVar[str]

    def validate(self) -> None: ...

    def with_knob(self, text: str) -> PolicyArgs: ...


class ShareCalculator(Protocol):
    """Divides capacity among apps (DRF); the result is each app's fair share vector."""

    name: ClassVar[str]

    def shares(self, snap: ClusterSnapshot) -> Mapping[AppId, Resources]: ...


class NodeScorer(Protocol):
    """Scores a feasible node for an ask; higher is better (packing, locality)."""

    name: ClassVar[str]

    def score(self, ask: AskView, node: NodeView, ctx: CycleContext) -> float: ...


@runtime_checkable
class LinearScorer(NodeScorer, Protocol):
    """The vectorised form of a ``NodeScorer``: a score linear in the node's free amounts, plus a bonus by
    locality level. The cycle's node index (``node_index.py``) then scores every node at once over its
    free-capacity matrix and keeps each demand shape's scores up to date node by node, instead of calling
    ``score`` per node. The two forms must agree bit for bit:

        score(ask, node, ctx) == sum(w × free(node)[r] for r, w in weights(demand, capacity))  # in that order,
                                 + locality_bonus(level)                                        # from 0.0

    with ``free`` the node's free amounts this cycle (``ctx.available``) and ``capacity`` the cluster's. The
    bonus is added only when the ask names nodes or racks (a level above ``OFF_SWITCH``).
    """

    def weights(self, demand: Resources, capacity: Resources) -> list[tuple[str, float]]: ...

    def locality_bonus(self, level: int) -> float: ...


class NodeFilter(Protocol):
    """Rules a node out for an ask, beyond the built-in checks (schedulable, blacklist, strict locality,
    room): returns a constant rejection reason, or None when the node may take the ask."""

    name: ClassVar[str]

    def check(self, ask: AskView, node: NodeView, ctx: CycleContext) -> str | None: ...


@runtime_checkable
class VectorNodeFilter(NodeFilter, Protocol):
    """The vectorised form of a ``NodeFilter``: which of ``nodes`` (the node index's schedulable nodes, in
    its order) may take the ask, as one boolean per node; it must agree with ``check``."""

    def allows(self, ask: AskView, nodes: Sequence[NodeView], ctx: CycleContext) -> Sequence[bool]: ...


class AppOrder(Protocol):
    """Orders apps competing inside a queue or a stage (DRF, FIFO, SJF, remaining work); ``reads`` says
    what the key reads beyond the snapshot (``SIZES`` for a size order)."""

    name: ClassVar[str]
    reads: frozenset[Input]

    def sort_key(self, app: AppView, ctx: CycleContext) -> tuple[float | int | str, ...]: ...


class Stage(Protocol):
    """One step of the scheduling pipeline: adds placements and rejections to the context. ``reads`` says
    what the stage (with its order) reads from the cycle, so a driver knows what to provide."""

    name: ClassVar[str]

    @property
    def reads(self) -> frozenset[Input]: ...

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None: ...


def app_tiebreak(app: AppView) -> tuple[float, str]:
    """Every ordering ends in (submit_time, app_id) so decisions replay exactly."""
    return (app.submit_time, app.app_id)


def pipeline_reads(stages: Iterable[Stage]) -> frozenset[Input]:
    """Everything a pipeline's stages read from the cycle."""
    out: frozenset[Input] = NOTHING
    for s in stages:
        out = out | s.reads
    return out


Pipeline = Sequence[Stage]


def queue_order(pipeline: Pipeline) -> AppOrder | None:
    """The order a pipeline's first ordered stage ranks apps by (its fair-share order): what "position in
    queue" means for it."""
    for stage in pipeline:
        order = getattr(stage, "order", None)
        if order is not None:
            return order  # type: ignore[no-any-return]
    return None
