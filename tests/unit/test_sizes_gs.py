"""GS's exponential size queues and weights (SLearn §5.1.1, §5.2.1)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rm.core.sizes.gs import (
    PAPER_Q0_S,
    SAMPLING_QUEUE,
    THIN_QUEUE,
    GsConfig,
    bucket,
    next_queue,
    relative_q0,
    thresholds,
    weights,
)

PAPER = GsConfig(q0_s=PAPER_Q0_S)


def test_paper_defaults() -> None:
    # Q_0^hi = 10^6 ms, E = 10, N = 10, weights falling tenfold per level.
    assert PAPER.q0_s == 1000.0
    assert PAPER.multiplier == 10.0
    assert PAPER.queues == 10
    assert thresholds(PAPER) == (1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, math.inf)
    assert weights(PAPER) == pytest.approx((1.0, 0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9))
    # Thin jobs go to the top queue, pilot tasks to the second.
    assert (THIN_QUEUE, SAMPLING_QUEUE) == (0, 1)


def test_thresholds_follow_the_recurrence() -> None:
    cfg = GsConfig(q0_s=2.5, multiplier=4.0, queues=5)
    hi = thresholds(cfg)
    assert len(hi) == cfg.queues
    assert hi[0] == 2.5
    assert all(hi[q + 1] == pytest.approx(cfg.multiplier * hi[q]) for q in range(cfg.queues - 2))
    assert hi[-1] == math.inf
    assert thresholds(GsConfig(q0_s=5.0, queues=1)) == (math.inf,)


def test_bucket_ranges_are_half_open() -> None:
    # Queue q holds [Q_q^lo, Q_q^hi): Table 8's "small" is size < 10^3 s, i.e. queue 0.
    assert bucket(0.0, PAPER) == 0
    assert bucket(999.9, PAPER) == 0
    assert bucket(1000.0, PAPER) == 1
    assert bucket(9_999.0, PAPER) == 1
    assert bucket(10_000.0, PAPER) == 2
    assert bucket(1e11, PAPER) == 9
    assert bucket(math.inf, PAPER) == 9
    with pytest.raises(ValueError, match="size"):
        bucket(-1.0, PAPER)
    with pytest.raises(ValueError, match="size"):
        bucket(math.nan, PAPER)


def test_weights_follow_the_decay() -> None:
    w = weights(GsConfig(q0_s=1.0, queues=4, weight_decay=2.0))
    assert w == (1.0, 0.5, 0.25, 0.125)
    assert weights(GsConfig(q0_s=1.0, queues=3, weight_decay=1.0)) == (1.0, 1.0, 1.0)


def test_config_is_validated() -> None:
    with pytest.raises(ValueError, match="q0_s"):
        GsConfig(q0_s=0.0)
    with pytest.raises(ValueError, match="multiplier"):
        GsConfig(q0_s=1.0, multiplier=1.0)
    with pytest.raises(ValueError, match="queues"):
        GsConfig(q0_s=1.0, queues=0)
    with pytest.raises(ValueError, match="weight_decay"):
        GsConfig(q0_s=1.0, weight_decay=0.5)


def test_next_queue_keeps_the_weighted_shares() -> None:
    cfg = GsConfig(q0_s=1.0, queues=3)
    # Nothing used yet: the highest waiting queue first.
    assert next_queue((0, 0, 0), (True, True, True), cfg) == 0
    assert next_queue((0, 0, 0), (False, True, True), cfg) == 1
    # Queue 0 holds 10 units at weight 1, queue 1 holds 0 at weight 0.1: queue 1 is furthest below its share.
    assert next_queue((10, 0, 0), (True, True, False), cfg) == 1
    # Queue 0 at 10 (10 per weight) vs queue 1 at 2 (20 per weight): queue 0.
    assert next_queue((10, 2, 0), (True, True, False), cfg) == 0
    assert next_queue((5, 5, 5), (False, False, False), cfg) is None
    with pytest.raises(ValueError, match="queues"):
        next_queue((0, 0), (True, True), cfg)


def test_next_queue_converges_to_the_weights() -> None:
    # Hand out 1,110 unit slots to three always-waiting queues: they end at 1000 : 100 : 10.
    cfg = GsConfig(q0_s=1.0, queues=3)
    used = [0.0, 0.0, 0.0]
    for _ in range(1110):
        q = next_queue(used, (True, True, True), cfg)
        assert q is not None
        used[q] += 1
    assert used == [1000.0, 100.0, 10.0]


def test_relative_q0_is_the_history_median() -> None:
    assert relative_q0((5.0, 1.0, 3.0), default=1000.0) == 3.0
    assert relative_q0((4.0, 1.0, 3.0, 2.0), default=1000.0) == 2.5
    assert relative_q0((), default=1000.0) == 1000.0
    # Zero, negative and infinite sizes carry no scale.
    assert relative_q0((0.0, -1.0, math.inf), default=7.0) == 7.0
    assert relative_q0((10.0, 20.0, 30.0, 40.0, 50.0), default=1.0, quantile=0.25) == 20.0
    # A compressed workload (single-map jobs of a few seconds) no longer falls entirely into queue 0.
    workload = [2.0, 3.0, 4.0, 5.0, 40.0, 60.0, 400.0]
    cfg = GsConfig(q0_s=relative_q0(workload, default=PAPER_Q0_S))
    assert cfg.q0_s == 5.0
    assert {bucket(s, PAPER) for s in workload} == {0}
    assert [bucket(s, cfg) for s in workload] == [0, 0, 0, 1, 1, 2, 2]


sizes = st.floats(0.0, 1e15, allow_nan=False)
configs = st.builds(
    GsConfig,
    q0_s=st.floats(1e-3, 1e6),
    multiplier=st.floats(1.1, 100.0),
    queues=st.integers(1, 20),
)


@given(a=sizes, b=sizes, cfg=configs)
def test_bucket_is_monotone_in_size(a: float, b: float, cfg: GsConfig) -> None:
    lo, hi = sorted((a, b))
    assert 0 <= bucket(lo, cfg) <= bucket(hi, cfg) < cfg.queues


@given(size=sizes, cfg=configs)
def test_bucket_matches_its_thresholds(size: float, cfg: GsConfig) -> None:
    q = bucket(size, cfg)
    bounds = (0.0, *thresholds(cfg))
    assert bounds[q] <= size < bounds[q + 1]
