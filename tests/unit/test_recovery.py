"""Work-preserving RM restart: the ledger rebuilt from the store keeps unfinished attempts and their
containers, the NodeManagers' re-registrations say which still run, AMs re-register and are handed the
completions they had not yet seen; an ended app keeps its AM's control trace."""

from __future__ import annotations

import json
import math

import pytest

from common.errors import ApplicationMasterNotRegistered, BadRequest
from common.exits import EXIT_ABORTED
from common.ids import AppId, ContainerId, NodeId
from common.resources import Resources
from common.terms import AmSignals, ControlStep
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.queues import build_queues
from rm.core.records import AppRecord, Record
from rm.core.state_types import CoreConfig, NodeStatus
from tests.unit.test_decommission import cycle
from tests.unit.test_state import _fold, add_node, make_state, place_am, submit

CAP = Resources.of(memory_mb=100, vcores=1)


def _running(st: Ledger, node: NodeId, **submission: object) -> tuple[AppId, str, ContainerId]:
    """An app whose AM container runs on ``node`` and whose AM registered."""
    app_id = submit(st, 0.0, **submission)
    token = place_am(st, app_id, node, 0.0)
    am = st.apps[app_id].current
    assert am is not None
    assert am.am_container_id is not None
    st.node_heartbeat(node, 1, [NodeStatus(am.am_container_id, "RUNNING", start_time=1.0)], True, "", 1.0)
    st.am_register(token, "h", 1, "", 1.0)
    return app_id, token, am.am_container_id


def _handed(st: Ledger, app_id: AppId, token: str, node: NodeId, n: int, now: float = 2.0) -> list[ContainerId]:
    """``n`` task containers placed on ``node`` and handed to the AM, not yet started."""
    att = st.apps[app_id].current
    assert att is not None
    st.am_allocate(token, att.response_id, [Ask(1, 1, CAP, n)], [], 0.1, [], [], now)
    st.apply_plan(Plan(st.version, placements=[Place(app_id, 1, node, CAP, 1)] * n), now)
    got = st.am_allocate(token, att.response_id, [], [], 0.1, [], [], now + 1.0)
    assert len(got.allocated) == n
    return [c.container_id for c in got.allocated]


def _tasks(st: Ledger, app_id: AppId, token: str, node: NodeId, n: int) -> list[ContainerId]:
    """``n`` task containers handed to the AM and started on ``node``."""
    cids = _handed(st, app_id, token, node, n)
    st.node_heartbeat(node, 2, [NodeStatus(c, "RUNNING", start_time=4.0) for c in cids], True, "", 4.0)
    return cids


def _restart(st: Ledger, now: float, **cfg: object) -> Ledger:
    return _recover(st.drain_records(), now, **cfg)


def _recover(records: list[Record], now: float, **cfg: object) -> Ledger:
    return Ledger.recover(_fold(records), build_queues(), CoreConfig(**cfg), now=now)  # type: ignore[arg-type]


def test_a_restart_keeps_the_attempt_and_its_containers_until_the_node_reports_them() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, am_cid = _running(st, n)
    a, b, c = _tasks(st, app_id, token, n, 3)
    st.node_heartbeat(n, 3, [NodeStatus(c, "COMPLETE", 0, "", 4.0, 9.0)], True, "", 9.0)  # not yet told to the AM
    again = _restart(st, 20.0)

    app = again.apps[app_id]
    assert app.state == "RUNNING"
    assert len(app.attempts) == 1
    assert app.attempts[0].state == "RUNNING"
    assert {a, b, am_cid} <= set(again.containers)
    assert all(again.containers[x].live for x in (a, b, am_cid))
    assert app.used == CAP + CAP + Resources.of(memory_mb=512, vcores=1)
    assert again.nodes[n].state == "NEW"  # no new work until it re-registers
    assert again.schedulable_nodes() == 0

    with pytest.raises(ApplicationMasterNotRegistered):  # the AM re-registers (YARN's resync)
        again.am_allocate(token, 5, [], [], 0.5, [], [], 21.0)
    # the NodeManager re-registers: the AM and ``a`` still run, ``b`` is gone
    again.register_node(n, "n1:8042", "", Resources.of(memory_mb=8192, vcores=8),
                        [NodeStatus(am_cid, "RUNNING", start_time=1.0), NodeStatus(a, "RUNNING", start_time=4.0)],
                        21.0)
    assert again.containers[a].live
    assert again.containers[am_cid].live
    assert not again.containers[b].live
    assert again.containers[b].exit_status == EXIT_ABORTED
    assert again.nodes[n].allocated == CAP + Resources.of(memory_mb=512, vcores=1)
    again.am_register(token, "h", 1, "", 22.0)
    res = again.am_allocate(token, 0, [Ask(1, 1, CAP, 1)], [], 0.5, [], [], 22.0)
    done = {s.container_id: s.exit_status for s in res.completed}
    assert done == {c: 0, b: EXIT_ABORTED}  # the one it had not been handed, and the lost one

    # new containers carry the new epoch
    again.apply_plan(Plan(again.version, placements=[Place(app_id, 1, n, CAP, 1)]), 23.0)
    (new,) = again.am_allocate(token, res.response_id, [], [], 0.5, [], [], 23.0).allocated
    assert new.container_id.startswith("container_e01_")


