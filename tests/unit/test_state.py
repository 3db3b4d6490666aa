"""The RM state machine: submissions, attempts, AM protocol, node liveness, recovery."""

from __future__ import annotations

import json

import pytest

from common import tokens
from common.errors import (
    ApplicationAttemptNotFound,
    ApplicationMasterNotRegistered,
    ApplicationNotFound,
    BadRequest,
    Conflict,
    InvalidApplicationMasterRequest,
    InvalidResourceRequest,
    InvalidToken,
)
from common.ids import AppId, NodeId
from common.resources import Resources
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.queues import build_queues
from rm.core.records import StoredState
from rm.core.state_types import AM_ASK_ID, CoreConfig, NodeStatus, SubmitSpec

TS = 1_700_000_000_000


def make_state(**cfg: float) -> Ledger:
    meta = Ledger.fresh_meta(TS)
    return Ledger(meta, build_queues(), CoreConfig(**cfg))  # type: ignore[arg-type]


def add_node(st: Ledger, name: str = "n1", mem: int = 8192, vc: int = 8, now: float = 0.0) -> NodeId:
    node = st.register_node(f"{name}:7040", f"{name}:8042", "", Resources.of(memory_mb=mem, vcores=vc), [], now)
    return node.node_id


def submit(st: Ledger, now: float = 0.0, **kw: object) -> AppId:
    app_id = st.new_application(now)
    spec = SubmitSpec(app_id=app_id, am_launch={"commands": ["run-am"]},
                      am_resource=Resources.of(memory_mb=512, vcores=1), **kw)  # type: ignore[arg-type]
    st.submit(spec, now)
    return app_id


def place_am(st: Ledger, app_id: AppId, node: NodeId, now: float = 0.0) -> str:
    plan = Plan(based_on=st.version, placements=[
        Place(app_id=app_id, allocation_request_id=AM_ASK_ID, node_id=node,
              resource=st.apps[app_id].am_resource, priority=-1, is_am=True)])
    st.apply_plan(plan, now)
    (launch,) = st.drain_launches()
    return launch.amrm_token


def running_app(st: Ledger, node: NodeId, now: float = 0.0) -> tuple[AppId, str]:
    app_id = submit(st, now)
    token = place_am(st, app_id, node, now)
    st.am_register(token, "h", 1, "", now)
    return app_id, token


def test_submit_needs_a_handed_out_id_a_known_queue_and_a_sane_am() -> None:
    st = make_state()
    add_node(st)
    with pytest.raises(BadRequest):
        st.submit(SubmitSpec(app_id="application_1_0001", am_launch={"commands": ["x"]}), 0)
    app_id = st.new_application(0)
    with pytest.raises(BadRequest, match="unknown queue"):
        st.submit(SubmitSpec(app_id=app_id, queue="nope", am_launch={"commands": ["x"]}), 0)
    with pytest.raises(InvalidResourceRequest, match="maximum allocation"):
        st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["x"]},
                             am_resource=Resources.of(memory_mb=100_000, vcores=1)), 0)
    with pytest.raises(BadRequest, match="no commands"):
        st.submit(SubmitSpec(app_id=app_id), 0)
    assert st.apps == {}
    st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["x"]}), 0)
    with pytest.raises(Conflict):
        st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["x"]}), 0)
    assert st.apps[app_id].state == "ACCEPTED"
    assert st.apps[app_id].current is not None


def test_a_refused_request_writes_nothing() -> None:
    st = make_state()
    add_node(st)
    st.drain_records()
    with pytest.raises(ApplicationNotFound):
        st.kill("application_1_0099", "", 0)
    with pytest.raises(BadRequest):
        st.kill("garbage", "", 0)
    assert st.drain_records() == []


