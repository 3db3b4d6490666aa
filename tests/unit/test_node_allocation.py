"""The node index's copy of the nodes' allocations, kept in the layout memo from the log of changed nodes,
always equals the snapshot's own nodes read afresh, whatever the order snapshots are made and read in, and
for snapshots made from another with other nodes."""

from __future__ import annotations

from dataclasses import replace
from random import Random

import numpy as np
import pytest

from common.ids import NodeId
from common.resources import Resources
from rm.core.cycle import run_cycle
from rm.core.ledger import Ledger
from rm.core.model import ClusterSnapshot, LayoutMemo, NodeView
from rm.core.policies import node_layout as nl
from rm.core.policies.registry import named_pipeline
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig, SubmitSpec


def _fresh(snap: ClusterSnapshot) -> tuple[list[NodeView], np.ndarray]:
    return nl._read(snap, nl.node_layout(snap))


def _check(snap: ClusterSnapshot) -> None:
    views, allocated = nl.node_allocation(snap, nl.node_layout(snap))
    want_views, want = _fresh(snap)
    assert [v.node_id for v in views] == [v.node_id for v in want_views]
    assert all(a is b for a, b in zip(views, want_views, strict=True))
    assert np.array_equal(allocated, want)


@pytest.mark.parametrize("seed", range(5))
def test_kept_allocation_equals_a_fresh_read_with_snapshots_read_out_of_order(seed: int) -> None:
    rng = Random(seed)
    memo = LayoutMemo()
    views = {NodeId(f"n{i:02d}"): NodeView(NodeId(f"n{i:02d}"), f"h{i}", "/r", Resources.of(memory_mb=8192, vcores=8),
                                           Resources()) for i in range(20)}
    held: list[ClusterSnapshot] = []
    for version in range(300):
        changed = rng.sample(sorted(views), rng.randrange(4))
        for nid in changed:
            v = views[nid]
            views[nid] = NodeView(nid, v.host, v.rack, v.capability,
                                  Resources.of(memory_mb=rng.randrange(0, 8193, 512), vcores=rng.randrange(9)))
        nodes = dict(views)
        memo.note(changed, nodes)
        snap = ClusterSnapshot(version=version, nodes=nodes, apps={}, queues=build_queues(), layout=memo)
        held.append(snap)
        # read the newest, or one made earlier (an older snapshot must not take the memo back), or one made from
        # the newest with a node's allocation changed (as tests and what-if readers do)
        roll = rng.random()
        if roll < 0.6:
            _check(held[-1])
        elif roll < 0.8:
            _check(rng.choice(held))
        else:
            nid = rng.choice(sorted(views))
            other = dict(snap.nodes)
            other[nid] = replace(other[nid], allocated=Resources.of(memory_mb=8192, vcores=8))
            _check(replace(snap, nodes=other))
    assert len(memo.changed) < 20 * 4  # the log is dropped as it is read


def test_a_log_no_index_reads_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    from rm.core import model

    monkeypatch.setattr(model, "MAX_LOGGED_CHANGES", 10)
    memo = LayoutMemo()
    nid = NodeId("n0")
    cap = Resources.of(memory_mb=4096, vcores=4)

    def snapshot(used: Resources, version: int) -> ClusterSnapshot:
        nodes = {nid: NodeView(nid, "h", "/r", cap, used)}
        memo.note([nid], nodes)
        return ClusterSnapshot(version=version, nodes=nodes, apps={}, queues=build_queues(), layout=memo)

    _check(snapshot(Resources(), 0))
    assert memo.allocation is not None
    for k in range(12):
        snap = snapshot(Resources.of(memory_mb=256 * (k + 1), vcores=1), k + 1)
    assert memo.allocation is None
    assert len(memo.changed) < 10
    _check(snap)
    assert memo.allocation is not None


def test_the_ledger_logs_every_node_a_cycle_changed() -> None:
    st = Ledger(Ledger.fresh_meta(1), build_queues(), CoreConfig(nm_expiry_s=30.0))
    for i in range(4):
        st.register_node(f"n{i}:1", f"n{i}", "", Resources.of(memory_mb=8192, vcores=8), [], 0.0)
    pipeline, shares = named_pipeline("drf")
    for k in range(6):
        app_id = st.new_application(float(k))
        st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["am"]},
                             am_resource=Resources.of(memory_mb=1024 * (k + 1), vcores=1)), float(k))
        snap = st.snapshot(float(k))
        _check(snap)
        assert snap.layout is not None
        assert isinstance(snap.layout.allocation, nl._Allocation)  # the newest snapshot is served from the memo
        st.apply_plan(run_cycle(snap, pipeline, shares=shares, now=float(k), rng=Random(k)), float(k))
    _check(st.snapshot(10.0))
    assert sum(v.allocated.get("memory-mb") for v in st.snapshot(11.0).nodes.values()) >= 6 * 1024  # it placed