def test_completions_already_handed_over_are_not_handed_again() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, am_cid = _running(st, n)
    (a,) = _tasks(st, app_id, token, n, 1)
    st.node_heartbeat(n, 3, [NodeStatus(a, "COMPLETE", 0, "", 4.0, 9.0)], True, "", 9.0)
    att = st.apps[app_id].current
    assert att is not None
    assert [s.container_id for s in st.am_allocate(token, att.response_id, [], [], 0.5, [], [], 10.0).completed] == [a]
    again = _restart(st, 20.0)
    again.register_node(n, "n1:8042", "", Resources.of(memory_mb=8192, vcores=8),
                        [NodeStatus(am_cid, "RUNNING", start_time=1.0)], 21.0)
    again.am_register(token, "h", 1, "", 22.0)
    assert again.am_allocate(token, 0, [], [], 0.5, [], [], 22.0).completed == ()


def test_containers_not_yet_handed_to_the_am_are_given_up_and_asked_for_again() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, am_cid = _running(st, n)
    att = st.apps[app_id].current
    assert att is not None
    st.am_allocate(token, att.response_id, [Ask(1, 1, CAP, 2)], [], 0.1, [], [], 2.0)
    st.apply_plan(Plan(st.version, placements=[Place(app_id, 1, n, CAP, 1)] * 2), 2.0)  # never delivered
    given = list(st.apps[app_id].containers - {am_cid})
    again = _restart(st, 20.0)
    assert all(g not in again.containers for g in given)
    again.register_node(n, "n1:8042", "", Resources.of(memory_mb=8192, vcores=8),
                        [NodeStatus(am_cid, "RUNNING", start_time=1.0)], 21.0)
    again.am_register(token, "h", 1, "", 22.0)
    again.am_allocate(token, 0, [Ask(1, 1, CAP, 2)], [], 0.1, [], [], 22.0)  # the AM resends its table
    assert again.apps[app_id].current.asks[1].num_containers == 2  # type: ignore[union-attr]


def test_an_attempt_whose_node_never_comes_back_fails_over_at_the_node_expiry() -> None:
    st = make_state(nm_expiry_s=10.0)
    n = add_node(st)
    app_id, token, _ = _running(st, n)
    _tasks(st, app_id, token, n, 2)
    again = _restart(st, 20.0, nm_expiry_s=10.0)
    again.check_liveness(25.0)
    assert len(again.apps[app_id].attempts) == 1
    again.check_liveness(31.0)
    app = again.apps[app_id]
    assert again.nodes[n].state == "LOST"
    assert [a.state for a in app.attempts] == ["FAILED", "SCHEDULED"]
    assert app.failed_attempts == 0  # not the app's fault
    assert not any(c.live for c in again.containers.values())


def test_an_attempt_still_waiting_for_its_am_container_asks_for_it_again() -> None:
    st = make_state()
    n = add_node(st)
    app_id = submit(st, 0.0)
    again = _restart(st, 20.0)
    att = again.apps[app_id].current
    assert att is not None
    assert att.state == "SCHEDULED"
    assert att.am_ask_pending
    assert len(again.apps[app_id].attempts) == 1
    # and the first cycle once a node is back places it (the app is in the snapshot though nothing touched it)
    again.register_node(n, "n1:8042", "", Resources.of(memory_mb=8192, vcores=8), [], 21.0)
    cycle(again, 22.0)
    assert att.state == "ALLOCATED"
    assert att.am_container_id is not None


