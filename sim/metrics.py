"""What a run measures, and the statistics the papers report.

* Per job: arrival, finish, status, JCT (finish − arrival), queueing delay (arrival → its first task
  running; it includes waiting for the AM container), tasks and task-seconds.
* Utilization: the allocated vector as a step function of time (every change), so averages are exact.
* Fairness: every ``sample_s`` of virtual time, each job still in the system gets
  x = dominant share of what it holds / dominant share of its DRF fair share (``DrfShares``, demand-capped,
  so a job that wants little is not counted as starved). Jain's index (Σx)² / (n·Σx²) is taken per 60 s
  window over the jobs' window means, as Carbyne does; the run reports its average and minimum. Two more
  readings of the same samples, since Carbyne does not say over which jobs or which demand it takes the
  index:

  - ``jain_running``: only the jobs running a task at that sample (holding more than their AM container),
    so a job that waits — queued behind others, or yielding everything — is left out rather than counted
    at 0;
  - ``jain_declared``: the fair share computed over what each job declares it needs now — what it holds
    plus its DEFAULT asks — so a job's ALTRUISTIC asks (capacity it offered to wait for) are not counted as
    demand it was refused. For jobs that ask everything DEFAULT this is the main index.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from am.jobspec import Job
from am.policies.jockey.utility import Utility
from common.ids import AppId
from common.resources import Resources
from rm.core.model import AppView, ClusterSnapshot
from rm.core.policies.api import ShareCalculator

WINDOW_S = 60.0


@dataclass(slots=True)
class JobRecord:
    job_id: str
    arrival: float
    tasks: int
    finish: float | None = None
    status: str = "RUNNING"
    first_task_start: float | None = None
    task_seconds: float = 0.0
    reservation: str | None = None  # the reservation the job ran in (policies with reservations)
    deadline: float | None = None  # when it is due: arrival + its deadline_s, else its utility's deadline
    guarantees: list[tuple[float, Resources]] = field(default_factory=list)  # (time, guarantee its AM asked)
    granted: list[tuple[float, Resources]] = field(default_factory=list)  # (time, guarantee the RM granted)
    held: list[tuple[float, float, Resources]] = field(default_factory=list)  # a deadline job's containers
    first_deadline: float | None = None  # its deadline at arrival, when it moved since

    def note_guarantees(self, now: float, asked: Resources | None, granted: Resources | None) -> None:
        """What the job's AM asked for and the RM granted at this heartbeat, kept when either changed."""
        for seq, value in ((self.guarantees, asked), (self.granted, granted)):
            if value is not None and (not seq or seq[-1][1] != value):
                seq.append((now, value))

    @property
    def jct(self) -> float | None:
        return None if self.finish is None else self.finish - self.arrival

    @property
    def queueing_delay(self) -> float | None:
        return None if self.first_task_start is None else self.first_task_start - self.arrival

    @property
    def met_deadline(self) -> bool | None:
        """Whether it succeeded by its deadline; None without one."""
        if self.deadline is None:
            return None
        return self.status == "SUCCEEDED" and self.finish is not None and self.finish <= self.deadline + 1e-9

    @property
    def deadline_ratio(self) -> float | None:
        """(finish − arrival) / (deadline − arrival): at most 1 when it met its deadline."""
        if self.deadline is None or self.finish is None or self.deadline <= self.arrival:
            return None
        return (self.finish - self.arrival) / (self.deadline - self.arrival)


def deadline_of(job: Job) -> float | None:
    """Seconds after its arrival a job is due: its ``deadline_s``, else the end of its utility's flat top."""
    if job.deadline_s is not None:
        return job.deadline_s
    points = job.utility_points_s()
    return None if points is None else Utility(points).deadline


