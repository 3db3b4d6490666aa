"""The MRM evaluation's workload (MRM §6.1): MapReduce jobs of four types in Table 1's nine size bins, on a
40-node cluster of 2 map + 2 reduce slots per node, arriving as a Poisson process.

Every job has a map phase and, in bins 4-9, a reduce phase (shuffle and reduce merged, as the paper's
"Reduce" estimate). A slot is one unit; a phase runs at most ``min(tasks, 80)`` units at once (the cluster's
map, or reduce, slots). Per task, seconds, times ``SCALE``:

* **grep** (loadgen, keepmap 0.1%): 32-128 MB of input per map, map ``5 + 0.30·MB``; the reducers see a
  thousandth of the input, ``6 + 0.5·MB`` of their share;
* **sort** (loadgen, keepmap = keepreduce = 100%): 32-128 MB per map, map ``6 + 0.45·MB``; every byte is
  shuffled and merged, reduce ``8 + 0.35·MB`` of its share;
* **wordcount**: 64 MB of text per map, CPU-bound, map ``8 + 0.9·MB``; the combiner keeps 5%, reduce
  ``6 + 1.0·MB`` of its share;
* **pi** (Monte Carlo): 0.2-1.0 billion samples per map, map ``3 + 50`` s per billion; one short reduce per
  reducer, ``4`` s. Its size feature (``input_bytes``) is its sample count, its only size parameter.

Noise, so that jobs are similar but never identical: a factor per run (the shared cluster's conditions,
log-normal σ 0.05), per job (data skew, placement; σ 0.08) and per task (σ 0.2); a straggler (1.5-3x) with
probability 2%; a re-execution (the failed attempt ran a uniform fraction of the task, then it runs again)
with probability 5% per map and 1% per reduce (the paper's 410 map and 4 reduce re-executions per 100 jobs at
low load). A phase's work is the sum of its task attempts (unit-seconds); its longest task is the longest
chain of attempts of one task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from random import Random

from rm.core.deadlines.estimate import JobFeatures, PhaseShape, RunRecord

NODES = 40
SLOTS = 2 * NODES  # map slots, and as many reduce slots
CAPACITY = 2 * SLOTS  # units: every slot of the cluster
SCALE = 1.8  # task-time scale: at the 40 s gap the cluster is about 90% busy (the paper's heavy load)
MB = 1e6

BINS: tuple[tuple[int, int, int, int], ...] = (
    # jobs per 100, maps from, maps to, reduces (Table 1)
    (38, 1, 1, 0),
    (16, 2, 6, 0),
    (14, 7, 30, 0),
    (8, 31, 60, 6),
    (6, 61, 120, 12),
    (6, 121, 180, 15),
    (4, 181, 240, 18),
    (4, 241, 360, 24),
    (4, 361, 480, 30),
)
KINDS = ("grep", "sort", "wordcount", "pi")


@dataclass(frozen=True, slots=True)
class Kind:
    map_start: float  # seconds
    map_per_mb: float  # seconds per MB of the map's input (pi: per billion samples)
    keep: float  # of the map input that reaches the reducers
    reduce_start: float
    reduce_per_mb: float


TYPES: dict[str, Kind] = {
    "grep": Kind(5.0, 0.30, 0.001, 6.0, 0.5),
    "sort": Kind(6.0, 0.45, 1.0, 8.0, 0.35),
    "wordcount": Kind(8.0, 0.9, 0.05, 6.0, 1.0),
    "pi": Kind(3.0, 50.0, 0.0, 4.0, 0.0),
}


@dataclass(frozen=True, slots=True)
class MrJob:
    """One job: what a client knows before it runs (``features``) and what it then takes (``work``)."""

    index: int
    arrival: float  # seconds
    bin: int  # 1..9
    features: JobFeatures
    work: tuple[float, ...]  # unit-seconds per phase (map, then reduce when it has one)
    longest: tuple[float, ...]  # seconds, the longest task (with its re-executions) per phase
    reexec: tuple[int, ...]  # re-executed tasks per phase
    task_s: tuple[tuple[float, ...], ...] = ()  # per phase, each task's elapsed time (for the simulator)

    @property
    def tasks(self) -> tuple[int, ...]:
        return tuple(p.tasks for p in self.features.phases)

    @property
    def widths(self) -> tuple[float, ...]:
        return tuple(float(min(t, SLOTS)) for t in self.tasks)

    @property
    def rates(self) -> tuple[float, ...]:
        """The most units each phase can actually use at once: its width, or fewer when its longest task
        is longer than its work spread over the width."""
        return tuple(min(w, work / max(long, 1e-9)) for w, work, long in
                     zip(self.widths, self.work, self.longest, strict=True))

    @property
    def total(self) -> float:
        return sum(self.work)

    def record(self) -> RunRecord:
        return RunRecord(self.features, self.work, self.longest)


def _lognormal(rng: Random, sigma: float) -> float:
    return math.exp(rng.gauss(-0.5 * sigma * sigma, sigma))


def _task(rng: Random, base: float, factor: float, p_reexec: float) -> tuple[float, float, int]:
    """(work, the task's elapsed time, re-executions) of one task of ``base`` seconds."""
    t = base * factor * _lognormal(rng, 0.2)
    if rng.random() < 0.02:
        t *= rng.uniform(1.5, 3.0)
    work = elapsed = t
    again = 0
    if rng.random() < p_reexec:
        wasted = rng.random() * t
        rerun = base * factor * _lognormal(rng, 0.2)
        work = wasted + rerun
        elapsed = wasted + rerun
        again = 1
    return work, elapsed, again


def make_job(rng: Random, index: int, arrival: float, b: int, kind: str, run_factor: float) -> MrJob:
    _, lo, hi, reduces = BINS[b - 1]
    maps = rng.randint(lo, hi)
    k = TYPES[kind]
    if kind == "pi":
        per_map = rng.uniform(0.2, 1.0)  # billion samples
        size = per_map * 1e9 * maps
        map_base = k.map_start + k.map_per_mb * per_map
    else:
        per_map = 64.0 if kind == "wordcount" else rng.uniform(32.0, 128.0)
        size = per_map * MB * maps
        map_base = k.map_start + k.map_per_mb * per_map
    factor = run_factor * _lognormal(rng, 0.08) * SCALE
    work: list[float] = []
    longest: list[float] = []
    reexec: list[int] = []
    elapsed: list[tuple[float, ...]] = []
    tasks = [_task(rng, map_base, factor, 0.05) for _ in range(maps)]
    work.append(sum(t[0] for t in tasks))
    longest.append(max(t[1] for t in tasks))
    reexec.append(sum(t[2] for t in tasks))
    elapsed.append(tuple(t[1] for t in tasks))
    shapes = [PhaseShape(maps, 1.0)]
    if reduces:
        share = (size / MB) * k.keep / reduces if kind != "pi" else 0.0
        red_base = k.reduce_start + k.reduce_per_mb * share
        tasks = [_task(rng, red_base, factor, 0.01) for _ in range(reduces)]
        work.append(sum(t[0] for t in tasks))
        longest.append(max(t[1] for t in tasks))
        reexec.append(sum(t[2] for t in tasks))
        elapsed.append(tuple(t[1] for t in tasks))
        shapes.append(PhaseShape(reduces, 1.0))
    features = JobFeatures(f"{kind}-bin{b}", tuple(shapes), kind=kind, user=f"user{index % 7}", queue="default",
                           input_bytes=size)
    return MrJob(index, arrival, b, features, tuple(work), tuple(longest), tuple(reexec), tuple(elapsed))


def one_run(rng: Random, mean_gap: float, *, start_index: int = 0, start_time: float = 0.0,
            jobs: int = 100) -> list[MrJob]:
    """A run of ``jobs`` (100 as in the paper): sizes as Table 1's shares, the four types in equal numbers,
    shuffled, with exponential gaps of mean ``mean_gap`` seconds."""
    bins: list[int] = []
    for b, (share, *_rest) in enumerate(BINS, start=1):
        bins += [b] * round(share * jobs / 100)
    while len(bins) < jobs:
        bins.append(1 + _pick(rng))
    bins = bins[:jobs]
    kinds = [KINDS[i % len(KINDS)] for i in range(jobs)]
    rng.shuffle(bins)
    rng.shuffle(kinds)
    run_factor = _lognormal(rng, 0.05)
    out = []
    t = start_time
    for i in range(jobs):
        t += rng.expovariate(1.0 / mean_gap)
        out.append(make_job(rng, start_index + i, t, bins[i], kinds[i], run_factor))
    return out


def _pick(rng: Random) -> int:
    x = rng.random() * 100
    acc = 0.0
    for i, (share, *_rest) in enumerate(BINS):
        acc += share
        if x < acc:
            return i
    return len(BINS) - 1


def stream(seed: int, mean_gap: float, jobs: int) -> list[MrJob]:
    """``jobs`` jobs in blocks of 100 (each a run of Table 1's mix), one Poisson arrival process."""
    rng = Random(seed)
    out: list[MrJob] = []
    while len(out) < jobs:
        block = one_run(rng, mean_gap, start_index=len(out), start_time=out[-1].arrival if out else 0.0,
                        jobs=min(100, jobs - len(out)))
        out += block
    return out


def training(seed: int, runs: int = 5, gaps: tuple[float, ...] = (16.0, 32.0, 50.0, 100.0, 200.0)) -> list[MrJob]:
    """The training runs: ``runs`` runs of 100 jobs at the paper's loads (the arrival times do not change
    the work in this model)."""
    rng = Random(seed * 7919 + 17)
    out: list[MrJob] = []
    for r in range(runs):
        out += one_run(rng, gaps[r % len(gaps)], start_index=len(out))
    return out


def mean_work(seed: int = 1, jobs: int = 20_000) -> float:
    return sum(j.total for j in stream(seed, 40.0, jobs)) / jobs
