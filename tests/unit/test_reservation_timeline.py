"""The capacity timeline: periodic window, one-off pages, folding, pruning."""

from __future__ import annotations

import numpy as np
import pytest

from common.resources import Resources
from rm.core.reservation.timeline import Timeline, step_cost

CAP = Resources.of(memory_mb=10_240, vcores=10)


def tl(window_s: int = 600) -> Timeline:
    return Timeline(CAP, step_s=60, window_s=window_s)  # 10 steps per window


def col(mem: int, cores: int, n: int = 1) -> np.ndarray:
    return np.repeat(np.array([[mem], [cores]], dtype=float), n, axis=1)


def test_types_are_sorted_and_vectors_follow_them() -> None:
    t = tl()
    assert t.types == ("memory-mb", "vcores")
    assert list(t.vector(Resources.of(memory_mb=1024, vcores=2))) == [1024, 2]
    with pytest.raises(ValueError, match="gpu"):
        t.vector(Resources.of(memory_mb=1, gpu=1))


def test_one_off_load_spans_pages() -> None:
    t = tl()
    t.add(8, col(1024, 1, 4))  # steps 8..11 cross the window boundary at 10
    assert sorted(t.pages) == [0, 1]
    load = t.load(7, 13)
    assert list(load[1]) == [0, 1, 1, 1, 1, 0]
    t.add(8, col(1024, 1, 4), sign=-1)
    assert t.pages == {}


def test_periodic_load_repeats_every_period_in_every_window() -> None:
    t = tl()
    t.add(3, col(2048, 2, 2), period=5)  # steps 3,4 and 8,9 of every window
    assert list(t.load(0, 10)[1]) == [0, 0, 0, 2, 2, 0, 0, 0, 2, 2]
    assert list(t.load(1000, 1010)[1]) == [0, 0, 0, 2, 2, 0, 0, 0, 2, 2]  # window 100: same pattern


def test_period_must_divide_the_window_and_cover_the_job() -> None:
    t = tl()
    with pytest.raises(ValueError, match="period 3"):
        t.add(0, col(1, 1, 2), period=3)
    with pytest.raises(ValueError, match="6 steps with period 5"):
        t.add(0, col(1, 1, 6), period=5)


def test_folded_takes_the_worst_instance_and_the_worst_page() -> None:
    t = tl()
    t.add(1, col(0, 3, 1), period=5)  # offset 1 of both halves
    t.add(20 + 7, col(0, 4, 1))  # a one-off on some future day at window position 7 (= offset 2)
    fold = t.folded(5, 0, 5)
    assert list(fold[1]) == [0, 3, 4, 0, 0]


def test_prune_forgets_past_pages_only() -> None:
    t = tl()
    t.add(2, col(1, 1, 1))
    t.add(25, col(1, 1, 1))
    t.prune(21)
    assert sorted(t.pages) == [2]


def test_capacity_can_gain_a_type() -> None:
    t = tl()
    t.add(0, col(1024, 1, 1))
    t.set_capacity(Resources.of(memory_mb=10_240, vcores=10, gpu=2))
    assert t.types == ("memory-mb", "vcores", "gpu")
    assert t.load(0, 1).shape == (3, 1)
    assert t.capacity == Resources.of(memory_mb=10_240, vcores=10, gpu=2)


def test_step_cost_is_the_max_share_and_infinite_without_capacity() -> None:
    cap = np.array([10.0, 0.0])
    load = np.array([[5.0, 2.0], [0.0, 1.0]])
    assert list(step_cost(load, cap)) == [0.5, np.inf]


def test_overbooked_after_the_cluster_shrinks() -> None:
    t = tl()
    t.add(4, col(8192, 8, 2))
    t.set_capacity(Resources.of(memory_mb=4096, vcores=10))
    assert t.overbooked(0, 10) == [4, 5]
