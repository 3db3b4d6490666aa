"""SLearn's generic scheduler (GS, §5.1): weighted priority queues by estimated job size, FIFO inside each.

Every app with asks is put in one of N queues (queue 0 the highest priority): the second is the *sampling
queue*, the other N − 1 hold sizes in exponentially growing ranges (``rm.core.sizes.gs``: below ``q0_s`` in
queue 0, then up to q0 · E in queue 2, and so on), by the size estimate its ``estimator`` gives, read from the
app's terms
(``AppTerms.size``, reported by the RM's size tracker, which the same setting configures: ``size_setup``):

* ``slearn`` — a wide app behind its sampling gate sits in the *sampling queue* (the second highest), where
  only its pilot tasks are visible; once the pilots finished, its measured total task-seconds place it. An
  app with no estimate and no gate is thin (fewer than ``THIN_LIMIT`` tasks, never gated) or has only its AM
  container to start: it goes to the top queue (the thin bypass). Held tasks of gated apps run on idle
  capacity only, in the pipeline's last stage (``sampling``). Where the RM keeps a run history, a wide app
  that history estimates goes by that estimate until its own tasks refine it (it is then not gated when the
  history has been as accurate as pilots: ``rm.core.sizes_glue``); a thin one keeps the bypass;
* ``history`` — the 3Sigma-like history predictor's estimate at the app's start, never refined;
* ``las`` — least attained service: the task-seconds the app's finished tasks ran so far;
* ``oracle`` — the true total task-seconds (the simulator knows them; the live RM refuses it).

Under the baselines an app without an estimate waits in the sampling queue's place (queue 1), so a job of a
family never seen before is neither first nor last.

Across queues the capacity goes by weight (``next_queue``): each free container is offered to the waiting
queue whose use (dominant share of the cluster, this cycle's placements included) is lowest relative to its
weight, and there to the app at its head (higher app priority, then the oldest) — an app that cannot use it
(no node fits its ask, or its AM limit) steps aside for the next in that queue. A queue with nothing it can
place drops out for the rest of the cycle, so nothing stays idle while any queue's ask fits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from common.ids import AppId
from rm.core.model import AppView, AskView, ClusterSnapshot
from rm.core.policies.api import NOTHING, SIZES, Input, NodeScorer, PolicyArgs, Stage, app_tiebreak
from rm.core.policies.drf import ask_importance
from rm.core.policies.fifo import GreedyFiller
from rm.core.sizes.gs import PAPER_Q0_S, SAMPLING_QUEUE, THIN_QUEUE, GsConfig, bucket, next_queue

if TYPE_CHECKING:
    from rm.core.context import CycleContext

ESTIMATORS = ("slearn", "history", "las", "oracle")
"""What GS orders by; ``fifo`` (one queue) is the ``fifo`` scheduler."""


@dataclass(frozen=True, slots=True)
class GsArgs:
    """GS's settings: the estimator, and the queue layout (``rm.core.sizes.gs.GsConfig``; the paper's
    defaults: q0 = 1,000 task-seconds, E = 10, N = 10, weights falling tenfold). ``gs:slearn:200`` sets
    ``q0_s``: scale it to the workload (``relative_q0``), or every job of a small-job workload is in queue 0."""

    name: ClassVar[str] = "gs"
    knob: ClassVar[str] = "q0_s"
    estimator: str = "slearn"
    q0_s: float = PAPER_Q0_S
    multiplier: float = 10.0
    queues: int = 10
    weight_decay: float = 10.0

    def validate(self) -> None:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"unknown GS estimator {self.estimator!r}; known: {', '.join(ESTIMATORS)}")
        if self.queues < 2:
            raise ValueError(f"GS needs at least 2 queues (the top and the sampling queue), got {self.queues}")
        self.config()

    def config(self) -> GsConfig:
        return GsConfig(self.q0_s, self.multiplier, self.queues, self.weight_decay)

    def with_knob(self, text: str) -> GsArgs:
        try:
            q0 = float(text)
        except ValueError:
            raise ValueError(f"q0_s must be a number of task-seconds, got {text!r}") from None
        out = replace(self, q0_s=q0)
        out.validate()
        return out


def queue_of(app: AppView, estimator: str, cfg: GsConfig) -> int:
    """The GS queue of an app (see the module doc): the sampling queue is its own, so the size queues are
    the other N − 1 (sizes below q0 in queue 0, the next range in queue 2, ...)."""
    if app.held:
        return SAMPLING_QUEUE
    size = app.terms.size
    by_history = estimator == "slearn" and size is not None and size.source == "history" and not app.thin
    if size is None or (size.source != estimator and not by_history):
        return THIN_QUEUE if estimator == "slearn" else SAMPLING_QUEUE
    total = size.total_s if size.total_s is not None else size.remaining_s
    level = bucket(max(0.0, total) if math.isfinite(total) else math.inf, _size_queues(cfg))
    return level if level < SAMPLING_QUEUE else level + 1


@functools.cache
def _size_queues(cfg: GsConfig) -> GsConfig:
    """The layout of the size queues: all but the sampling queue."""
    return replace(cfg, queues=cfg.queues - 1)


class GsStage:
    """N weighted priority queues by estimated size, FIFO inside a queue (see the module doc)."""

    name: ClassVar[str] = "gs"

    def __init__(self, scorer: NodeScorer, args: GsArgs | None = None) -> None:
        self.scorer = scorer
        self.args = args or GsArgs()
        self.args.validate()
        self.cfg = self.args.config()
        self.estimator = self.args.estimator

    @property
    def reads(self) -> frozenset[Input]:
        # the oracle reads the exact sizes only a simulator has: the live RM refuses a pipeline reading them
        return frozenset({SIZES}) if self.estimator == "oracle" else NOTHING

    def queues(self, snap: ClusterSnapshot) -> tuple[list[list[AppView]], list[float]]:
        """Apps with asks by queue, each queue in FIFO order (higher app priority, then the oldest), and what
        each queue's apps hold (dominant share of the cluster)."""
        out: list[list[AppView]] = [[] for _ in range(self.cfg.queues)]
        used = [0.0] * self.cfg.queues
        for app in snap.apps.values():
            level = queue_of(app, self.estimator, self.cfg)
            used[level] += app.used.dominant_share(snap.capacity)
            if app.asks:
                out[level].append(app)
        for q in out:
            q.sort(key=lambda a: (-a.priority, *app_tiebreak(a)))
        return out, used

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        queues, used = self.queues(snap)
        filler = GreedyFiller(snap, ctx, self.scorer)
        heads = [0] * self.cfg.queues  # apps before the head of each queue are done for this cycle
        waiting = [bool(apps) for apps in queues]
        ordered: dict[AppId, list[AskView]] = {}  # each app's asks, most important first
        while True:
            q = next_queue(used, waiting, self.cfg)
            if q is None:
                break
            placed = self._offer(queues[q], heads, q, filler, ordered)
            if placed is None:
                waiting[q] = False
            else:
                used[q] += placed

    def _offer(self, apps: Sequence[AppView], heads: list[int], q: int, filler: GreedyFiller,
               ordered: dict[AppId, list[AskView]]) -> float | None:
        """One container to the first app of the queue that can use it: its dominant share, or None when no
        app of the queue can place anything now."""
        ctx = filler.ctx
        while heads[q] < len(apps):
            app = apps[heads[q]]
            asks = ordered.get(app.app_id)
            if asks is None:
                asks = ordered[app.app_id] = sorted(app.asks, key=ask_importance)
            for ask in asks:
                if ctx.remaining(ask) <= 0:
                    continue
                node = filler.best(ask) if filler.am_allowed(ask) else None
                if node is None:
                    filler.reject(ask)
                    continue
                filler.place(ask, node)
                return ask.capability.dominant_share(filler.capacity)
            heads[q] += 1  # nothing of this app fits now: the next in FIFO order
        return None


def gs_args(pipeline: Sequence[Stage]) -> GsArgs | None:
    """The GS settings of a pipeline's GS stage, if it has one."""
    for stage in pipeline:
        if isinstance(stage, GsStage):
            return stage.args
    return None


def size_setup(pipeline: Sequence[Stage]) -> tuple[bool, str]:
    """What the RM's size tracker must do under a pipeline, live and in the simulator: whether it gates wide
    apps to their pilots (the ``sampling`` stage is in it) and what estimate it reports (GS's estimator;
    ``slearn``, the tracker's own measurement, otherwise)."""
    sampling = any(s.name == "sampling" for s in pipeline)
    args = gs_args(pipeline)
    mode = args.estimator if args is not None and args.estimator in ("history", "las") else "slearn"
    return sampling, mode


_: type[Stage] = GsStage
_args: type[PolicyArgs] = GsArgs
