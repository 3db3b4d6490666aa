"""Jockey's piecewise-linear utility (§5.1): evaluation, the default shape, validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from am.policies.jockey.utility import Utility, UtilityError, default_utility

PAPER = Utility.of([[0, 1], [60, 1], [70, -1], [1060, -1000]])  # minutes, d = 60


def test_the_papers_utility_is_zero_halfway_down_the_first_drop() -> None:
    """Between (60, 1) and (70, -1) the line crosses zero at 65."""
    assert PAPER(65) == pytest.approx(0.0)
    assert PAPER(30) == 1.0
    assert PAPER(60) == 1.0
    assert PAPER(70) == -1.0
    assert PAPER(1060) == -1000.0


def test_before_the_first_point_it_is_flat_and_after_the_last_it_keeps_falling() -> None:
    assert PAPER(-5) == 1.0
    slope = (-1000 - -1) / (1060 - 70)  # the last segment's, about -1.009 per minute
    assert PAPER(1160) == pytest.approx(-1000 + 100 * slope)


def test_the_default_utility_scales_the_papers_shape_with_the_deadline() -> None:
    """d = 60 min gives the paper's points in seconds; d = 10 min puts the zero at d + 50 s."""
    u = default_utility(3600)
    assert u.points == ((0, 1), (3600, 1), (4200, -1), (63_600, -1000))
    assert u(65 * 60) == pytest.approx(0.0)
    short = default_utility(600)
    assert short(650) == pytest.approx(0.0)
    assert short.deadline == 600


def test_expected_utility_averages_over_completion_times() -> None:
    """Half the runs on time (1), half at 65 min (0): expectation 0.5."""
    assert PAPER.expected([50, 65]) == pytest.approx(0.5)
    assert PAPER.expected(np.array([[50, 50], [70, 70]]), axis=1).tolist() == [1.0, -1.0]


def test_shifting_moves_the_deadline_earlier() -> None:
    shifted = PAPER.shifted(3)
    assert shifted.deadline == 57
    assert shifted(60) == PAPER(63)


def test_the_deadline_is_the_end_of_the_flat_top() -> None:
    assert PAPER.deadline == 60
    assert Utility.of([[0, 1], [100, 0]]).deadline == 0


@pytest.mark.parametrize(
    ("points", "message"),
    [
        ([[0, 1], [60, 2]], "value rises"),
        ([[0, 1], [0, 0]], "does not come after"),
        ([[10, 1], [5, 0]], "does not come after"),
        ([[0, 1, 2]], "not 2"),
        ([], "at least one point"),
        ([[0, float("nan")]], "not finite"),
    ],
)
def test_malformed_utilities_are_refused_with_a_clear_error(points: list[list[float]], message: str) -> None:
    with pytest.raises(UtilityError, match=message):
        Utility.of(points)


def test_a_deadline_must_be_positive() -> None:
    with pytest.raises(UtilityError, match="positive"):
        default_utility(0)


@st.composite
def utilities(draw: st.DrawFn) -> Utility:
    n = draw(st.integers(1, 6))
    gaps = draw(st.lists(st.floats(0.5, 100), min_size=n, max_size=n))
    drops = draw(st.lists(st.floats(0, 50), min_size=n, max_size=n))
    start = draw(st.floats(-10, 10))
    top = draw(st.floats(-5, 5))
    ts = np.cumsum(gaps) + start
    us = top - np.cumsum(drops) + drops[0]
    return Utility(tuple((float(t), float(u)) for t, u in zip(ts, us, strict=True)))


@settings(max_examples=60, deadline=None)
@given(utilities(), st.lists(st.floats(-100, 1000), min_size=2, max_size=20))
def test_utility_never_rises_with_time(u: Utility, ts: list[float]) -> None:
    values = u.values(np.sort(np.asarray(ts)))
    assert np.all(np.diff(values) <= 1e-9)


@settings(max_examples=60, deadline=None)
@given(utilities(), st.lists(st.floats(0, 500), min_size=1, max_size=10), st.floats(0, 100))
def test_later_completions_never_raise_the_expected_utility(
    u: Utility, ts: list[float], delay: float
) -> None:
    times = np.asarray(ts)
    assert u.expected(times + delay) <= u.expected(times) + 1e-9
