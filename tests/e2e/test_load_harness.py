"""The load generators of bench/load against a real ResourceManager: simulated nodes register and heartbeat,
a simulated AM is launched on one of them, gets containers and hears of their completion."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bench.load.am_sim import AmShape
from bench.load.harness import LoadConfig, run_load
from bench.load.nm_sim import NodeShape
from rm.local import LocalCluster

pytestmark = pytest.mark.slow


def test_simulated_nodes_and_am_drive_a_real_rm(make_cluster: Callable[..., LocalCluster]) -> None:
    cluster = make_cluster(nodes=0)
    assert cluster.rm is not None
    assert cluster.rm.proc is not None
    cfg = LoadConfig(
        rm_address=cluster.rm_address, node_secret=cluster.node_secret, client_secret=cluster.client_secret,
        nodes=5, node=NodeShape(memory_mb=8192, vcores=4), ams=1,
        am=AmShape(backlog=6, run_s=0.2, release_fraction=0.0, interval_s=0.25), ramp_s=0.0, warmup_s=0.5,
        duration_s=3.0, rm_pid=cluster.rm.proc.pid)
    result = asyncio.run(run_load(cfg))
    assert result["heartbeat_errors"] == 0
    assert result["heartbeats"] >= 5 * 2  # five nodes at 1 Hz for three seconds
    assert result["node_resyncs"] == 0
    assert result["am_errors"] == 0, result["am_error_sample"]
    assert result["delivered"] > 0
    assert result["started"] > 0
    assert result["completed_per_s"] > 0
    assert result["rm_rss_mb_max"] > 0
    assert cluster.alive()
