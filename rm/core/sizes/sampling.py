"""Learning a job's size in space: pilot tasks, the estimate from them, and the sampling ratio (SLearn §4.1, §5.1.2).

A wide job (``tasks >= THIN_LIMIT``) first runs k = max(1, ⌈r·S⌉) of its S tasks, picked at random; once those
pilots finish, the job's total size is the pilots' mean runtime times S (the paper's "empirical mean"). Jobs
narrower than the thin limit skip sampling altogether, since serialising a two-task job behind its own pilot
costs more than the estimate is worth.

§4.1 models a job's mean task length as drawn from a normal prior (the history's mean μ, job-wise variance
σ_o²) and each task's length as normal around that mean (task-wise variance σ_1²). :func:`posterior` is the
resulting normal posterior after m samples, which is how a history estimate and pilot samples combine: it
tends to the sample mean as σ_o² grows and to μ as σ_1²/m grows.

:class:`AdaptiveRatio` is the rule of the paper's Fig. 4. It keeps, per candidate ratio, the normalised job
completion times (JCT / the job's own runtime) of the last T sampled jobs that used it, and its score is
their mean. Until the middle ratio and its two neighbours each have T observations, they are tried in the
order middle, lower, upper (3%, 2%, 4% by default). Afterwards the ratio with the lowest score is used, except
that a step past the lower (upper) neighbour to the outermost ratio (1% or 5%) is tried when the neighbour
beat the middle by more than 10%. "Tried" means used until it has T observations of its own; from then on
its score competes with the others' like any ratio's (the pseudocode would keep stepping outward for as long
as the neighbour stays the minimum, whatever the outer ratio scored, which contradicts the text's "tries").
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Sequence
from typing import Any

THIN_LIMIT = 3
RATIOS = (0.01, 0.02, 0.03, 0.04, 0.05)
# Fig. 4: a neighbour of the middle ratio must beat the middle by this factor before the outer ratio is tried.
EXTEND_FACTOR = 1.1
# r·S is computed in binary floating point (0.03 × 100 = 3.0000000000000004); products within this of an
# integer count as that integer so the ceiling does not add a spurious pilot.
_CEIL_SLACK = 1e-9


def pilot_count(tasks: int, ratio: float, thin_limit: int = THIN_LIMIT) -> int:
    """The number of pilot tasks for a job of ``tasks`` tasks at sampling ratio ``ratio``.

    ``max(1, ⌈ratio·tasks⌉)`` for a wide job, never more than ``tasks``; 0 for a thin job (fewer than
    ``thin_limit`` tasks), which bypasses sampling.
    """
    if tasks < 0:
        raise ValueError(f"tasks must be >= 0, got {tasks}")
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"ratio must be in (0, 1], got {ratio}")
    if tasks < thin_limit or tasks == 0:
        return 0
    k = math.ceil(ratio * tasks - _CEIL_SLACK)
    return min(tasks, max(1, k))


def choose_pilots(tasks: int, k: int, rng: random.Random) -> tuple[int, ...]:
    """``k`` distinct task indices in ``range(tasks)`` chosen uniformly at random, in ascending order.

    Random rather than the first k, because runtime can correlate with a task's index (a job's last split is
    often the short remainder).
    """
    if not 0 <= k <= tasks:
        raise ValueError(f"need 0 <= k <= tasks, got k={k}, tasks={tasks}")
    return tuple(sorted(rng.sample(range(tasks), k)))


def sampled_total(pilot_runtimes: Sequence[float], tasks: int) -> float:
    """The job's estimated size in task-seconds: the mean pilot runtime times the number of tasks."""
    if not pilot_runtimes:
        raise ValueError("no pilot runtimes")
    if tasks < 0:
        raise ValueError(f"tasks must be >= 0, got {tasks}")
    return math.fsum(pilot_runtimes) / len(pilot_runtimes) * tasks


