"""What the core benchmarks share: the container shapes asked for, the node size and naming, and the
nearest-rank percentile their tables print."""

from __future__ import annotations

import math

from common.ids import NodeId
from common.resources import Resources

# the container shapes the synthetic apps ask for (memory MB, vcores)
SHAPES = [Resources.of(memory_mb=m, vcores=v) for m, v in ((1024, 1), (2048, 1), (4096, 2), (512, 1), (8192, 4))]
NODE_CAPACITY = Resources.of(memory_mb=65_536, vcores=32)  # perf-anchors §4.1: 64 GiB, 32 vcores
RACK_SIZE = 40  # nodes per rack


def node_id(i: int) -> NodeId:
    return NodeId(f"host{i:04d}:8041")


def host(i: int) -> str:
    return f"host{i:04d}"


def rack(i: int) -> str:
    return f"/rack{i // RACK_SIZE}"


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]
