"""SLearn's sampling pieces against the paper's numbers (§4.1, §5.1.2, Fig. 4)."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rm.core.sizes.sampling import (
    RATIOS,
    THIN_LIMIT,
    AdaptiveRatio,
    choose_pilots,
    pilot_count,
    posterior,
    sampled_total,
)


def test_pilots_at_three_percent() -> None:
    # §5.1.2: max(1, 0.03·S) pilots; S = 2 is thin (below thinLimit = 3) and is not sampled.
    assert pilot_count(100, 0.03) == 3
    assert pilot_count(10, 0.03) == 1
    assert pilot_count(2, 0.03) == 0
    assert THIN_LIMIT == 3
    assert pilot_count(3, 0.03) == 1
    assert pilot_count(101, 0.03) == 4  # ⌈3.03⌉
    assert pilot_count(150, 0.05) == 8  # ⌈7.5⌉


def test_pilot_count_thin_limit_is_a_parameter() -> None:
    assert pilot_count(4, 0.03, thin_limit=5) == 0
    assert pilot_count(1, 0.03, thin_limit=1) == 1
    assert pilot_count(0, 0.03, thin_limit=0) == 0


def test_pilot_count_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="ratio"):
        pilot_count(10, 0.0)
    with pytest.raises(ValueError, match="tasks"):
        pilot_count(-1, 0.03)


def test_choose_pilots_is_random_and_reproducible() -> None:
    a = choose_pilots(100, 3, random.Random(7))
    assert a == choose_pilots(100, 3, random.Random(7))
    assert len(set(a)) == 3
    assert list(a) == sorted(a)
    # Not always the lowest-numbered tasks.
    draws = {choose_pilots(100, 3, random.Random(seed)) for seed in range(20)}
    assert len(draws) > 1
    assert draws != {(0, 1, 2)}
    assert choose_pilots(5, 0, random.Random(1)) == ()
    assert choose_pilots(5, 5, random.Random(1)) == (0, 1, 2, 3, 4)
    with pytest.raises(ValueError, match="k"):
        choose_pilots(3, 4, random.Random(1))


def test_sampled_total_is_mean_times_tasks() -> None:
    # Pilots of 10, 12 and 14 s for a 100-task job: mean 12 s × 100 = 1,200 task-seconds.
    assert sampled_total((10.0, 12.0, 14.0), 100) == pytest.approx(1200.0)
    with pytest.raises(ValueError, match="pilot"):
        sampled_total((), 100)


def test_posterior_section_4_1_example() -> None:
    # μ = 10, σ_o² = 4, σ_1² = 9, samples 12, 14, 13:
    # precision = 3/9 + 1/4 = 7/12; mean = (39/9 + 10/4) / (7/12) = 82/7; variance = 12/7.
    mean, var = posterior(10.0, 4.0, 9.0, (12.0, 14.0, 13.0))
    assert mean == pytest.approx(11.714, abs=5e-4)
    assert var == pytest.approx(1.714, abs=5e-4)
    assert mean == pytest.approx(82 / 7)
    assert var == pytest.approx(12 / 7)


def test_posterior_limits() -> None:
    samples = (12.0, 14.0, 13.0)
    # No prior information: the sample mean, variance σ_1²/m.
    assert posterior(10.0, math.inf, 9.0, samples) == pytest.approx((13.0, 3.0))
    # No samples: the prior.
    assert posterior(10.0, 4.0, 9.0, ()) == (10.0, 4.0)
    # An exact prior ignores the samples; exact samples ignore the prior.
    assert posterior(10.0, 0.0, 9.0, samples) == (10.0, 0.0)
    assert posterior(10.0, 4.0, 0.0, samples) == (13.0, 0.0)
    with pytest.raises(ValueError, match="variances"):
        posterior(10.0, -1.0, 9.0, samples)


@given(
    mu=st.floats(0.1, 1e4),
    var_prior=st.floats(1e-3, 1e6),
    var_sample=st.floats(1e-3, 1e6),
    samples=st.lists(st.floats(0.1, 1e4), min_size=1, max_size=20),
)
def test_posterior_sits_between_prior_and_samples(
    mu: float, var_prior: float, var_sample: float, samples: list[float]
) -> None:
    mean, var = posterior(mu, var_prior, var_sample, samples)
    sample_mean = math.fsum(samples) / len(samples)
    lo, hi = min(mu, sample_mean), max(mu, sample_mean)
    assert lo - 1e-9 * hi <= mean <= hi + 1e-9 * hi
    # More information than either source alone.
    assert var <= var_prior * (1 + 1e-12)
    assert var <= var_sample / len(samples) * (1 + 1e-12)


@given(tasks=st.integers(0, 10_000), ratio=st.sampled_from(RATIOS))
def test_pilot_count_bounds_and_monotone(tasks: int, ratio: float) -> None:
    k = pilot_count(tasks, ratio)
    if tasks < THIN_LIMIT:
        assert k == 0
    else:
        assert 1 <= k <= tasks
        assert k >= ratio * tasks - 1e-9
        assert k < ratio * tasks + 1
        assert pilot_count(tasks + 1, ratio) >= k
        assert all(pilot_count(tasks, r) >= k for r in RATIOS if r > ratio)


@given(tasks=st.integers(1, 500), data=st.data())
def test_choose_pilots_distinct_in_range(tasks: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, tasks))
    seed = data.draw(st.integers(0, 2**32))
    pilots = choose_pilots(tasks, k, random.Random(seed))
    assert len(pilots) == k == len(set(pilots))
    assert all(0 <= i < tasks for i in pilots)
    assert list(pilots) == sorted(pilots)


# ---- Fig. 4: the adaptive sampling ratio --------------------------------------------------------------

T = 4  # a short window keeps the tables small; the rule does not depend on T


def _fill(rule: AdaptiveRatio, ratio: float, score: float, n: int = T) -> None:
    for _ in range(n):
        rule.observe(ratio, jct_s=score * 10.0, runtime_s=10.0)


def _scored(table: dict[float, float]) -> AdaptiveRatio:
    rule = AdaptiveRatio(window=T)
    for ratio, score in table.items():
        _fill(rule, ratio, score)
    return rule


def test_start_up_tries_three_then_two_then_four_percent() -> None:
    rule = AdaptiveRatio(window=T)
    assert rule.ratio == 0.03
    _fill(rule, 0.03, 1.2, T - 1)
    assert rule.ratio == 0.03
    _fill(rule, 0.03, 1.2, 1)
    assert rule.ratio == 0.02
    _fill(rule, 0.02, 1.3)
    assert rule.ratio == 0.04
    _fill(rule, 0.04, 1.4)
    assert rule.ratio == 0.03  # the lowest score of the three


def test_start_up_trials_go_by_jobs_sampled_not_by_jobs_finished() -> None:
    # Fig. 4 lines 2-7: the first T jobs get 3 %, the next T 2 %, the next T 4 %, however many have finished
    rule = AdaptiveRatio(window=T)
    given = [rule.take() for _ in range(3 * T)]
    assert given == [0.03] * T + [0.02] * T + [0.04] * T
    assert rule.ratio == 0.03  # no job has finished: no score to choose by, the middle ratio
    _fill(rule, 0.02, 1.0, 1)  # one 2 % job finished: the only score there is
    assert rule.ratio == 0.02
    _fill(rule, 0.03, 1.2, 2)  # 2 % beats 3 % by more than 10 %: T jobs at 1 %, then the lowest score
    assert [rule.take() for _ in range(T)] == [0.01] * T
    assert rule.ratio == 0.02  # 1 % has had its trial and no score yet
    _fill(rule, 0.01, 0.9, 1)
    assert rule.take() == 0.01
    again = AdaptiveRatio.from_dict(json.loads(json.dumps(rule.to_dict())))
    assert again.to_dict() == rule.to_dict()
    assert again.ratio == rule.ratio


def test_table_two_percent_best_by_over_ten_percent_tries_one_percent() -> None:
    # Line 9–11: min at 2% and 1.1 × 1.0 < 1.2 → 1%.
    rule = _scored({0.03: 1.2, 0.02: 1.0, 0.04: 1.5})
    assert rule.ratio == 0.01
    # Once 1% has had its T jobs the lowest score decides: here 1% did worse than 2%.
    _fill(rule, 0.01, 1.1)
    assert rule.ratio == 0.02
    # ... and 1% is kept when it did best.
    _fill(rule, 0.01, 0.9)
    assert rule.ratio == 0.01


def test_table_four_percent_best_by_over_ten_percent_tries_five_percent() -> None:
    # Line 12–14: min at 4% and 1.3 > 1.1 × 1.0 → 5%.
    rule = _scored({0.03: 1.3, 0.02: 1.5, 0.04: 1.0})
    assert rule.ratio == 0.05
    _fill(rule, 0.05, 1.2)
    assert rule.ratio == 0.04


def test_table_small_margin_keeps_the_minimum() -> None:
    # Neighbours beat 3% by less than 10% (or exactly 10%): the minimum is used, no outward step.
    assert _scored({0.03: 1.05, 0.02: 1.0, 0.04: 1.5}).ratio == 0.02
    assert _scored({0.03: 2.2, 0.02: 3.0, 0.04: 2.0}).ratio == 0.04
    assert _scored({0.03: 1.0, 0.02: 1.3, 0.04: 1.2}).ratio == 0.03


def test_scores_are_means_of_the_last_window_jobs() -> None:
    rule = AdaptiveRatio(window=3)
    for jct in (10.0, 20.0, 30.0, 40.0):
        rule.observe(0.03, jct_s=jct, runtime_s=10.0)
    assert rule.scores()[0.03] == pytest.approx(3.0)  # (2 + 3 + 4) / 3: the first fell out
    assert rule.counts()[0.03] == 3
    assert rule.scores()[0.01] is None
    # Unknown ratios and unusable runtimes are ignored.
    rule.observe(0.07, 10.0, 10.0)
    rule.observe(0.03, 10.0, 0.0)
    assert rule.counts()[0.03] == 3
    assert 0.07 not in rule.counts()


def test_adaptive_state_survives_a_restart() -> None:
    rule = _scored({0.03: 1.2, 0.02: 1.0, 0.04: 1.5})
    _fill(rule, 0.01, 0.9, 2)
    again = AdaptiveRatio.from_dict(json.loads(json.dumps(rule.to_dict())))
    assert again.to_dict() == rule.to_dict()
    assert again.ratio == rule.ratio == 0.01
    assert again.scores() == rule.scores()


def test_adaptive_ratio_rejects_bad_configuration() -> None:
    with pytest.raises(ValueError, match="three"):
        AdaptiveRatio((0.01, 0.02))
    with pytest.raises(ValueError, match="window"):
        AdaptiveRatio(window=0)