def posterior(
    mu: float, var_prior: float, var_sample: float, samples: Sequence[float]
) -> tuple[float, float]:
    """The §4.1 posterior (mean, variance) of a job's mean task length.

    ``mu`` and ``var_prior`` are the history's mean and the job-wise variance σ_o²; ``var_sample`` is the
    task-wise variance σ_1² of one task around the job's mean; ``samples`` are the m measured tasks::

        mean     = (Σ y_i / σ_1² + μ / σ_o²) / (m / σ_1² + 1 / σ_o²)
        variance = 1 / (m / σ_1² + 1 / σ_o²)

    Limits are handled exactly: ``var_prior = inf`` (no usable history) gives the sample mean with variance
    σ_1²/m; ``var_sample = 0`` (noise-free tasks) gives the sample mean with variance 0; ``var_prior = 0``
    gives μ with variance 0; no samples gives the prior unchanged.
    """
    if var_prior < 0 or var_sample < 0 or math.isnan(var_prior) or math.isnan(var_sample):
        raise ValueError(f"variances must be >= 0, got {var_prior}, {var_sample}")
    m = len(samples)
    if m == 0:
        return mu, var_prior
    sample_mean = math.fsum(samples) / m
    if var_sample == 0.0:
        if var_prior == 0.0:
            raise ValueError("a noise-free prior and noise-free samples cannot be combined")
        return sample_mean, 0.0
    if var_prior == 0.0:
        return mu, 0.0
    prior_precision = 0.0 if math.isinf(var_prior) else 1.0 / var_prior
    precision = m / var_sample + prior_precision
    mean = (math.fsum(samples) / var_sample + mu * prior_precision) / precision
    return mean, 1.0 / precision


def _state_row(ratio: float, sampled: int, finished: int, score: float | None) -> dict[str, Any]:
    """One ratio's line of the sampler's state (``/ws/v1/shepherd/sampling``)."""
    return {"ratio": ratio, "jobsSampled": sampled, "jobsFinished": finished,
            "score": None if score is None else round(score, 4)}


class FixedRatio:
    """One sampling ratio for every job (the paper's fixed-ratio runs, Table 6): the interface of
    :class:`AdaptiveRatio`, whose observations it counts and scores but never acts on."""

    def __init__(self, ratio: float) -> None:
        if not 0.0 < ratio <= 1.0:
            raise ValueError(f"ratio must be in (0, 1], got {ratio}")
        self._ratio = float(ratio)
        self._recent: deque[float] = deque(maxlen=100)
        self._given = 0
        self._seen = 0

    @property
    def ratio(self) -> float:
        return self._ratio

    @property
    def ratios(self) -> tuple[float, ...]:
        return (self._ratio,)

    def take(self) -> float:
        self._given += 1
        return self._ratio

    def observe(self, ratio: float, jct_s: float, runtime_s: float) -> None:
        if ratio == self._ratio and runtime_s > 0 and not math.isnan(jct_s):
            self._recent.append(jct_s / runtime_s)
            self._seen += 1

    def state(self) -> list[dict[str, Any]]:
        """The ratio with its jobs sampled, finished and score (as :meth:`AdaptiveRatio.state`)."""
        return [_state_row(self._ratio, self._given, self._seen, self.scores()[self._ratio])]

    def scores(self) -> dict[float, float | None]:
        return {self._ratio: math.fsum(self._recent) / len(self._recent) if self._recent else None}

    def counts(self) -> dict[float, int]:
        return {self._ratio: len(self._recent)}


