"""Leftover scheduling (Carbyne): capacity that DEFAULT asks within fair shares did not take.

Runs after a DRF stage that served the DEFAULT asks of yielding jobs (``AppView.yielding``: they ask
ALTRUISTIC now, so by their AM's plan they are on time) up to each one's fair share, and every other job's
DEFAULT asks as DRF does, work conservation included (``DrfStage`` with ``within_share``). What is still
free is the leftover: what jobs yielded by asking ALTRUISTIC for tasks that need not start now, plus what
their shares could not use. It goes to the asks still waiting — ALTRUISTIC ones, and the DEFAULT asks of
yielding jobs already at their share — job by job. A job that yields nothing (one behind its plan, a stock
AM, or P(altruism) = 0) is thus scheduled as by DRF, and a cluster of them exactly as by DRF. Two orders:

* ``srtf`` (default): jobs in the stage's app order — ``RemainingWorkOrder`` unless another ``AppOrder``
  is given: closest to completion first, ascending by the remaining work their AM reported, a job that
  reports none last — each placing its asks (by priority, DEFAULT first, larger first) by the packer's
  score while they fit; the order sees each job with only the asks this stage serves; then
* ``pack``: the (ask, node) pairs that align best with the free resources, across all jobs.

With a ``cap`` the srtf order is bounded: a job takes leftover only while its dominant share stays within
``cap`` times its fair one, so the leftover spreads over more of the jobs closest to completion; a second,
uncapped pass in the same order then takes whatever still fits (``cap`` = inf: no bound, Carbyne's plain
SRTF). The cap is the stage's typed setting, ``LeftoverArgs``. Every placement made here is marked ``from_leftover``. The stage is work-conserving: it stops only
when no remaining ask fits any node (queue maximum capacities still apply). Shapes that stopped fitting are
remembered for the rest of the cycle, since free capacity only shrinks within one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

from common.ids import QueuePath
from common.resources import Resources
from rm.core.context import CycleContext
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView
from rm.core.plan import NO_CAPACITY_NOW, QUEUE_AT_MAX
from rm.core.policies.api import NOTHING, SHARES, AppOrder, Input, NodeScorer, PolicyArgs, Stage, app_tiebreak
from rm.core.policies.node_index import node_index
from rm.core.policies.tetris import alignment, locality_allows

LeftoverOrder = Literal["srtf", "pack"]
_ZERO = Resources()


def check_cap(cap: float | None) -> None:
    """A leftover cap is a multiple of the fair share, at least 1 (None or inf: no cap)."""
    if cap is not None and not cap >= 1.0:
        raise ValueError(f"leftover cap must be at least 1 (a multiple of the fair share), got {cap!r}")


def parse_cap(text: str) -> float:
    """A leftover cap from text: a number, or 'none' for no bound (inf)."""
    if text.strip().lower() == "none":
        return math.inf
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"leftover cap must be a number >= 1 or 'none', got {text!r}") from None


LEFTOVER_ORDERS = ("remaining-work", "estimate")
"""The srtf pass's job orders: the remaining work each AM reports (``RemainingWorkOrder``), or the RM's own
size estimate, bucketed (``size_order.EstimateOrder``)."""


@dataclass(frozen=True, slots=True)
class LeftoverArgs:
    """The leftover stage's settings: ``cap`` × its fair share bounds what one job takes before the next job
    in order gets a turn (None or inf: no bound). ``carbyne:1.5`` sets it in the simulator, the
    ``shepherd.resourcemanager.carbyne.leftover-cap`` setting live. ``order`` is the srtf pass's job order
    (``LEFTOVER_ORDERS``); the ``carbyne:estimate`` scheduler names the RM's estimate."""

    name: ClassVar[str] = "leftover"
    knob: ClassVar[str] = "cap"
    cap: float | None = None
    order: str = "remaining-work"

    def validate(self) -> None:
        check_cap(self.cap)
        if self.order not in LEFTOVER_ORDERS:
            raise ValueError(f"unknown leftover order {self.order!r}; known: {', '.join(LEFTOVER_ORDERS)}")

    def with_knob(self, text: str) -> LeftoverArgs:
        return replace(self, cap=parse_cap(text))


