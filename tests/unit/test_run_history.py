"""Run history in the state machine: declared datasets, the reads at start, the run record with its skyline
and the writes at a successful finish, and what a restart keeps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from common.errors import BadRequest
from common.ids import AppId, NodeId
from common.resources import Resources
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.records import DatasetAccessRecord, JobRunRecord, Record
from rm.core.run_history import check_datasets, common_unit, datasets_from_tags, to_access, to_run
from rm.core.state_types import NodeStatus
from tests.unit.test_state import _fold, add_node, make_state, place_am, submit

TASK = Resources.of(memory_mb=1024, vcores=1)


def runs(records: list[Record]) -> list[JobRunRecord]:
    return [r for r in records if isinstance(r, JobRunRecord)]


def accesses(records: list[Record]) -> list[DatasetAccessRecord]:
    return [r for r in records if isinstance(r, DatasetAccessRecord)]


def start_app(st: Ledger, n: NodeId, **kw: object) -> tuple[AppId, str, str]:
    """An app whose AM container runs from t=10 (reported at t=11); returns (app, AM token, AM container)."""
    app_id = submit(st, 0.0, **kw)
    token = place_am(st, app_id, n, 5.0)
    am = st.apps[app_id].current
    assert am is not None
    assert am.am_container_id is not None
    st.node_heartbeat(n, 1, [NodeStatus(am.am_container_id, "RUNNING", start_time=10.0)], True, "", 11.0)
    st.am_register(token, "h", 1, "", 12.0)
    return app_id, token, am.am_container_id


def run_two_tasks(st: Ledger, n: NodeId, app_id: AppId, token: str) -> None:
    """Two 1024 MB tasks from t=20 to t=140."""
    st.am_allocate(token, 0, [Ask(allocation_request_id=1, priority=1, capability=TASK, num_containers=2)], [],
                   0.1, [], [], 15.0)
    st.apply_plan(Plan(based_on=st.version, placements=[
        Place(app_id=app_id, allocation_request_id=1, node_id=n, resource=TASK, priority=1)] * 2), 16.0)
    got = st.am_allocate(token, 1, [], [], 0.2, [], [], 17.0).allocated
    assert len(got) == 2
    st.node_heartbeat(n, 2, [NodeStatus(c.container_id, "COMPLETE", 0, "", 20.0, 140.0) for c in got], True, "",
                      140.0)


def test_tags_declare_datasets_and_bad_paths_are_refused() -> None:
    assert datasets_from_tags(["nightly", "shepherd.inputs=/raw/a, /raw/B", "SHEPHERD.INPUTS=/raw/c",
                               "shepherd.outputs=/out/x", "shepherd.outputs="]) == (
        ("/raw/a", "/raw/B", "/raw/c"), ("/out/x",))
    assert check_datasets([" /a ", "/a", "/b"], "inputs") == ("/a", "/b")
    for bad in ([""], ["/a\x00b"], ["x" * 2000], [f"/d{i}" for i in range(65)], [3]):
        with pytest.raises(BadRequest):
            check_datasets(bad, "inputs")


def test_a_bad_declaration_refuses_the_submission_and_changes_nothing() -> None:
    st = make_state()
    add_node(st)
    st.drain_records()
    seq = st.meta.next_app_seq
    with pytest.raises(BadRequest, match="outputs"):
        submit(st, 0.0, outputs=("/ok", "  "))
    assert st.apps == {}
    assert [type(r).__name__ for r in st.drain_records()] == ["MetaRecord"]  # only the id handed out
    assert st.meta.next_app_seq == seq + 1


def test_a_finished_app_leaves_its_run_with_a_skyline_and_its_dataset_accesses() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, _ = start_app(st, n, name="etl", queue="default", user="alice", inputs=("/raw/a", "/raw/b"),
                                 outputs=("/out/c",))
    started = st.drain_records()
    assert [(a.path, a.kind, a.time) for a in accesses(started)] == [("/raw/a", "read", 11.0),
                                                                     ("/raw/b", "read", 11.0)]
    assert runs(started) == []
    run_two_tasks(st, n, app_id, token)
    st.am_finish(token, "SUCCEEDED", "", "", 200.0)
    done = st.drain_records()
    (run,) = runs(done)
    assert (run.app_id, run.job, run.queue, run.user, run.succeeded) == (app_id, "etl", "root.default", "alice", True)
    assert (run.submit_time, run.start_time, run.finish_time, run.step_s) == (0.0, 10.0, 200.0, 60)
    assert run.unit == TASK.to_dict()  # two tasks of 1024 MB against one 512 MB AM
    # steps of 60 s from t=10: the AM counts as one unit (its vcore), the tasks run 20..140
    assert run.skyline == pytest.approx((1 + 2 * 50 / 60, 3.0, 1 + 2 * 10 / 60, 10 / 60), abs=1e-6)
    assert [(a.path, a.kind, a.time, a.app_id) for a in accesses(done)] == [("/out/c", "write", 200.0, app_id)]
    assert (run.inputs, run.outputs) == (("/raw/a", "/raw/b"), ("/out/c",))
    inferred = to_run(run)
    assert inferred.unit == TASK
    assert inferred.skyline == run.skyline
    assert inferred.succeeded
    assert to_access(accesses(done)[0]).kind == "write"
    assert st.apps[app_id].spans == []  # handed over to the run record


def test_a_failed_app_writes_nothing_but_still_leaves_its_run() -> None:
    st = make_state()
    n = add_node(st)
    app_id, _, _ = start_app(st, n, name="etl", outputs=("/out/c",))
    st.drain_records()
    st.kill(app_id, "", 50.0)
    done = st.drain_records()
    (run,) = runs(done)
    assert not run.succeeded
    assert run.skyline == pytest.approx((40 / 60,))  # the AM container, killed at t=50
    assert accesses(done) == []


def test_the_most_common_container_size_is_the_unit() -> None:
    big, small = Resources.of(memory_mb=4096, vcores=2), Resources.of(memory_mb=512, vcores=1)
    assert common_unit([(0, 10, big), (0, 5, small), (0, 5, small)]) == small
    assert common_unit([(0, 10, big), (0, 5, small)]) == big  # a tie: more container-seconds
    assert common_unit([]) is None


def test_a_restart_keeps_the_spans_of_running_apps_and_reads_only_once() -> None:
    st = make_state()
    n = add_node(st)
    app_id, token, _ = start_app(st, n, name="etl", inputs=("/raw/a",), outputs=("/out/c",))
    run_two_tasks(st, n, app_id, token)
    stored = _fold(list(st.drain_records()))
    # without work-preserving recovery the AM container ends at the restart and the app starts again
    again = Ledger.recover(stored, st.queues, replace(st.config, work_preserving=False), now=300.0)
    app = again.apps[app_id]
    assert app.inputs == ("/raw/a",)
    assert app.outputs == ("/out/c",)
    assert sorted((s, e) for s, e, _ in app.spans) == [(10.0, 300.0), (20.0, 140.0), (20.0, 140.0)]
    again.drain_records()
    n2 = add_node(again, now=301.0)
    token2 = place_am(again, app_id, n2, 302.0)
    am = app.current
    assert am is not None
    assert am.am_container_id is not None
    again.node_heartbeat(n2, 1, [NodeStatus(am.am_container_id, "RUNNING", start_time=303.0)], True, "", 304.0)
    again.am_register(token2, "h", 1, "", 305.0)
    assert accesses(again.drain_records()) == []  # read at its first start, before the restart
    again.am_finish(token2, "SUCCEEDED", "", "", 400.0)
    (run,) = runs(again.drain_records())
    assert run.start_time == 10.0
    assert len(run.skyline) == 7