def test_an_am_container_allocated_but_not_running_after_the_restart_fails_over() -> None:
    st = make_state()
    n = add_node(st)
    app_id = submit(st, 0.0)
    place_am(st, app_id, n, 0.0)  # allocated; its launch never confirmed before the restart
    again = _restart(st, 20.0)
    assert len(again.apps[app_id].attempts) == 1
    again.register_node(n, "n1:8042", "", Resources.of(memory_mb=8192, vcores=8), [], 21.0)
    app = again.apps[app_id]
    assert [a.state for a in app.attempts] == ["FAILED", "SCHEDULED"]
    assert app.failed_attempts == 0


def test_a_restarted_nodemanager_keeps_the_containers_it_reports() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, am_cid = _running(st, n)
    a, b = _tasks(st, app_id, token, n, 2)
    st.register_node(n, "n1:8042", "", Resources.of(memory_mb=8192, vcores=8),
                     [NodeStatus(am_cid, "RUNNING", start_time=1.0), NodeStatus(a, "RUNNING", start_time=4.0),
                      NodeStatus(b, "COMPLETE", 3, "exited while the NodeManager was down", 4.0, 6.0)], 8.0)
    assert st.containers[a].live
    assert st.containers[am_cid].live
    assert (st.containers[b].live, st.containers[b].exit_status) == (False, 3)
    assert st.apps[app_id].attempts[0].state == "RUNNING"
    assert st.nodes[n].allocated == CAP + Resources.of(memory_mb=512, vcores=1)


def test_a_node_back_from_lost_is_told_to_stop_what_the_rm_gave_up_on() -> None:
    st = make_state(nm_expiry_s=10.0)
    n = add_node(st)
    app_id, token, am_cid = _running(st, n)
    (a,) = _tasks(st, app_id, token, n, 1)
    st.check_liveness(20.0)
    assert st.nodes[n].state == "LOST"
    st.register_node(n, "n1:8042", "", Resources.of(memory_mb=8192, vcores=8),
                     [NodeStatus(am_cid, "RUNNING", start_time=1.0), NodeStatus(a, "RUNNING", start_time=4.0)], 21.0)
    res = st.node_heartbeat(n, 0, [], True, "", 22.0)
    assert set(res.containers_to_cleanup) == {am_cid, a}
    assert st.nodes[n].allocated == Resources()


def test_a_container_stored_before_its_handing_was_written_is_adopted_when_its_node_runs_it() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, am_cid = _running(st, n)
    att = st.apps[app_id].current
    assert att is not None
    st.am_allocate(token, att.response_id, [Ask(1, 1, CAP, 2)], [], 0.1, [], [], 2.0)
    st.apply_plan(Plan(st.version, placements=[Place(app_id, 1, n, CAP, 1)] * 2), 2.0)
    stored = st.drain_records()  # the containers stored as ALLOCATED
    handed = st.am_allocate(token, att.response_id, [], [], 0.1, [], [], 3.0).allocated
    started, never = handed[0].container_id, handed[1].container_id
    again = Ledger.recover(_fold(stored + st.drain_records()), build_queues(), CoreConfig(), now=20.0)
    assert started not in again.containers  # nothing held until its node says
    again.register_node(n, "n1:8042", "", Resources.of(memory_mb=8192, vcores=8),
                        [NodeStatus(am_cid, "RUNNING", start_time=1.0), NodeStatus(started, "RUNNING", start_time=4.0)],
                        21.0)
    assert again.containers[started].state == "RUNNING"
    assert never not in again.containers
    assert again.unconfirmed == {}
    assert again.nodes[n].allocated == CAP + Resources.of(memory_mb=512, vcores=1)
    assert again.apps[app_id].used == CAP + Resources.of(memory_mb=512, vcores=1)


def _failed_am(st: Ledger, app_id: AppId, am_cid: ContainerId, n: NodeId, now: float) -> None:
    st.node_heartbeat(n, 9, [NodeStatus(am_cid, "COMPLETE", 137, "killed", 1.0, now)], True, "", now)


