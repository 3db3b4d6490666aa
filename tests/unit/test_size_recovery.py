"""SLearn's sampling gate across an RM restart: the ledger rebuilt from the store keeps an app's pilots, the
ratio it was sampled at and whether its gate is open, so it is neither sampled again nor given more pilots."""

from __future__ import annotations

from common.ids import AppId, ContainerId, NodeId
from common.resources import Resources
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.queues import build_queues
from rm.core.sizes.sampling import AdaptiveRatio
from rm.core.sizes_glue import ESTIMATED, SAMPLING
from rm.core.state_types import CoreConfig, NodeStatus
from tests.unit.test_recovery import _running
from tests.unit.test_state import _fold, add_node, make_state

CAP = Resources.of(memory_mb=100, vcores=1)
TASKS = 100


def _restart(st: Ledger, now: float) -> Ledger:
    again = Ledger.recover(_fold(st.drain_records()), build_queues(), CoreConfig(), now=now)
    again.sizes.sampling = True  # the driver turns sampling on once the ledger is built, as the RM does
    return again


def _gated(ratio: AdaptiveRatio | None = None) -> tuple[Ledger, NodeId, AppId, str, ContainerId]:
    """A stock app (no job file) running its AM, gated, having asked for its TASKS task containers."""
    st = make_state()
    st.sizes.sampling = True
    if ratio is not None:
        st.sizes.ratio = ratio
    n = add_node(st, mem=100_000, vc=200)
    app_id, token, am = _running(st, n)
    att = st.apps[app_id].current
    assert att is not None
    st.am_allocate(token, att.response_id, [Ask(1, 1, CAP, TASKS)], [], 0.1, [], [], 2.0)
    return st, n, app_id, token, am


def _offered(st: Ledger, app_id: AppId, now: float) -> tuple[int, int]:
    """(task containers the app's view offers the scheduler, task containers it holds back)."""
    view = st.snapshot(now).apps[app_id]
    return (sum(a.num_containers for a in view.asks if not a.is_am),
            sum(a.num_containers for a in view.held))


def _place_pilots(st: Ledger, app_id: AppId, token: str, n: NodeId, k: int, now: float) -> list[ContainerId]:
    st.apply_plan(Plan(st.version, placements=[Place(app_id, 1, n, CAP, 1)] * k), now)
    att = st.apps[app_id].current
    assert att is not None
    got = st.am_allocate(token, att.response_id, [], [], 0.1, [], [], now + 0.5)
    cids = [c.container_id for c in got.allocated]
    st.node_heartbeat(n, 2, [NodeStatus(c, "RUNNING", start_time=now + 1) for c in cids], True, "", now + 1)
    return cids


def test_a_restart_during_sampling_keeps_the_ratio_the_pilots_and_the_closed_gate() -> None:
    learner = AdaptiveRatio(window=1)
    learner.observe(0.03, 10.0, 5.0)  # the middle ratio had its trial: the next app is sampled at 2 %
    st, n, app_id, token, am = _gated(learner)
    assert _offered(st, app_id, 3.0) == (2, TASKS)  # 2 % of 100 tasks: two pilots
    pilots = _place_pilots(st, app_id, token, n, 2, 3.0)
    assert st.sizes.apps[app_id].gate is not None
    assert st.sizes.apps[app_id].gate.marks == pilots  # type: ignore[union-attr]
    assert _offered(st, app_id, 5.0) == (0, TASKS - 2)
    # one pilot finishes, then the RM restarts
    st.node_heartbeat(n, 3, [NodeStatus(pilots[0], "COMPLETE", 0, "", 4.0, 14.0),
                             NodeStatus(pilots[1], "RUNNING", start_time=4.0)], True, "", 14.0)
    assert st.apps[app_id].sizing["gate"]["pilots"] == 2

    again = _restart(st, 20.0)
    assert again.sizes.ratio.ratio == 0.03  # a fresh learner would sample a new app at 3 % ...
    gate = again.sizes.apps[app_id].gate
    assert gate is not None
    assert (gate.ratio, gate.pilots, gate.open, gate.since, gate.marks) == (0.02, 2, False, 1.0, pilots)
    described = again.sizes.describe(app_id)
    assert described["state"] == SAMPLING
    assert described["sampling"]["pilotsFinished"] == 1
    assert again.sizes.counters.get("apps_sampled", 0) == 0  # ... but this one is not sampled again
    # the NodeManager says the second pilot still runs, the AM resends its outstanding asks: no third pilot
    again.register_node(n, "n1:8042", "", Resources.of(memory_mb=100_000, vcores=200),
                        [NodeStatus(am, "RUNNING", start_time=1.0), NodeStatus(pilots[1], "RUNNING", start_time=4.0)],
                        21.0)
    again.am_register(token, "h", 1, "", 22.0)
    again.am_allocate(token, 0, [Ask(1, 1, CAP, TASKS - 2)], [], 0.1, [], [], 22.0)
    assert _offered(again, app_id, 23.0) == (0, TASKS - 2)
    # the second pilot finishes: the gate opens and everything is offered
    again.node_heartbeat(n, 1, [NodeStatus(pilots[1], "COMPLETE", 0, "", 4.0, 16.0)], True, "", 30.0)
    assert again.sizes.apps[app_id].gate.open  # type: ignore[union-attr]
    assert _offered(again, app_id, 31.0) == (TASKS - 2, 0)
    assert again.sizes.describe(app_id)["state"] == ESTIMATED


