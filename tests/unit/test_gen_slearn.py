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


def test_one_off_jobs_are_the_share_that_does_not_recur() -> None:
    """Google 2011's calibrated share (0.8) replaces about a fifth of the runs with one-off jobs: names seen
    nowhere else, a user each; the runs kept are the fully recurring workload's own runs."""
    whole = generate(SlearnOptions(profile="google2011", seed=2, history_jobs=400, test_jobs=400, recurring=1.0))
    mixed = generate(SlearnOptions(profile="google2011", seed=2, history_jobs=400, test_jobs=400))
    assert all(j.user is None for j in (*whole[0], *whole[1]))  # fully recurring: no users, as before
    assert len(mixed[1]) == 400
    names = [j.name for j in (*mixed[0], *mixed[1])]
    one_off = [j for j in mixed[1] if (j.name or "").startswith("x")]
    assert 0.12 * 400 < len(one_off) < 0.28 * 400
    assert all(names.count(j.name) == 1 for j in one_off)  # never recurs, in either half
    assert all(j.user for j in (*mixed[0], *mixed[1]))
    # a recurring family keeps one user across its runs
    owners: dict[str, set[str | None]] = {}
    for j in (*mixed[0], *mixed[1]):
        if not (j.name or "").startswith("x"):
            owners.setdefault(j.name or "", set()).add(j.user)
    assert all(len(u) == 1 for u in owners.values())
    # the kept runs are the same runs (their tasks' times), only their arrivals are rescaled
    by_id = {j.id: j for j in whole[1]}
    kept = [j for j in mixed[1] if not (j.name or "").startswith("x")]
    assert all(j.stages[0].durations_s == by_id[j.id].stages[0].durations_s for j in kept)
    # the other profiles are fully recurring by calibration
    assert SlearnOptions(profile="2sigma").recurring_share() == 1.0
    with pytest.raises(ValueError, match="recurring"):
        generate(SlearnOptions(seed=1, history_jobs=5, test_jobs=5, recurring=1.5))


def test_dag_runs_vary_in_time_by_the_calibrated_factor() -> None:
    """Google-2019-like DAGs vary half as much between runs as its single jobs (calibrated to §6's 3Sigma-DAG
    error): the same chains and widths, with smaller changes from run to run."""
    o = SlearnOptions(profile="google2019", seed=4, history_jobs=300, test_jobs=300, stages=(2, 5))
    assert o.time_factor() == 0.5
    assert SlearnOptions(profile="google2019").time_factor() == 1.0  # single-stage jobs: Table 4 as it is
    calibrated, full = generate(o), generate(SlearnOptions(profile="google2019", seed=4, history_jobs=300,
                                                           test_jobs=300, stages=(2, 5), time_scale=1.0))
    shape = [[st.tasks for st in j.stages] for j in calibrated[1]]
    assert shape == [[st.tasks for st in j.stages] for j in full[1]]
    assert (variation_stats(*calibrated)["time_p50"] < 0.75 * variation_stats(*full)["time_p50"])
    with pytest.raises(ValueError, match="time_scale"):
        SlearnOptions(time_scale=-1.0).time_factor()
