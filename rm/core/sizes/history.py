"""Learning a job's size in time: the 3Sigma-like history predictor and its point variant (SLearn §4.3, §5.1.3).

SLearn's main baseline predicts a job's size from earlier runs of similar jobs. Similar means sharing one
feature value: the job name, the user, the queue, the application type, the submit hour or the requested
resources. Each feature value keeps the sizes of its last ``window`` runs. For a new job every feature gives
a candidate estimate, and the predictor uses the feature whose estimates had the least error in the past: on
every finished run, each matching feature value first grades the estimate it would have given (the relative
error |estimate − actual| / actual) and then learns the run's size.

The estimate is not a point of the distribution but the distribution weighted by a utility of the runtime.
To minimise average completion time the paper takes utility ∝ 1/t², which makes the estimate the value whose
utility equals the expected utility: t̂ = (E[1/t²])^(-1/2) (:func:`inverse_square`). It leans towards the
short runs: 10, 10 and 40 give about 12.06 where the mean is 20. The point predictor (Point-Est) uses the
median of the same feature's history instead.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

FEATURES = ("name", "user", "queue", "app_type", "submit_hour", "resources")


@dataclass(frozen=True)
class JobKey:
    """What the history predictor knows of a job before it runs. ``resources`` is the requested container
    size in any stable textual form (e.g. ``"1024MB,1vc"``); ``submit_hour`` is the hour of day, 0–23."""

    name: str
    user: str
    queue: str
    app_type: str
    submit_hour: int
    resources: str

    def value(self, feature: str) -> str:
        """This job's value of ``feature`` (one of :data:`FEATURES`), as text."""
        if feature not in FEATURES:
            raise ValueError(f"unknown feature {feature!r}")
        return str(getattr(self, feature))


def inverse_square(values: Sequence[float]) -> float:
    """The estimate that integrates a 1/t² utility over ``values``: (mean of 1/t²)^(-1/2).

    Any zero value gives 0 (its utility is unbounded); values must not be negative.
    """
    if not values:
        raise ValueError("no values")
    if any(v < 0 or math.isnan(v) for v in values):
        raise ValueError(f"values must be >= 0, got {tuple(values)}")
    if any(v == 0 for v in values):
        return 0.0
    mean_inv_sq = math.fsum(1.0 / (v * v) for v in values) / len(values)
    return 1.0 / math.sqrt(mean_inv_sq)


@dataclass
class _Group:
    """One feature value's history: the last sizes seen and the errors of the estimates it gave."""

    sizes: deque[float]
    errors: deque[float] = field(default_factory=deque)

    def mean_error(self) -> float | None:
        return math.fsum(self.errors) / len(self.errors) if self.errors else None