def test_am_lifecycle_to_finished() -> None:
    st = make_state()
    n = add_node(st)
    app_id = submit(st)
    token = place_am(st, app_id, n)
    app = st.apps[app_id]
    assert app.current is not None
    assert app.current.state == "ALLOCATED"
    att = st.am_register(token, "host", 1234, "http://t", 1.0)
    assert att.state == "RUNNING"
    assert app.state == "RUNNING"
    with pytest.raises(Conflict):
        st.am_register(token, "host", 1234, "", 1.0)
    ask = Ask(allocation_request_id=1, priority=1, capability=Resources.of(memory_mb=1024, vcores=1),
              num_containers=2)
    res = st.am_allocate(token, 0, [ask], [], 0.1, [], [], 2.0)
    assert res.response_id == 1
    assert res.allocated == ()
    snap = st.snapshot()
    assert snap.apps[app_id].asks[0].num_containers == 2
    plan = Plan(based_on=snap.version, placements=[
        Place(app_id=app_id, allocation_request_id=1, node_id=n, resource=ask.capability, priority=1)] * 2)
    st.apply_plan(plan, 3.0)
    res = st.am_allocate(token, 1, [], [], 0.5, [], [], 4.0)
    assert len(res.allocated) == 2
    assert len(res.nm_tokens) == 1
    c = res.allocated[0]
    fields = tokens.read_container_token(st.container_key, c.token, now=4.0)
    assert fields.container_id == c.container_id
    assert fields.node_id == n
    # containers finish on the node
    st.node_heartbeat(n, 1, [NodeStatus(c.container_id, "COMPLETE", 0, "", 3.5, 5.0)], True, "", 5.0)
    res = st.am_allocate(token, 2, [], [], 1.0, [], [], 6.0)
    assert [s.container_id for s in res.completed] == [c.container_id]
    st.am_finish(token, "SUCCEEDED", "", "", 7.0)
    assert app.state == "FINISHED"
    assert app.final_status == "SUCCEEDED"
    with pytest.raises(Conflict):
        st.kill(app_id, "", 8.0)


def test_allocate_needs_registration_and_the_right_response_id() -> None:
    st = make_state()
    n = add_node(st)
    app_id = submit(st)
    token = place_am(st, app_id, n)
    with pytest.raises(ApplicationMasterNotRegistered):
        st.am_allocate(token, 0, [], [], 0, [], [], 0)
    st.am_register(token, "h", 1, "", 0)
    first = st.am_allocate(token, 0, [], [], 0, [], [], 0)
    assert st.am_allocate(token, 0, [], [], 0, [], [], 0) is first  # duplicate: same answer
    with pytest.raises(InvalidApplicationMasterRequest, match="responseId"):
        st.am_allocate(token, 7, [], [], 0, [], [], 0)


def test_an_am_token_only_acts_for_its_own_attempt() -> None:
    st = make_state()
    n = add_node(st)
    _, token_a = running_app(st, n)
    forged = tokens.amrm_token(b"x" * 32, st.apps[next(iter(st.apps))].attempts[0].attempt_id)
    with pytest.raises(InvalidToken):
        st.am_allocate(forged, 0, [], [], 0, [], [], 0)
    with pytest.raises(InvalidToken):
        st.am_register("not-a-token", "h", 1, "", 0)
    app_b, token_b = running_app(st, n)
    other_container = None
    plan = Plan(based_on=0, placements=[Place(app_id=app_b, allocation_request_id=1, node_id=n,
                                              resource=Resources.of(memory_mb=1, vcores=1), priority=1)])
    st.am_allocate(token_b, 0, [Ask(1, 1, Resources.of(memory_mb=1, vcores=1), 1)], [], 0, [], [], 0)
    st.apply_plan(plan, 0)
    other_container = next(c for c in st.containers.values() if c.app_id == app_b and not c.is_am)
    with pytest.raises(BadRequest):  # A may not release B's container
        st.am_allocate(token_a, 0, [], [other_container.container_id], 0, [], [], 0)


