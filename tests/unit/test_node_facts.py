"""The node facts the ledger keeps as nodes change (free room, capacity, schedulable nodes, resource types,
maximum allocation) and the ask sizes it remembers as accepted: none of them may go stale."""

from __future__ import annotations

from random import Random

import pytest

from common.errors import InvalidResourceRequest
from common.resources import Resources
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.ledger.node_facts import NodeFacts
from rm.core.plan import Place, Plan
from rm.core.queues import build_queues
from rm.core.state_types import AM_ASK_ID, CoreConfig, NodeStatus, SubmitSpec

TS = 1_700_000_000_000
BIG = Resources.of(memory_mb=16_384, vcores=4)


def make_state(**cfg: object) -> Ledger:
    return Ledger(Ledger.fresh_meta(TS), build_queues(), CoreConfig(**cfg))  # type: ignore[arg-type]


def add_node(st: Ledger, name: str, mem: int = 8192, vc: int = 8, **extra: int) -> str:
    capability = Resources.of(memory_mb=mem, vcores=vc, **extra)
    return st.register_node(f"{name}:7040", f"{name}:8042", "", capability, [], 0.0).node_id


def running_am(st: Ledger, node: str) -> str:
    app_id = st.new_application(0.0)
    st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["am"]},
                         am_resource=Resources.of(memory_mb=512, vcores=1)), 0.0)
    st.apply_plan(Plan(based_on=st.version, placements=[
        Place(app_id=st.apps[app_id].app_id, allocation_request_id=AM_ASK_ID, node_id=st.nodes[node].node_id,  # type: ignore[index]
              resource=Resources.of(memory_mb=512, vcores=1), priority=-1, is_am=True)]), 0.0)
    (launch,) = st.drain_launches()
    st.am_register(launch.amrm_token, "h", 1, "", 0.0)
    return launch.amrm_token


def ask(capability: Resources, rid: int = 1, n: int = 1) -> Ask:
    return Ask(allocation_request_id=rid, priority=1, capability=capability, num_containers=n)


def test_a_node_joining_with_more_capacity_lets_a_refused_ask_size_through() -> None:
    st = make_state()
    n1 = add_node(st, "n1")
    token = running_am(st, n1)
    with pytest.raises(InvalidResourceRequest, match="exceeds the maximum allocation"):
        st.am_allocate(token, 0, [ask(BIG)], [], 0.0, [], [], 1.0)
    st.validate_asks([ask(Resources.of(memory_mb=1024, vcores=1))])  # remembered as accepted
    add_node(st, "n2", mem=16_384, vc=8)
    assert st.max_allocation() == Resources.of(memory_mb=16_384, vcores=8)
    res = st.am_allocate(token, 0, [ask(BIG)], [], 0.0, [], [], 2.0)
    assert res.response_id == 1
    assert st.check_views() == []


def test_an_accepted_size_is_refused_once_the_only_node_that_fits_it_leaves() -> None:
    st = make_state()
    n1 = add_node(st, "n1")
    add_node(st, "n2", mem=16_384, vc=8)
    token = running_am(st, n1)
    st.am_allocate(token, 0, [ask(BIG)], [], 0.0, [], [], 1.0)  # accepted (and remembered)
    st.unregister_node("n2:7040", 2.0)
    with pytest.raises(InvalidResourceRequest, match="exceeds the maximum allocation"):
        st.am_allocate(token, 1, [ask(BIG, rid=2)], [], 0.0, [], [], 3.0)
    # a decommissioned or lost node bounds nothing either; an unhealthy or new one still does (as before)
    add_node(st, "n3", mem=32_768, vc=8)
    st.node_heartbeat("n3:7040", 0, [], False, "disk full", 4.0)
    assert st.max_allocation() == Resources.of(memory_mb=32_768, vcores=8)
    st.check_liveness(4.0 + st.config.nm_expiry_s + 1)
    assert st.nodes["n3:7040"].state == "LOST"  # type: ignore[index]
    assert st.check_views() == []


def test_headroom_capacity_and_node_count_follow_nodes_leaving_and_changing() -> None:
    st = make_state()
    n1 = add_node(st, "n1")
    add_node(st, "n2")
    token = running_am(st, n1)  # 512 MB, 1 vcore on n1
    res = st.am_allocate(token, 0, [], [], 0.0, [], [], 1.0)
    assert res.headroom == Resources.of(memory_mb=16_384 - 512, vcores=15)
    assert res.num_nodes == 2
    st.unregister_node("n2:7040", 2.0)
    res = st.am_allocate(token, 1, [], [], 0.0, [], [], 2.0)
    assert res.headroom == Resources.of(memory_mb=8192 - 512, vcores=7)
    assert res.num_nodes == 1
    assert st.cluster_capacity() == Resources.of(memory_mb=8192, vcores=8)
    st.node_heartbeat("n1:7040", 0, [], False, "disk full", 3.0)  # unhealthy: not schedulable
    assert st.headroom() == Resources()
    assert st.schedulable_nodes() == 0
    # the plans are still cut from the unhealthy node, never from the one gone
    facts = st._node_facts()
    assert facts.planned() == Resources.of(memory_mb=8192, vcores=8)
    assert facts.planned() == NodeFacts(st.nodes.values()).planned()
    st.node_heartbeat("n1:7040", 1, [], True, "", 4.0)
    assert st.headroom() == Resources.of(memory_mb=8192 - 512, vcores=7)
    assert st.check_views() == []