@dataclass(slots=True)
class RunResult:
    policy: str
    jobs: list[JobRecord]
    capacity: Resources
    util_times: list[float]
    util_values: list[Resources]
    jain: list[tuple[float, float]]  # (window start, Jain's index)
    cycles: int
    task_completions: int
    reservations: dict[str, Any] | None = None  # reservation statistics (policies with reservations)
    jain_running: list[tuple[float, float]] = field(default_factory=list)  # over jobs running a task
    jain_declared: list[tuple[float, float]] = field(default_factory=list)  # shares over declared need

    @property
    def start(self) -> float:
        return min((j.arrival for j in self.jobs), default=0.0)

    @property
    def end(self) -> float:
        return max((j.finish for j in self.jobs if j.finish is not None), default=self.start)

    @property
    def makespan(self) -> float:
        return self.end - self.start

    def jcts(self) -> dict[str, float]:
        return {j.job_id: j.jct for j in self.jobs if j.jct is not None}

    def util_avg(self) -> dict[str, float]:
        """Time-averaged allocated fraction per resource over [first arrival, last finish]."""
        lo, hi = self.start, self.end
        if hi <= lo:
            return {r: 0.0 for r in self.capacity.types()}
        area: dict[str, float] = {r: 0.0 for r in self.capacity.types()}
        times = [*self.util_times, math.inf]
        for i, value in enumerate(self.util_values):
            a, b = max(times[i], lo), min(times[i + 1], hi)
            if b > a:
                for r in area:
                    area[r] += value.get(r) * (b - a)
        return {r: area[r] / (self.capacity.get(r) * (hi - lo)) for r in area}

    def util_series(self, step_s: float) -> tuple[list[float], dict[str, list[float]]]:
        """Mean utilization per resource over consecutive ``step_s`` bins (for plots)."""
        lo, hi = self.start, self.end
        bins = max(1, math.ceil((hi - lo) / step_s))
        area = {r: [0.0] * bins for r in self.capacity.types()}
        times = [*self.util_times, math.inf]
        for i, value in enumerate(self.util_values):
            a, b = max(times[i], lo), min(times[i + 1], hi)
            while b > a:
                k = min(bins - 1, int((a - lo) // step_s))
                edge = min(b, lo + (k + 1) * step_s)
                for r, acc in area.items():
                    acc[k] += value.get(r) * (edge - a)
                a = edge if edge > a else b
        xs = [lo + (k + 0.5) * step_s for k in range(bins)]
        return xs, {r: [v / (self.capacity.get(r) * step_s) for v in vals] for r, vals in area.items()}


class LedgerReading(Protocol):
    """What the recorder reads of the ledger."""

    @property
    def active(self) -> Mapping[AppId, object]: ...
    def snapshot(self, now: float | None = None) -> ClusterSnapshot: ...
    def headroom(self) -> Resources: ...


class Recorder:
    """Collects utilization changes and fairness samples while the engine runs."""

    def __init__(self, capacity: Resources, sample_s: float, shares: ShareCalculator) -> None:
        self.capacity = capacity
        self.sample_s = sample_s
        self.shares = shares
        self.times: list[float] = [0.0]
        self.values: list[Resources] = [Resources()]
        self._next_sample = 0.0
        self._free: Resources | None = None
        # per index: window -> job -> [sum of x, samples]
        self._windows: dict[str, dict[int, dict[str, list[float]]]] = {k: {} for k in _INDICES}

    def before(self, t: float, ledger: LedgerReading) -> None:
        """Take the fairness samples due before ``t`` (the state is constant between event batches)."""
        if self._next_sample > t:
            return
        if not ledger.active:
            self._next_sample = math.ceil(t / self.sample_s) * self.sample_s
            if self._next_sample <= t:
                self._next_sample += self.sample_s
            return
        snap = ledger.snapshot()
        total = snap.capacity
        fair = self.shares.shares(snap)
        need = declared_need(snap)
        declared = fair if need is snap else self.shares.shares(need)
        xs: dict[str, dict[str, float]] = {k: {} for k in _INDICES}
        for app in snap.apps.values():
            held = app.used.dominant_share(total)
            x = _ratio(held, fair.get(app.app_id, app.used).dominant_share(total))
            xs["all"][app.app_id] = x
            if not (app.used - app.am_used).clamp_min_zero().is_zero():
                xs["running"][app.app_id] = x
            xs["declared"][app.app_id] = _ratio(held, declared.get(app.app_id, app.used).dominant_share(total))
        while self._next_sample <= t:
            k = int(self._next_sample // WINDOW_S)
            for index, values in xs.items():
                window = self._windows[index].setdefault(k, {})
                for aid, x in values.items():
                    acc = window.setdefault(aid, [0.0, 0.0])
                    acc[0] += x
                    acc[1] += 1.0
            self._next_sample += self.sample_s

    def after(self, t: float, ledger: LedgerReading) -> None:
        free = ledger.headroom()  # a new object whenever anything was allocated or freed
        if free is self._free:
            return
        self._free = free
        allocated = (self.capacity - free).clamp_min_zero()
        if allocated == self.values[-1]:
            return
        if self.times[-1] == t:
            self.values[-1] = allocated
        else:
            self.times.append(t)
            self.values.append(allocated)

    def jain(self, index: str = "all") -> list[tuple[float, float]]:
        """Jain's index per 60 s window (window start, index) over the jobs' window means of x."""
        windows = self._windows[index]
        out: list[tuple[float, float]] = []
        for k in sorted(windows):
            means = [s / n for s, n in windows[k].values() if n > 0]
            out.append((k * WINDOW_S, jain_index(means)))
        return out

    def result(self, policy: str, jobs: list[JobRecord], cycles: int, completions: int) -> RunResult:
        return RunResult(policy, sorted(jobs, key=lambda j: (j.arrival, j.job_id)), self.capacity,
                         self.times, self.values, self.jain(), cycles, completions,
                         jain_running=self.jain("running"), jain_declared=self.jain("declared"))


_INDICES = ("all", "running", "declared")


def _ratio(held: float, fair: float) -> float:
    return held / fair if fair > 0 else 1.0


def declared_need(snap: ClusterSnapshot) -> ClusterSnapshot:
    """``snap`` with every job's ALTRUISTIC asks left out: its demand is what it holds plus what it asks
    DEFAULT (and its AM container), the need it declares for now. ``snap`` itself when no job asks
    ALTRUISTIC (greedy jobs), so the caller can reuse the shares it already has."""
    apps: dict[AppId, AppView] = {}
    for aid, app in snap.apps.items():
        if any(a.ask_type == "ALTRUISTIC" and not a.is_am for a in app.asks):
            apps[aid] = replace(app, asks=tuple(a for a in app.asks if a.ask_type != "ALTRUISTIC" or a.is_am))
    if not apps:
        return snap
    merged: Mapping[AppId, AppView] = {**snap.apps, **apps}
    return replace(snap, apps=merged)


def jain_index(xs: Sequence[float]) -> float:
    """Jain's fairness index of ``xs``: 1 when all are equal, 1/n when one holds everything."""
    if not xs:
        return 1.0
    square = sum(x * x for x in xs)
    if square <= 0:
        return 1.0
    return sum(xs) ** 2 / (len(xs) * square)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation, as numpy's default."""
    if not values:
        return math.nan
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Per-job factors of improvement of a policy against a baseline: baseline JCT / policy JCT."""

    factors: dict[str, float] = field(default_factory=dict)
    improvement_avg: float = math.nan  # baseline average JCT / policy average JCT
    improvement_p95: float = math.nan  # baseline p95 JCT / policy p95 JCT
    slowed_below_0_8: float = math.nan  # fraction of jobs whose factor is below 0.8


def compare(policy: RunResult, baseline: RunResult) -> Comparison:
    mine, base = policy.jcts(), baseline.jcts()
    common = sorted(set(mine) & set(base))
    factors = {j: base[j] / mine[j] if mine[j] > 0 else math.inf for j in common}
    if not common:
        return Comparison()
    avg_m = sum(mine[j] for j in common) / len(common)
    avg_b = sum(base[j] for j in common) / len(common)
    p95_m = percentile([mine[j] for j in common], 95)
    p95_b = percentile([base[j] for j in common], 95)
    slowed = sum(1 for f in factors.values() if f < 0.8) / len(common)
    return Comparison(factors, avg_b / avg_m if avg_m > 0 else math.nan,
                      p95_b / p95_m if p95_m > 0 else math.nan, slowed)