def test_with_keep_containers_a_failed_attempts_running_containers_pass_to_the_next() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, am_cid = _running(st, n, keep_containers=True)
    a, b = _tasks(st, app_id, token, n, 2)
    _failed_am(st, app_id, am_cid, n, 10.0)
    app = st.apps[app_id]
    second = app.current
    assert second is not None
    assert second.number == 2
    assert st.containers[a].live
    assert st.containers[b].live
    assert st.containers[a].attempt_id == second.attempt_id
    assert [c.container_id for c in st.inherited_containers(second)] == sorted([a, b])
    # the new attempt's AM hears of their completions
    token2 = place_am(st, app_id, n, 11.0)
    st.am_register(token2, "h", 1, "", 12.0)
    st.node_heartbeat(n, 10, [NodeStatus(a, "COMPLETE", 0, "", 4.0, 13.0)], True, "", 13.0)
    assert [s.container_id for s in st.am_allocate(token2, 0, [], [], 0.5, [], [], 14.0).completed] == [a]


def test_without_keep_containers_a_failed_attempts_containers_are_stopped() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, am_cid = _running(st, n)
    a, b = _tasks(st, app_id, token, n, 2)
    _failed_am(st, app_id, am_cid, n, 10.0)
    assert not st.containers[a].live
    assert not st.containers[b].live
    second = st.apps[app_id].current
    assert second is not None
    assert st.inherited_containers(second) == []


def test_the_am_checkpoint_is_kept_with_the_app_across_attempts_and_restarts() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, _am_cid = _running(st, n)
    att = st.apps[app_id].current
    assert att is not None
    with pytest.raises(BadRequest):  # too large: refused, nothing changed
        st.am_allocate(token, att.response_id, [], [], 0.1, [], [], 2.0, checkpoint="x" * (256 * 1024 + 1))
    assert st.apps[app_id].am_checkpoint == ""
    st.am_allocate(token, att.response_id, [], [], 0.1, [], [], 2.0, checkpoint='{"done":{"s0":{"0":3.5}}}')
    again = _restart(st, 20.0)
    assert again.apps[app_id].am_checkpoint == '{"done":{"s0":{"0":3.5}}}'


def test_an_ended_app_keeps_its_am_s_control_trace_in_the_store() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, _am_cid = _running(st, n)
    steps = (ControlStep(age_s=30.0, progress=0.25, raw_units=6, smoothed_units=5.2, requested_units=6,
                         finish_in_s=300.0, status="ON_TRACK"),
             ControlStep(age_s=0.0, progress=0.5, raw_units=9, smoothed_units=5.96, requested_units=6,
                         finish_in_s=400.0, status="AT_RISK", held=True, pace=1.6))
    broken = ControlStep(age_s=0.0, progress=0.5, raw_units=9, smoothed_units=math.nan, requested_units=6,
                         finish_in_s=math.inf, status="AT_RISK")
    st.am_allocate(token, 0, [], [], 0.5, [], [], 2.0,
                   signals=AmSignals(guarantee=CAP * 6, control=(*steps, broken)))
    app = st.apps[app_id]
    assert [s for _, s in app.control] == list(steps)  # a step that is not all numbers is not kept
    stored = st.drain_records()
    (running,) = [r for r in stored if isinstance(r, AppRecord)]  # written as the guarantee changed
    assert running.control == ()  # not stored while the app runs
    assert _recover(stored, 3.0).apps[app_id].control == []

    st.am_finish(token, "SUCCEEDED", "", "", 4.0)
    ended = [r for r in st.drain_records() if isinstance(r, AppRecord)]
    stored += ended
    assert ended[-1].state == "FINISHED"
    assert [d["raw_units"] for d in ended[-1].control] == [6, 9]
    assert json.loads(json.dumps(ended[-1].control, allow_nan=False)) == list(ended[-1].control)  # the store's JSON
    again = _recover(stored, 20.0)
    assert again.apps[app_id].state == "FINISHED"
    assert again.apps[app_id].control == [(2.0, steps[0]), (2.0, steps[1])]
    older = {k: v for k, v in ended[-1].control[1].items() if k != "pace"}  # stored before steps told a pace
    assert ControlStep.from_dict(older)[1].pace == 1.0


