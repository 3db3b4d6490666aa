"""The generic scheduler's size queues (SLearn §5.1.1, §5.1.2, defaults from §5.2.1).

GS sorts jobs shortest-first by estimated total size, but coarsely: N priority queues cover exponentially
growing size ranges, queue q holding sizes in [Q_q^lo, Q_q^hi) with Q_0^lo = 0, Q_q^hi = q0 · E^q and the
last queue unbounded. Inside a queue jobs are served in arrival order, so small estimation errors do not
reshuffle jobs of similar size; across queues the capacity is shared by weight, the weight falling by a
constant factor per level, which keeps the long jobs of the low queues from starving.

The paper's defaults are q0 = 10^6 ms (1,000 s), E = 10, N = 10 and weights falling tenfold per level. The
highest queue also takes thin jobs (fewer than thinLimit tasks), which skip sampling; the second highest is
SLearn's sampling queue, where wide jobs' pilot tasks run.

q0 is an absolute time and only means something at the paper's job sizes: on a workload of much smaller jobs
every job falls in queue 0 and GS degenerates to FIFO. :func:`relative_q0` derives q0 from the workload's
own size distribution instead.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

THIN_QUEUE = 0
SAMPLING_QUEUE = 1
PAPER_Q0_S = 1000.0  # Q_0^hi = 10^6 ms


@dataclass(frozen=True)
class GsConfig:
    """Queue layout: ``q0_s`` the upper bound of the top queue (task-seconds), ``multiplier`` the growth E
    of each next bound, ``queues`` the number N of queues, ``weight_decay`` the factor by which a queue's
    weight is below the one above it."""

    q0_s: float
    multiplier: float = 10.0
    queues: int = 10
    weight_decay: float = 10.0

    def __post_init__(self) -> None:
        if not (self.q0_s > 0 and math.isfinite(self.q0_s)):
            raise ValueError(f"q0_s must be positive and finite, got {self.q0_s}")
        if not (self.multiplier > 1 and math.isfinite(self.multiplier)):
            raise ValueError(f"multiplier must be > 1, got {self.multiplier}")
        if self.queues < 1:
            raise ValueError(f"queues must be >= 1, got {self.queues}")
        if not (self.weight_decay >= 1 and math.isfinite(self.weight_decay)):
            raise ValueError(f"weight_decay must be >= 1, got {self.weight_decay}")


@functools.cache  # every app's queue is looked up each cycle; a config's bounds never change
def thresholds(cfg: GsConfig) -> tuple[float, ...]:
    """The upper bound Q_q^hi of every queue, in task-seconds: q0 · E^q, and ``inf`` for the last queue.

    Queue q holds sizes in [thresholds[q-1], thresholds[q]) (from 0 for q = 0).
    """
    bounds = [cfg.q0_s * cfg.multiplier**q for q in range(cfg.queues - 1)]
    return (*bounds, math.inf)


def bucket(size_s: float, cfg: GsConfig) -> int:
    """The queue index (0 = highest priority) for a job of estimated size ``size_s`` task-seconds."""
    if math.isnan(size_s) or size_s < 0:
        raise ValueError(f"size must be >= 0, got {size_s}")
    for q, hi in enumerate(thresholds(cfg)):
        if size_s < hi:
            return q
    return cfg.queues - 1


def weights(cfg: GsConfig) -> tuple[float, ...]:
    """Each queue's weight for sharing capacity across queues: 1 for the top queue, divided by
    ``weight_decay`` per level below (1, 0.1, 0.01, ... by default). Only the ratios matter."""
    return tuple(cfg.weight_decay ** (-q) for q in range(cfg.queues))


def next_queue(used: Sequence[float], waiting: Sequence[bool], cfg: GsConfig) -> int | None:
    """Which queue the next free resource goes to so the weighted sharing is kept: among the queues with
    work ``waiting``, the one whose ``used`` capacity is smallest relative to its weight (ties to the
    higher-priority queue). None when no queue waits."""
    if len(used) != cfg.queues or len(waiting) != cfg.queues:
        raise ValueError(f"need {cfg.queues} queues, got {len(used)} used and {len(waiting)} waiting")
    w = weights(cfg)
    candidates = [q for q in range(cfg.queues) if waiting[q]]
    if not candidates:
        return None
    return min(candidates, key=lambda q: (used[q] / w[q], q))


def _quantile(ordered: Sequence[float], p: float) -> float:
    """The p-quantile of sorted values, interpolating linearly between order statistics."""
    pos = p * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def relative_q0(history_sizes: Sequence[float], default: float, quantile: float = 0.5) -> float:
    """q0 scaled to the workload: the ``quantile`` (the median by default) of the positive, finite job
    sizes seen in history, or ``default`` when there are none."""
    if not 0.0 <= quantile <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {quantile}")
    sizes = sorted(s for s in history_sizes if s > 0 and math.isfinite(s))
    if not sizes:
        return default
    return _quantile(sizes, quantile)
