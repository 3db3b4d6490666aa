"""Why is it pending: reason codes and numbers from the real scheduling cycle over a Ledger."""

from __future__ import annotations

from random import Random
from typing import Any

from common.ids import AppId
from common.resources import Resources
from rm.core import explain as ex
from rm.core.cycle import run_cycle
from rm.core.ledger import Ledger
from rm.core.plan import AM_LIMIT, NO_CAPACITY_NOW, NO_NODE_FITS, QUEUE_AT_MAX
from rm.core.policies.registry import default_pipeline
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig, NodeStatus, SubmitSpec
from tests.extensions.newest_first import NewestFirst

TS = 1_700_000_000_000
GB = 1024


def make_state(queues: dict[str, Any] | None = None, **cfg: Any) -> Ledger:
    return Ledger(Ledger.fresh_meta(TS), build_queues(queues), CoreConfig(**cfg))


def node(st: Ledger, name: str, mem: int = 4 * GB, vc: int = 4) -> str:
    return st.register_node(f"{name}:7040", f"{name}:8042", "", Resources.of(memory_mb=mem, vcores=vc), [], 0.0).node_id


def submit(st: Ledger, mem: int, queue: str = "default", user: str = "alice", now: float = 0.0) -> AppId:
    app_id = st.new_application(now)
    st.submit(SubmitSpec(app_id=app_id, queue=queue, user=user, am_launch={"commands": ["sleep 60"]},
                         am_resource=Resources.of(memory_mb=mem, vcores=1)), now)
    return app_id


def cycle(st: Ledger, now: float = 1.0) -> None:
    stages, shares = default_pipeline()
    plan = run_cycle(st.snapshot(), stages, shares=shares, now=now, rng=Random(1))
    st.apply_plan(plan, now)
    for launch in st.drain_launches():  # the AM containers start on their nodes
        st.node_heartbeat(launch.node_id, 1, [NodeStatus(launch.container_id, "RUNNING", start_time=now)],
                          True, "", now)


def test_an_ask_larger_than_every_node_names_the_largest_node() -> None:
    st = make_state(maximum_allocation=Resources.of(memory_mb=64 * GB, vcores=8))
    node(st, "small", mem=4 * GB)
    node(st, "big", mem=6 * GB)
    app_id = submit(st, 16 * GB)
    cycle(st)
    e = ex.explain(st, app_id)
    assert e.reason.code == NO_NODE_FITS
    assert e.reason.numbers["ask"] == {"memory-mb": 16 * GB, "vcores": 1}
    assert e.reason.numbers["largest_node"]["memory-mb"] == 6 * GB
    assert e.reason.numbers["node"] == "big:7040"
    assert "16384" in e.reason.message
    assert "6144" in e.reason.message
    assert e.asks[0].is_am
    assert e.asks[0].reason == NO_NODE_FITS
    assert e.position == 1
    assert e.waiting_in_queue == 1
    # the same reason is in the app's diagnostics
    assert st.apps[app_id].report_diagnostics().startswith(f"[{NO_NODE_FITS}]")


def test_a_queue_at_its_maximum_capacity_holds_the_next_app_back() -> None:
    queues = {"default": {"capacity": 50}, "limited": {"capacity": 50, "maximum-capacity": 50}}
    st = make_state(queues)
    node(st, "n1")
    node(st, "n2")
    first = submit(st, 3 * GB, queue="limited")
    cycle(st)
    assert st.apps[first].state == "RUNNING"
    second = submit(st, 2 * GB, queue="limited", now=2.0)
    cycle(st, now=3.0)
    e = ex.explain(st, second)
    assert e.reason.code == QUEUE_AT_MAX
    assert e.reason.numbers["queue"] == "root.limited"
    assert e.reason.numbers["used"]["memory-mb"] == 3 * GB
    assert e.reason.numbers["max"]["memory-mb"] == 4 * GB
    assert e.reason.numbers["ask"]["memory-mb"] == 2 * GB
    assert e.limits["queue"]["max"]["memory-mb"] == 4 * GB
    assert "root.limited" in st.apps[second].report_diagnostics()
    # the first app waits for nothing
    assert ex.explain(st, first).reason.code == ex.NOT_WAITING


def test_the_am_limit_binds_with_its_numbers() -> None:
    queues = {"default": {"capacity": 100, "maximum-am-resource-percent": 10}}
    st = make_state(queues)
    node(st, "n1", mem=8 * GB, vc=8)
    first = submit(st, 1 * GB)
    cycle(st)
    second = submit(st, 1 * GB, now=2.0)
    cycle(st, now=3.0)
    assert st.apps[first].state == "RUNNING"
    e = ex.explain(st, second)
    assert e.reason.code == AM_LIMIT
    assert e.reason.numbers["am_used"]["memory-mb"] == 1 * GB
    assert e.reason.numbers["am_limit"]["memory-mb"] == 819
    assert e.limits["am"]["limit"]["memory-mb"] == 819