class HistoryPredictor:
    """Per-feature run history, predicting with the feature of least past error (see the module doc).

    ``window`` bounds both the sizes and the graded errors kept per feature value (a count of runs rather
    than the paper's days, so the predictor needs no clock). ``features`` restricts the features used.
    ``max_groups`` bounds the feature values remembered (job names with a timestamp in them never recur):
    beyond it the value least recently observed is forgotten.
    """

    def __init__(
        self, window: int = 100, features: Sequence[str] = FEATURES, max_groups: int = 50_000
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if max_groups < 1:
            raise ValueError(f"max_groups must be >= 1, got {max_groups}")
        unknown = [f for f in features if f not in FEATURES]
        if unknown or not features:
            raise ValueError(f"features must be a non-empty subset of {FEATURES}, got {tuple(features)}")
        self._window = window
        self._features = tuple(dict.fromkeys(features))
        self._max_groups = max_groups
        # In order of the last observation, oldest first.
        self._groups: dict[tuple[str, str], _Group] = {}

    @property
    def window(self) -> int:
        return self._window

    @property
    def features(self) -> tuple[str, ...]:
        return self._features

    def _new_group(self) -> _Group:
        return _Group(deque(maxlen=self._window), deque(maxlen=self._window))

    def observe(self, key: JobKey, total_s: float) -> None:
        """Learn a finished job's actual size (task-seconds); first grade what each of its feature values
        would have predicted for it. A negative or NaN size is ignored."""
        if not total_s >= 0:
            return
        for feature in self._features:
            gkey = (feature, key.value(feature))
            group = self._groups.pop(gkey, None) or self._new_group()
            self._groups[gkey] = group
            if group.sizes and total_s > 0:
                estimate = inverse_square(group.sizes)
                group.errors.append(abs(estimate - total_s) / total_s)
            group.sizes.append(total_s)
        while len(self._groups) > self._max_groups:
            del self._groups[next(iter(self._groups))]

    def _best(self, key: JobKey) -> tuple[str, _Group] | None:
        """The feature to predict with: graded feature values before ungraded ones, then the least mean
        error, then the order of :attr:`features` (the more specific first)."""
        best: tuple[tuple[int, float, int], str, _Group] | None = None
        for index, feature in enumerate(self._features):
            group = self._groups.get((feature, key.value(feature)))
            if group is None or not group.sizes:
                continue
            err = group.mean_error()
            rank = (1, 0.0, index) if err is None else (0, err, index)
            if best is None or rank < best[0]:
                best = (rank, feature, group)
        return None if best is None else (best[1], best[2])

    def predict(self, key: JobKey) -> tuple[float, str] | None:
        """(estimate in task-seconds, the feature used), or None when no feature of ``key`` has history."""
        chosen = self._best(key)
        if chosen is None:
            return None
        feature, group = chosen
        return inverse_square(group.sizes), feature

    def point(self, key: JobKey) -> float | None:
        """The median of the best feature's history (Point-Est), or None without history."""
        chosen = self._best(key)
        return None if chosen is None else statistics.median(chosen[1].sizes)

    def log_moments(self, key: JobKey) -> tuple[float, float | None] | None:
        """The best feature's past sizes as a distribution (SLearn §4.1's prior, over logarithms: runs differ by
        factors): the mean and variance of their natural logs (the variance None from a single size), or None
        without a positive past size."""
        chosen = self._best(key)
        if chosen is None:
            return None
        logs = [math.log(s) for s in chosen[1].sizes if s > 0]
        if not logs:
            return None
        mean = math.fsum(logs) / len(logs)
        return mean, (statistics.pvariance(logs, mean) if len(logs) >= 2 else None)

    def median_error(self, key: JobKey, feature: str) -> float | None:
        """The median relative error of the estimates ``key``'s value of ``feature`` gave, None if ungraded."""
        group = self._groups.get((feature, key.value(feature)))
        return None if group is None or not group.errors else statistics.median(group.errors)

    def runs(self, key: JobKey, feature: str) -> int:
        """How many past runs (at most ``window``) share ``key``'s value of ``feature``."""
        group = self._groups.get((feature, key.value(feature)))
        return 0 if group is None else len(group.sizes)

    def error(self, key: JobKey, feature: str) -> float | None:
        """The mean relative error of the estimates ``key``'s value of ``feature`` gave, None if ungraded."""
        group = self._groups.get((feature, key.value(feature)))
        return None if group is None else group.mean_error()

    def to_dict(self) -> dict[str, Any]:
        return {
            "window": self._window,
            "features": list(self._features),
            "max_groups": self._max_groups,
            "groups": [
                {"feature": f, "value": v, "sizes": list(g.sizes), "errors": list(g.errors)}
                for (f, v), g in self._groups.items()
            ],
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> HistoryPredictor:
        out = HistoryPredictor(
            int(d["window"]),
            tuple(str(f) for f in d.get("features", FEATURES)),
            int(d.get("max_groups", 50_000)),
        )
        for row in d.get("groups", ()):
            group = out._new_group()
            group.sizes.extend(float(s) for s in row["sizes"])
            group.errors.extend(float(e) for e in row.get("errors", ()))
            out._groups[(str(row["feature"]), str(row["value"]))] = group
        return out