class AdaptiveRatio:
    """The Fig. 4 rule choosing the sampling ratio from the normalised JCTs of recent sampled jobs.

    Call :meth:`take` for each job about to be sampled (it returns the job's ratio and counts it), and
    :meth:`observe` once per finished *sampled* job (thin jobs and unsampled jobs say nothing about a ratio);
    :attr:`ratio` is what the next job would get. The start-up trials go by jobs, as Fig. 4's "first T jobs":
    the middle ratio for the first ``window`` sampled jobs, the lower neighbour for the next ``window``, then
    the upper one; a trial outwards (1 % or 5 %) is ``window`` jobs too. After the trials each job gets the
    ratio of lowest score among those with finished jobs. The state is the jobs given each ratio (or, after a
    restart that replayed only finished runs, the jobs seen finishing at it) and the last ``window``
    observations per ratio: :meth:`to_dict` / :meth:`from_dict` restore it exactly.
    """

    def __init__(self, ratios: Sequence[float] = RATIOS, window: int = 100) -> None:
        ordered = tuple(sorted(float(r) for r in ratios))
        if len(ordered) < 3 or len(set(ordered)) != len(ordered):
            raise ValueError(f"need at least three distinct ratios, got {tuple(ratios)}")
        if any(not 0.0 < r <= 1.0 for r in ordered):
            raise ValueError(f"ratios must be in (0, 1], got {tuple(ratios)}")
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self._ratios = ordered
        self._window = window
        self._mid = (len(ordered) - 1) // 2
        self._recent: dict[float, deque[float]] = {r: deque(maxlen=window) for r in ordered}
        self._given: dict[float, int] = dict.fromkeys(ordered, 0)  # jobs sampled at each ratio
        self._seen: dict[float, int] = dict.fromkeys(ordered, 0)  # finished jobs observed at each ratio

    def _tried(self, ratio: float) -> bool:
        """The ratio has had its trial: ``window`` jobs were sampled at it."""
        return max(self._given[ratio], self._seen[ratio]) >= self._window

    @property
    def ratios(self) -> tuple[float, ...]:
        return self._ratios

    @property
    def window(self) -> int:
        return self._window

    @property
    def ratio(self) -> float:
        """The sampling ratio for the next job."""
        mid = self._mid
        lower, middle, upper = self._ratios[mid - 1], self._ratios[mid], self._ratios[mid + 1]
        for trial in (middle, lower, upper):
            if not self._tried(trial):
                return trial
        scores = {r: s for r, s in self.scores().items() if s is not None}
        if not scores:  # none of the trials' jobs has finished yet
            return middle
        best = min(scores, key=lambda r: (scores[r], abs(self._ratios.index(r) - mid), r))
        s_best, s_mid = scores[best], scores.get(middle)
        if s_mid is not None and best == lower and mid >= 2 and EXTEND_FACTOR * s_best < s_mid:
            outer = self._ratios[mid - 2]
            if not self._tried(outer):
                return outer
        if s_mid is not None and best == upper and mid + 2 < len(self._ratios) and s_mid > EXTEND_FACTOR * s_best:
            outer = self._ratios[mid + 2]
            if not self._tried(outer):
                return outer
        return best

    def state(self) -> list[dict[str, Any]]:
        """Per ratio: the jobs sampled at it (since this RM started, or seen finishing after a restart), those
        of them finished, and its score (mean normalised JCT of its last ``window`` finished jobs)."""
        scores = self.scores()
        return [_state_row(r, max(self._given[r], self._seen[r]), self._seen[r], scores[r]) for r in self._ratios]

    def take(self) -> float:
        """The ratio for a job about to be sampled, counted as given to it."""
        got = self.ratio
        self._given[got] += 1
        return got

    def observe(self, ratio: float, jct_s: float, runtime_s: float) -> None:
        """Record a finished sampled job: the ``ratio`` it was sampled at, its JCT (arrival to finish) and
        its own runtime (the time it would take running alone, e.g. first container start to finish), both
        in seconds. Its score contribution is ``jct_s / runtime_s``. A ratio not among :attr:`ratios` (a
        job sampled under an older configuration) and a non-positive runtime are ignored."""
        if ratio not in self._recent or not runtime_s > 0 or math.isnan(jct_s):
            return
        self._recent[ratio].append(jct_s / runtime_s)
        self._seen[ratio] += 1

    def scores(self) -> dict[float, float | None]:
        """Per ratio, the mean normalised JCT of its last ``window`` jobs (None before any)."""
        return {r: (math.fsum(v) / len(v) if v else None) for r, v in self._recent.items()}

    def counts(self) -> dict[float, int]:
        """Per ratio, how many observations the score is over (at most ``window``)."""
        return {r: len(v) for r, v in self._recent.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "ratios": list(self._ratios),
            "window": self._window,
            "recent": {repr(r): list(v) for r, v in self._recent.items()},
            "given": {repr(r): n for r, n in self._given.items()},
            "seen": {repr(r): n for r, n in self._seen.items()},
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> AdaptiveRatio:
        out = AdaptiveRatio(tuple(float(r) for r in d["ratios"]), int(d["window"]))
        for key, values in dict(d.get("recent", {})).items():
            r = float(key)
            if r in out._recent:
                out._recent[r].extend(float(v) for v in values)
                out._seen[r] = len(out._recent[r])
        for field_name, counts in (("given", out._given), ("seen", out._seen)):
            for key, n in dict(d.get(field_name, {})).items():
                if float(key) in counts:
                    counts[float(key)] = int(n)
        return out