def test_a_full_cluster_reports_the_most_free_node_and_the_queue_order() -> None:
    st = make_state({"default": {"capacity": 100, "maximum-am-resource-percent": 100}})
    node(st, "n1", mem=4 * GB)
    node(st, "n2", mem=4 * GB)
    submit(st, 3 * GB, user="alice")
    submit(st, 3 * GB, user="alice")
    cycle(st)
    late = submit(st, 2 * GB, user="bob", now=2.0)
    later = submit(st, 2 * GB, user="carol", now=3.0)
    cycle(st, now=4.0)
    e = ex.explain(st, late)
    assert e.reason.code == NO_CAPACITY_NOW
    assert e.reason.numbers["largest_free"]["memory-mb"] == 1 * GB
    assert (e.position, e.waiting_in_queue) == (1, 2)
    assert ex.explain(st, later).position == 2


def test_the_position_in_queue_follows_the_schedulers_own_order() -> None:
    st = make_state({"default": {"capacity": 100, "maximum-am-resource-percent": 100}})
    node(st, "n1", mem=4 * GB)
    submit(st, 4 * GB)
    cycle(st)
    older = submit(st, 2 * GB, now=2.0)
    newer = submit(st, 2 * GB, now=3.0)
    cycle(st, now=4.0)
    assert (ex.explain(st, older).position, ex.explain(st, newer).position) == (1, 2)  # DRF: the older first
    newest_first = NewestFirst()
    assert ex.explain(st, older, newest_first).position == 2
    assert ex.explain(st, newer, newest_first).position == 1


def test_no_running_node_and_finished_apps_have_their_own_codes() -> None:
    st = make_state()
    app_id = submit(st, 1 * GB)
    assert ex.explain(st, app_id).reason.code == ex.NO_RUNNING_NODES  # before any cycle
    cycle(st)
    assert ex.explain(st, app_id).reason.code == ex.NO_RUNNING_NODES
    st.kill(app_id, "", 5.0)
    e = ex.explain(st, app_id)
    assert e.reason.code == ex.APP_FINISHED
    assert st.apps[app_id].report_diagnostics() == "Application killed by user."


def test_no_user_limit_is_reported_while_no_stage_enforces_one() -> None:
    queues = {"a": {"capacity": 50, "user-limit-factor": 1}, "b": {"capacity": 50}}
    st = make_state(queues)
    node(st, "n1", mem=8 * GB, vc=8)
    app_id = submit(st, 4 * GB, queue="a")
    cycle(st)
    assert set(ex.explain(st, app_id).limits) == {"queue", "am"}


def test_waiting_lines_clear_once_the_app_runs() -> None:
    st = make_state()
    app_id = submit(st, 1 * GB)
    cycle(st)
    assert st.apps[app_id].waiting.startswith("[NO_RUNNING_NODES]")
    node(st, "n1")
    cycle(st, now=2.0)
    assert st.apps[app_id].waiting == ""
    assert ex.explain(st, app_id).to_dict()["reason"] == ex.NOT_WAITING


def test_a_waiting_line_keeps_its_numbers_for_a_second_and_changes_at_once_when_its_reason_does() -> None:
    st = make_state(maximum_allocation=Resources.of(memory_mb=64 * GB, vcores=8))
    node(st, "big", mem=6 * GB)
    app_id = submit(st, 16 * GB)
    cycle(st, now=1.0)
    assert st.apps[app_id].waiting.startswith(f"[{NO_NODE_FITS}]")
    assert "6144" in st.apps[app_id].waiting
    node(st, "bigger", mem=8 * GB)
    cycle(st, now=1.5)  # the same reason: the line is not written anew within the second
    assert "6144" in st.apps[app_id].waiting
    cycle(st, now=2.1)  # a second on: its numbers are
    assert "8192" in st.apps[app_id].waiting
    node(st, "huge", mem=32 * GB)
    cycle(st, now=2.2)  # placed: nothing waits any more, at once
    assert st.apps[app_id].waiting == ""


def test_a_deadline_apps_waiting_asks_are_explained() -> None:
    from rm.core.deadlines.stage import DEADLINE_LENT, DEADLINE_SHORT
    from rm.core.plan import Rejection

    lent = ex.reason_of(Rejection(AppId("application_1_0001"), 3, DEADLINE_LENT, {
        "deadline": 1_800_000_000.0, "owed": 6.0, "reclaim": [{"app": "application_1_0002", "amount": {}}]}))
    assert lent.code == DEADLINE_LENT
    assert "owed 6 units" in lent.message
    assert "2027-01-15 08:00:00 UTC" in lent.message
    assert "application_1_0002" in lent.message
    short = ex.reason_of(Rejection(AppId("application_1_0001"), 3, DEADLINE_SHORT, {"deadline": None, "owed": 2}))
    assert "at risk" in short.message
    assert "unknown" in short.message
