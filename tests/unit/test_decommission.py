"""Decommissioning nodes in the ledger: graceful (DECOMMISSIONING until its containers end or the timeout),
at once, recommissioning, and what a restart keeps."""

from __future__ import annotations

from random import Random

import pytest

from common.errors import BadRequest, Conflict, NotFound
from common.exits import EXIT_ABORTED
from common.ids import AppId, NodeId
from common.resources import Resources
from rm.core.cycle import run_cycle
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.policies.registry import default_pipeline
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig, NodeStatus
from tests.unit.test_state import _fold, add_node, make_state, running_app

CAP = Resources.of(memory_mb=512, vcores=1)


def cycle(st: Ledger, now: float) -> None:
    stages, shares = default_pipeline()
    st.apply_plan(run_cycle(st.snapshot(now), stages, shares=shares, now=now, rng=Random(1)), now)


def app_with_task_on(st: Ledger, am_node: NodeId, task_node: NodeId) -> tuple[AppId, str, str]:
    """A running app whose AM is on ``am_node`` and one running task on ``task_node``."""
    app_id, token = running_app(st, am_node)
    st.am_allocate(token, 0, [Ask(1, 1, CAP, 1, nodes=(task_node,), relax_locality=False)], [], 0, [], [], 1.0)
    cycle(st, 1.0)
    (task,) = st.am_allocate(token, 1, [], [], 0, [], [], 1.0).allocated
    assert task.node_id == task_node
    st.node_heartbeat(task_node, 1, [NodeStatus(task.container_id, "RUNNING", start_time=1.0)], True, "", 1.0)
    return app_id, token, task.container_id


def test_a_decommissioning_node_gets_no_new_containers_while_its_running_ones_go_on() -> None:
    st = make_state()
    n1, n2 = add_node(st, "n1"), add_node(st, "n2")
    app_id, token, task = app_with_task_on(st, n1, n2)
    done = st.decommission(n2, 60.0, 2.0)
    assert done.changed
    assert st.nodes[n2].state == "DECOMMISSIONING"
    assert st.nodes[n2].decommission_deadline == 62.0
    assert not st.snapshot(2.0).nodes[n2].schedulable
    # more work, on any node: it all goes to n1
    st.am_allocate(token, 2, [Ask(2, 1, CAP, 4)], [], 0, [], [], 3.0)
    cycle(st, 3.0)
    got = st.am_allocate(token, 3, [], [], 0, [], [], 3.0).allocated
    assert len(got) == 4
    assert {c.node_id for c in got} == {n1}
    # its task still runs, and the node's heartbeats are answered as usual
    res = st.node_heartbeat(n2, 2, [NodeStatus(task, "RUNNING", start_time=1.0)], True, "", 4.0)
    assert res.action == "NORMAL"
    assert st.containers[task].state == "RUNNING"
    assert st.nodes[n2].state == "DECOMMISSIONING"
    # an unhealthy report does not make it schedulable or RUNNING again
    st.node_heartbeat(n2, 3, [NodeStatus(task, "RUNNING", start_time=1.0)], False, "disk full", 5.0)
    assert st.nodes[n2].state == "DECOMMISSIONING"
    assert st.nodes[n2].health_report == "disk full"
    # the task ends: the node is DECOMMISSIONED and told to shut down
    res = st.node_heartbeat(n2, 4, [NodeStatus(task, "COMPLETE", 0, "", 1.0, 6.0)], True, "", 6.0)
    assert res.action == "SHUTDOWN"
    assert st.nodes[n2].state == "DECOMMISSIONED"
    assert st.containers[task].exit_status == 0  # it ended on its own, not killed
    assert st.apps[app_id].state == "RUNNING"
    # it keeps being told to shut down, and its goodbye does not change its state
    assert st.node_heartbeat(n2, 5, [], True, "", 7.0).action == "SHUTDOWN"
    st.unregister_node(n2, 7.0)
    assert st.nodes[n2].state == "DECOMMISSIONED"


