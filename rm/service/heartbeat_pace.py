"""How soon after its last heartbeat a NodeManager may report a completed container out of band.

A NodeManager that reports a completion at once, instead of at its next heartbeat, hands the container's
resources back to the scheduler up to an interval sooner (YARN's ``sendOutofBandHeartBeat``): on a cluster of
short tasks that is most of each slot's idle time. But every heartbeat costs the RM a call (about half a
millisecond of its core, mostly the RPC runtime) whatever it carries, so a beat that reports one completion
costs as much as one that reports thirty. The RM names the gap in every heartbeat answer, per node, from what
it can afford:

* **A quiet RM** (its process used less than ``busy`` of one core lately) takes every completion early:
  the gap is ``floor_s`` for every node, so a burst of completions still makes one heartbeat, not one each.
* **A busy RM** takes only beats worth a call: a node's gap is the time it takes, at the rate its containers
  have been completing, for ``batch`` completions to be ready to report (at least ``floor_s``; off, gap 0,
  once it would reach the interval). Every ``period_s`` the RM reads its own CPU time: above ``busy`` the
  batch doubles (from 1 up to ``max_batch``), below ``idle`` it halves, and under one the RM is quiet again.
  So a node turning over dozens of short containers a second still reports within ``floor_s``, a node whose
  containers end every few seconds keeps to its interval, and at the most a busy RM answers beats that each
  carry ``max_batch`` completions, which cost it less per container than the scheduling they lead to.

The band between ``idle`` and ``busy`` keeps the batch from swinging at every sample.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

OFF = 0.0


@dataclass(frozen=True)
class PaceConfig:
    floor_s: float = 0.1  # the shortest gap: a burst of completions still makes one heartbeat, not one each
    max_batch: float = 8.0  # the most completions a busy RM asks an out-of-band beat to carry
    busy: float = 0.7  # fraction of one core above which the batch doubles
    idle: float = 0.5  # fraction below which it halves
    period_s: float = 1.0  # how often the RM's CPU is read
    rate_tau_s: float = 2.0  # a node's completion rate is an exponential average over about this long


@dataclass
class _NodeRate:
    at: float
    per_s: float = 0.0


class OutOfBandPace:
    """The out-of-band gap the RM announces to each node; ``gap_s`` is called from each heartbeat answer."""

    def __init__(self, interval_s: float, config: PaceConfig = PaceConfig(),
                 cpu: Callable[[], float] = time.process_time) -> None:
        self.interval_s = interval_s
        self.config = config
        self._cpu = cpu
        self.batch = 0.0  # completions an out-of-band beat is to carry; 0: any (a quiet RM)
        self._at: float | None = None
        self._cpu_at = 0.0
        self.load = 0.0  # the RM's CPU over the last period, in cores
        self._nodes: dict[str, _NodeRate] = {}

    def gap_s(self, node_id: str, completed: int, now: float) -> float:
        """The gap to announce to ``node_id``, whose heartbeat at monotonic time ``now`` reported ``completed``
        completed containers (``OFF``: report completions at the interval)."""
        self._read_load(now)
        rate = self._nodes.get(node_id)
        if rate is None:
            rate = self._nodes[node_id] = _NodeRate(at=now)
        elif now > rate.at:
            seen = completed / (now - rate.at)
            rate.per_s += (1 - math.exp(-(now - rate.at) / self.config.rate_tau_s)) * (seen - rate.per_s)
            rate.at = now
        if self.batch == 0:
            gap = self.config.floor_s
        elif rate.per_s <= 0:
            return OFF
        else:
            gap = max(self.config.floor_s, self.batch / rate.per_s)
        return OFF if gap >= self.interval_s else gap

    def forget(self, node_id: str) -> None:
        self._nodes.pop(node_id, None)

    def _read_load(self, now: float) -> None:
        if self._at is None:
            self._at, self._cpu_at = now, self._cpu()
            return
        if now - self._at < self.config.period_s:
            return
        cpu = self._cpu()
        self.load = (cpu - self._cpu_at) / (now - self._at)
        self._at, self._cpu_at = now, cpu
        if self.load > self.config.busy:
            self.batch = min(max(self.batch * 2, 1.0), self.config.max_batch)
        elif self.load < self.config.idle:
            self.batch = self.batch / 2 if self.batch > 1 else 0.0
