"""A scheduling cycle leaves no reference cycles behind: its scratch (the node index, the plan's rejections, the
snapshot's views it read) is freed when the cycle ends, not left for the garbage collector's full passes, which
on an RM holding thousands of apps stop its event loop for hundreds of milliseconds."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from random import Random

import pytest

from common.resources import Resources
from rm.core.context import CycleContext
from rm.core.cycle import run_cycle
from rm.core.ledger import Ledger
from rm.core.policies.registry import named_pipeline
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig, SubmitSpec


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """What the collector finds unreachable (kept for inspection instead of freed)."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("scheduler", ["drf", "carbyne", "mrm"])
def test_a_cycle_leaves_no_reference_cycles(scheduler: str, saved_garbage: list[object]) -> None:
    st = Ledger(Ledger.fresh_meta(1), build_queues(), CoreConfig(durable=False, nm_expiry_s=30.0))
    st.register_node("n1:7040", "n1:8042", "", Resources.of(memory_mb=2048, vcores=2), [], 0.0)
    for _ in range(20):  # more than fit: some are placed, the others rejected
        app_id = st.new_application(0.0)
        st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["am"]},
                             am_resource=Resources.of(memory_mb=512, vcores=1)), 0.0)
    pipeline, shares = named_pipeline(scheduler)
    plan = run_cycle(st.snapshot(1.0), pipeline, shares=shares, now=1.0, rng=Random(0))
    assert plan.placements
    assert plan.rejections
    gc.collect()
    contexts = [o for o in saved_garbage if isinstance(o, CycleContext)]
    assert not contexts, f"{len(saved_garbage)} objects of the cycle were left in reference cycles"
