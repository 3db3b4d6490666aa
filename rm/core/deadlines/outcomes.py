"""What the deadline system hands out and counts: quotes, refusals, the outcome of each deadline and the
histograms of how late or early apps finished."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from common.ids import AppId, QueuePath
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