class RemainingWorkOrder:
    """Closest to completion first: the least remaining work the app's asks report (what its AM estimates),
    an app that reports none last, then (submit_time, app_id). The leftover stage's default order."""

    name: ClassVar[str] = "remaining-work"
    reads: frozenset[Input] = NOTHING  # the AM's own estimate travels on its asks

    def sort_key(self, app: AppView, ctx: CycleContext) -> tuple[bool, float, float, str]:
        work = min((a.remaining_work_s for a in app.asks), default=0.0)
        return (work <= 0, work, *app_tiebreak(app))


class LeftoverStage:
    name: ClassVar[str] = "leftover"

    def __init__(
        self,
        scorer: NodeScorer,
        mode: LeftoverOrder = "srtf",
        ask_types: frozenset[str] = frozenset({"ALTRUISTIC", "DEFAULT"}),
        cap: float | None = None,
        *,
        order: AppOrder | None = None,
    ) -> None:
        if mode not in ("srtf", "pack"):
            raise ValueError(f"unknown leftover order {mode!r}; known: srtf, pack")
        check_cap(cap)
        self.scorer = scorer
        self.mode = mode
        self.ask_types = ask_types
        self.cap = None if cap == math.inf else cap
        self.order: AppOrder = RemainingWorkOrder() if order is None else order

    @property
    def reads(self) -> frozenset[Input]:
        return self.order.reads | (NOTHING if self.cap is None else {SHARES})

    def capped(self, cap: float) -> LeftoverStage:
        return LeftoverStage(self.scorer, self.mode, self.ask_types, cap, order=self.order)

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        _Leftover(self, snap, ctx).run()