def test_asks_larger_than_any_node_are_refused() -> None:
    st = make_state()
    n = add_node(st, mem=4096, vc=4)
    _, token = running_app(st, n)
    big = Ask(1, 1, Resources.of(memory_mb=8192, vcores=1), 1)
    with pytest.raises(InvalidResourceRequest):
        st.am_allocate(token, 0, [big], [], 0, [], [], 0)
    gpu = Ask(1, 1, Resources.of(memory_mb=1, vcores=1, gpu=1), 1)
    with pytest.raises(InvalidResourceRequest):
        st.am_allocate(token, 0, [gpu], [], 0, [], [], 0)


def test_undelivered_containers_count_against_a_replaced_ask() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token = running_app(st, n)
    cap = Resources.of(memory_mb=100, vcores=1)
    st.am_allocate(token, 0, [Ask(1, 1, cap, 5)], [], 0, [], [], 0)
    st.apply_plan(Plan(0, placements=[Place(app_id, 1, n, cap, 1)] * 2), 0)
    # the AM has not seen the 2 containers and still says 5: only 3 more are wanted
    res = st.am_allocate(token, 1, [Ask(1, 1, cap, 5)], [], 0, [], [], 0)
    assert len(res.allocated) == 2
    assert st.apps[app_id].attempts[-1].asks[1].num_containers == 3


def test_a_lost_node_reports_containers_aborted_and_fails_over_its_am_without_counting() -> None:
    st = make_state(nm_expiry_s=10.0)
    n1 = add_node(st, "n1")
    n2 = add_node(st, "n2")
    app_id, token = running_app(st, n1)
    cap = Resources.of(memory_mb=100, vcores=1)
    st.am_allocate(token, 0, [Ask(1, 1, cap, 1)], [], 0, [], [], 0)
    st.apply_plan(Plan(0, placements=[Place(app_id, 1, n2, cap, 1)]), 0)
    st.am_allocate(token, 1, [], [], 0, [], [], 0)
    st.node_heartbeat(n1, 1, [], True, "", 8.0)
    st.check_liveness(15.0)  # n2 silent for 15 s > 10 s
    assert st.nodes[n2].state == "LOST"
    res = st.am_allocate(token, 2, [], [], 0, [], [], 15.0)
    assert [s.exit_status for s in res.completed] == [-100]
    # now the AM's node goes too: a new attempt, not counted as a failure
    st.check_liveness(30.0)
    app = st.apps[app_id]
    assert len(app.attempts) == 2
    assert app.failed_attempts == 0
    assert app.state == "ACCEPTED"
    with pytest.raises(ApplicationAttemptNotFound):  # the superseded attempt is fenced off
        st.am_allocate(token, 3, [], [], 0, [], [], 30.0)
    with pytest.raises(ApplicationAttemptNotFound):
        st.am_finish(token, "SUCCEEDED", "", "", 30.0)
    assert app.state == "ACCEPTED"


def test_am_crash_uses_attempts_then_fails_the_app() -> None:
    st = make_state(max_app_attempts=2)
    n = add_node(st)
    app_id = submit(st)
    for expected_attempts in (1, 2):
        place_am(st, app_id, n)
        att = st.apps[app_id].attempts[-1]
        assert att.number == expected_attempts
        st.node_heartbeat(n, 1, [NodeStatus(att.am_container_id or "", "RUNNING", start_time=1.0)], True, "", 1)
        st.node_heartbeat(n, 2, [NodeStatus(att.am_container_id or "", "COMPLETE", 137, "killed")], True, "", 2)
    app = st.apps[app_id]
    assert app.state == "FAILED"
    assert app.failed_attempts == 2
    assert "exitCode: 137" in app.diagnostics


def test_silent_am_expires() -> None:
    st = make_state(am_expiry_s=5.0)
    n = add_node(st)
    app_id, _ = running_app(st, n, now=0.0)
    st.node_heartbeat(n, 1, [], True, "", 6.0)
    st.check_liveness(6.0)
    app = st.apps[app_id]
    assert app.attempts[0].state == "FAILED"
    assert "timed out" in app.attempts[0].diagnostics
    assert len(app.attempts) == 2


