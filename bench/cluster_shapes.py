"""What the core benchmarks share: the container shapes asked for, the node size and naming, a ledger with
registered nodes and running AMs, and the nearest-rank percentile their tables print."""

from __future__ import annotations

import math

from common.ids import AppId, NodeId
from common.resources import Resources
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.state_types import AM_ASK_ID, LaunchAM, SubmitSpec

# the container shapes the synthetic apps ask for (memory MB, vcores)
SHAPES = [Resources.of(memory_mb=m, vcores=v) for m, v in ((1024, 1), (2048, 1), (4096, 2), (512, 1), (8192, 4))]
NODE_CAPACITY = Resources.of(memory_mb=65_536, vcores=32)  # perf-anchors §4.1: 64 GiB, 32 vcores
RACK_SIZE = 40  # nodes per rack
AM_RESOURCE = Resources.of(memory_mb=1024, vcores=1)


def node_id(i: int) -> NodeId:
    return NodeId(f"host{i:04d}:8041")


def host(i: int) -> str:
    return f"host{i:04d}"


def rack(i: int) -> str:
    return f"/rack{i // RACK_SIZE}"


def register_nodes(ledger: Ledger, nodes: int) -> None:
    """``nodes`` NodeManagers of ``NODE_CAPACITY`` register, RUNNING."""
    for i in range(nodes):
        ledger.register_node(node_id(i), f"{host(i)}:8042", rack(i), NODE_CAPACITY, [], 0.0)


def running_ams(ledger: Ledger, apps: int, nodes: int) -> list[LaunchAM]:
    """``apps`` apps submitted, their AM containers placed round-robin over the nodes and the AMs registered;
    their launches (with each AM's token)."""
    placements = []
    for a in range(apps):
        aid = ledger.new_application(0.0)
        ledger.submit(SubmitSpec(app_id=aid, am_launch={"commands": ["am"]}, am_resource=AM_RESOURCE), 0.0)
        placements.append(Place(app_id=AppId(aid), allocation_request_id=AM_ASK_ID, node_id=node_id(a % nodes),
                                resource=AM_RESOURCE, priority=-1, is_am=True))
    ledger.apply_plan(Plan(based_on=ledger.version, placements=placements), 0.0)
    launches = ledger.drain_launches()
    for launch in launches:
        ledger.am_register(launch.amrm_token, "am-host", 1, "", 0.0)
    return launches


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]
