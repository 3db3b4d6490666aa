"""What the RM shows of its size estimates: the Prometheus families of SLearn's sampling and the line of
``shepherd app status``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from rm.commands.apps import _status_table, size_line
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.state_types import NodeStatus
from rm.service.metrics import RMMetrics
from tests.unit.test_recovery import _running
from tests.unit.test_rm_metrics import FakeRM
from tests.unit.test_size_recovery import CAP, TASKS, _gated, _offered, _place_pilots
from tests.unit.test_state import add_node, make_state

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _scrape(metrics: RMMetrics) -> Samples:
    text = generate_latest(metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _metrics(st: Ledger, now: float) -> RMMetrics:
    return RMMetrics(cast("ResourceManager", FakeRM(st, now)))


def test_sampling_families_follow_a_gated_app_from_its_pilots_to_its_end() -> None:
    st, n, app_id, token, _ = _gated()
    metrics = _metrics(st, 3.0)
    m = _scrape(metrics)
    assert m[("shepherd_size_apps", (("state", "SAMPLING"),))] == 1
    assert m[("shepherd_size_apps", (("state", "ESTIMATED"),))] == 0
    assert m[("shepherd_sampling_ratio", ())] == 0.03
    assert m[("shepherd_sampling_pilot_containers_total", ())] == 0
    assert ("shepherd_sampling_gate_wait_seconds_count", (("opened_by", "pilots"),)) not in m  # none opened

    assert _offered(st, app_id, 3.0) == (3, TASKS)
    pilots = _place_pilots(st, app_id, token, n, 3, 3.0)
    assert _scrape(metrics)[("shepherd_sampling_pilot_containers_total", ())] == 3
    st.node_heartbeat(n, 3, [NodeStatus(c, "COMPLETE", 0, "", 4.0, 14.0) for c in pilots], True, "", 14.0)
    m = _scrape(metrics)
    assert m[("shepherd_size_apps", (("state", "SAMPLING"),))] == 0
    assert m[("shepherd_size_apps", (("state", "ESTIMATED"),))] == 1
    # gated at 1 s (its AM registered), opened at 14 s when the last pilot finished
    assert m[("shepherd_sampling_gate_wait_seconds_count", (("opened_by", "pilots"),))] == 1
    assert m[("shepherd_sampling_gate_wait_seconds_sum", (("opened_by", "pilots"),))] == 13.0
    assert m[("shepherd_sampling_gate_wait_seconds_bucket", (("le", "10.0"), ("opened_by", "pilots")))] == 0
    assert m[("shepherd_sampling_gate_wait_seconds_bucket", (("le", "30.0"), ("opened_by", "pilots")))] == 1

    st.am_finish(token, "SUCCEEDED", "", "", 20.0)
    m = _scrape(metrics)
    assert m[("shepherd_size_apps", (("state", "ESTIMATED"),))] == 0
    # the pilots' estimate (3 tasks of 10 s) against the 30 task-seconds the app took: exact
    assert m[("shepherd_size_relative_error_count", (("source", "slearn"),))] == 1
    assert m[("shepherd_size_relative_error_sum", (("source", "slearn"),))] == 0.0


def test_the_status_line_says_state_source_estimate_and_pilots() -> None:
    estimate = {"state": "SAMPLING", "tasks": 100, "finishedTasks": 1,
                "sampling": {"ratio": 0.03, "pilots": 3, "open": False, "openedBy": None, "pilotsStarted": 3,
                             "pilotsFinished": 1},
                "estimate": {"totalTaskSeconds": 1200.4, "remainingTaskSeconds": 1188.0, "source": "history",
                             "confidence": 0.5}}
    assert size_line(estimate) == ("SAMPLING; history: 1200 task-s, 1188 to go; "
                                   "pilots 1/3 finished (3 started) at 3 %, gate closed")
    opened = {**estimate, "state": "ESTIMATED", "sampling": {**estimate["sampling"], "open": True,  # type: ignore[dict-item]
                                                             "openedBy": "timeout"}}
    assert size_line(opened).endswith("gate open (timeout)")
    assert size_line({"state": "UNKNOWN", "groups": []}) == "UNKNOWN; no estimate"
    console = Console(width=200, record=True)
    console.print(_status_table({"id": "application_1_0001", "sizeEstimate": estimate}))
    text = console.export_text()
    assert "size" in text
    assert "pilots 1/3 finished" in text
    console = Console(width=200, record=True)
    console.print(_status_table({"id": "application_1_0001"}))  # no REST answer: no size line
    assert "pilots" not in console.export_text()


def test_relative_error_of_each_source_against_what_the_tasks_took() -> None:
    st = make_state()
    st.sizes.sampling = True
    n = add_node(st, mem=100_000, vc=200)
    job = {"id": "etl", "stages": [{"name": "map", "tasks": 100, "duration_s": 5, "memory_mb": 100}]}
    app_id, token, _ = _running(st, n, job_spec_json=json.dumps(job))
    metrics = _metrics(st, 1.0)
    att = st.apps[app_id].current
    assert att is not None
    st.am_allocate(token, att.response_id, [Ask(1, 0, CAP, 100)], [], 0.1, [], [], 2.0)

    def run(k: int, start: float, seconds: float) -> None:
        st.apply_plan(Plan(st.version, placements=[Place(app_id, 1, n, CAP, 0)] * k), start)
        got = st.am_allocate(token, att.response_id, [], [], 0.1, [], [], start)
        cids = [c.container_id for c in got.allocated]
        st.node_heartbeat(n, 2, [NodeStatus(c, "RUNNING", start_time=start) for c in cids], True, "", start)
        st.node_heartbeat(n, 3, [NodeStatus(c, "COMPLETE", 0, "", start, start + seconds) for c in cids], True,
                          "", start + seconds)

    run(3, 3.0, 10.0)  # the pilots: 10 s each, where the job file said 5
    assert st.sizes.apps[app_id].gate.open  # type: ignore[union-attr]
    run(97, 20.0, 20.0)  # the rest took twice as long again
    st.am_finish(token, "SUCCEEDED", "", "", 50.0)
    m = _scrape(metrics)
    actual = 3 * 10.0 + 97 * 20.0
    assert m[("shepherd_size_relative_error_count", (("source", "declared"),))] == 1
    assert m[("shepherd_size_relative_error_sum", (("source", "declared"),))] == pytest.approx(
        abs(100 * 5.0 - actual) / actual)
    assert m[("shepherd_size_relative_error_sum", (("source", "slearn"),))] == pytest.approx(
        abs(100 * 10.0 - actual) / actual)  # the pilots' estimate when the gate opened
    assert m[("shepherd_size_relative_error_bucket", (("le", "0.5"), ("source", "slearn")))] == 1
    assert m[("shepherd_size_relative_error_bucket", (("le", "0.5"), ("source", "declared")))] == 0


def test_a_dry_run_fork_leaves_the_size_metrics_behind() -> None:
    st, _, app_id, _, _ = _gated()
    metrics = _metrics(st, 3.0)
    fork = st.fork()  # the metrics hold locks: copying them would fail
    assert fork.sizes.watchers == []
    assert st.sizes.watchers == [metrics.sizes]
    assert fork.sizes.describe(app_id)["state"] == "SAMPLING"
