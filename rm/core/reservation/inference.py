"""SLO inference (Morpheus §4–5): from the finished runs of a recurring job, propose a periodic reservation.

Runs of the same job name are one recurring job. From them:

* the **period** P: the median gap between submissions, snapped to a natural period (an hour, a day, ...)
  when within 5 %; refused when the gaps vary too much (CV = MAD/median above ``max_period_cv``);
* per run, relative to the start of its period (periods aligned to the epoch): ``T_inAvail``, the last write
  to any of its declared inputs before it started; ``T_outRead``, the first read of any of its outputs after
  it ended; its start and end. The RM records those times from jobs' declared inputs (read at start) and
  outputs (written at finish), see ``accesses_from_runs``;
* the **earliest start** a: the 95th percentile of ``T_inAvail`` (without inputs: the 5th of the starts);
  the **deadline** d: the 50th percentile of ``T_outRead``. The deadline is *actionable* when outputs are
  read at a steady time (CV of ``T_outRead`` at most ``max_deadline_cv``) and there is slack (median of
  ``(T_outRead − T_end)/(T_end − T_start)`` at least ``min_slack``); otherwise the proposal says why and a
  user may still override it;
* the **skyline** R* by the LP of ``skyline.py`` over the runs' skylines (containers per step), rounded up.

Jobs whose input arrival or output consumption varies a lot relative to their runtime get the alignment
penalty, so LowCost keeps their allocation away from both ends of the window. The answer is a
``SloProposal`` a user signs off (``to_definition`` makes the periodic reservation), overrides or rejects.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from common.resources import Resources
from rm.core.reservation.requests import ReservationDefinition, skyline_definition
from rm.core.reservation.skyline import DEFAULT_ALPHA, solve_skyline

NATURAL_PERIODS_S = (300, 600, 900, 1800, 3600, 7200, 10800, 14400, 21600, 28800, 43200, 86400, 604800)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One finished run of a job, as the state store has it."""

    job: str
    app_id: str
    submit_time: float
    start_time: float
    finish_time: float
    skyline: tuple[float, ...]  # containers of ``unit`` in use per step from the start
    unit: Resources
    queue: str = "default"
    user: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    succeeded: bool = True


@dataclass(frozen=True, slots=True)
class DatasetAccess:
    path: str
    kind: Literal["read", "write"]
    time: float
    app_id: str


@dataclass(frozen=True, slots=True)
class InferenceConfig:
    step_s: int = 60
    min_runs: int = 3
    period_tolerance: float = 0.05
    max_period_cv: float = 0.1
    max_deadline_cv: float = 0.2
    min_slack: float = 0.25
    start_percentile: float = 95.0
    deadline_percentile: float = 50.0
    alpha: float = DEFAULT_ALPHA
    problematic_cv: float = 0.5  # CV of (start − inputs) or (read − end) above this: alignment penalty
    alignment: float = 1.0
    natural_periods_s: tuple[int, ...] = NATURAL_PERIODS_S


@dataclass(frozen=True, slots=True)
class SloProposal:
    job: str
    queue: str
    user: str
    period_s: int
    earliest_start_s: float  # offset in the period
    deadline_s: float  # offset in the period (may exceed the period: read in the next one)
    skyline: tuple[int, ...]  # containers of ``unit`` per step
    unit: Resources
    step_s: int
    runs: int
    actionable: bool
    reasons: tuple[str, ...] = ()
    alignment: float = 0.0
    skyline_raw: tuple[float, ...] = field(default=(), repr=False)

    def to_definition(self, *, now: float) -> ReservationDefinition:
        """The periodic reservation for the next instance whose deadline is still ahead of ``now``."""
        p = self.period_s
        start = math.floor(now / p) * p
        if start + self.deadline_s <= now:
            start += p
        step_ms = self.step_s * 1000
        arrival = int((start + self.earliest_start_s) * 1000) // step_ms * step_ms
        deadline = int((start + self.deadline_s) * 1000) // step_ms * step_ms
        return skyline_definition(self.skyline, self.unit, arrival_ms=arrival, deadline_ms=deadline,
                                  step_ms=step_ms, recurrence_ms=p * 1000, name=self.job, alignment=self.alignment)


def robust_cv(values: Sequence[float]) -> float:
    """Median absolute deviation over the median (Morpheus' CV); infinite for a zero median."""
    if not values:
        return math.inf
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    return mad / abs(med) if med else (0.0 if mad == 0 else math.inf)


def percentile(values: Sequence[float], q: float) -> float:
    xs = sorted(values)
    if not xs:
        raise ValueError("no values")
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def infer_period(submit_times: Sequence[float], config: InferenceConfig | None = None) -> tuple[int | None, str]:
    """(period in seconds, "") or (None, why not)."""
    cfg = config or InferenceConfig()
    times = sorted(submit_times)
    gaps = [b - a for a, b in itertools.pairwise(times) if b > a]
    if len(gaps) < max(1, cfg.min_runs - 1):
        return None, f"too few runs ({len(times)}) to infer a period"
    cv = robust_cv(gaps)
    if cv > cfg.max_period_cv:
        return None, f"submissions are not periodic (CV of gaps {cv:.2f} > {cfg.max_period_cv})"
    med = statistics.median(gaps)
    for p in cfg.natural_periods_s:
        if abs(med - p) <= cfg.period_tolerance * p:
            return p, ""
    step = cfg.step_s
    return max(step, round(med / step) * step), ""