def test_unknown_containers_on_a_node_are_cleaned_up() -> None:
    st = make_state()
    n = add_node(st)
    res = st.node_heartbeat(n, 1, [NodeStatus("container_1_0001_01_000009", "RUNNING")], True, "", 1.0)
    assert res.containers_to_cleanup == ("container_1_0001_01_000009",)
    assert st.node_heartbeat("ghost:1", 0, [], True, "", 1.0).action == "RESYNC"


def test_recovery_without_work_preservation_fails_over_unfinished_apps() -> None:
    st = make_state(work_preserving=False)
    n = add_node(st)
    done_id, token = running_app(st, n)
    st.am_finish(token, "SUCCEEDED", "", "", 1.0)
    killed_id = submit(st)
    st.kill(killed_id, "", 1.0)
    running_id, _ = running_app(st, n)
    records = st.drain_records()
    stored = _fold(records)
    st2 = Ledger.recover(stored, build_queues(), CoreConfig(work_preserving=False), now=10.0)
    assert st2.apps[done_id].state == "FINISHED"
    assert st2.apps[done_id].final_status == "SUCCEEDED"
    assert st2.apps[killed_id].state == "KILLED"
    again = st2.apps[running_id]
    assert again.state == "ACCEPTED"
    assert len(again.attempts) == 2
    assert again.attempts[0].state == "FAILED"
    assert not again.attempts[0].counts_as_failure
    assert st2.new_application(10.0) != running_id  # the id counter survives
    assert st2.nodes[n].state == "NEW"  # must re-register before it gets work


def _fold(records: list[object]) -> StoredState:
    from rm.core.records import AppRecord, AttemptRecord, ContainerRecord, MetaRecord, NodeRecord

    meta = None
    apps: dict[str, AppRecord] = {}
    atts: dict[str, AttemptRecord] = {}
    conts: dict[str, ContainerRecord] = {}
    nodes: dict[str, NodeRecord] = {}
    for r in records:
        if isinstance(r, MetaRecord):
            meta = r
        elif isinstance(r, AppRecord):
            apps[r.app_id] = r
        elif isinstance(r, AttemptRecord):
            atts[r.attempt_id] = r
        elif isinstance(r, ContainerRecord):
            conts[r.container_id] = r
        elif isinstance(r, NodeRecord):
            nodes[r.node_id] = r
    return StoredState(meta, tuple(apps.values()), tuple(atts.values()), tuple(conts.values()),
                       tuple(nodes.values()))


def test_the_snapshot_carries_the_last_fair_share_and_whether_the_app_yields() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token = running_app(st, n)
    cap = Resources.of(memory_mb=100, vcores=1)
    st.am_allocate(token, 0, [Ask(1, 1, cap, 2)], [], 0, [], [], 0)
    view = st.snapshot().apps[app_id]
    assert not view.yielding  # no ALTRUISTIC ask
    assert view.fair_share is None  # no share computed yet
    st.am_allocate(token, 1, [Ask(2, 1, cap, 1, ask_type="ALTRUISTIC")], [], 0, [], [], 0)
    share = Resources.of(memory_mb=4096, vcores=4)
    st.apply_plan(Plan(st.version, shares={app_id: share}), 0)
    view = st.snapshot().apps[app_id]
    assert view.yielding  # its DEFAULT asks past its share wait for the leftover order
    assert view.fair_share == share
    st.am_allocate(token, 2, [Ask(2, 1, cap, 0, ask_type="ALTRUISTIC")], [], 0, [], [], 0)
    assert not st.snapshot().apps[app_id].yielding  # it asks nothing ALTRUISTIC any more


def test_an_unregistered_attempt_is_finished_with_its_finish_time() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token = running_app(st, n)
    st.am_finish(token, "SUCCEEDED", "done", "", 5.0)
    att = st.apps[app_id].attempts[0]
    assert st.apps[app_id].state == "FINISHED"
    assert (att.state, att.finish_time) == ("FINISHED", 5.0)  # not left FINISHING once the app ended


