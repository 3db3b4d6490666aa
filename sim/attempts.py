"""How long a simulated task attempt runs and how it ends: what the task processes and NodeManagers of a live
cluster decide and the simulator must draw. An attempt's work is its trace duration times ``Faults.slowdown``,
perturbed by seeded noise and stragglers; it fails part-way with ``Faults.failure_rate``; and on its node it
ends once that work is done at the speed the contention episodes leave it (``sim.slowdown``)."""

from __future__ import annotations

from collections.abc import Sequence
from random import Random

from sim.config import Faults
from sim.slowdown import NodeSpeeds, Slowdown

HORIZON_AFTER_LAST_ARRIVAL_S = 86_400.0
"""Drawn contention episodes start up to a day after the last job arrives."""


class Attempts:
    def __init__(self, faults: Faults, seed: int, last_arrival_s: float, node_names: Sequence[str]) -> None:
        self.faults = faults
        self.rng = Random(seed)  # the first draws of a run: durations, stragglers, failures, in launch order
        episodes: tuple[Slowdown, ...] = faults.episodes
        if faults.contention is not None:  # from a generator of their own, so the draws above stay as they were
            horizon = last_arrival_s + HORIZON_AFTER_LAST_ARRIVAL_S
            episodes += faults.contention.draw(Random(seed * 104_729 + 3), horizon, node_names)
        self.speeds = NodeSpeeds(episodes, node_names)

    def first_duration(self, base: float) -> float:
        """The work of a task's first attempt (a retry draws again): its trace duration, perturbed."""
        f = self.faults
        d = base * f.slowdown
        if f.noise > 0:
            d *= self.rng.lognormvariate(0.0, f.noise)
        if f.straggler_rate > 0 and self.rng.random() < f.straggler_rate:
            d *= f.straggler_factor
        return d

    def outcome(self, work: float) -> tuple[float, int]:
        """The work the attempt does and its exit status: all of it and 0, or part of it and 1 (it failed)."""
        f = self.faults
        if f.failure_rate > 0 and self.rng.random() < f.failure_rate:
            return work * self.rng.random(), 1
        return work, 0

    def end(self, node: str, start: float, work: float) -> float:
        """When ``work`` begun at ``start`` on ``node`` is done."""
        return self.speeds.end(node, start, work) if self.speeds else start + work
