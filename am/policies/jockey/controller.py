"""Jockey's control loop: how many units a job should hold now to finish with the best utility (§4.3).

Every period the controller reads the job's progress, asks the remaining-time model for C(p, a) at each
allocation ``a`` of the grid, and scores each allocation by the expected utility of finishing at
``t_r + slack × C(p, a)`` (``t_r`` = time since the job started), against the utility shifted ``D``
earlier (the dead zone: a 60-minute deadline with D = 3 min is planned as 57 minutes). The raw target
``A^r`` is the *smallest* allocation whose expected utility is the best achievable. Then:

* **hysteresis** — the smoothed allocation moves a share ``α`` of the way: A^s ← A^s + α (A^r − A^s);
  the request sent is ⌈A^s⌉; within half a unit of A^r, A^s takes A^r (else, rounded up, a request
  coming down would stay one unit above its target for ever);
* **dead zone** — a band of width D below the planning deadline d − D. The job is behind as soon as
  its predicted finish at the current allocation passes d − D, and the controller raises at once (still
  D before the real deadline). It releases units only when the job would finish at least D earlier
  than that, by d − 2D, at its current allocation; in between it holds still, so a noisy indicator
  does not move the allocation back and forth.

``quantile`` replaces the expectation by one quantile of C (the paper's §5.3 speaks of worst-case
predictions). Period and dead zone default to the paper's values scaled with the deadline: 1 and
3 minutes at d = 60 minutes, i.e. d / 60 and d / 20.

When the deadline moves, the dead zone follows it, the period only shortens, and the next step takes its
target at once (``set_utility``; ``smooth_changes`` smooths it instead, as the paper's loop does).

**Pace** (ours, not the paper's): given the job's profile, every prediction of C is multiplied by the run's
observed pace, its finished tasks' run times over the profile's mean for as many tasks of each stage
(``observed_pace``), pooled with ``pace_prior`` × the profile's work of evidence at the profile's own pace.
C(p, a) is built from the profile's task times, so on a run that needs 1.8 times its training work it
under-states every remaining time by that factor, and the loop would see it only as progress that comes
late, period after period. The pace shows it from the first finished tasks.

A **ceiling** (``set_ceiling``: the most the job's queue can guarantee it, heard from the RM) caps every
request below the configured ``max_units``: asking for more than can ever be granted changes nothing the job
gets, but an allocation far above it would take that much longer to come down once the job is ahead.

Pure: ``now`` is passed in, nothing is read from a clock; the live AM and the simulator call ``step``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from am.policies.jockey.model import RemainingModel
from am.policies.jockey.profile import JobProfile
from am.policies.jockey.progress import JobState, pace_evidence, pooled_pace
from am.policies.jockey.utility import Utility

FloatArray = npt.NDArray[np.float64]
Status = Literal["ON_TRACK", "AT_RISK"]

PAPER_DEADLINE_S = 3600.0
PAPER_PERIOD_S = 60.0
PAPER_DEAD_ZONE_S = 180.0
TOLERANCE = 1e-9
SNAP_UNITS = 0.5
"""Within this many units of its target the smoothed allocation takes the target: approaching from above,
the exponential approach would otherwise keep the rounded-up request one unit high for ever."""


@dataclass(frozen=True, slots=True)
class ControlConfig:
    slack: float = 1.2
    hysteresis: float = 0.2  # α: 1 jumps straight to the target
    dead_zone_s: float | None = None  # None: deadline × 3/60
    period_s: float | None = None  # None: deadline × 1/60
    quantile: float | None = None  # None: expected utility over C's distribution; else that quantile of C
    min_units: int = 1
    max_units: int | None = None  # a hard limit on the request (the paper's cap)
    initial_units: float | None = None  # None: the first step starts at its raw target
    # evidence of the profile's own pace, as a share of its work, pooled with the finished tasks' run times;
    # the run's pace then scales every prediction. None: C's predictions are taken as they are (the paper)
    pace_prior: float | None = 0.1
    # A number w: the pace is also taken over the tasks that finished in the last w control periods, with the
    # whole run's pace as its prior (worth ``pace_prior`` of the profile's work), and the slower of the two
    # scales the predictions: a slowdown that starts part-way through the run (contention on its nodes) shows
    # within a few periods instead of being averaged over all of it. None: the whole run's pace alone
    pace_window_periods: float | None = 5.0
    # False: the first step after a deadline or utility change (``set_utility``) takes its target at once, as
    # the first step of a run does; hysteresis damps noise in the predictions, and the owner's change is none.
    # True: that step is smoothed like any other (the paper's loop)
    smooth_changes: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.slack) and self.slack > 0):
            raise ValueError(f"slack must be > 0, got {self.slack}")
        if not 0 < self.hysteresis <= 1:
            raise ValueError(f"hysteresis must be in (0, 1], got {self.hysteresis}")
        if self.dead_zone_s is not None and not self.dead_zone_s >= 0:
            raise ValueError(f"dead_zone_s must be >= 0, got {self.dead_zone_s}")
        if self.period_s is not None and not self.period_s > 0:
            raise ValueError(f"period_s must be > 0, got {self.period_s}")
        if self.quantile is not None and not 0 <= self.quantile <= 1:
            raise ValueError(f"quantile must be in [0, 1], got {self.quantile}")
        if self.min_units < 1:
            raise ValueError(f"min_units must be >= 1, got {self.min_units}")
        if self.max_units is not None and self.max_units < self.min_units:
            raise ValueError(f"max_units {self.max_units} is below min_units {self.min_units}")
        if self.pace_prior is not None and not (math.isfinite(self.pace_prior) and self.pace_prior > 0):
            raise ValueError(f"pace_prior must be > 0 (or None), got {self.pace_prior}")
        w = self.pace_window_periods
        if w is not None and not (math.isfinite(w) and w > 0):
            raise ValueError(f"pace_window_periods must be > 0 (or None), got {w}")

    def scaled_dead_zone_s(self, deadline_s: float) -> float:
        if self.dead_zone_s is not None:
            return self.dead_zone_s
        return deadline_s * PAPER_DEAD_ZONE_S / PAPER_DEADLINE_S

    def scaled_period_s(self, deadline_s: float) -> float:
        if self.period_s is not None:
            return self.period_s
        period = deadline_s * PAPER_PERIOD_S / PAPER_DEADLINE_S
        if period <= 0:
            raise ValueError(
                "the utility has no deadline (no flat top) to scale the period by; give period_s"
            )
        return period


@dataclass(frozen=True, slots=True)
class Decision:
    """One step of the loop; the trace keeps every one. Times are absolute, like ``now``."""

    time: float
    progress: float
    raw_units: int  # A^r: the smallest allocation with the best expected utility
    smoothed_units: float  # A^s after hysteresis (or unchanged when held)
    requested_units: int  # ⌈A^s⌉ within [min_units, max_units]: what the AM asks for
    predicted_remaining_s: float  # C at the requested units (mean or the quantile), before slack
    predicted_finish: float  # time + slack × predicted_remaining_s
    late_s: float  # predicted finish minus the planning deadline d − D (> 0: behind)
    expected_utility: float  # at the requested units, against the utility shifted by D
    status: Status  # ON_TRACK when the predicted finish is within the real deadline
    held: bool  # the dead zone kept the allocation although the target differed
    next_step_at: float
    pace: float = 1.0  # the run's observed pace that scaled C's predictions (1: none, or on the profile's)


def smooth(previous: float, target: float, alpha: float) -> float:
    """A^s_t = A^s_{t-1} + α (A^r − A^s_{t-1})."""
    return previous + alpha * (target - previous)


def expected_utilities(
    utility: Utility, elapsed_s: float, remaining_s: FloatArray, slack: float, quantile: float | None = None
) -> FloatArray:
    """Per row of ``remaining_s`` (equally likely samples): E[U(elapsed + slack × C)], or U at a quantile."""
    rows = np.atleast_2d(np.asarray(remaining_s, dtype=np.float64))
    if quantile is not None:
        point = np.quantile(rows, quantile, axis=1)
        return utility.values(elapsed_s + slack * point)
    return utility.expected(elapsed_s + slack * rows, axis=1)


def smallest_maximiser(
    allocations: Sequence[float], utilities: FloatArray, tolerance: float = TOLERANCE
) -> int:
    """Index of the smallest allocation whose utility is the best (within ``tolerance`` of it)."""
    if len(allocations) == 0:
        raise ValueError("no allocation to choose from")
    best = float(np.max(utilities))
    slack = tolerance * max(1.0, abs(best))
    good = [i for i, u in enumerate(utilities) if u >= best - slack]
    return min(good, key=lambda i: allocations[i])


class JockeyController:
    """Per-job SLO control. ``step(now, state)`` every period; ``trace`` keeps the decisions."""

    def __init__(
        self,
        model: RemainingModel,
        utility: Utility,
        config: ControlConfig | None = None,
        *,
        started_at: float = 0.0,
        profile: JobProfile | None = None,
    ) -> None:
        """``profile``: the job's profile, which C was built from; without it predictions are not paced."""
        self._model = model
        self._profile = profile
        self._config = config or ControlConfig()
        self._started_at = started_at
        self._smoothed: float | None = None
        self._changed = False  # the utility changed since the last step: take the target at once
        self._last: Decision | None = None
        self._trace: list[Decision] = []
        self._utility = utility
        self._ceiling: int | None = None
        self._evidence: list[tuple[float, float, float]] = []  # (time, seen, expected) at each step, for the window
        self._set_scales(utility)

    @property
    def model(self) -> RemainingModel:
        return self._model

    def _set_scales(self, utility: Utility) -> None:
        self._dead_zone_s = self._config.scaled_dead_zone_s(utility.deadline)
        self._period_s = self._config.scaled_period_s(utility.deadline)

    @property
    def config(self) -> ControlConfig:
        return self._config

    @property
    def utility(self) -> Utility:
        return self._utility

    @property
    def period_s(self) -> float:
        return self._period_s

    @property
    def dead_zone_s(self) -> float:
        return self._dead_zone_s

    @property
    def trace(self) -> tuple[Decision, ...]:
        return tuple(self._trace)

    def set_utility(self, utility: Utility) -> None:
        """A new deadline or utility from now on (the paper's §5.2); the next ``step`` acts on it at once.

        The dead zone scales with the new deadline; the period only ever shortens. A later deadline does not
        make the job's own pace slower, so a loop that kept its period at three times the length would take
        three times as long to hand back what the job no longer needs (the paper's period is one minute
        whatever the deadline)."""
        self._utility = utility
        period = self._period_s
        self._set_scales(utility)
        self._period_s = min(period, self._period_s)
        self._last = None
        self._changed = not self._config.smooth_changes

    def set_ceiling(self, units: int | None) -> None:
        """The most the job can be guaranteed now (None: no limit beyond ``max_units``); from the next step
        no request exceeds it, and a smoothed allocation above it comes down to it."""
        self._ceiling = None if units is None else max(self._config.min_units, int(units))

    @property
    def max_units(self) -> int | None:
        """The largest request allowed: the configured ``max_units`` and the ceiling, whichever is lower."""
        limits = [u for u in (self._config.max_units, self._ceiling) if u is not None]
        return min(limits) if limits else None

    def candidates(self) -> list[int]:
        """Every whole unit from ``min_units`` up to the limit (``max_units``, else the model's widest grid
        allocation). The model is sampled on a coarser grid and interpolates between its points; choosing
        among the grid's points alone would round every target up to the next one (up to 40 % more)."""
        cfg = self._config
        cap = self.max_units
        hi = cap if cap is not None else max(self._model.allocations)
        return list(range(cfg.min_units, max(cfg.min_units, hi) + 1))

    def _clamp(self, units: float) -> int:
        n = max(self._config.min_units, math.ceil(units - TOLERANCE))
        cap = self.max_units
        return min(n, cap) if cap is not None else n

    def step(self, now: float, state: JobState) -> Decision:
        """Decide the request for the coming period. Called before the period is up, it changes nothing
        and returns the last decision."""
        last = self._last
        if last is not None and now < last.next_step_at - TOLERANCE * self._period_s:
            return last
        cfg = self._config
        elapsed = now - self._started_at
        cands = self.candidates()
        previous = self._smoothed if self._smoothed is not None else cfg.initial_units
        cap = self.max_units
        if previous is not None and cap is not None:
            previous = min(previous, float(cap))
        current = self._clamp(previous) if previous is not None else None
        asked: list[float] = [float(a) for a in cands] + ([float(current)] if current is not None else [])
        pace = self.pace(state, now)
        forecast = self._model.forecast(state, asked)
        samples = forecast.samples * pace
        plan = self._utility.shifted(self._dead_zone_s)
        eu = expected_utilities(plan, elapsed, samples[: len(cands)], cfg.slack, cfg.quantile)
        raw = cands[smallest_maximiser(cands, eu)]
        held = False
        if previous is None or self._changed:
            smoothed = float(raw)
        elif raw > previous or (raw < previous and self._early_enough(elapsed, samples, len(cands))):
            smoothed = smooth(previous, raw, cfg.hysteresis)
            if abs(raw - smoothed) < SNAP_UNITS:
                smoothed = float(raw)
        else:
            smoothed = previous
            held = raw < previous
        self._smoothed = smoothed
        self._changed = False
        requested = self._clamp(smoothed)
        mine = self._model.forecast(state, [float(requested)]).samples[0] * pace
        point = float(np.quantile(mine, cfg.quantile)) if cfg.quantile is not None else float(np.mean(mine))
        finish_rel = elapsed + cfg.slack * point
        decision = Decision(
            time=now,
            progress=forecast.progress,
            raw_units=raw,
            smoothed_units=smoothed,
            requested_units=requested,
            predicted_remaining_s=point,
            predicted_finish=self._started_at + finish_rel,
            late_s=finish_rel - (self._utility.deadline - self._dead_zone_s),
            expected_utility=float(
                expected_utilities(plan, elapsed, mine[None, :], cfg.slack, cfg.quantile)[0]
            ),
            status="ON_TRACK" if finish_rel <= self._utility.deadline + TOLERANCE else "AT_RISK",
            held=held,
            next_step_at=now + self._period_s,
            pace=pace,
        )
        self._last = decision
        self._trace.append(decision)
        return decision

    def pace(self, state: JobState, now: float | None = None) -> float:
        """The factor this step's predictions are scaled by: the run's observed pace (or, with a window, the
        slower of it and the recent pace), or 1. ``now`` (a step's time) records the evidence for the window."""
        cfg = self._config
        prior = cfg.pace_prior
        if prior is None or self._profile is None:
            return 1.0
        prior_s = prior * self._profile.total_work_s
        seen, expected = pace_evidence(self._profile, state)
        whole = pooled_pace(seen, expected, prior_s)
        if cfg.pace_window_periods is None or now is None:
            return whole
        history = self._evidence
        history.append((now, seen, expected))
        since = now - cfg.pace_window_periods * self._period_s
        i = bisect.bisect_right([t for t, _, _ in history], since) - 1
        if i < 0:  # the whole run is inside the window
            return whole
        _, seen_then, expected_then = history[i]
        del history[:i]  # older entries are never the window's start again
        recent = (seen - seen_then + whole * prior_s) / (expected - expected_then + prior_s) if prior_s > 0 else whole
        return max(whole, recent)

    def _early_enough(self, elapsed: float, samples: FloatArray, ncands: int) -> bool:
        """Whether the current allocation (the last row of ``samples``) would finish a dead zone ahead of
        the planning deadline: it reaches the best utility achievable against the utility shifted by 2D."""
        cfg = self._config
        early = self._utility.shifted(2 * self._dead_zone_s)
        eu = expected_utilities(early, elapsed, samples[:ncands], cfg.slack, cfg.quantile)
        here = float(expected_utilities(early, elapsed, samples[ncands:], cfg.slack, cfg.quantile)[0])
        best = float(np.max(eu))
        return here >= best - TOLERANCE * max(1.0, abs(best))