def test_a_node_back_smaller_than_what_it_holds_counts_no_negative_room() -> None:
    st = make_state()
    n1 = add_node(st, "n1")
    add_node(st, "n2")
    token = running_am(st, n1)
    st.am_allocate(token, 0, [ask(Resources.of(memory_mb=2048, vcores=1), n=3)], [], 0.0, [], [], 1.0)
    app_id = next(iter(st.apps))
    st.apply_plan(Plan(based_on=st.version, placements=[
        Place(app_id=app_id, allocation_request_id=1, node_id=st.nodes["n1:7040"].node_id,  # type: ignore[index]
              resource=Resources.of(memory_mb=2048, vcores=1), priority=1)] * 3), 2.0)
    held = [NodeStatus(container_id=c, state="RUNNING") for c in st.nodes["n1:7040"].containers]  # type: ignore[index]
    st.headroom()
    # it comes back with 4 GB while holding 6.5 GB: its free room is nothing, not negative
    st.register_node("n1:7040", "n1:8042", "", Resources.of(memory_mb=4096, vcores=8), held, 3.0)
    assert st.headroom() == Resources.of(memory_mb=8192, vcores=8 + 4)
    assert st.check_views() == []
    res = st.am_allocate(token, 1, [], [], 0.0, [], [], 3.0)  # hands the three over
    st.am_allocate(token, 2, [], [c.container_id for c in res.allocated[:2]], 0.0, [], [], 4.0)
    assert st.headroom() == Resources.of(memory_mb=8192 + 1536, vcores=8 + 6)  # within its 4 GB again
    assert st.check_views() == []


def test_resource_types_follow_the_nodes_that_offer_them() -> None:
    st = make_state()
    add_node(st, "n1")
    assert "gpu" not in st.resource_types()
    add_node(st, "g1", gpu=4)
    assert "gpu" in st.resource_types()
    st.validate_asks([ask(Resources.of(memory_mb=512, vcores=1, gpu=2))])
    # it comes back without its gpus: no node offers any
    st.register_node("g1:7040", "g1:8042", "", Resources.of(memory_mb=8192, vcores=8), [], 1.0)
    assert "gpu" not in st.resource_types()
    with pytest.raises(InvalidResourceRequest, match=r"unknown resource types \['gpu'\]"):
        st.validate_asks([ask(Resources.of(memory_mb=512, vcores=1, gpu=2))])
    assert st.check_views() == []


def test_facts_kept_through_random_changes_match_facts_built_afresh() -> None:
    rng = Random(7)
    st = make_state()
    names = [f"n{i}" for i in range(12)]
    for name in names[:6]:
        add_node(st, name, mem=rng.choice([4096, 8192, 16_384]), vc=rng.choice([4, 8]))
    token = running_am(st, "n0:7040")
    st.headroom()  # kept from now on
    response_id = 0
    for step in range(300):
        now = 1.0 + step
        name = rng.choice(names[1:])  # the AM's node stays
        nid = f"{name}:7040"
        node = st.nodes.get(nid)  # type: ignore[call-overload]
        op = rng.randrange(6)
        if op == 0 or node is None or node.state in ("LOST", "SHUTDOWN"):
            extra = {"gpu": 2} if rng.random() < 0.3 else {}
            statuses = [NodeStatus(container_id=c, state="RUNNING") for c in node.containers] if node else []
            st.register_node(nid, f"{name}:8042", "", Resources.of(
                memory_mb=rng.choice([2048, 8192, 16_384]), vcores=rng.choice([2, 8]), **extra), statuses, now)
        elif op == 1:
            st.node_heartbeat(nid, node.response_id, [], rng.random() < 0.6, "", now)
        elif op == 2:
            st.unregister_node(nid, now)
        elif op == 3 and node.schedulable:
            app_id = next(iter(st.apps))
            res = st.am_allocate(token, response_id, [ask(Resources.of(memory_mb=1024, vcores=1), n=4)], [], 0.0,
                                 [], [], now)
            response_id = res.response_id
            st.apply_plan(Plan(based_on=st.version, placements=[Place(
                app_id=app_id, allocation_request_id=1, node_id=node.node_id,
                resource=Resources.of(memory_mb=1024, vcores=1), priority=1)] * 2), now)
        else:
            att = st.apps[next(iter(st.apps))].current
            assert att is not None
            mine = [c for c in st.containers.values() if c.live and not c.is_am and c.attempt_id == att.attempt_id
                    and c.state == "ACQUIRED"]
            res = st.am_allocate(token, response_id, [], [c.container_id for c in mine[:2]], 0.0, [], [], now)
            response_id = res.response_id
        assert st.check_views() == [], f"step {step}"
        assert st.headroom() == NodeFacts(st.nodes.values()).free()
