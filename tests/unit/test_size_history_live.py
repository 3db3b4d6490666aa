"""The history predictor fed live: every successful run's size goes into run history with the predictor's
features, a new app of a known family is estimated before it runs (source ``history``), a restarted RM learns
the stored runs again, and the pilots refine a history estimate through the §4.1 posterior."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from common.ids import AppId, NodeId
from common.resources import Resources
from rm.core.entities import App, Ask
from rm.core.events import AppStarted, Journal
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.queues import build_queues
from rm.core.records import WorkRunRecord
from rm.core.sizes.history import JobKey, inverse_square
from rm.core.sizes.sampling import posterior
from rm.core.sizes_glue import SAMPLING, SizeTracker
from rm.core.sizes_learn import combine, job_key
from rm.core.state_types import CoreConfig, NodeStatus
from tests.unit.test_recovery import _running
from tests.unit.test_size_tracker import done
from tests.unit.test_state import _fold, add_node, make_state

CAP = Resources.of(memory_mb=100, vcores=1)


def _run(st: Ledger, n: NodeId, name: str, durations: list[float], start: float) -> AppId:
    """A stock app named ``name`` whose tasks run ``durations`` seconds each, to success."""
    app_id, token, _ = _running(st, n, name=name)
    att = st.apps[app_id].current
    assert att is not None
    st.am_allocate(token, att.response_id, [Ask(1, 1, CAP, len(durations))], [], 0.1, [], [], start)
    st.apply_plan(Plan(st.version, placements=[Place(app_id, 1, n, CAP, 1)] * len(durations)), start)
    got = st.am_allocate(token, att.response_id, [], [], 0.1, [], [], start + 0.5)
    cids = [c.container_id for c in got.allocated]
    st.node_heartbeat(n, 2, [NodeStatus(c, "RUNNING", start_time=start + 1) for c in cids], True, "", start + 1)
    for i, (c, d) in enumerate(sorted(zip(cids, durations, strict=True), key=lambda x: x[1])):
        st.node_heartbeat(n, 3 + i, [NodeStatus(c, "COMPLETE", 0, "", start + 1, start + 1 + d)], True, "",
                          start + 1 + d)
    st.am_finish(token, "SUCCEEDED", "", "", start + 2 + max(durations))
    return app_id


def _work_runs(records: list[object]) -> tuple[WorkRunRecord, ...]:
    return tuple(r for r in records if isinstance(r, WorkRunRecord))


def test_a_finished_run_is_stored_with_its_features_and_task_runtimes_and_estimates_the_next() -> None:
    st = make_state()
    n = add_node(st, mem=100_000, vc=100)
    first = _run(st, n, "etl", [10.0, 20.0, 30.0], 2.0)
    records = st.drain_records()
    (run,) = _work_runs(records)
    assert run.app_id == first
    key = job_key(st.apps[first])
    assert run.sizes["key"] == {"name": "etl", "user": "dr.who", "queue": key.queue, "app_type": "SHEPHERD",
                                "submit_hour": 0, "resources": "512MB,1vc"}
    assert run.sizes["groups"]["1"]["runtimes"] == [10.0, 20.0, 30.0]
    assert run.sizes["total"] == pytest.approx(60.0)
    assert run.sizes["gate"] is None

    second, _, _ = _running(st, n, name="etl")  # the same family: estimated before any task of it ran
    size = st.apps[second].terms.size
    assert size is not None
    assert (size.source, size.total_s) == ("history", pytest.approx(60.0))
    assert st.sizes.describe(second)["history"] == {"totalTaskSeconds": 60.0, "error": None}
    other, _, _ = _running(st, n, name="adhoc", user="bob", queue="default")
    # a stranger shares the app type, the AM size and the submit hour with it, which the predictor learned too
    assert st.apps[other].terms.size is not None
    assert st.apps[other].terms.size.source == "history"


def test_a_restarted_rm_learns_the_stored_runs_again() -> None:
    st = make_state()
    n = add_node(st, mem=100_000, vc=100)
    _run(st, n, "etl", [10.0, 20.0, 30.0], 2.0)
    _run(st, n, "etl", [40.0, 40.0, 40.0], 100.0)
    records = st.drain_records()
    stored = dataclasses.replace(_fold(records), work_runs=_work_runs(records))
    again = Ledger.recover(stored, build_queues(), CoreConfig(), now=500.0)
    assert again.sizes.history is not None
    key = job_key(again.apps[next(iter(again.apps))])
    got = again.sizes.history.predict(key)
    assert got is not None
    assert got[0] == pytest.approx(inverse_square([60.0, 120.0]))
    fresh = Ledger.recover(_fold(records), build_queues(), CoreConfig(), now=500.0)  # no run history kept
    assert fresh.sizes.history is not None
    assert fresh.sizes.history.predict(key) is None


def test_the_simulator_keeps_its_own_sizes() -> None:
    sim_ledger = Ledger(Ledger.fresh_meta(1), build_queues(), CoreConfig(durable=False))
    assert sim_ledger.sizes.history is None


def test_combine_is_the_posterior_of_the_history_and_the_pilots_over_logs() -> None:
    # past runs of 1000 task-seconds over 100 tasks (ln M ~ N(ln 10, v)); pilots 20 and 22, tasks' CoV 10 %:
    # their mean 21 varies by 0.1²/2 of the 98 of 99 other tasks
    v, s = 0.01, math.log1p(0.1**2 / 2 * 98 / 99)
    expected = math.exp(posterior(math.log(10.0), v, s, [math.log(21.0) + s / 2])[0])
    assert combine((math.log(1000.0), v), 100, [20.0, 22.0], task_cov=0.1) == pytest.approx(expected)
    assert 10.0 < expected < 21.0
    # every task measured: their mean, whatever the history says
    assert combine((math.log(1000.0), v), 4, [20.0, 22.0, 9.0, 13.0], task_cov=0.1) == pytest.approx(16.0)
    # without a spread (a single past size) the pilots decide alone
    assert combine((math.log(1000.0), None), 100, [20.0, 22.0]) == pytest.approx(21.0)
    # a history that never varied still leaves the pilots a say (its spread floored at 1 %)
    floored = combine((math.log(1000.0), 0.0), 100, [20.0], task_cov=0.1)
    one = math.log1p(0.1**2)  # one pilot: its own spread, all 99 other tasks unseen
    assert floored == pytest.approx(math.exp(posterior(math.log(10.0), math.log1p(1e-4), one,
                                                       [math.log(20.0) + one / 2])[0]))
    with pytest.raises(ValueError, match="tasks >= 1"):
        combine((0.0, 0.1), 0, [1.0])


def _app(name: str) -> App:
    job = {"id": name, "stages": [{"name": "map", "tasks": 100, "memory_mb": 1024}]}
    return App(app_id=AppId("application_1_0001"), name=name, queue="root.default", user="u",  # type: ignore[arg-type]
               app_type="SHEPHERD", priority=0, am_resource=Resources.of(memory_mb=1024, vcores=1), am_launch={},
               max_attempts=1, tags=(), unmanaged=False, job_spec_json=json.dumps(job), submit_time=0.0,
               state="RUNNING")


def test_pilots_refine_a_history_estimate_and_a_wide_app_is_still_sampled() -> None:
    reports = []
    tracker = SizeTracker(lambda _, s: reports.append(s), history=True)
    tracker.sampling = True
    assert tracker.history is not None
    key: JobKey = job_key(_app("etl"))
    for total in (800.0, 1200.0):
        tracker.history.observe(key, total)
    prior = tracker.history.predict(key)
    assert prior is not None
    error = tracker.history.error(key, prior[1])
    assert error is not None
    tracker.on_event(AppStarted(_app("etl"), 0.0), Journal())
    assert reports[-1].source == "history"
    assert reports[-1].total_s == pytest.approx(prior[0])
    assert tracker.describe(AppId("application_1_0001"))["state"] == SAMPLING  # no pilots measured yet to weigh the history against: sampled
    for s in (20.0, 22.0):
        tracker.on_event(done(0, 1.0, 1.0 + s), Journal())
    # the prior is the history's sizes as a distribution over logs (§4.1): ln 800 and ln 1200 over 100 tasks;
    # the pilots' own spread (CoV 1/21) is the tasks', their mean 21 varying by 1/21² over 2 (98 of 99 unseen)
    logs = [math.log(800.0 / 100), math.log(1200.0 / 100)]
    spread = math.log1p((1.0 / 21.0) ** 2 / 2 * 98 / 99)
    mean = math.exp(posterior(sum(logs) / 2, ((logs[1] - logs[0]) / 2) ** 2, spread,
                              [math.log(21.0) + spread / 2])[0])
    assert reports[-1].source == "slearn"
    assert reports[-1].total_s == pytest.approx(100 * mean)
    assert 100 * 10.0 < reports[-1].total_s < 100 * 21.0  # between the history's and the pilots' means


def test_an_own_history_estimate_does_not_open_the_gate() -> None:
    st = make_state()
    st.sizes.sampling = True
    n = add_node(st, mem=100_000, vc=100)
    _run(st, n, "etl", [10.0] * 10, 2.0)  # gated too: its first task container was its pilot
    app_id, token, _ = _running(st, n, name="etl")
    assert st.apps[app_id].terms.size is not None
    assert st.apps[app_id].terms.size.source == "history"
    att = st.apps[app_id].current
    assert att is not None
    st.am_allocate(token, att.response_id, [Ask(1, 1, CAP, 100)], [], 0.1, [], [], 200.0)
    view = st.snapshot(201.0).apps[app_id]
    assert sum(a.num_containers for a in view.asks if not a.is_am) == 3
    assert st.sizes.apps[app_id].gate is not None
    assert not st.sizes.apps[app_id].gate.open  # type: ignore[union-attr]
