"""The ledger with configured resource types (yarn.resource-types) and per-type maximum allocations: what
an ask, an AM resource or a job's task may name, how much of it, and what becomes of a node's offer of other
types."""

from __future__ import annotations

import json

import pytest

from common.errors import InvalidResourceRequest
from common.ids import AppId, NodeId
from common.resources import Resources
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig, SubmitSpec

TS = 1_700_000_000_000
GPU_CLUSTER = frozenset({"memory-mb", "vcores", "gpu"})


def make_state(**cfg: object) -> Ledger:
    return Ledger(Ledger.fresh_meta(TS), build_queues(), CoreConfig(**cfg))  # type: ignore[arg-type]


def add_node(st: Ledger, name: str, **extra: int) -> None:
    capability = Resources.of(memory_mb=8192, vcores=8, **extra)
    st.register_node(f"{name}:7040", f"{name}:8042", "", capability, [], 0.0)


def submit(st: Ledger, am: Resources, job: str = "") -> AppId:
    app_id = st.new_application(0.0)
    st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["run-am"]}, am_resource=am,
                         job_spec_json=job), 0.0)
    return app_id


def test_configured_types_are_known_before_any_node_and_others_are_refused() -> None:
    st = make_state(resource_types=GPU_CLUSTER)
    assert st.resource_types() == GPU_CLUSTER
    assert submit(st, Resources.of(memory_mb=512, vcores=1, gpu=1)) in st.apps  # no bound known yet
    with pytest.raises(InvalidResourceRequest, match=r"unknown resource types \['fpga'\]: "
                                                     r"the cluster defines gpu, memory-mb, vcores"):
        submit(st, Resources.of(memory_mb=512, vcores=1, fpga=1))
    with pytest.raises(InvalidResourceRequest, match=r"ask 7 .*unknown resource types \['fpga'\]"):
        st.validate_asks([Ask(7, 1, Resources.of(memory_mb=512, vcores=1, fpga=1), 1)])
    job = json.dumps({"id": "job", "stages": [{"name": "train", "tasks": 1, "memory_mb": 512,
                                               "resources": {"fpga": 1}}]})
    with pytest.raises(InvalidResourceRequest, match=r"stage 'train': .*unknown resource types \['fpga'\]"):
        submit(st, Resources.of(memory_mb=512, vcores=1), job)


def test_a_node_offering_a_type_the_cluster_does_not_define_keeps_only_the_others() -> None:
    st = make_state(resource_types=GPU_CLUSTER)
    add_node(st, "n1", gpu=4, fpga=2)
    node = st.nodes[NodeId("n1:7040")]
    assert node.capability == Resources.of(memory_mb=8192, vcores=8, gpu=4)
    assert st.resource_types() == GPU_CLUSTER
    with pytest.raises(InvalidResourceRequest, match=r"unknown resource types \['fpga'\]"):
        submit(st, Resources.of(memory_mb=512, vcores=1, fpga=1))
    # without configured types, what the nodes offer is what exists (as without resource-types.xml)
    free = make_state()
    add_node(free, "n1", fpga=2)
    assert "fpga" in free.resource_types()
    assert submit(free, Resources.of(memory_mb=512, vcores=1, fpga=1)) in free.apps


def test_a_types_configured_maximum_bounds_asks_the_others_the_largest_node() -> None:
    st = make_state(resource_types=GPU_CLUSTER, maximum_allocation=Resources({"gpu": 2}))
    with pytest.raises(InvalidResourceRequest, match="exceeds the maximum allocation <gpu=2>"):
        submit(st, Resources.of(memory_mb=512, vcores=1, gpu=3))  # bounded before any node registers
    assert submit(st, Resources.of(memory_mb=100_000, vcores=1, gpu=2)) in st.apps  # memory: no bound yet
    add_node(st, "n1", gpu=4)
    assert st.max_allocation() == Resources.of(memory_mb=8192, vcores=8, gpu=2)
    with pytest.raises(InvalidResourceRequest, match="exceeds the maximum allocation"):
        submit(st, Resources.of(memory_mb=512, vcores=1, gpu=3))  # the node has 4, the maximum is 2
    with pytest.raises(InvalidResourceRequest, match="exceeds the maximum allocation"):
        submit(st, Resources.of(memory_mb=16_384, vcores=1))  # memory: the largest node's 8192
    assert submit(st, Resources.of(memory_mb=8192, vcores=8, gpu=2)) in st.apps


def test_a_configured_memory_maximum_no_longer_hides_the_nodes_other_types() -> None:
    st = make_state(maximum_allocation=Resources.of(memory_mb=16_384, vcores=4))
    add_node(st, "g1", gpu=2)
    assert st.max_allocation() == Resources.of(memory_mb=16_384, vcores=4, gpu=2)
    assert submit(st, Resources.of(memory_mb=512, vcores=1, gpu=2)) in st.apps
    with pytest.raises(InvalidResourceRequest, match="exceeds the maximum allocation"):
        submit(st, Resources.of(memory_mb=512, vcores=1, gpu=3))
