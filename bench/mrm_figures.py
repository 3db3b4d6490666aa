"""The MRM evaluation's figures: how a set of runs came out (tardy jobs and why), waits, jump-ahead against
FCFS, the points of the service-differentiation experiments, and the formatting the page uses."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import mrm_model as mm
import numpy as np

KAPPA = 2.0
ALPHAS = (2.0, 1.5, 1.1)
SD_GAPS = (40.0, 44.0, 50.0, 100.0, 200.0)
NS_GAPS = ((100.0, "low"), (50.0, "medium"), (32.0, "heavy"))
PHASES = ("map", "reduce")


def pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def quant(xs: Sequence[float], q: float) -> float:
    return float(np.quantile(np.asarray(xs, dtype=float), q)) if len(xs) else math.nan


def med(xs: Sequence[float]) -> float:
    return quant(xs, 0.5)


def fmt(x: float, nd: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


@dataclass
class Outcome:
    n: int
    tardy: int
    tardiness: list[float]
    earliness: list[float]
    pi_miss_tardy: int  # tardy jobs whose work exceeded their claim in some phase
    path_tardy: int  # tardy, no PI miss, but a phase slower than its claim's critical path
    cascade_tardy: int  # tardy with neither, while a job due no later than it overran its own claim
    other_tardy: int  # tardy with none of these: the book or the scheduler broke a promise
    pi_miss_jobs: int
    at_risk: int

    @property
    def rate(self) -> float:
        return self.tardy / self.n if self.n else math.nan

    @property
    def estimate_tardy(self) -> int:
        """Misses an estimate explains: the job's own (work or longest task above its claim) or, in a cascade,
        the overrun of a job due no later than it."""
        return self.pi_miss_tardy + self.path_tardy + self.cascade_tardy


def outcome(runs: Sequence[mm.Run]) -> Outcome:
    done = [r for r in runs if not r.refused]
    tardy = [r for r in done if r.finish > r.deadline + 1e-6]
    pi = [r for r in tardy if any(r.pi_miss)]
    path = [r for r in tardy if not any(r.pi_miss) and r.path_miss]
    rest = [r for r in tardy if not any(r.pi_miss) and not r.path_miss]
    cascade = 0
    if rest:
        over = [r for r in done if any(r.pi_miss) or r.path_miss]
        arr = np.array([r.job.arrival for r in over])
        fin = np.array([r.finish for r in over])
        due = np.array([r.deadline for r in over])
        for r in rest:
            cascade += bool(((due <= r.deadline + 1e-6) & (arr < r.finish) & (fin > r.job.arrival)).any())
    return Outcome(len(done), len(tardy), [r.finish - r.deadline for r in tardy],
                   [r.deadline - r.finish for r in done if r.finish <= r.deadline + 1e-6], len(pi), len(path),
                   cascade, len(rest) - cascade, sum(any(r.pi_miss) for r in done), sum(r.at_risk for r in done))


def merge(outs: Sequence[Outcome]) -> Outcome:
    return Outcome(sum(o.n for o in outs), sum(o.tardy for o in outs), [x for o in outs for x in o.tardiness],
                   [x for o in outs for x in o.earliness], sum(o.pi_miss_tardy for o in outs),
                   sum(o.path_tardy for o in outs), sum(o.cascade_tardy for o in outs),
                   sum(o.other_tardy for o in outs), sum(o.pi_miss_jobs for o in outs), sum(o.at_risk for o in outs))


@dataclass
class Point:
    gap: float
    mrm: dict[float, list[mm.Run]]
    stats: dict[float, mm.ModelStats]
    fcfs: list[mm.Run]
    prio: list[mm.Run]
    edf: list[mm.Run]
    wall: float
    edf_np: list[mm.Run] = field(default_factory=list)  # unrestricted EDF that never preempts (one server)


def waits(runs: Sequence[mm.Run], cls: str) -> list[float]:
    return [r.start - r.job.arrival for r in runs if r.cls == cls and not r.refused]


def tardy_of(runs: Sequence[mm.Run], cls: str | None = None) -> float:
    rs = [r for r in runs if (cls is None or r.cls == cls) and not r.refused]
    return sum(r.finish > r.deadline + 1e-6 for r in rs) / max(1, len(rs))


def jump_ahead(mrm: Sequence[mm.Run], fcfs: Sequence[mm.Run], window: int = 400) -> tuple[float, float, int]:
    """Of the DS jobs: the share that finish before some earlier arrival under MRM that finished before them
    under FCFS; the same share among the DS jobs that found a DT job waiting (not started) under FCFS when
    they arrived; and how many found one."""
    by = {r.job.index: r for r in fcfs}
    order = sorted(mrm, key=lambda r: r.job.arrival)
    arr = np.array([r.job.arrival for r in order])
    fm = np.array([r.finish for r in order])
    ff = np.array([by[r.job.index].finish for r in order])
    sf = np.array([by[r.job.index].start for r in order])
    dt_mask = np.array([r.cls == "DT" for r in order])
    jumped = saw = jumped_saw = ds = 0
    for i, r in enumerate(order):
        if r.cls != "DS":
            continue
        ds += 1
        lo = max(0, i - window)
        earlier = slice(lo, i)
        over = (fm[earlier] > fm[i]) & (ff[earlier] < ff[i])
        j = bool(over.any())
        jumped += j
        waiting = bool((dt_mask[earlier] & (sf[earlier] > arr[i])).any())
        if waiting:
            saw += 1
            jumped_saw += j
    return jumped / max(1, ds), jumped_saw / max(1, saw), saw
