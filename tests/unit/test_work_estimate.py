"""Work estimators with prediction intervals (MRM §3): bin (same job's runs) and ridge (similar jobs)."""

from __future__ import annotations

import random

import pytest

from rm.core.deadlines.estimate import (
    AutoEstimator,
    BinEstimator,
    JobFeatures,
    PhaseShape,
    RidgeEstimator,
    RunRecord,
    make_estimator,
    r_squared,
)


def _job(name: str, kind: str, maps: int, reduces: int, gb: float) -> JobFeatures:
    phases = (PhaseShape(maps, 1.0),) + ((PhaseShape(reduces, 1.0),) if reduces else ())
    return JobFeatures(name, phases, kind=kind, input_bytes=gb * 1e9)


_PER_TASK = {"grep": 8.0, "sort": 20.0, "wordcount": 14.0, "pi": 30.0}


def _run(f: JobFeatures, rng: random.Random, noise: float = 0.05) -> RunRecord:
    per = _PER_TASK[f.kind]
    work = [f.phases[0].tasks * per * (1 + rng.gauss(0, noise)) + 2 * f.input_bytes / 1e9]
    if len(f.phases) > 1:
        work.append(f.phases[1].tasks * per * 0.5 * (1 + rng.gauss(0, noise)))
    return RunRecord(f, tuple(max(w, 0.1) for w in work), tuple(per for _ in work))


def _history(rng: random.Random, n: int) -> list[RunRecord]:
    runs = []
    for i in range(n):
        kind = rng.choice(sorted(_PER_TASK))
        maps = rng.randint(1, 200)
        reduces = rng.choice([0, 0, maps // 10 + 1])
        runs.append(_run(_job(f"{kind}-{i}", kind, maps, reduces, rng.uniform(0.1, 20)), rng))
    return runs


def test_bin_is_the_mean_and_spread_of_the_same_jobs_runs() -> None:
    f = _job("daily", "sort", 10, 2, 1.0)
    runs = [RunRecord(f, (100.0, 10.0), (12.0, 6.0)), RunRecord(f, (120.0, 14.0), (15.0, 7.0))]
    est = BinEstimator(z=1.96)
    est.fit(runs)
    got = est.estimate(f)
    assert got is not None
    assert got.method == "bin"
    assert got.runs == 2
    assert got.phases[0].mean == pytest.approx(110)
    assert got.phases[0].upper > 110
    assert got.phases[0].min_s == 15.0
    assert est.estimate(_job("other", "sort", 10, 2, 1.0)) is None  # no runs of its own


def test_ridge_learns_similar_jobs_and_its_interval_covers_about_95_percent() -> None:
    rng = random.Random(7)
    train, test = _history(rng, 300), _history(rng, 300)
    est = RidgeEstimator()
    est.fit(train)
    preds, actual, misses = [], [], 0
    for r in test:
        e = est.estimate(r.features)
        assert e is not None
        preds.append(e.phases[0].mean)
        actual.append(r.work[0])
        misses += r.work[0] > e.phases[0].upper
    assert r_squared(actual, preds) > 0.95
    assert misses / len(test) <= 0.08


def test_auto_prefers_the_jobs_own_runs() -> None:
    rng = random.Random(3)
    runs = _history(rng, 50)
    f = _job("nightly", "grep", 40, 0, 2.0)
    runs += [_run(f, rng) for _ in range(3)]
    est = AutoEstimator()
    est.fit(runs)
    e = est.estimate(f)
    assert e is not None
    assert e.method == "bin"
    e2 = est.estimate(_job("new-one", "grep", 40, 0, 2.0))
    assert e2 is not None
    assert e2.method == "ridge"


def test_unknown_estimator_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: auto, bin, ridge"):
        make_estimator("gp")


def test_the_deadline_system_fits_off_the_loop_and_keeps_answering_meanwhile() -> None:
    from rm.core.deadlines.system import DeadlineSystem

    rng = random.Random(5)
    system = DeadlineSystem()
    system.background_fit = True
    f = _job("nightly", "grep", 40, 0, 2.0)
    for _ in range(3):
        system.record_run(_run(f, rng))
    first = system.estimate(f, None)  # never fitted: fitted now, once
    assert first is not None
    assert first.runs == 3
    system.record_run(_run(f, rng))
    assert system.stale
    assert system.estimate(f, None).runs == 3  # type: ignore[union-attr]  # the last fit, until a worker refits
    estimator, runs, seen = system.refit()
    estimator.fit(runs)  # what the RM does in a worker thread
    system.install(estimator, seen)
    assert not system.stale
    assert system.estimate(f, None).runs == 4  # type: ignore[union-attr]


def test_ridge_claims_keep_their_width_and_unseen_features_do_not_explode() -> None:
    rng = random.Random(11)
    runs = [_run(_job(f"j{i}", "sort", rng.randint(1, 200), 0, 0.0), rng) for i in range(60)]  # no input sizes
    est = RidgeEstimator()
    est.fit(runs)
    e = est.estimate(_job("new", "sort", 10, 0, 1.0))  # 1 GB of input, never seen in training
    assert e is not None
    assert e.upper < 10 * 20 * 3  # about 10 tasks of 20 s, not the 1e14 of an unscaled feature
    (phase,) = e.claim()
    assert phase.rate > 5  # a 10-task phase runs about 10 wide: its critical path is one task, not its work


def test_too_few_runs_for_a_regression_answer_nothing_and_bin_uses_students_t() -> None:
    rng = random.Random(2)
    ridge = RidgeEstimator()
    ridge.fit(_history(rng, 5))
    assert ridge.estimate(_job("x", "grep", 10, 0, 1.0)) is None  # 5 runs: the job file's durations instead
    f = _job("daily", "sort", 10, 0, 1.0)
    b = BinEstimator(z=1.96)
    b.fit([RunRecord(f, (100.0,)), RunRecord(f, (120.0,)), RunRecord(f, (110.0,))])
    got = b.estimate(f)
    assert got is not None
    sd = got.phases[0].std
    assert got.phases[0].upper == pytest.approx(110 + 4.303 * sd, rel=1e-3)  # t with 2 degrees of freedom
