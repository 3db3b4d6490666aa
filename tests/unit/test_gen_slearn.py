"""The SLearn workload generator: recurring families, a history half before a test half, Table 4's variation
and Table 5's load."""

from __future__ import annotations

import pytest

from sim.gen.slearn import SlearnOptions, generate, load_stats, variation_stats, work_s


def test_halves_families_widths_and_load() -> None:
    history, test = generate(SlearnOptions(seed=3, history_jobs=300, test_jobs=300))
    assert len(history) == len(test) == 300
    assert max(j.arrival_s for j in history) < min(j.arrival_s for j in test)
    assert all(1 <= j.stages[0].tasks <= 150 for j in (*history, *test))
    names = {j.name for j in history}
    assert sum(j.name in names for j in test) > 0.8 * len(test)  # most of the test half's families recur
    assert any(j.stages[0].tasks < 3 for j in test)  # thin jobs
    load = load_stats(test, 150)
    assert 0.7 < load["avg"] < 1.4
    assert load["p90"] > load["p50"]  # bursty
    span = max(j.arrival_s for j in test)  # the test half starts at 0
    assert sum(work_s(j) for j in test) / (150 * span) == pytest.approx(1.0, rel=0.05)


def test_variation_follows_the_profile() -> None:
    cov = {p: variation_stats(*generate(SlearnOptions(profile=p, seed=1, history_jobs=600, test_jobs=600)))
           for p in ("2sigma", "google2011", "history-wins")}
    assert cov["2sigma"]["time_p50"] > 3 * cov["2sigma"]["space_p50"]  # sampling's case
    assert cov["history-wins"]["time_p50"] < cov["history-wins"]["space_p50"] / 2  # history's
    assert 0.1 < cov["2sigma"]["space_p50"] < 0.3
    assert cov["google2011"]["space_p50"] < 0.1


def test_generation_is_a_function_of_the_seed() -> None:
    a = generate(SlearnOptions(seed=5, history_jobs=20, test_jobs=20))
    b = generate(SlearnOptions(seed=5, history_jobs=20, test_jobs=20))
    assert [j.to_json() for j in a[1]] == [j.to_json() for j in b[1]]
    with pytest.raises(ValueError, match="unknown profile"):
        generate(SlearnOptions(profile="nope"))
