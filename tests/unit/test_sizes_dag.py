"""The DAG hybrid: sample the first stage, scale the others' history estimates by d_s/d_h (SLearn §6)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rm.core.sizes.dag import adjustment, hybrid


def test_history_underestimates_by_half() -> None:
    # History said the first stage takes 600 task-s, its pilots measure 1,200: every later stage doubles.
    stages = hybrid(1200.0, 600.0, (300.0, 900.0))
    assert stages == pytest.approx((1200.0, 600.0, 1800.0))
    assert sum(stages) == pytest.approx(3600.0)
    # The history-only baseline would have said 600 + 300 + 900 = 1,800.


def test_history_overestimates() -> None:
    assert hybrid(50.0, 200.0, (400.0, 40.0, 8.0)) == pytest.approx((50.0, 100.0, 10.0, 2.0))
    assert adjustment(50.0, 200.0) == pytest.approx(0.25)


def test_single_stage_and_exact_history() -> None:
    assert hybrid(70.0, 100.0, ()) == (70.0,)
    assert hybrid(100.0, 100.0, (5.0, 6.0)) == (100.0, 5.0, 6.0)


def test_no_usable_history_leaves_the_others_alone() -> None:
    assert adjustment(10.0, 0.0) == 1.0
    assert adjustment(10.0, math.inf) == 1.0
    assert adjustment(10.0, math.nan) == 1.0
    assert hybrid(10.0, 0.0, (3.0, 4.0)) == (10.0, 3.0, 4.0)


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="sampled_first"):
        hybrid(-1.0, 10.0, (1.0,))
    with pytest.raises(ValueError, match="stage"):
        hybrid(1.0, 10.0, (-1.0,))


@given(
    d_s=st.floats(0.0, 1e9),
    d_h=st.floats(1e-3, 1e9),
    others=st.lists(st.floats(0.0, 1e9), max_size=6),
)
def test_stage_proportions_are_kept(d_s: float, d_h: float, others: list[float]) -> None:
    stages = hybrid(d_s, d_h, others)
    assert len(stages) == len(others) + 1
    assert stages[0] == d_s
    # Each later stage keeps its share of the history's estimate of the later stages.
    for scaled, original in zip(stages[1:], others, strict=True):
        assert scaled == pytest.approx(original * d_s / d_h, rel=1e-9, abs=1e-300)
