"""What the deadline system hands out and counts: quotes, refusals, the outcome of each deadline and the
histograms of how late or early apps finished."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from common.ids import AppId, QueuePath
from rm.core.deadlines.book import DeadlineBook
from rm.core.deadlines.estimate import JobFeatures, WorkEstimate
from rm.core.deadlines.layout import Phase
from rm.core.deadlines.pricing import PriceQuote

MET = "MET"
MISSED = "MISSED"
DELAY_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, math.inf)
"""Seconds: the buckets of the tardiness and earliness histograms."""


@dataclass(slots=True)
class Histogram:
    """Cumulative counts per upper bound (``DELAY_BUCKETS``) and the sum, as Prometheus keeps them."""

    counts: list[int] = field(default_factory=lambda: [0] * len(DELAY_BUCKETS))
    total: float = 0.0

    def observe(self, x: float) -> None:
        for i, b in enumerate(DELAY_BUCKETS):
            if x <= b:
                self.counts[i] += 1
        self.total += x


@dataclass(frozen=True, slots=True)
class Quote:
    quote_id: str
    queue: QueuePath
    created: float
    expires: float
    job: JobFeatures
    estimate: WorkEstimate
    phases: tuple[Phase, ...]
    price: PriceQuote


@dataclass(frozen=True, slots=True)
class Outcome:
    app_id: AppId
    queue: QueuePath
    deadline: float
    finish: float
    status: str  # MET | MISSED
    pi_miss: bool  # its work exceeded the prediction interval it was admitted with
    succeeded: bool


class Refusal(Exception):
    """A deadline the system will not admit: ``conflict`` (409) when it is valid but not possible now, with
    the alternative in ``quote``; else the request itself cannot be served (400)."""

    def __init__(self, reason: str, quote: dict[str, object] | None = None, *, conflict: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.quote = dict(quote or {})
        self.conflict = conflict


def check_ahead(book: DeadlineBook, deadline: float, now: float) -> None:
    """A deadline further ahead than the book lays work is refused (400): its layout would need a step each."""
    if deadline - now > book.horizon_s():
        raise Refusal(f"the deadline {deadline:.3f} is more than {book.horizon_s() / 86_400:.0f} days ahead; "
                      "deadlines are booked at most that far ahead", conflict=False)


def no_room(queue: QueuePath, book: DeadlineBook, phases: tuple[Phase, ...]) -> str:
    work = sum(p.work for p in phases)
    if book.capacity <= 0:
        return f"queue {queue} has no capacity now (no NodeManager offers it any): {work:.0f} unit-seconds cannot be " \
               "laid out"
    return f"{work:.0f} unit-seconds cannot finish within {book.horizon_s() / 86_400:.0f} days in queue {queue}"
