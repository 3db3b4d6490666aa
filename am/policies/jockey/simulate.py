"""The job simulator behind C(p, a): many runs of a profiled job at a fixed allocation (Jockey §4.1).

A run is a list schedule of the job's tasks on ``a`` interchangeable unit slots. A stage becomes ready
when all its parents have finished (every edge is a barrier). Each task holds a slot for its
*service time*: an initialisation latency plus its run time, drawn from the stage's samples, plus, for
every failed attempt before the one that succeeds, another initialisation and a random fraction of
another run (attempts fail independently with the stage's ``failure_p``, up to ``max_attempts``).

Stages are dispatched in the order they could start with unlimited containers (ties in profile order),
and the tasks of a stage first fill the slots that are idle when it becomes ready (the latest-freed
ones, so earlier gaps stay open for stages dispatched later but ready sooner), then each takes the slot
that frees up first. Not modelled, as in the paper: input-size
variation and speculative duplicates; and here also container sizes (every task takes one unit).

Runs are vectorised across the run axis with numpy; the service times are drawn once and reused at every
allocation (common random numbers), so the differences between allocations are not sampling noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from am.policies.jockey.profile import JobProfile

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

DEFAULT_MAX_ATTEMPTS = 10


@dataclass(frozen=True, slots=True, eq=False)
class Draws:
    """Service times of every task in every run: column ``offsets[s] + k`` is task ``k`` of stage ``s``."""

    service_s: FloatArray  # (runs, tasks)
    stage_of: IntArray  # (tasks,)
    offsets: tuple[int, ...]  # per stage, profile order; plus the total at the end

    @property
    def runs(self) -> int:
        return int(self.service_s.shape[0])


def _pick(samples: tuple[float, ...], shape: tuple[int, int], rng: np.random.Generator) -> FloatArray:
    if len(samples) == 1 or min(samples) == max(samples):
        return np.full(shape, samples[0], dtype=np.float64)
    arr = np.asarray(samples, dtype=np.float64)
    return arr[rng.integers(0, len(arr), size=shape)]


def draw(
    profile: JobProfile, runs: int, rng: np.random.Generator, *, max_attempts: int = DEFAULT_MAX_ATTEMPTS
) -> Draws:
    """Draw every task's slot time for ``runs`` runs."""
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    blocks: list[FloatArray] = []
    stage_of: list[IntArray] = []
    offsets = [0]
    for i, s in enumerate(profile.stages):
        shape = (runs, s.tasks)
        service = _pick(s.init_s, shape, rng) + _pick(s.run_s, shape, rng)
        if s.failure_p > 0:
            failures = np.minimum(rng.geometric(1.0 - s.failure_p, size=shape) - 1, max_attempts - 1)
            for j in range(int(failures.max())):
                failed = failures > j
                wasted = _pick(s.init_s, shape, rng) + rng.random(shape) * _pick(s.run_s, shape, rng)
                service = service + np.where(failed, wasted, 0.0)
        blocks.append(service)
        stage_of.append(np.full(s.tasks, i, dtype=np.int64))
        offsets.append(offsets[-1] + s.tasks)
    return Draws(np.concatenate(blocks, axis=1), np.concatenate(stage_of), tuple(offsets))


def dispatch_order(profile: JobProfile) -> list[int]:
    """Stage indices by the time they could start with unlimited containers, ties in profile order."""
    start = profile.earliest_start_s()
    return sorted(range(len(profile.stages)), key=lambda i: (start[i], i))


def schedule(profile: JobProfile, draws: Draws, allocation: int) -> FloatArray:
    """Finish time of every task in every run at ``allocation`` slots: shape ``(runs, tasks)``."""
    if allocation < 1:
        raise ValueError(f"allocation must be >= 1 unit, got {allocation}")
    runs = draws.runs
    rows = np.arange(runs)
    free = np.zeros((runs, allocation), dtype=np.float64)  # when each slot frees up (a multiset per run)
    finish = np.empty_like(draws.service_s)
    stage_end: dict[int, FloatArray] = {}
    for s in dispatch_order(profile):
        stage = profile.stages[s]
        parents = [stage_end[profile.index(p)] for p in stage.parents]
        ready = np.maximum.reduce(parents) if parents else np.zeros(runs, dtype=np.float64)
        lo, hi = draws.offsets[s], draws.offsets[s + 1]
        n = hi - lo
        service = draws.service_s[:, lo:hi]
        counts = (free <= ready[:, None]).sum(axis=1)
        m = min(n, int(counts.min()))
        if m > 0:
            # the first m tasks start as soon as the stage is ready, on the latest-freed idle slots
            ends = ready[:, None] + service[:, :m]
            free.sort(axis=1)
            cols = counts[:, None] - m + np.arange(m)[None, :]
            free[rows[:, None], cols] = ends
            finish[:, lo : lo + m] = ends
        for k in range(m, n):
            # the rest, one by one, on the slot that frees up first
            slot = free.argmin(axis=1)
            end = np.maximum(free[rows, slot], ready) + service[:, k]
            free[rows, slot] = end
            finish[:, lo + k] = end
        stage_end[s] = finish[:, lo:hi].max(axis=1)
    return finish