def job_file(*stages: dict[str, object]) -> str:
    """A DAG job file as ``shepherd submit`` sends it; each stage 2 tasks of 512 MB, 1 vcore unless given."""
    return json.dumps({"id": "job", "stages": [{"tasks": 2, "memory_mb": 512, **s} for s in stages]})


def test_a_job_whose_task_no_node_could_hold_is_refused_at_submission_and_nothing_is_written() -> None:
    st = make_state()
    add_node(st, mem=4096, vc=4)
    app_id = st.new_application(0)
    st.drain_records()
    version = st.version
    too_much_memory = job_file({"name": "load"}, {"name": "join", "memory_mb": 40_960, "parents": ["load"]})
    too_many_vcores = job_file({"name": "load", "vcores": 5})
    with pytest.raises(InvalidResourceRequest, match=r"stage 'join': a task of <memory-mb=40960, vcores=1> "
                                                     r"exceeds the maximum allocation <memory-mb=4096, vcores=4>"):
        st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["am"]}, job_spec_json=too_much_memory), 0)
    with pytest.raises(InvalidResourceRequest, match=r"stage 'load': a task of <memory-mb=512, vcores=5>"):
        st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["am"]}, job_spec_json=too_many_vcores,
                             unmanaged=True), 0)  # its tasks still need the cluster's nodes
    assert (st.apps, st.active, st.drain_records(), st.version) == ({}, {}, [], version)
    # the same id is still good for a job that fits (a task of exactly the largest node's size does)
    st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["am"]},
                         job_spec_json=job_file({"name": "load", "memory_mb": 4096, "vcores": 4})), 0)
    assert st.apps[app_id].state == "ACCEPTED"
    # no job file, or one its AM could not read either, is not judged here
    assert st.apps[submit(st)].state == "ACCEPTED"
    assert st.apps[submit(st, job_spec_json="{not json")].state == "ACCEPTED"


def test_before_any_node_registers_only_a_configured_maximum_refuses_a_job() -> None:
    big = job_file({"name": "map", "memory_mb": 40_960})
    st = make_state()
    assert st.apps[submit(st, job_spec_json=big)].state == "ACCEPTED"  # nothing yet to judge it by
    capped = Ledger(Ledger.fresh_meta(TS), build_queues(),
                    CoreConfig(maximum_allocation=Resources.of(memory_mb=8192, vcores=4)))
    with pytest.raises(InvalidResourceRequest, match=r"stage 'map': a task of <memory-mb=40960, vcores=1> "
                                                     r"exceeds the maximum allocation <memory-mb=8192, vcores=4>"):
        submit(capped, job_spec_json=big)
    assert capped.apps == {}
    # configured above every node, the maximum is what refuses: a task between the two is accepted (it waits)
    add_node(capped, mem=4096, vc=4)
    assert capped.apps[submit(capped, job_spec_json=job_file({"name": "map", "memory_mb": 8192}))].state \
        == "ACCEPTED"


def test_a_job_asking_for_a_resource_type_no_node_has_is_refused() -> None:
    st = make_state()
    add_node(st)
    gpu = job_file({"name": "train", "resources": {"gpu": 1}})
    with pytest.raises(InvalidResourceRequest, match=r"stage 'train': .*unknown resource types \['gpu'\]"):
        submit(st, job_spec_json=gpu)
    assert st.apps == {}
    st.register_node("g1:7040", "g1:8042", "", Resources.of(memory_mb=8192, vcores=8, gpu=2), [], 0)
    assert st.apps[submit(st, job_spec_json=gpu)].state == "ACCEPTED"
    with pytest.raises(InvalidResourceRequest, match=r"stage 'train': a task of <gpu=3, .*exceeds"):
        submit(st, job_spec_json=job_file({"name": "train", "resources": {"gpu": 3}}))