class _Leftover:
    def __init__(self, stage: LeftoverStage, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        self.stage = stage
        self.snap = snap
        self.ctx = ctx
        self.capacity = snap.capacity
        self.nodes = [n for n in snap.nodes.values() if n.schedulable]
        self.unfit: set[Resources] = set()  # shapes (with locality relaxed) that no longer fit anywhere
        self.lineages: dict[QueuePath, list[QueuePath]] = {}
        self.limits: dict[QueuePath, dict[str, float]] = {}
        self.queue_used: dict[QueuePath, Resources] = {}
        held = [(app.queue, app.used) for app in snap.apps.values()]
        held += [(snap.apps[p.app_id].queue, p.resource) for p in ctx.plan.placements]
        for path, amount in held:
            for q in self._lineage(path):
                self.queue_used[q] = self.queue_used.get(q, _ZERO) + amount

    def _lineage(self, path: QueuePath) -> list[QueuePath]:
        out = self.lineages.get(path)
        if out is None:
            out = self.lineages[path] = []
            q: QueuePath | None = path
            while q is not None and q in self.snap.queues:
                out.append(q)
                q = self.snap.queues[q].parent
        return out

    def _limit(self, q: QueuePath) -> dict[str, float]:
        limit = self.limits.get(q)
        if limit is None:
            view = self.snap.queues[q]
            limit = {r: self.capacity.get(r) * view.abs_max_capacity for r in self.capacity.types()}
            self.limits[q] = limit
        return limit

    def _queue_room(self, app: AppView, ask: AskView) -> bool:
        demand = ask.capability.amounts
        for q in self._lineage(app.queue):
            limit = self._limit(q)
            held = self.queue_used.get(q, _ZERO).amounts
            # (held + demand) over the limit in a type; a type both lack is 0, never over a limit >= 0
            if any(v + demand.get(r, 0) > limit.get(r, 0) + 1e-9 for r, v in held.items()) or any(
                v > limit.get(r, 0) + 1e-9 for r, v in demand.items() if r not in held
            ):
                used = self.queue_used.get(q, _ZERO) + ask.capability
                self.ctx.reject(ask, QUEUE_AT_MAX, queue=q, used=used.to_dict())
                return False
        return True

    def _candidates(self) -> list[tuple[AppView, AskView]]:
        """Waiting asks of the stage's types; DEFAULT ones only from apps that are yielding."""
        out = []
        types = self.stage.ask_types
        for app in self.snap.apps.values():
            yielding = app.yielding
            for ask in app.asks:
                if ask.ask_type in types and self.ctx.remaining(ask) > 0 and (
                        ask.ask_type != "DEFAULT" or (yielding and not ask.is_am)):
                    out.append((app, ask))
        return out

    def _feasible(self, app: AppView, ask: AskView) -> list[NodeView]:
        return [n for n in node_index(self.ctx).candidates(ask)
                if n.node_id not in app.blacklist and locality_allows(ask, n)
                and ask.capability.fits_in(self.ctx.available(n))]

    def _place(self, app: AppView, ask: AskView, node: NodeView) -> None:
        self.ctx.place(ask, node, from_leftover=True)
        for q in self._lineage(app.queue):
            self.queue_used[q] = self.queue_used.get(q, _ZERO) + ask.capability

    def _fill(self, app: AppView, ask: AskView, limit: float | None = None) -> None:
        """Place as many containers of ``ask`` as fit (and keep the app's dominant share within ``limit``)."""
        relaxed = ask.relax_locality or not (ask.nodes or ask.racks)
        # ``unfit`` only grows when this loop stops, so one look before it is enough
        if self.ctx.remaining(ask) > 0 and not (relaxed and ask.capability in self.unfit):
            while self.ctx.remaining(ask) > 0:
                if limit is not None and (self.ctx.app_used(app.app_id) + ask.capability).dominant_share(
                        self.capacity) > limit + 1e-9:
                    return  # the uncapped pass may still place it
                if not self._queue_room(app, ask):
                    return
                node = node_index(self.ctx).choose(ask, self.stage.scorer)
                if node is None:
                    if relaxed:
                        self.unfit.add(ask.capability)
                    break
                self._place(app, ask, node)
        if self.ctx.remaining(ask) > 0:
            self.ctx.reject(ask, NO_CAPACITY_NOW, asked=ask.capability.to_dict(), stage="leftover")

    def run(self) -> None:
        candidates = self._candidates()
        if not candidates:
            return
        if self.stage.mode == "pack":
            self._pack(candidates)
        self._srtf(candidates)

    def _srtf(self, candidates: list[tuple[AppView, AskView]]) -> None:
        """Jobs in the stage's app order (by remaining work, ascending, by default), each seen with the asks
        this stage serves; within a job, by priority, then the larger (better packing) asks first."""
        by_app: dict[str, list[tuple[AppView, AskView]]] = {}
        for item in candidates:
            by_app.setdefault(item[0].app_id, []).append(item)
        sort_key, ctx = self.stage.order.sort_key, self.ctx

        def job_key(items: list[tuple[AppView, AskView]]) -> tuple[float | int | str, ...]:
            return sort_key(replace(items[0][0], asks=tuple(a for _, a in items)), ctx)

        ordered = sorted(by_app.values(), key=job_key)
        for items in ordered:
            items.sort(key=lambda it: (it[1].priority, it[1].ask_type != "DEFAULT",
                                       -it[1].capability.dominant_share(self.capacity), it[1].allocation_request_id))
        cap = self.stage.cap
        if cap is not None:
            for items in ordered:
                fair = self.ctx.fair_share(items[0][0].app_id)
                if fair is not None:
                    limit = cap * fair.dominant_share(self.capacity)
                    for app, ask in items:
                        self._fill(app, ask, limit)
        for items in ordered:
            for app, ask in items:
                self._fill(app, ask)

    def _pack(self, candidates: list[tuple[AppView, AskView]]) -> None:
        """Greedily place the best-aligned (ask, node) pair across all jobs until nothing fits."""
        while True:
            best: tuple[float, AppView, AskView, NodeView] | None = None
            for app, ask in candidates:
                if self.ctx.remaining(ask) <= 0 or ask.capability in self.unfit:
                    continue
                for node in self._feasible(app, ask):
                    score = alignment(ask.capability, self.ctx.available(node), self.capacity)
                    if best is None or score > best[0]:
                        best = (score, app, ask, node)
            if best is None:
                return
            _, app, ask, node = best
            if not self._queue_room(app, ask):
                candidates = [c for c in candidates if c[1] is not ask]
                continue
            self._place(app, ask, node)


_: type[Stage] = LeftoverStage
_order: type[AppOrder] = RemainingWorkOrder
_args: type[PolicyArgs] = LeftoverArgs
