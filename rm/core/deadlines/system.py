"""Deadlines you can buy (MRM), on the ledger: per leaf queue a ``DeadlineBook``, the work estimator and the
run history it learns from, quotes, admission, progress and outcomes.

* **Quote** (``quote``): estimate the job's work per phase with a prediction interval, take its upper bound as
  the claim, and read the earliest feasible finish and the eq. 13 price curve off the queue's book. A quote
  has an id and expires (``quote_ttl_s``).
* **Admit** (``admit``, the ``deadlines`` admission rule): a submission that asks for a deadline — a time, a
  quote id (bought at the quoted estimate, at a deadline on or after its earliest finish), or a maximum price
  (the earliest deadline priced within it) — is admitted only when the book can lay its claim without
  moving any admitted one; else it is refused with the earliest finish it could have now (409). The claim,
  its price and the estimate behind it become the app's terms, stored with the app.
* **Progress**: every completed container of a deadline app counts its unit-seconds as done; before the next
  cycle the claim is laid again from its remaining work (``DeadlineBook.sync``): an app ahead of its layout
  is owed nothing until it falls due, one behind is owed more at once, one that can no longer make it is
  AT_RISK. Every ``relayout_s`` all of a book's claims are laid again as late as they can go.
* **Learn**: every finished run (of any app) adds its features and measured work per phase to the history the
  estimator is fitted on; a deadline app's outcome (met or missed, tardiness or earliness, and whether its
  work exceeded its prediction interval) is counted for the metrics.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from common.ids import AppId, QueuePath
from common.resources import Resources
from common.terms import AppTerms, DeadlineClaim
from rm.core.deadlines import outcomes
from rm.core.deadlines.book import AT_RISK, Claim, DeadlineBook, FixedLoad, Infeasible, no_fixed_load
from rm.core.deadlines.estimate import (
    DEFAULT_Z,
    JobFeatures,
    PhaseEstimate,
    RunRecord,
    WorkEstimate,
    WorkEstimator,
    make_estimator,
)
from rm.core.deadlines.features import Declared, Span, measured
from rm.core.deadlines.layout import Phase
from rm.core.deadlines.outcomes import DELAY_BUCKETS, MET, MISSED, Histogram, Outcome, Quote, Refusal
from rm.core.deadlines.pricing import DEFAULT_KAPPA, Pricer
from rm.core.deadlines.runs import RecentRuns
from rm.core.deadlines.view import NO_DEADLINES, DeadlineEntry, DeadlineView


@dataclass(frozen=True, slots=True)
class DeadlineConfig:
    kappa: float = DEFAULT_KAPPA  # scales prices to purchasing power (eq. 13)
    z: float = DEFAULT_Z  # the prediction interval's upper bound is mean + z·std
    step_s: float = 1.0  # the books' time step
    estimator: str = "auto"  # bin | ridge | auto
    quote_ttl_s: float = 30.0
    unit: Resources = field(default_factory=lambda: Resources.of(memory_mb=1024, vcores=1))
    relayout_s: float = 5.0
    max_runs: int = 5000  # finished runs kept to fit the estimator on
    declared_cv: float = 0.5  # no history: the job file's durations, with this relative error
    max_fraction: float = 0.8  # of a queue's capacity its deadline claims may hold (the rest: fair shares)
    margin_s: float = 10.0  # a claim's work is laid to end this long before its deadline (AM start, launches)

    def validate(self) -> None:
        if not (self.kappa > 0 and self.z >= 0 and self.step_s > 0 and self.quote_ttl_s > 0
                and self.relayout_s > 0 and self.max_runs > 0 and self.declared_cv >= 0
                and 0 < self.max_fraction <= 1 and self.margin_s >= 0):
            raise ValueError(f"invalid deadline settings: {self}")
        if self.unit.is_zero() or any(v <= 0 for v in self.unit.amounts.values()):
            raise ValueError(f"the deadline unit must be a positive resource vector, got {self.unit}")
        make_estimator(self.estimator, self.z)


@dataclass(slots=True)
class _Held:
    queue: QueuePath
    claim: DeadlineClaim
    deadline: float
    done: float = 0.0
    work: list[float] | None = None  # per phase, when its completed tasks raised the claim (``refresh``)
    done_by: dict[int, float] = field(default_factory=dict)  # per task group (ask priority), first done first

    def phases(self) -> list[tuple[float, float, float]]:
        if self.work is None:
            return list(self.claim.phases)
        return [(w, width, m) for w, (_, width, m) in zip(self.work, self.claim.phases, strict=True)]


class DeadlineSystem:
    def __init__(self, config: DeadlineConfig | None = None) -> None:
        self.config = config or DeadlineConfig()
        self.config.validate()
        self.books: dict[QueuePath, DeadlineBook] = {}
        self.held: dict[AppId, _Held] = {}
        self.recent = RecentRuns(self.config.max_runs)
        self.estimator = make_estimator(self.config.estimator, self.config.z)
        self._fitted = True
        self._ever_fitted = False
        self.background_fit = False  # the driver fits the estimator off its loop (``refit``/``install``)
        self.quotes: dict[str, Quote] = {}
        self.next_quote = 1
        self._dirty: set[AppId] = set()
        self._laid: dict[QueuePath, float] = {}
        self.counters: dict[str, int] = {}
        self.outcomes: deque[Outcome] = deque(maxlen=10_000)  # recent, newest last (reports)
        self.tardiness = Histogram()  # seconds after the deadline, of the apps that finished late
        self.earliness = Histogram()  # seconds before the deadline, of the apps that met it

    # ---------------------------------------------------------------------------------------- books

    def set_capacity(self, queue: QueuePath, capacity: Resources, fixed: FixedLoad = no_fixed_load) -> None:
        """The queue's capacity for promises (its share of the cluster) and what its reservations book."""
        unit = self.config.unit
        units = min((capacity.get(t) / v for t, v in unit.amounts.items()), default=0.0) * self.config.max_fraction
        book = self.books.get(queue)
        if book is None:
            self.books[queue] = DeadlineBook(units, dt=self.config.step_s, fixed=fixed, margin=self.config.margin_s)
        else:
            if book.capacity != units:
                book.capacity = units
                book.version += 1
            book.fixed = fixed

    def book(self, queue: QueuePath) -> DeadlineBook:
        got = self.books.get(queue)
        if got is None:
            raise Refusal(f"queue {queue} takes no deadlines (it has no capacity)", conflict=False)
        return got

    # ----------------------------------------------------------------------------------- estimation

    def record_run(self, run: RunRecord) -> None:
        self.recent.add(run)
        self._fitted = False

    def record_run_later(self, build: Callable[[], RunRecord | None]) -> None:
        """A finished run, built when the runs are next read (a driver that never quotes never builds them)."""
        self.recent.add_later(build)
        self._fitted = False

    @property
    def runs(self) -> deque[RunRecord]:
        """The recent runs the estimators learn from, oldest first."""
        return self.recent.runs

    @property
    def stale(self) -> bool:
        """Runs were recorded since the estimator was last fitted."""
        return not self._fitted

    def refit(self) -> tuple[WorkEstimator, list[RunRecord], int]:
        """A fresh estimator and the runs to fit it on, for a worker thread (``install`` it afterwards)."""
        return make_estimator(self.config.estimator, self.config.z), list(self.runs), self.recent.seen

    def install(self, estimator: WorkEstimator, seen: int) -> None:
        """An estimator fitted off the loop on the runs up to ``seen``; stale again if more came meanwhile."""
        self.estimator = estimator
        self._fitted = seen == self.recent.seen
        self._ever_fitted = True

    def estimate(self, job: JobFeatures, declared: Declared | None) -> WorkEstimate | None:
        if not self._fitted and not (self.background_fit and self._ever_fitted):
            self.estimator.fit(list(self.runs))  # the simulator and tests fit here; the RM in a worker thread
            self._fitted = self._ever_fitted = True
        got = self.estimator.estimate(job)
        if got is not None or declared is None:
            return got
        cv, z = self.config.declared_cv, self.config.z
        phases = tuple(PhaseEstimate(w, cv * w, w * (1 + z * cv), m)
                       for w, m in zip(declared.work, declared.longest, strict=True))
        return WorkEstimate(phases, z, "declared", 0, job.phases)

    def avg_work(self) -> float:
        """The average job's work (unit-seconds), which normalises slack in eq. 13: over the recent runs,
        else over the admitted claims, else one unit-minute."""
        avg = self.recent.avg_work()
        if avg is not None:
            return max(1.0, avg)
        if self.held:
            return max(1.0, float(np.mean([h.claim.upper for h in self.held.values()])))
        return 60.0

    def avg_duration(self) -> float:
        """The average job's duration at its width (seconds: each phase's work over its width, summed), which
        normalises the slack a job offers in eq. 13: over the recent runs, else the admitted claims, else a
        minute."""
        avg = self.recent.avg_duration()
        if avg is not None:
            return max(1.0, avg)
        if self.held:
            return max(1.0, float(np.mean([sum(w / max(width, 1e-9) for w, width, _ in h.claim.phases)
                                           for h in self.held.values()])))
        return 60.0

    # --------------------------------------------------------------------------------------- quotes

    def _pricer(self, queue: QueuePath, book: DeadlineBook, phases: tuple[Phase, ...], now: float) -> Pricer:
        """The prices of ``phases`` in ``book``; ``Refusal`` when they cannot be laid out at all."""
        pricer = Pricer(book, phases, now, kappa=self.config.kappa, avg_work=self.avg_work(),
                        avg_duration=self.avg_duration())
        if not math.isfinite(pricer.earliest):
            raise Refusal(outcomes.no_room(queue, book, phases))
        return pricer

    def quote(self, job: JobFeatures, declared: Declared | None, queue: QueuePath, now: float) -> Quote:
        """A fresh quote for the job in ``queue`` (Refusal, 400, when nothing can estimate it)."""
        book = self.book(queue)
        est = self.estimate(job, declared)
        if est is None:
            raise Refusal(f"no estimate for job {job.name!r}: it has no run history and its job file declares "
                          "no task durations", conflict=False)
        phases = est.claim()
        price = self._pricer(queue, book, phases, now).quote()
        quote_id = f"quote_{int(now * 1000)}_{self.next_quote:04d}"
        self.next_quote += 1
        q = Quote(quote_id, queue, now, now + self.config.quote_ttl_s, job, est, phases, price)
        self._expire(now)
        self.quotes[quote_id] = q
        self.counters["quotes"] = self.counters.get("quotes", 0) + 1
        return q

    def _expire(self, now: float) -> None:
        for k in [k for k, q in self.quotes.items() if q.expires < now - 3600]:  # kept an hour for lookups
            del self.quotes[k]

    # ------------------------------------------------------------------------------------ admission

    def admit(self, app_id: AppId, queue: QueuePath, terms: AppTerms, job: JobFeatures,
              declared: Declared | None, now: float) -> AppTerms:
        """Admit the app's deadline and return its terms with the claim; ``Refusal`` changes nothing."""
        try:
            out = self._admit(app_id, queue, terms, job, declared, now)
        except Refusal as r:
            outcome = "expired" if "expired" in r.reason else "infeasible" if r.conflict else "invalid"
            self._count(f"admissions_{outcome}")
            raise
        self._count("admissions_admitted")
        return out

    def _admit(self, app_id: AppId, queue: QueuePath, terms: AppTerms, job: JobFeatures,
               declared: Declared | None, now: float) -> AppTerms:
        book = self.book(queue)
        if terms.quote_id is not None:
            q = self.quotes.get(terms.quote_id)
            if q is None or q.queue != queue:
                raise Refusal(f"unknown quote {terms.quote_id!r} for queue {queue}", conflict=False)
            est, phases = q.estimate, q.phases
            if now > q.expires:
                fresh = book.earliest_finish(phases, now)
                raise Refusal(f"quote {q.quote_id} expired at {q.expires:.3f}",
                              {"earliestFinish": fresh, "quoteId": q.quote_id})
        else:
            got = self.estimate(job, declared)
            if got is None:
                raise Refusal(f"no estimate for job {job.name!r}: it has no run history and its job file "
                              "declares no task durations", conflict=False)
            est, phases = got, got.claim()
        pricer = self._pricer(queue, book, phases, now)
        deadline = terms.deadline
        if deadline is not None:
            outcomes.check_ahead(book, deadline, now)
        quoted = self.quotes[terms.quote_id].price if terms.quote_id is not None else None
        if deadline is None and quoted is not None and terms.max_price is None:
            deadline = quoted.earliest  # buying a quote as it stands: its earliest finish
        if deadline is None:
            if terms.max_price is None:
                raise Refusal("a deadline, a quote or a maximum price is needed", conflict=False)
            within = pricer.earliest_within(terms.max_price)
            if within is None:
                raise Refusal(f"no deadline is priced at most {terms.max_price:g}: the cheapest costs the "
                              f"job's work, {pricer.work:.1f}",
                              {"earliestFinish": pricer.earliest, "cheapest": pricer.work,
                               "cheapestDeadline": pricer.floor_deadline()})
            deadline = within
        spent = self._spent(terms.quote_id, now)
        if deadline < pricer.earliest - spent - 1e-6:
            raise Refusal(f"the deadline {deadline:.3f} is before the earliest feasible finish "
                          f"{pricer.earliest:.3f}", {"earliestFinish": pricer.earliest})
        price = pricer.price(deadline)
        if quoted is not None:  # a point of the quote is sold at the quoted price
            price = next((p.price for p in quoted.curve if abs(p.deadline - deadline) < 1e-6), price)
        if terms.max_price is not None and price > terms.max_price + 1e-9:
            raise Refusal(f"finishing by {deadline:.3f} costs {price:.1f}, above the maximum price "
                          f"{terms.max_price:g}", {"earliestFinish": pricer.earliest, "price": price})
        margin = self.config.margin_s - spent if terms.quote_id is not None else None
        try:
            book.admit(app_id, phases, deadline, now, price=price, margin=margin)
        except Infeasible as exc:
            raise Refusal(str(exc), {"earliestFinish": exc.earliest}) from None
        claim = DeadlineClaim(
            phases=tuple((p.work, p.width, p.min_s) for p in phases), price=price, mean=est.mean, std=est.std,
            upper=est.upper, z=est.z, method=est.method, runs=est.runs, earliest=pricer.earliest,
            quote_id=terms.quote_id or "")
        self.held[app_id] = _Held(queue, claim, deadline)
        return replace(terms, deadline=deadline, claim=claim)

    def _spent(self, quote_id: str | None, now: float) -> float:
        """The time since a quote was given, in whole steps, at most the safety margin: a quote bought that
        much later keeps its deadlines, paying for the delay out of the claim's margin."""
        if quote_id is None:
            return 0.0
        dt = self.config.step_s
        steps = math.ceil(max(0.0, now - self.quotes[quote_id].created) / dt - 1e-9) + 1
        return min(steps * dt, self.config.margin_s)

    def move(self, app_id: AppId, deadline: float, now: float) -> None:
        """A new deadline for an admitted app: its remaining work is admitted by its book as at submission, in
        the room the other claims leave; ``Refusal`` (409, with the earliest finish) changes nothing. The
        price stays what was paid."""
        held = self.held[app_id]
        outcomes.check_ahead(self.books[held.queue], deadline, now)
        try:
            self.books[held.queue].move(app_id, self._remaining(held), deadline, now)
        except Infeasible as exc:
            self._count("changes_infeasible")
            raise Refusal(f"the deadline {deadline:.3f} is before the earliest feasible finish {exc.earliest:.3f}",
                          {"earliestFinish": exc.earliest}) from None
        held.deadline = deadline
        self._count("changes_admitted")

    def restore(self, app_id: AppId, queue: QueuePath, terms: AppTerms, done: float, now: float) -> None:
        """Put back an admitted deadline the store kept (after a restart)."""
        if terms.claim is None or terms.deadline is None or queue not in self.books:
            return
        book = self.books[queue]
        held = _Held(queue, terms.claim, terms.deadline, done)
        self.held[app_id] = held
        book.restore(Claim(app_id, terms.deadline, self._remaining(held), now, terms.claim.price), now)

    # ------------------------------------------------------------------------------------- progress

    def _count(self, key: str, n: int = 1) -> None:
        self.counters[key] = self.counters.get(key, 0) + n

    def holds(self, app_id: AppId) -> bool:
        """Whether the app holds an admitted deadline claim."""
        return app_id in self.held

    def container_done(self, app_id: AppId, unit_seconds: float, group: int | None = None) -> None:
        """A task of the app ended after ``unit_seconds`` of work; ``group`` is its task group (ask priority:
        a DAG stage's depth, MapReduce's maps or reduces), whose phase the work is taken off."""
        held = self.held.get(app_id)
        if held is not None and unit_seconds > 0:
            held.done += unit_seconds
            if group is not None:
                held.done_by[group] = held.done_by.get(group, 0.0) + unit_seconds
            self._dirty.add(app_id)

    def refresh(self, app_id: AppId, spans: Sequence[Span]) -> bool:
        """Re-estimate a running deadline app from its completed tasks (MRM's future work, §6.2): a phase
        whose completed tasks average more than its claim allows for all its tasks claims that much more,
        so the app is owed more and later quotes see the bigger claim. True when the claim grew."""
        held = self.held.get(app_id)
        if held is None:
            return False
        work, _, counts, sizes = measured(spans, self.config.unit)
        current = [w for w, _, _ in held.phases()]
        grew = False
        for k, (_, width, _) in enumerate(held.claim.phases):
            if k >= len(work) or counts[k] < 2 or sizes[k] <= 0:
                continue
            tasks = max(counts[k], round(width / sizes[k]))
            projected = work[k] / counts[k] * tasks
            if projected > current[k] * (1 + 1e-6):
                current[k] = projected
                grew = True
        if grew:
            held.work = current
            self._dirty.add(app_id)
            self._count("claims_refreshed")
        return grew

    def _remaining(self, held: _Held, running: float = 0.0) -> tuple[Phase, ...]:
        """The claim's work still to do per phase: each phase less the work its own tasks did (the k-th task
        group to finish a task is phase k), then what is running off the earliest phase left."""
        phases = held.phases()
        rest = [w for w, _, _ in phases]
        if held.done_by:
            for k, done in enumerate(held.done_by.values()):
                if k < len(rest):
                    rest[k] = max(0.0, rest[k] - done)
            extra = held.done - sum(held.done_by.values())
        else:
            extra = held.done
        left = extra + running
        for k in range(len(rest)):
            take = min(rest[k], left)
            rest[k] -= take
            left -= take
        out = []
        for (work, width, min_s), r in zip(phases, rest, strict=True):
            if r > 1e-9:
                out.append(Phase(r, width, min_s * r / work if work > 0 else 0.0))
        return tuple(out)

    def finished(self, app_id: AppId, now: float, *, succeeded: bool, work: float | None) -> Outcome | None:
        """The app ended: its claim goes; the outcome is counted (None for an app without a deadline)."""
        held = self.held.pop(app_id, None)
        if held is None:
            return None
        book = self.books.get(held.queue)
        if book is not None:
            book.remove(app_id)
        status = MET if succeeded and now <= held.deadline + 1e-6 else MISSED
        actual = held.done if work is None else work
        out = Outcome(app_id, held.queue, held.deadline, now, status, actual > held.claim.upper + 1e-6, succeeded)
        self.outcomes.append(out)
        self._count("met" if status == MET else "missed")
        if status == MET:
            self.earliness.observe(held.deadline - now)
        elif succeeded:
            self.tardiness.observe(now - held.deadline)
        if out.pi_miss:
            self._count("pi_misses")
        return out

    # ------------------------------------------------------------------------------------- the view

    def view(self, now: float, running: Callable[[AppId], float] = lambda _: 0.0) -> DeadlineView:
        """What the cycle at ``now`` sees: deadline apps in EDF order with what each is owed now.
        ``running(app)`` is the work its running containers did so far (unit-seconds)."""
        if not self.held:
            return NO_DEADLINES
        for app_id in sorted(self._dirty):
            held = self.held.get(app_id)
            if held is not None and app_id in self.books[held.queue].claims:
                self.books[held.queue].sync(app_id, self._remaining(held, running(app_id)), now)
        self._dirty.clear()
        for queue, book in self.books.items():
            if book.claims and now - self._laid.get(queue, -math.inf) >= self.config.relayout_s:
                for key, claim in book.claims.items():
                    claim.phases = self._remaining(self.held[AppId(key)], running(AppId(key)))
                book.relayout(now)
                self._laid[queue] = now
        entries = []
        nxt = math.inf
        for queue, book in self.books.items():
            s = book.step_of(now)
            for c in book.claims.values():
                owed = c.placed.at(s)
                entries.append(DeadlineEntry(AppId(c.key), queue, c.deadline, owed, self.config.unit, c.status))
                nxt = min(nxt, _next_change(c.placed.start, c.placed.rate, s) * book.dt)
        entries.sort(key=lambda e: (e.deadline, e.app_id))
        return DeadlineView(tuple(entries), nxt if math.isfinite(nxt) else None)

    def queue_units(self, queue: QueuePath) -> float:
        """The capacity of a queue's book, in units."""
        book = self.books.get(queue)
        return book.capacity / self.config.max_fraction if book is not None else 0.0

    def status(self, app_id: AppId) -> str | None:
        held = self.held.get(app_id)
        if held is None:
            return None
        claim = self.books[held.queue].claims.get(app_id)
        return claim.status if claim is not None else AT_RISK

    def remaining_work(self, app_id: AppId) -> float:
        held = self.held.get(app_id)
        return sum(p.work for p in self._remaining(held)) if held is not None else 0.0

    def laxity(self, app_id: AppId, now: float) -> float | None:
        """Seconds to spare: the deadline less when the remaining work could finish at the latest (its lazy
        layout's start) — 0 when its layout starts now; None without a deadline."""
        held = self.held.get(app_id)
        if held is None:
            return None
        claim = self.books[held.queue].claims.get(app_id)
        if claim is None or not len(claim.placed.rate):
            return held.deadline - now
        nz = np.nonzero(claim.placed.rate > 1e-9)[0]
        start = (claim.placed.start + int(nz[0])) * self.books[held.queue].dt if len(nz) else held.deadline
        return max(0.0, start - now) if claim.status != AT_RISK else 0.0

    def edf(self) -> list[tuple[AppId, _Held]]:
        return sorted(self.held.items(), key=lambda kv: (kv[1].deadline, kv[0]))


def _next_change(start: int, rate: np.ndarray, s: int) -> float:
    """The first step after ``s`` where the layout's rate differs from its rate at ``s``."""
    n = len(rate)
    if n == 0:
        return math.inf
    cur = rate[s - start] if 0 <= s - start < n else 0.0
    if s < start:
        return float(start) if cur != rate[0] or rate[0] > 0 else math.inf
    tail = rate[s - start + 1:]
    if not len(tail):
        return float(start + n) if cur > 0 and s - start < n else math.inf
    diff = np.nonzero(np.abs(tail - cur) > 1e-9)[0]
    if len(diff):
        return float(s + 1 + int(diff[0]))
    return float(start + n) if cur > 0 else math.inf


__all__ = ["DELAY_BUCKETS", "MET", "MISSED", "DeadlineConfig", "DeadlineSystem", "Histogram", "Outcome", "Quote",
           "Refusal"]