def test_pilots_allocated_but_not_yet_confirmed_by_their_node_count_after_a_restart() -> None:
    st, n, app_id, token, _ = _gated()
    assert _offered(st, app_id, 3.0) == (3, TASKS)
    st.apply_plan(Plan(st.version, placements=[Place(app_id, 1, n, CAP, 1)] * 3), 3.0)  # not yet started
    again = _restart(st, 10.0)
    assert len(again.unconfirmed) == 3
    again.am_register(token, "h", 1, "", 11.0)
    again.am_allocate(token, 0, [Ask(1, 1, CAP, TASKS - 3)], [], 0.1, [], [], 11.0)
    assert _offered(again, app_id, 12.0) == (0, TASKS - 3)  # its three pilots may yet run: none more


def test_an_estimated_app_keeps_its_open_gate_and_its_estimate_after_a_restart() -> None:
    st, n, app_id, token, _ = _gated()
    assert _offered(st, app_id, 3.0) == (3, TASKS)
    pilots = _place_pilots(st, app_id, token, n, 3, 3.0)
    st.node_heartbeat(n, 3, [NodeStatus(c, "COMPLETE", 0, "", 4.0, 4.0 + 10.0 * (i + 1))
                             for i, c in enumerate(pilots)], True, "", 40.0)
    before = st.sizes.describe(app_id)
    assert before["state"] == ESTIMATED
    assert before["sampling"]["open"]
    assert before["sampling"]["openedBy"] == "pilots"
    assert st.apps[app_id].sizing["gate"]["open"]

    again = _restart(st, 50.0)
    after = again.sizes.describe(app_id)
    assert after["state"] == ESTIMATED
    assert after["sampling"] == before["sampling"]
    assert after["estimate"] == before["estimate"]
    assert again.apps[app_id].terms.size is not None
    assert again.apps[app_id].terms.size.source == "slearn"
    again.am_register(token, "h", 1, "", 51.0)
    again.am_allocate(token, 0, [Ask(1, 1, CAP, TASKS - 3)], [], 0.1, [], [], 51.0)
    assert _offered(again, app_id, 52.0) == (TASKS - 3, 0)  # not held back again


def test_a_gate_restored_under_a_scheduler_that_does_not_sample_opens() -> None:
    st, _, app_id, _, _ = _gated()
    assert _offered(st, app_id, 3.0) == (3, TASKS)
    again = Ledger.recover(_fold(st.drain_records()), build_queues(), CoreConfig(), now=10.0)  # sampling off
    assert again.sizes.describe(app_id)["state"] == SAMPLING
    again.snapshot(11.0)
    assert again.sizes.describe(app_id)["sampling"]["openedBy"] == "unsampled"
    assert again.apps[app_id].sizing["gate"]["open"]


def test_the_pilots_estimate_is_kept_for_the_error_at_the_end() -> None:
    st, n, app_id, token, _ = _gated()
    assert _offered(st, app_id, 3.0) == (3, TASKS)
    pilots = _place_pilots(st, app_id, token, n, 3, 3.0)
    for i, c in enumerate(pilots):  # 10, 20 and 30 s: the estimate at the gate is 3 tasks' 60 s
        st.node_heartbeat(n, 3 + i, [NodeStatus(c, "COMPLETE", 0, "", 4.0, 14.0 + 10 * i)], True, "", 14.0 + 10 * i)
    assert st.sizes.apps[app_id].first["slearn"] == 60.0
    assert st.apps[app_id].sizing["first"]["slearn"] == 60.0
    again = _restart(st, 50.0)
    assert again.sizes.apps[app_id].first["slearn"] == 60.0  # not the first replayed completion's 10 s