def test_a_container_started_as_its_am_died_passes_on_when_both_come_in_one_heartbeat() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, am_cid = _running(st, n, keep_containers=True)
    (task_id,) = _handed(st, app_id, token, n, 1)  # handed over, not started
    # the AM's end is listed first, its last launch second
    st.node_heartbeat(n, 2, [NodeStatus(am_cid, "COMPLETE", 137, "killed", 1.0, 4.0),
                             NodeStatus(task_id, "RUNNING", start_time=3.5)], True, "", 4.0)
    second = st.apps[app_id].current
    assert second is not None
    assert second.number == 2
    assert st.containers[task_id].live
    assert [c.container_id for c in st.inherited_containers(second)] == [task_id]


def test_a_container_its_node_is_still_launching_when_the_am_dies_passes_on() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, am_cid = _running(st, n, keep_containers=True)
    (task_id,) = _handed(st, app_id, token, n, 1)
    st.node_heartbeat(n, 2, [NodeStatus(task_id, "NEW")], True, "", 3.5)  # being launched
    st.node_heartbeat(n, 3, [NodeStatus(am_cid, "COMPLETE", 137, "killed", 1.0, 4.0),
                             NodeStatus(task_id, "NEW")], True, "", 4.0)
    second = st.apps[app_id].current
    assert second is not None
    assert second.number == 2
    assert [c.container_id for c in st.inherited_containers(second)] == [task_id]


def test_a_container_handed_over_but_not_yet_reported_passes_on_and_is_given_up_if_never_started() -> None:
    st = make_state()
    n, n2 = add_node(st), add_node(st, "n2")
    app_id, token, am_cid = _running(st, n, keep_containers=True)
    am = st.apps[app_id].current
    assert am is not None
    st.am_allocate(token, am.response_id, [Ask(1, 1, CAP, 2)], [], 0.1, [], [], 2.0)
    st.apply_plan(Plan(st.version, placements=[Place(app_id, 1, n2, CAP, 1)] * 2), 2.0)
    started, never = (c.container_id for c in st.am_allocate(token, am.response_id, [], [], 0.1, [], [], 3.0).allocated)
    # the AM's node reports its end before the tasks' node reports anything
    st.node_heartbeat(n, 2, [NodeStatus(am_cid, "COMPLETE", 137, "killed", 1.0, 4.0)], True, "", 4.0)
    second = st.apps[app_id].current
    assert second is not None
    assert [c.container_id for c in st.inherited_containers(second)] == sorted([started, never])
    st.node_heartbeat(n2, 1, [NodeStatus(started, "RUNNING", start_time=3.5)], True, "", 5.0)
    st.check_liveness(20.0)  # its node never reported the other one: given up, and the new attempt hears of it
    assert st.containers[started].live
    assert not st.containers[never].live
    token2 = place_am(st, app_id, n, 21.0)
    st.am_register(token2, "h", 1, "", 21.0)
    done = st.am_allocate(token2, 0, [], [], 0.5, [], [], 22.0).completed
    assert [(s.container_id, s.exit_status) for s in done] == [(never, EXIT_ABORTED)]


def test_completions_the_failed_attempts_am_never_heard_of_go_to_the_next_attempt() -> None:
    st = make_state(am_expiry_s=5.0)
    n = add_node(st)
    app_id, token, am_cid = _running(st, n, keep_containers=True)
    (a,) = _tasks(st, app_id, token, n, 1)
    # the AM hangs; its task ends meanwhile; the AM expires
    st.node_heartbeat(n, 3, [NodeStatus(am_cid, "RUNNING", start_time=1.0),
                             NodeStatus(a, "COMPLETE", 0, "", 4.0, 5.0)], True, "", 5.0)
    st.check_liveness(10.0)
    second = st.apps[app_id].current
    assert second is not None
    assert second.number == 2
    token2 = place_am(st, app_id, n, 11.0)
    st.am_register(token2, "h", 1, "", 12.0)
    assert [(s.container_id, s.exit_status) for s in st.am_allocate(token2, 0, [], [], 0.5, [], [], 12.0).completed] \
        == [(a, 0)]
