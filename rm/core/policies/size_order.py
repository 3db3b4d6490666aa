"""Closest to completion first by the RM's own measure of each job (SLearn's size signal), coarsely.

The leftover stage's default order (``RemainingWorkOrder``) believes the remaining work each AM reports on its
asks. That number comes from the durations a job file declares, which go stale as code and data change, which
an AM can game, and which stock YARN and Spark AMs do not give at all. ``EstimateOrder`` reads instead the
estimate the RM's size tracker keeps in the app's terms (``AppTerms.size``: the pilots' or finished tasks'
measure, the DAG hybrid for stages not yet run, the history's, else what the job file declares), and only where
the RM has none, what the AM reports. Jobs go by bucket of remaining task-seconds, buckets growing by
``multiplier`` (GS's exponential thresholds, §5.1.1 of the SLearn paper), and first come, first served inside
a bucket, so estimation noise within a factor of ``multiplier`` does not reshuffle jobs; a job nothing is known
of goes last.

The bucket bounds are ``multiplier``^k task-seconds: no bound of the top bucket needs scaling to the cluster,
since the leftover order only compares jobs with each other and there is no lowest queue to starve (the fair
shares before the leftover are the starvation guard).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from rm.core.model import AppView
from rm.core.policies.api import ESTIMATES, AppOrder, Input, app_tiebreak

if TYPE_CHECKING:
    from rm.core.context import CycleContext

BUCKET_MULTIPLIER = 2.0
"""How much larger each bucket's bound is than the one before (GS uses 10 across its whole range of queues)."""

UNKNOWN_BUCKET = math.inf


def remaining_estimate(app: AppView) -> tuple[float, str] | None:
    """(remaining task-seconds, source) of the best size signal for the app: the RM's own estimate, else the
    remaining work its AM reports (``declared``); None when neither says anything. An estimate with nothing
    left is not used: the app still asks, so it only counts what is done (the RM's measure of an app whose task
    count it does not know — a stock YARN app's — is the work its finished tasks did)."""
    size = app.terms.size
    if size is not None and size.remaining_s > 0:
        return size.remaining_s, size.source
    reported = min((a.remaining_work_s for a in app.asks), default=0.0)
    if reported > 0:
        return reported, "declared"
    return None


def size_bucket(remaining_s: float, multiplier: float = BUCKET_MULTIPLIER) -> float:
    """The bucket of a remaining size: k for sizes in [multiplier^(k-1), multiplier^k) task-seconds (0 below
    one task-second)."""
    if not multiplier > 1:
        raise ValueError(f"a bucket multiplier must be > 1, got {multiplier!r}")
    if remaining_s < 1.0:
        return 0.0
    return float(math.floor(math.log(remaining_s, multiplier)) + 1)


class EstimateOrder:
    """By bucket of the RM's remaining-size estimate (smallest first, unknown last), first come first served
    inside a bucket."""

    name: ClassVar[str] = "estimate"
    reads: frozenset[Input] = frozenset({ESTIMATES})

    def __init__(self, multiplier: float = BUCKET_MULTIPLIER) -> None:
        size_bucket(1.0, multiplier)  # checks it
        self.multiplier = multiplier

    def sort_key(self, app: AppView, ctx: CycleContext) -> tuple[float, float, str]:
        got = remaining_estimate(app)
        bucket = UNKNOWN_BUCKET if got is None else size_bucket(got[0], self.multiplier)
        return (bucket, *app_tiebreak(app))


_order: type[AppOrder] = EstimateOrder