def test_at_the_timeout_its_containers_are_killed_and_their_am_hears_of_it() -> None:
    st = make_state()
    n1, n2 = add_node(st, "n1"), add_node(st, "n2")
    app_id, token, task = app_with_task_on(st, n1, n2)
    st.decommission(n2, 30.0, 2.0)
    st.node_heartbeat(n1, 2, [], True, "", 29.0)
    st.node_heartbeat(n2, 2, [NodeStatus(task, "RUNNING", start_time=1.0)], True, "", 29.0)
    assert st.check_liveness(31.0) == []
    assert st.nodes[n2].state == "DECOMMISSIONING"
    events = st.check_liveness(32.5)
    assert events == [f"node {n2} decommissioned"]
    assert st.nodes[n2].state == "DECOMMISSIONED"
    assert st.containers[task].state == "COMPLETED"
    assert st.containers[task].exit_status == EXIT_ABORTED
    res = st.am_allocate(token, 2, [], [], 0, [], [], 33.0)
    assert [(s.container_id, s.exit_status) for s in res.completed] == [(task, EXIT_ABORTED)]
    assert "decommissioned" in res.completed[0].diagnostics
    assert st.apps[app_id].state == "RUNNING"
    assert st.apps[app_id].failed_attempts == 0
    assert st.node_heartbeat(n2, 3, [NodeStatus(task, "RUNNING")], True, "", 33.0).action == "SHUTDOWN"


def test_without_a_timeout_or_containers_it_is_decommissioned_at_once() -> None:
    st = make_state()
    n1, n2, n3 = add_node(st, "n1"), add_node(st, "n2"), add_node(st, "n3")
    app_id, _token, task = app_with_task_on(st, n1, n2)
    assert st.decommission(n3, 600.0, 2.0).node.state == "DECOMMISSIONED"  # nothing runs there
    st.decommission(n2, None, 2.0)
    assert st.nodes[n2].state == "DECOMMISSIONED"
    assert st.containers[task].exit_status == EXIT_ABORTED
    # the AM's own node: its attempt fails over, not counted
    st.decommission(n1, None, 3.0)
    app = st.apps[app_id]
    assert len(app.attempts) == 2
    assert app.failed_attempts == 0
    assert app.state == "ACCEPTED"
    assert st.schedulable_nodes() == 0
    assert not st.decommission(n1, None, 4.0).changed  # again: nothing changes


def test_bad_input_changes_nothing() -> None:
    st = make_state()
    n = add_node(st)
    version = st.version
    with pytest.raises(NotFound, match="nodeId, ghost:1, is not found"):
        st.decommission("ghost:1", None, 1.0)
    with pytest.raises(NotFound):
        st.recommission("ghost:1", 1.0)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(BadRequest):
            st.decommission(n, bad, 1.0)
    assert st.version == version
    assert st.nodes[n].state == "RUNNING"
    assert not st.recommission(n, 1.0).changed


def test_recommission_brings_a_node_back() -> None:
    st = make_state()
    n1, n2 = add_node(st, "n1"), add_node(st, "n2")
    _, _, task = app_with_task_on(st, n1, n2)
    st.decommission(n2, 60.0, 2.0)
    assert st.recommission(n2, 3.0).changed
    assert st.nodes[n2].state == "RUNNING"
    assert st.nodes[n2].decommission_deadline == 0.0
    assert st.snapshot(3.0).nodes[n2].schedulable
    assert st.containers[task].state == "RUNNING"
    assert st.check_liveness(100.0) == []
    # a decommissioned node may not register again until it is recommissioned
    st.decommission(n2, None, 4.0)
    with pytest.raises(Conflict, match="decommissioned"):
        add_node(st, "n2", now=5.0)
    st.recommission(n2, 6.0)
    assert st.nodes[n2].state == "NEW"
    assert add_node(st, "n2", now=7.0) == n2
    assert st.nodes[n2].state == "RUNNING"


def test_a_restart_keeps_decommissioning_and_decommissioned_nodes() -> None:
    st = make_state()
    n1, n2, n3 = add_node(st, "n1"), add_node(st, "n2"), add_node(st, "n3")
    _, _, task = app_with_task_on(st, n1, n2)
    st.decommission(n2, 50.0, 2.0)
    st.decommission(n3, None, 2.0)
    st2 = Ledger.recover(_fold(st.drain_records()), build_queues(), CoreConfig(), now=10.0)
    assert st2.nodes[n3].state == "DECOMMISSIONED"
    assert st2.nodes[n2].state == "NEW"
    assert st2.nodes[n2].decommission_deadline == 52.0
    with pytest.raises(Conflict):
        add_node(st2, "n3", now=11.0)
    # n2 re-registers with its task still running: DECOMMISSIONING again, with the same deadline
    node = st2.register_node(n2, "n2:8042", "", Resources.of(memory_mb=8192, vcores=8),
                             [NodeStatus(task, "RUNNING", start_time=1.0)], 11.0)
    assert node.state == "DECOMMISSIONING"
    assert node.decommission_deadline == 52.0
    assert st2.containers[task].state == "RUNNING"
    st2.check_liveness(53.0)
    assert st2.nodes[n2].state == "DECOMMISSIONED"
