"""YARN client operations on the state machine: move, priority, lifetime, and plain-command AMs."""

from __future__ import annotations

import pytest

from common.errors import BadRequest, Conflict
from rm.core.ledger import Ledger
from rm.core.queues import build_queues
from rm.core.records import AppRecord
from rm.core.state_types import CoreConfig, NodeStatus
from tests.unit.test_state import _fold, add_node, place_am, submit

TS = 1_700_000_000_000
QUEUES = {"a": {"capacity": 50}, "b": {"capacity": 30}, "stopped": {"capacity": 20, "state": "STOPPED"}}


def make_state(**cfg: object) -> Ledger:
    return Ledger(Ledger.fresh_meta(TS), build_queues(QUEUES), CoreConfig(**cfg))  # type: ignore[arg-type]


def test_move_validates_first_and_is_durable() -> None:
    st = make_state()
    app_id = submit(st, queue="a")
    st.drain_records()
    for bad in ("nope", "root", "stopped"):
        with pytest.raises(BadRequest):
            st.move(app_id, bad, 1.0)
    assert st.apps[app_id].queue == "root.a"
    assert st.drain_records() == []
    assert st.move(app_id, "a", 1.0).queue == "root.a"  # same queue: a no-op
    assert st.drain_records() == []
    assert st.move(app_id, "root.b", 1.0).queue == "root.b"
    (rec,) = st.drain_records()
    assert isinstance(rec, AppRecord)
    assert rec.queue == "root.b"
    st.kill(app_id, "", 2.0)
    with pytest.raises(BadRequest, match="KILLED state cannot be moved"):
        st.move(app_id, "a", 3.0)


def test_priority_is_capped_at_the_cluster_maximum() -> None:
    st = make_state(max_priority=5)
    app_id = submit(st, queue="a")
    assert st.set_priority(app_id, 3).priority == 3
    assert st.set_priority(app_id, 50).priority == 5
    with pytest.raises(BadRequest):
        st.set_priority(app_id, -1)
    assert st.apps[app_id].priority == 5
    with pytest.raises(BadRequest):
        submit(st, queue="a", priority=-2)
    st.kill(app_id, "", 1.0)
    with pytest.raises(BadRequest):
        st.set_priority(app_id, 1)


def test_the_lifetime_kills_the_app_when_it_expires() -> None:
    st = make_state()
    app_id = submit(st, queue="a", lifetime_s=30.0)
    assert st.apps[app_id].lifetime_expiry == 30.0
    with pytest.raises(BadRequest):
        st.set_lifetime(app_id, 5.0, now=10.0)  # in the past
    st.set_lifetime(app_id, 100.0, now=10.0)
    st.check_liveness(99.0)
    assert st.apps[app_id].state == "ACCEPTED"
    events = st.check_liveness(100.0)
    assert any("lifetime" in e for e in events)
    app = st.apps[app_id]
    assert (app.state, app.final_status) == ("KILLED", "KILLED")
    assert "exceeded the lifetime" in app.diagnostics
    with pytest.raises(BadRequest):
        submit(st, queue="a", lifetime_s=-1.0)


def test_a_plain_command_am_runs_stays_alive_and_succeeds_on_exit_zero() -> None:
    st = make_state(am_expiry_s=10.0)
    n = add_node(st)
    app_id = submit(st, queue="a")
    place_am(st, app_id, n, now=0.0)
    att = st.apps[app_id].current
    assert att is not None
    assert att.am_container_id is not None
    cid = att.am_container_id
    st.node_heartbeat(n, 1, [NodeStatus(cid, "RUNNING", start_time=1.0)], True, "", 1.0)
    assert st.apps[app_id].state == "RUNNING"  # runs although it never registers
    for t in (8.0, 16.0, 24.0):  # its node keeps reporting it: the attempt does not expire
        st.node_heartbeat(n, 2, [NodeStatus(cid, "RUNNING", start_time=1.0)], True, "", t)
        st.check_liveness(t)
    assert att.state == "LAUNCHED"
    st.node_heartbeat(n, 3, [NodeStatus(cid, "COMPLETE", 0, "", 1.0, 30.0)], True, "", 30.0)
    app = st.apps[app_id]
    assert (app.state, app.final_status) == ("FINISHED", "SUCCEEDED")
    assert att.state == "FINISHED"


def test_a_plain_command_am_that_fails_uses_its_attempts_and_can_be_killed() -> None:
    st = make_state()
    n = add_node(st)
    app_id = submit(st, queue="a")
    place_am(st, app_id, n)
    cid = st.apps[app_id].attempts[0].am_container_id or ""
    st.node_heartbeat(n, 1, [NodeStatus(cid, "RUNNING", start_time=1.0)], True, "", 1.0)
    st.node_heartbeat(n, 2, [NodeStatus(cid, "COMPLETE", 3, "", 1.0, 2.0)], True, "", 2.0)
    app = st.apps[app_id]
    assert app.state == "ACCEPTED"
    assert len(app.attempts) == 2
    st.kill(app_id, "", 3.0)
    assert (app.state, app.final_status) == ("KILLED", "KILLED")
    with pytest.raises(Conflict):
        st.kill(app_id, "", 4.0)


def test_recovery_keeps_the_lifetime() -> None:
    st = make_state()
    app_id = submit(st, queue="a", lifetime_s=50.0)
    st2 = Ledger.recover(_fold(st.drain_records()), build_queues(QUEUES), CoreConfig(), now=10.0)
    assert st2.apps[app_id].lifetime_expiry == 50.0
    st2.check_liveness(60.0)
    assert st2.apps[app_id].state == "KILLED"
