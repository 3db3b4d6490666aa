"""The 3Sigma-like history predictor and Point-Est (SLearn §4.3, §5.1.3)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rm.core.sizes.history import FEATURES, HistoryPredictor, JobKey, inverse_square


def key(
    name: str = "etl",
    user: str = "alice",
    queue: str = "default",
    app_type: str = "MAPREDUCE",
    submit_hour: int = 3,
    resources: str = "1024MB,1vc",
) -> JobKey:
    return JobKey(name, user, queue, app_type, submit_hour, resources)


def test_inverse_square_paper_example() -> None:
    # (mean of 1/t²)^(-1/2) over 10, 10, 40 = (0.006875)^(-1/2) ≈ 12.06, against a mean of 20.
    assert inverse_square((10.0, 10.0, 40.0)) == pytest.approx(12.06, abs=5e-3)
    assert inverse_square((10.0, 10.0, 40.0)) == pytest.approx(0.006875**-0.5)


def test_inverse_square_edges() -> None:
    assert inverse_square((7.0,)) == pytest.approx(7.0)
    assert inverse_square((5.0, 0.0)) == 0.0
    with pytest.raises(ValueError, match="no values"):
        inverse_square(())
    with pytest.raises(ValueError, match=">= 0"):
        inverse_square((1.0, -1.0))


@given(st.lists(st.floats(1e-3, 1e9), min_size=1, max_size=50))
def test_inverse_square_lies_between_min_and_mean(values: list[float]) -> None:
    est = inverse_square(values)
    assert min(values) * (1 - 1e-9) <= est <= math.fsum(values) / len(values) * (1 + 1e-9)


def test_no_history_predicts_nothing() -> None:
    p = HistoryPredictor()
    assert p.predict(key()) is None
    assert p.point(key()) is None


def test_predicts_with_the_feature_of_least_past_error() -> None:
    p = HistoryPredictor()
    # The recurring "etl" job is stable at 100 s; alice also runs ad-hoc jobs of very different sizes.
    for name, size in (("etl", 100.0), ("adhoc-1", 1000.0), ("etl", 100.0), ("adhoc-2", 5.0), ("etl", 100.0)):
        p.observe(key(name=name), size)
    assert p.error(key(), "name") == pytest.approx(0.0)
    alice_error = p.error(key(), "user")
    assert alice_error is not None
    assert alice_error > 0.5
    assert p.predict(key()) == pytest.approx((100.0, "name"))
    # A new job name of alice's: the name has no history, so a shared feature answers.
    estimate = p.predict(key(name="brand-new"))
    assert estimate is not None
    assert estimate[1] == "user"  # all shared features graded equally: the first in FEATURES order
    assert estimate[0] == pytest.approx(inverse_square((100.0, 1000.0, 100.0, 5.0, 100.0)))


def test_graded_features_beat_ungraded_ones() -> None:
    p = HistoryPredictor()
    # Bob's jobs all have different names (a timestamp in the name), so the name is never graded.
    for i, size in enumerate((50.0, 60.0, 55.0)):
        p.observe(key(name=f"report-{i}", user="bob", queue="q", app_type="SPARK"), size)
    p.observe(key(name="report-9", user="carol", queue="q", app_type="SPARK"), 5000.0)
    # report-9 has one run and no error record; bob's history is graded and wins.
    p.observe(
        key(name="report-9", user="bob", queue="other", app_type="X", submit_hour=9, resources="r"), 52.0
    )
    estimate = p.predict(key(name="report-9", user="bob", queue="other", app_type="X", submit_hour=9))
    assert estimate is not None
    assert estimate[1] == "user"
    assert p.runs(key(user="bob"), "user") == 4


def test_point_is_the_median_of_the_best_feature() -> None:
    p = HistoryPredictor()
    for size in (10.0, 10.0, 40.0):
        p.observe(key(), size)
    assert p.point(key()) == pytest.approx(10.0)
    p.observe(key(), 40.0)
    assert p.point(key()) == pytest.approx(25.0)
    estimate = p.predict(key())
    assert estimate is not None
    assert estimate[0] == pytest.approx(inverse_square((10.0, 10.0, 40.0, 40.0)))


def test_window_keeps_the_last_runs() -> None:
    p = HistoryPredictor(window=2)
    for size in (1000.0, 10.0, 20.0):
        p.observe(key(), size)
    assert p.runs(key(), "name") == 2
    assert p.point(key()) == pytest.approx(15.0)


def test_feature_subset_and_validation() -> None:
    p = HistoryPredictor(features=("user",))
    p.observe(key(), 10.0)
    assert p.predict(key(name="other")) == pytest.approx((10.0, "user"))
    assert p.runs(key(), "name") == 0
    with pytest.raises(ValueError, match="features"):
        HistoryPredictor(features=("colour",))
    with pytest.raises(ValueError, match="window"):
        HistoryPredictor(window=0)
    with pytest.raises(ValueError, match="feature"):
        key().value("colour")
    assert set(FEATURES) == {"name", "user", "queue", "app_type", "submit_hour", "resources"}


def test_bad_sizes_are_ignored_and_zero_is_kept_ungraded() -> None:
    p = HistoryPredictor()
    p.observe(key(), -5.0)
    p.observe(key(), math.nan)
    assert p.predict(key()) is None
    p.observe(key(), 10.0)
    p.observe(key(), 0.0)  # learnt, but a relative error against 0 is undefined
    assert p.error(key(), "name") is None
    assert p.predict(key()) == (0.0, "name")


def test_history_survives_a_restart() -> None:
    p = HistoryPredictor(window=5, features=("name", "user", "submit_hour"))
    for i, size in enumerate((100.0, 120.0, 80.0, 400.0)):
        p.observe(key(name=f"job-{i % 2}", submit_hour=i), size)
    again = HistoryPredictor.from_dict(json.loads(json.dumps(p.to_dict())))
    assert again.to_dict() == p.to_dict()
    for probe in (key(name="job-0"), key(name="job-1", submit_hour=1), key(name="x", user="nobody")):
        assert again.predict(probe) == p.predict(probe)
        assert again.point(probe) == p.point(probe)


def test_least_recently_observed_values_are_forgotten() -> None:
    # One feature, three values, room for two: the value observed longest ago goes.
    p = HistoryPredictor(features=("name",), max_groups=2)
    p.observe(key(name="a"), 1.0)
    p.observe(key(name="b"), 2.0)
    p.observe(key(name="a"), 1.0)
    p.observe(key(name="c"), 3.0)
    assert p.runs(key(name="b"), "name") == 0
    assert p.runs(key(name="a"), "name") == 2
    assert p.runs(key(name="c"), "name") == 1
    assert HistoryPredictor.from_dict(p.to_dict()).to_dict() == p.to_dict()
    with pytest.raises(ValueError, match="max_groups"):
        HistoryPredictor(max_groups=0)
