"""The §5 LP: hand-computed skylines."""

from __future__ import annotations

import itertools

import pytest

from rm.core.reservation.skyline import evaluate_skyline, solve_skyline

RUNS = [[2.0, 0.0], [2.0, 2.0], [4.0, 2.0]]


def test_three_runs_alpha_half_by_hand() -> None:
    # alpha = 0.5. Along s2 at s1 = 2: over-allocation rises 1/3 per container below 2 and 1 above it,
    # the final debt falls 2/3 below 2 and 1/3 between 2 and 4: the minimum is s2 = 2; along s1 at s2 = 2
    # likewise s1 = 2. There A_o = 2/3 (run 1 gets 2 unused in step 2), A_u = 2/3 (run 3 ends 2 short),
    # V = 0.5 (2/3 + 2/3) = 2/3, and run 3 is 2 of 6 under in step 1: eps = (2/6) / 3 = 1/9.
    fit = solve_skyline(RUNS, 0.5)
    assert fit.skyline == pytest.approx((2.0, 2.0))
    assert fit.over == pytest.approx(2 / 3)
    assert fit.under == pytest.approx(2 / 3)
    assert fit.v == pytest.approx(2 / 3)
    assert fit.beta == pytest.approx(0.1 * 2 / 3)
    assert fit.eps == pytest.approx(1 / 9)


def test_three_runs_alpha_tenth_by_hand() -> None:
    # alpha = 0.1 makes debt 9x as costly as waste: covering run 3's first step and every run's second
    # step, (4, 2), wastes (2+2) + (2+0) + 0 = 6 over 3 runs = 2 and leaves no debt: V = 0.2.
    fit = solve_skyline(RUNS, 0.1)
    assert fit.skyline == pytest.approx((4.0, 2.0))
    assert fit.v == pytest.approx(0.2)
    assert fit.under == pytest.approx(0.0)


def test_lp_optimum_matches_a_grid_search() -> None:
    fit = solve_skyline(RUNS, 0.5)

    def cost(s: tuple[float, float]) -> float:
        over, under, _ = evaluate_skyline(RUNS, s, 0.5)
        return 0.5 * over + 0.5 * under

    grid = [x / 2 for x in range(13)]
    best = min(cost(s) for s in itertools.product(grid, grid))
    assert cost((fit.skyline[0], fit.skyline[1])) == pytest.approx(best)


def test_one_run_is_its_own_skyline() -> None:
    assert solve_skyline([[3.0, 1.0, 2.0]], 0.3).skyline == pytest.approx((3.0, 1.0, 2.0))


def test_runs_of_different_lengths_are_padded() -> None:
    fit = solve_skyline([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0]], 0.5)
    assert len(fit.skyline) == 3


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one run"):
        solve_skyline([], 0.5)
    with pytest.raises(ValueError, match="alpha"):
        solve_skyline([[1.0]], 1.5)
    with pytest.raises(ValueError, match="negative"):
        solve_skyline([[-1.0]], 0.5)
