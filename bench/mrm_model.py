"""A fast queueing model of the MRM evaluation's cluster, driven by the project's deadline book.

It is *not* the full simulator (``sim/engine.py``: nodes, AMs, containers, heartbeats, the ledger's cycle):
it is a fluid, discrete-time model of one pool of ``CAPACITY`` units (slots), stepped every ``dt`` seconds.
In each step every active job runs at most at its current phase's rate (its width, ``min(tasks, 80)``, or less
when its longest task is longer than its work spread over that width), phases one after the other (the next
starting at the step after the one before ended), and the units go to jobs in the order of the scheduler:

* ``mrm`` — the project's deadline book (``rm.core.deadlines.book.DeadlineBook``) and pricing
  (``rm.core.deadlines.pricing.Pricer``) make every quote and admission: before each arrival the book's
  claims are set to their remaining work (the completed work taken off the claim phase by phase, as
  ``DeadlineSystem`` does) and laid again (``relayout``); the job's claim is its estimate's PI upper bound per
  phase; its user picks a deadline (``chooser``) and ``DeadlineBook.admit`` admits it. Each step serves first
  what each claim's lazy layout owes it now (``owed``, in EDF order: the ``deadline`` stage), then everything
  left EDF-first up to each job's rate (preemptive, work conserving: the ``edf`` order);
* ``edf`` — preemptive EDF on deadlines given with the jobs, no admission (EDF with unrestricted deadlines);
* ``fcfs`` — arrival order, work conserving;
* ``priority`` — non-preemptive strict priority: delay-sensitive jobs before delay-tolerant ones, arrival
  order within a class; a job keeps the units it holds until its phase ends (nothing is taken from it), and
  units that come free go in priority order.

``ServerModel`` runs the same jobs on one server instead (the paper's §6.3 simulations: an M/G/1 queue),
event by event: every job has the whole pool, one at a time.

The book's step and the model's step are the same ``dt``. The only change to the book is a cache of its free
room per version (``FastBook.free``); the layouts, admissions and prices are the project's code.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from mrm_workload import CAPACITY, SLOTS, MrJob

from rm.core.deadlines.book import AT_RISK, DeadlineBook, Infeasible
from rm.core.deadlines.estimate import RunRecord, WorkEstimate
from rm.core.deadlines.layout import FloatArray, Phase, critical_path
from rm.core.deadlines.pricing import CURVE_POINTS, Pricer

_EPS = 1e-9


class FastBook(DeadlineBook):
    """``DeadlineBook`` with its free room cached per version (a pure cache: the same arrays, sooner)."""

    def __init__(self, capacity: float, *, dt: float = 1.0) -> None:
        super().__init__(capacity, dt=dt)
        self._cv = -1
        self._c0 = 0
        self._arr: FloatArray = np.zeros(0)

    def free(self, s0: int, s1: int, *, without: Iterable[str] = ()) -> FloatArray:
        without = tuple(without)
        if without:
            return super().free(s0, s1, without=without)
        if self._cv != self.version or s0 < self._c0:
            end = max([s0, *(c.placed.start + len(c.placed.rate) for c in self.claims.values())])
            self._c0 = s0
            self._arr = super().free(s0, end)
            self._cv = self.version
        n = max(0, s1 - s0)
        out = np.full(n, self.capacity)
        lo = s0 - self._c0
        got = self._arr[lo: lo + n]
        out[: len(got)] = got
        return out


# ------------------------------------------------------------------------------------------- claims


def longest_ratio(runs: Sequence[RunRecord]) -> Callable[[int], float]:
    """The longest task over the mean task of a phase, as its task count grows: per bucket of task counts,
    the 97.5th percentile over the training runs (a single task: 1)."""
    edges = (1, 2, 7, 31, 81, 10**9)
    seen: list[list[float]] = [[] for _ in edges[:-1]]
    for r in runs:
        for k, shape in enumerate(r.features.phases):
            if shape.tasks > 1 and len(r.longest) > k and r.work[k] > 0:
                b = bisect.bisect_right(edges, shape.tasks) - 1
                seen[b].append(r.longest[k] / (r.work[k] / shape.tasks))
    table = [float(np.quantile(v, 0.975)) if len(v) >= 5 else 0.0 for v in seen]
    for i in range(1, len(table)):  # more tasks never make the longest task relatively shorter
        table[i] = max(table[i], table[i - 1], 1.0)

    def ratio(tasks: int) -> float:
        if tasks <= 1:
            return 1.0
        return table[bisect.bisect_right(edges, tasks) - 1]

    return ratio


def claim_of(est: WorkEstimate, job: MrJob, ratio: Callable[[int], float]) -> tuple[Phase, ...]:
    """The claim a job buys with: per phase its PI upper bound, at most ``min(tasks, 80)`` units wide, its
    longest task the upper bound's mean task times the history's longest-task ratio."""
    out = []
    for pe, tasks in zip(est.phases, job.tasks, strict=True):
        upper = max(pe.upper, 1e-6)
        out.append(Phase(upper, float(min(tasks, SLOTS)), ratio(tasks) * upper / tasks))
    return tuple(out)


# -------------------------------------------------------------------------------------------- model


@dataclass(slots=True)
class Run:
    job: MrJob | ServerJob
    claim: tuple[Phase, ...] = ()
    cls: str = ""  # DS | DT | ""
    deadline: float = math.inf
    earliest: float = math.nan  # f^e when bought
    price: float = math.nan
    beyond_curve: bool = False  # the chosen deadline is later than every point of the quoted curve
    refused: bool = False
    # state
    phase: int = 0
    left: float = 0.0
    done: float = 0.0
    alloc: float = 0.0
    ready: int = 0  # the first step the current phase may run
    start: float = math.nan
    finish: float = math.nan
    at_risk: bool = False
    key: tuple[float, ...] = ()

    @property
    def pi_miss(self) -> tuple[bool, ...]:
        return tuple(w > c.work + 1e-6 for w, c in zip(self.job.work, self.claim, strict=True))

    @property
    def path_miss(self) -> bool:
        """A phase that could not run as fast as its claim assumed (its longest task above the claim's)."""
        return any(w / r > c.work / c.rate + 1e-6 for w, r, c in
                   zip(self.job.work, self.job.rates, self.claim, strict=True))


Chooser = Callable[[Run, Pricer], float]


@dataclass(slots=True)
class ModelStats:
    relayouts: int = 0
    relayout_failed: int = 0
    admit_retries: int = 0
    steps: int = 0
    max_claims: int = 0
    notes: list[str] = field(default_factory=list)


class Model:
    def __init__(self, runs: list[Run], mode: str, *, dt: float = 5.0, kappa: float = 2.0,
                 avg_work: float = 1.0, chooser: Chooser | None = None, capacity: float = CAPACITY,
                 by_phase: bool = False) -> None:
        if mode not in ("mrm", "edf", "fcfs", "priority"):
            raise ValueError(mode)
        self.runs = sorted(runs, key=lambda r: r.job.arrival)
        self.mode = mode
        self.dt = dt
        self.kappa = kappa
        self.capacity = capacity
        self.chooser = chooser
        self.by_phase = by_phase
        self.book = FastBook(capacity, dt=dt) if mode == "mrm" else None
        self.recent: deque[float] = deque(maxlen=5000)
        self.recent_sum = 0.0
        self.recent_dur: deque[float] = deque(maxlen=5000)  # each finished job's work over its width, summed
        self.recent_dur_sum = 0.0
        self._seed_avg = avg_work
        self.active: list[Run] = []
        self.stats = ModelStats()

    # ------------------------------------------------------------------------------------ helpers

    def avg_work(self) -> float:
        """The average job's work that normalises slack in eq. 13, as ``DeadlineSystem.avg_work``: over the
        recent finished runs (the training runs until some finish)."""
        if not self.recent:
            return max(1.0, self._seed_avg)
        return max(1.0, self.recent_sum / len(self.recent))

    def avg_duration(self) -> float | None:
        """The average job's duration at its width (``DeadlineSystem.avg_duration``), None before any job
        finished (the pricer then uses the average work over the job's own width)."""
        if not self.recent_dur:
            return None
        return max(1.0, self.recent_dur_sum / len(self.recent_dur))

    def _finished(self, r: Run) -> None:
        d = sum(w / max(p.width, 1e-9) for w, p in zip(r.job.work, r.claim, strict=False))
        if len(self.recent_dur) == self.recent_dur.maxlen:
            self.recent_dur_sum -= self.recent_dur[0]
        self.recent_dur.append(d)
        self.recent_dur_sum += d
        w = r.job.total
        if len(self.recent) == self.recent.maxlen:
            self.recent_sum -= self.recent[0]
        self.recent.append(w)
        self.recent_sum += w
        if self.book is not None:
            self.book.remove(str(r.job.index))

    def remaining(self, r: Run) -> tuple[Phase, ...]:
        """The claim less the completed work: taken off the claim phase by phase, as
        ``DeadlineSystem._remaining`` does (``by_phase`` False), or off the claim of the phase the job is in,
        the phases it finished dropped (``by_phase``)."""
        if self.by_phase:
            out = []
            for k in range(r.phase, len(r.claim)):
                p = r.claim[k]
                rest = p.work - (r.job.work[k] - r.left if k == r.phase else 0.0)
                if rest > 1e-9:
                    out.append(Phase(rest, p.width, p.min_s * rest / p.work if p.work > 0 else 0.0))
            return tuple(out)
        left = r.done
        out = []
        for p in r.claim:
            take = min(p.work, left)
            left -= take
            rest = p.work - take
            if rest > 1e-9:
                out.append(Phase(rest, p.width, p.min_s * rest / p.work if p.work > 0 else 0.0))
        return tuple(out)

    def _order_key(self, r: Run) -> tuple[float, ...]:
        if self.mode in ("mrm", "edf"):
            return (r.deadline, r.job.arrival, r.job.index)
        if self.mode == "priority":
            return (0.0 if r.cls == "DS" else 1.0, r.job.arrival, r.job.index)
        return (r.job.arrival, r.job.index)

    # ----------------------------------------------------------------------------------- arrivals

    def _arrive(self, r: Run, step: int) -> None:
        now = r.job.arrival
        book = self.book
        if book is not None:
            if book.claims:
                for key, c in book.claims.items():
                    c.phases = self.remaining(self._by_key[key])
                ok = book.relayout(now)
                self.stats.relayouts += 1
                if not ok:
                    self.stats.relayout_failed += 1
                    for key, c in book.claims.items():
                        if c.status == AT_RISK:
                            self._by_key[key].at_risk = True
            assert self.chooser is not None
            pricer = Pricer(book, r.claim, now, kappa=self.kappa, avg_work=self.avg_work(),
                            avg_duration=self.avg_duration())
            r.earliest = pricer.earliest
            deadline = self.chooser(r, pricer)
            if deadline < 0:  # the user does not buy: refused
                r.refused = True
                return
            r.price = pricer.price(deadline)
            top = max([pricer.earliest + x * max(critical_path(r.claim), book.dt) for x in CURVE_POINTS]
                      + [c.deadline for c in book.claims.values()])
            r.beyond_curve = deadline > top + 1e-6
            key = str(r.job.index)
            try:
                book.admit(key, r.claim, deadline, now, price=r.price)
            except Infeasible as exc:  # a quote the book then refuses: counted, bought at its new earliest
                self.stats.admit_retries += 1
                deadline = exc.earliest
                book.admit(key, r.claim, deadline, now, price=r.price)
            r.deadline = deadline
            self._by_key[key] = r
            self.stats.max_claims = max(self.stats.max_claims, len(book.claims))
        r.left = r.job.work[0]
        r.ready = step
        r.key = self._order_key(r)
        bisect.insort(self.active, r, key=lambda x: x.key)

    # -------------------------------------------------------------------------------------- steps

    def run(self) -> list[Run]:
        dt = self.dt
        self._by_key: dict[str, Run] = {}
        pending = deque(self.runs)
        step = 0
        book = self.book
        mrm = self.mode == "mrm"
        sticky = self.mode == "priority"
        while pending or self.active:
            if not self.active and pending:  # idle: jump to the step after the next arrival
                step = max(step, math.ceil(pending[0].job.arrival / dt - 1e-9))
            t = step * dt
            while pending and pending[0].job.arrival <= t + 1e-9:
                self._arrive(pending.popleft(), step)
            free = self.capacity
            act = self.active
            caps = []
            for r in act:
                if r.ready > step:
                    caps.append(0.0)
                else:
                    caps.append(min(r.job.rates[r.phase], r.left / dt))
            if mrm:
                assert book is not None
                got = []
                for r, cap in zip(act, caps, strict=True):
                    c = book.claims.get(str(r.job.index))
                    g = min(c.placed.at(step), cap, free) if c is not None and cap > 0 else 0.0
                    free -= g
                    got.append(g)
            elif sticky:
                got = [min(r.alloc, cap) for r, cap in zip(act, caps, strict=True)]
                free -= sum(got)
            else:
                got = [0.0] * len(act)
            for i, cap in enumerate(caps):
                if free <= _EPS:
                    break
                more = cap - got[i]
                if more > _EPS:
                    more = min(more, free)
                    got[i] += more
                    free -= more
            done_now: list[Run] = []
            for r, g in zip(act, got, strict=True):
                r.alloc = g
                if g <= _EPS:
                    continue
                if math.isnan(r.start):
                    r.start = t
                amount = g * dt
                if amount >= r.left - 1e-7:
                    end = t + r.left / g
                    r.done += r.left
                    r.phase += 1
                    r.alloc = 0.0
                    if r.phase >= len(r.job.work):
                        r.finish = end
                        done_now.append(r)
                    else:
                        r.left = r.job.work[r.phase]
                        r.ready = step + 1
                else:
                    r.left -= amount
                    r.done += amount
            for r in done_now:
                act.remove(r)
                self._finished(r)
            step += 1
            self.stats.steps += 1
        return self.runs


# ------------------------------------------------------------------------------ one server (M/G/1)


@dataclass(frozen=True, slots=True)
class ServerJob:
    """A job as the paper's §6.3 simulations see it: one piece of service on a single server that is the
    whole cluster (``work`` unit-seconds at ``capacity`` units: its processing time is ``work / capacity``)."""

    source: MrJob
    capacity: float

    @property
    def index(self) -> int:
        return self.source.index

    @property
    def arrival(self) -> float:
        return self.source.arrival

    @property
    def total(self) -> float:
        return self.source.total

    @property
    def work(self) -> tuple[float, ...]:
        return (self.source.total,)

    @property
    def rates(self) -> tuple[float, ...]:
        return (self.capacity,)

    @property
    def service_s(self) -> float:
        return self.source.total / self.capacity


def on_one_server(run: Run, capacity: float = CAPACITY) -> Run:
    """The same job, claim and class on one server: the claim's PI upper bounds summed into one piece of work
    served at the whole capacity (no width, no critical path: one job at a time uses every unit)."""
    assert isinstance(run.job, MrJob)
    work = sum(p.work for p in run.claim)
    return Run(ServerJob(run.job, capacity), (Phase(work, capacity),), cls=run.cls)


class ServerModel(Model):
    """The paper's setting for service differentiation (§6.3, Fig. 9: "an M/G/1 queue"): one server, event by
    event in continuous time (no steps: a job of a fraction of a second is served in that fraction).

    ``mrm`` and ``edf`` serve the earliest deadline first and preempt (MRM's quotes assume a job can be split
    around the claims laid before it, the paper's Fig. 7); ``fcfs`` and ``priority`` never preempt (the
    paper's non-preemptive priority scheduler); ``edf`` with ``preemptive=False`` is EDF that lets the job in
    service finish. The book (``mrm``) quotes and admits at each arrival exactly as in ``Model``, on steps of
    ``dt``; only the execution differs."""

    def __init__(self, runs: list[Run], mode: str, *, preemptive: bool | None = None, **kw: Any) -> None:
        super().__init__(runs, mode, **kw)
        self.preemptive = mode in ("mrm", "edf") if preemptive is None else preemptive

    def run(self) -> list[Run]:
        self._by_key = {}
        pending = deque(self.runs)
        act = self.active
        rate = self.capacity
        t = 0.0
        cur: Run | None = None
        while pending or act:
            if act and (cur is None or self.preemptive):
                cur = act[0]
            arrival = pending[0].job.arrival if pending else math.inf
            if cur is None:
                t = max(t, arrival)
                self._arrive(pending.popleft(), 0)
                continue
            end = t + cur.left / rate
            if end > t and math.isnan(cur.start):
                cur.start = t
            if end <= arrival:
                t = end
                cur.done += cur.left
                cur.left = 0.0
                cur.phase = 1
                cur.finish = t
                act.remove(cur)
                self._finished(cur)
                cur = None
            else:
                served = (arrival - t) * rate
                cur.left -= served
                cur.done += served
                t = arrival
                self._arrive(pending.popleft(), 0)
            self.stats.steps += 1
        return self.runs


# ------------------------------------------------------------------------------------------ choosers


def earliest(run: Run, pricer: Pricer) -> float:
    """No slack: buy the earliest feasible finish."""
    return pricer.earliest


def cheapest_within(factor: float) -> Chooser:
    """Buy the earliest deadline priced at most ``factor`` × the job's work (eq. 13's prices never rise
    with the deadline: a search over the book's steps)."""

    def choose(run: Run, pricer: Pricer) -> float:
        budget = factor * pricer.work * (1 + 1e-9)
        f = pricer.earliest
        dt = pricer.book.dt
        if pricer.price(f) <= budget:
            return f
        hi = 1
        while pricer.price(f + hi * dt) > budget:
            hi *= 2
            if hi > 1 << 24:
                return f + hi * dt
        lo = hi // 2  # price(f + lo·dt) > budget (or lo = 0)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if pricer.price(f + mid * dt) <= budget:
                hi = mid
            else:
                lo = mid
        return f + hi * dt

    return choose