def accesses_from_runs(runs: Iterable[RunRecord]) -> list[DatasetAccess]:
    """Dataset accesses implied by declared inputs (read at start) and outputs (written at finish)."""
    out: list[DatasetAccess] = []
    for r in runs:
        out.extend(DatasetAccess(p, "read", r.start_time, r.app_id) for p in r.inputs)
        if r.succeeded:
            out.extend(DatasetAccess(p, "write", r.finish_time, r.app_id) for p in r.outputs)
    return sorted(out, key=lambda a: (a.time, a.path, a.kind, a.app_id))


def dataset_times(run: RunRecord, accesses: Sequence[DatasetAccess]) -> tuple[float | None, float | None]:
    """(last write to an input before the run started, first read of an output after it ended), by others."""
    inputs, outputs = set(run.inputs), set(run.outputs)
    t_in = max((a.time for a in accesses if a.kind == "write" and a.path in inputs
                and a.app_id != run.app_id and a.time <= run.start_time), default=None)
    t_out = min((a.time for a in accesses if a.kind == "read" and a.path in outputs
                 and a.app_id != run.app_id and a.time >= run.finish_time), default=None)
    return t_in, t_out


def propose(
    job: str,
    runs: Sequence[RunRecord],
    accesses: Sequence[DatasetAccess],
    config: InferenceConfig | None = None,
    *,
    solver: Any = None,
) -> SloProposal | None:
    """The proposal for one recurring job, or None when its runs show no period."""
    cfg = config or InferenceConfig()
    good = sorted((r for r in runs if r.job == job and r.succeeded), key=lambda r: r.submit_time)
    period, _why = infer_period([r.submit_time for r in good], cfg)
    if period is None or not good:
        return None
    reasons: list[str] = []

    def rel(t: float, r: RunRecord) -> float:
        assert period is not None
        return t - math.floor(r.submit_time / period) * period

    starts = [rel(r.start_time, r) for r in good]
    ends = [rel(r.finish_time, r) for r in good]
    ins: list[float] = []
    outs: list[float] = []
    waits: list[float] = []
    slacks: list[float] = []
    reads_gap: list[float] = []
    for r in good:
        t_in, t_out = dataset_times(r, accesses)
        if t_in is not None:
            ins.append(rel(t_in, r))
            waits.append(r.start_time - t_in)
        if t_out is not None:
            outs.append(rel(t_out, r))
            reads_gap.append(t_out - r.finish_time)
            runtime = max(r.finish_time - r.start_time, 1e-9)
            slacks.append((t_out - r.finish_time) / runtime)
    earliest = percentile(ins, cfg.start_percentile) if ins else percentile(starts, 5.0)
    if not ins:
        reasons.append("no input writes recorded: earliest start from past starts")
    actionable = True
    if outs:
        deadline = percentile(outs, cfg.deadline_percentile)
        cv = robust_cv(outs)
        if cv > cfg.max_deadline_cv:
            actionable = False
            reasons.append(f"outputs are read at irregular times (CV {cv:.2f} > {cfg.max_deadline_cv})")
        slack = statistics.median(slacks)
        if slack < cfg.min_slack:
            actionable = False
            reasons.append(f"too little slack between end and first read (median {slack:.2f} of the runtime)")
    else:
        deadline = percentile(ends, 95.0)
        actionable = False
        reasons.append("outputs never read by another job: no deadline to infer (p95 of past ends proposed)")
    if deadline - earliest >= period:
        deadline = earliest + period - cfg.step_s
        reasons.append("window clipped to one period")
    if len(good) < cfg.min_runs:
        actionable = False
        reasons.append(f"only {len(good)} successful runs (need {cfg.min_runs})")
    problematic = (len(waits) > 1 and robust_cv(waits) > cfg.problematic_cv) or (
        len(reads_gap) > 1 and robust_cv(reads_gap) > cfg.problematic_cv)
    fit = solve_skyline([list(r.skyline) for r in good], cfg.alpha, solver=solver)
    skyline = tuple(max(0, math.ceil(x - 1e-6)) for x in fit.skyline)
    if not any(skyline):
        actionable = False
        reasons.append("the fitted skyline is empty")
    if deadline - earliest < sum(1 for x in skyline if x) * cfg.step_s:
        actionable = False
        reasons.append("the window between earliest start and deadline is shorter than the skyline")
    last = good[-1]
    return SloProposal(
        job=job, queue=last.queue, user=last.user, period_s=period, earliest_start_s=earliest,
        deadline_s=deadline, skyline=skyline, unit=last.unit, step_s=cfg.step_s, runs=len(good),
        actionable=actionable, reasons=tuple(reasons), alignment=cfg.alignment if problematic else 0.0,
        skyline_raw=fit.skyline,
    )


def skyline_from_containers(
    containers: Iterable[tuple[float, float, Resources]], *, start: float, step_s: int, unit: Resources
) -> tuple[float, ...]:
    """Average containers of ``unit`` in use per step from ``start``, from (start, end, resource) of each
    container of a run; a container counts as its largest multiple of ``unit`` over the resource types."""
    buckets: dict[int, float] = {}
    for c_start, c_end, res in containers:
        weight = max((res.get(r) / v for r, v in unit.amounts.items() if v > 0), default=0.0)
        t = max(c_start, start)
        while t < c_end:
            k = int((t - start) // step_s)
            if start + (k + 1) * step_s <= t:  # t is on a step boundary rounding put in the step before
                k += 1
            nxt = min(c_end, start + (k + 1) * step_s)
            buckets[k] = buckets.get(k, 0.0) + weight * (nxt - t) / step_s
            t = nxt
    if not buckets:
        return ()
    return tuple(round(buckets.get(k, 0.0), 6) for k in range(max(buckets) + 1))
