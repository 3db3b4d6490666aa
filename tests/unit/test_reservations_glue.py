"""The reservation system inside Ledger: capacities from the cluster, apps attached on submit and
detached when they end (and an accepted recurring job's apps without asking), the view in the snapshot,
preemption of lenders and what it took from each app, dynamic reprovisioning, counters, records and
recovery."""

from __future__ import annotations

from random import Random
from typing import Any

import pytest

from common.errors import BadRequest
from common.exits import EXIT_PREEMPTED
from common.ids import AppId, NodeId
from common.resources import Resources
from rm.core.cycle import run_cycle
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.plan import Plan, Preempt
from rm.core.policies.registry import named_pipeline
from rm.core.queues import build_queues
from rm.core.records import AppRecord, ContainerRecord, MetaRecord, SloDecisionRecord, StoredState
from rm.core.reservation.records import ReservationRecord
from rm.core.reservation.yarn import definition_from_json
from rm.core.reservations_glue import SEQ_KEY
from rm.core.state_types import AM_ASK_ID, SubmitSpec

TS = 1_700_000_000_000
NOW = 1_700_000_040.0  # 40 s into a one-minute step
STEP_START_MS = int(NOW // 60) * 60_000
QUEUES = {"default": {"capacity": 50}, "prod": {"capacity": 50}}


def make_state() -> tuple[Ledger, NodeId]:
    st = Ledger(Ledger.fresh_meta(TS), build_queues(QUEUES))
    node = st.register_node("n1:7040", "n1:8042", "", Resources.of(memory_mb=8192, vcores=16), [], NOW)
    return st, node.node_id


def definition(mb: int = 2048, minutes: int = 10) -> Any:
    return definition_from_json({
        "arrival": STEP_START_MS, "deadline": STEP_START_MS + 15 * 60_000, "reservation-name": "prod",
        "reservation-requests": {"reservation-request-interpreter": 1, "reservation-request": [
            {"capability": {"memory": mb, "vCores": 1}, "num-containers": 1, "min-concurrency": 1,
             "duration": minutes * 60_000}]},
    })


def reserve(st: Ledger, queue: str = "prod", mb: int = 2048) -> str:
    system = st.reservation_plan()
    rid = system.new_reservation_id()
    system.submit(rid, queue, definition(mb), user="alice", now=NOW)
    return rid


def submit(st: Ledger, queue: str, mb: int = 512, reservation_id: str = "", name: str = "") -> AppId:
    app_id = st.new_application(NOW)
    st.submit(SubmitSpec(app_id=app_id, name=name, queue=queue, am_launch={"commands": ["am"]},
                         am_resource=Resources.of(memory_mb=mb, vcores=1), reservation_id=reservation_id), NOW)
    return app_id


def cycle(st: Ledger, now: float = NOW) -> Plan:
    stages, shares = named_pipeline("morpheus")
    plan = run_cycle(st.snapshot(now), stages, shares=shares, now=now, rng=Random(1))
    st.apply_plan(plan, now)
    return plan


def start_am(st: Ledger, app_id: AppId) -> str:
    cycle(st)
    (launch,) = [x for x in st.drain_launches() if x.app_id == app_id]
    st.am_register(launch.amrm_token, "h", 1, "", NOW)
    return launch.amrm_token


def fill_with_adhoc(st: Ledger) -> tuple[AppId, str]:
    """An app in ``default`` asking thirty 512 MB containers, after one cycle: (its id, its AMRM token)."""
    adhoc = submit(st, "default")
    token = start_am(st, adhoc)
    st.am_allocate(token, 0, [Ask(1, 1, Resources.of(memory_mb=512, vcores=1), 30)], [], 0.1, [], [], NOW)
    cycle(st)
    return adhoc, token


def test_every_leaf_queue_is_reservable_with_its_share_of_the_cluster() -> None:
    st, _ = make_state()
    system = st.reservation_plan()
    assert system.plan("prod").timeline.capacity == Resources.of(memory_mb=4096, vcores=8)
    assert system.resolve("default") == "root.default"
    st.register_node("n2:7040", "n2:8042", "", Resources.of(memory_mb=8192, vcores=16), [], NOW)
    assert st.reservation_plan().plan("prod").timeline.capacity == Resources.of(memory_mb=8192, vcores=16)
    st.unregister_node("n2:7040", NOW)
    assert st.reservation_plan().plan("prod").timeline.capacity == Resources.of(memory_mb=4096, vcores=8)


def test_an_app_runs_inside_its_reservation_until_it_ends() -> None:
    st, _ = make_state()
    rid = reserve(st)
    with pytest.raises(BadRequest, match=r"belongs to queue root\.prod"):
        submit(st, "default", reservation_id=rid)
    with pytest.raises(BadRequest, match="unknown"):
        submit(st, "prod", reservation_id="reservation_1_0042")
    assert [a.reservation_id for a in st.apps.values()] == []  # refused submissions changed nothing
    app_id = submit(st, "prod", reservation_id=rid)
    assert st.apps[app_id].reservation_id == rid
    assert st.apps[app_id].record().reservation_id == rid
    snap = st.snapshot(NOW)
    assert snap.apps[app_id].reservation_id == rid
    (active,) = snap.reservations.active
    assert active.reservation_id == rid
    assert active.apps == (app_id,)
    assert active.guaranteed.memory_mb == 2048
    assert st.snapshot().reservations.active == ()  # without a time, no view (cheap snapshots)
    st.kill(app_id, "", NOW)
    assert st.reservation_plan().reservation_of(app_id) is None
    assert st.snapshot(NOW).reservations.active[0].apps == ()


def test_reserved_capacity_lent_to_an_adhoc_app_is_preempted_back() -> None:
    st, node = make_state()
    adhoc, token = fill_with_adhoc(st)
    assert st.nodes[node].allocated.memory_mb == 8192  # work conservation: the whole node, queue or not
    rid = reserve(st)
    app_id = submit(st, "prod", mb=2048, reservation_id=rid)
    plan = cycle(st)
    assert plan.preemptions == [Preempt(adhoc, Resources.of(memory_mb=2048, vcores=1), "RESERVATION_CAPACITY_LENT",
                                        rid)]
    preempted = [c for c in st.containers.values() if c.exit_status == EXIT_PREEMPTED]
    assert len(preempted) == 4  # 4 × 512 MB covers 2048 MB
    assert not any(c.is_am for c in preempted)
    newest = sorted((c for c in st.containers.values() if c.app_id == adhoc and not c.is_am),
                    key=lambda c: c.container_id)[-4:]
    assert {c.container_id for c in preempted} == {c.container_id for c in newest}
    assert {c.container_id for c in preempted} <= st.nodes[node].to_cleanup
    res = st.am_allocate(token, 1, [], [], 0.2, [], [], NOW)
    assert {c.container_id for c in res.completed if c.exit_status == EXIT_PREEMPTED} == \
        {c.container_id for c in preempted}
    assert st.counters["containers_preempted"] == 4
    assert st.preempted_by_reason == {"RESERVATION_CAPACITY_LENT": 4}
    assert st.counters["reservation_reclaims"] == 1
    lender = st.apps[adhoc]  # YARN's RMAppMetrics: what preemption took from it
    assert (lender.preempted, lender.preempted_containers, lender.preempted_am_containers) == (
        Resources.of(memory_mb=2048, vcores=4), 4, 0)
    assert st.apps[app_id].preempted_containers == 0
    assert st.apps[app_id].waiting.startswith("[RESERVATION_CAPACITY_LENT]")
    assert f"taking it back from {adhoc}" in st.apps[app_id].waiting
    # the next cycle serves the reservation first; nothing is preempted twice
    plan = cycle(st)
    assert any(p.app_id == app_id and p.allocation_request_id == AM_ASK_ID for p in plan.placements)
    assert st.apps[app_id].used.memory_mb == 2048
    assert st.counters["placed_in_reservation"] == 1
    assert st.counters["reservation_reclaims"] == 1
    st.apply_plan(Plan(based_on=st.version, preemptions=[Preempt(adhoc, Resources.of(memory_mb=1), "x")]), NOW)
    assert sum(1 for c in st.containers.values() if c.exit_status == EXIT_PREEMPTED) == 5
    assert st.preempted_by_reason == {"RESERVATION_CAPACITY_LENT": 4, "x": 1}
    assert st.apps[adhoc].preempted_containers == 5

    # after a restart the apps' preemption figures come back from their containers' exit statuses
    records = st.drain_records()
    stored = StoredState(
        meta=st.meta, apps=tuple(r for r in records if isinstance(r, AppRecord)), attempts=(),
        containers=tuple(r for r in records if isinstance(r, ContainerRecord)), nodes=(),
        reservations=tuple(r for r in records if isinstance(r, ReservationRecord)))
    again = Ledger.recover(stored, build_queues(QUEUES), None, now=NOW + 1)
    assert again.apps[adhoc].preempted == Resources.of(memory_mb=2560, vcores=5)
    assert (again.apps[adhoc].preempted_containers, again.apps[adhoc].preempted_am_containers) == (5, 0)
    assert again.apps[app_id].preempted.is_zero()


def test_a_container_preempted_before_its_am_took_it_is_asked_for_again() -> None:
    st, _ = make_state()
    adhoc, token = fill_with_adhoc(st)
    ask = st.apps[adhoc].attempts[-1].asks[1]
    placed = 30 - ask.num_containers
    assert placed == 15  # 8192 MB less the 512 MB AM, in 512 MB containers
    st.apply_plan(Plan(based_on=st.version, preemptions=[Preempt(adhoc, Resources.of(memory_mb=1024), "x")]), NOW)
    assert ask.num_containers == 30 - placed + 2  # the AM never saw those two: they are wanted again
    res = st.am_allocate(token, 1, [], [], 0.2, [], [], NOW)
    assert len(res.allocated) == placed - 2
    assert sum(1 for c in res.completed if c.exit_status == EXIT_PREEMPTED) == 2  # told, as YARN does
    # a container the AM has taken is its own business once preempted: no ask comes back for it
    st.apply_plan(Plan(based_on=st.version, preemptions=[Preempt(adhoc, Resources.of(memory_mb=512), "x")]), NOW)
    assert ask.num_containers == 30 - placed + 2


def test_reservations_and_their_id_counter_are_records_and_survive_recovery() -> None:
    st, _ = make_state()
    st.drain_records()
    rid = reserve(st)
    app_id = submit(st, "prod", reservation_id=rid)
    records = st.drain_records()
    (rec,) = [r for r in records if isinstance(r, ReservationRecord)]
    assert rec.reservation_id == rid
    assert rec.apps == (app_id,)
    (meta,) = [r for r in records if isinstance(r, MetaRecord)]
    assert meta.extra[SEQ_KEY] == 2
    apps = tuple(r for r in records if type(r).__name__ == "AppRecord")
    stored = StoredState(meta=meta, apps=apps, attempts=(), containers=(), nodes=(), reservations=(rec,))  # type: ignore[arg-type]
    again = Ledger.recover(stored, build_queues(QUEUES), None, now=NOW)
    system = again.reservation_plan()
    assert system.reservation_of(app_id) == rid
    assert system.new_reservation_id() != rid
    before = st.reservation_plan().list_reservations("prod", include_allocations=True)
    assert system.list_reservations("prod", include_allocations=True) == before
    system.delete(rid)
    (gone,) = [r for r in again.drain_records() if isinstance(r, ReservationRecord)]
    assert gone.deleted


def test_preemption_frees_room_on_one_node_rather_than_scattered() -> None:
    st = Ledger(Ledger.fresh_meta(TS), build_queues(QUEUES))
    for name in ("n1", "n2"):
        st.register_node(f"{name}:7040", f"{name}:8042", "", Resources.of(memory_mb=4096, vcores=16), [], NOW)
    adhoc = submit(st, "default")
    token = start_am(st, adhoc)
    response = 0
    for i in range(15):  # one at a time, so the newest containers alternate between the nodes
        ask = Ask(i + 1, 1, Resources.of(memory_mb=512, vcores=1), 1)
        response = st.am_allocate(token, response, [ask], [], 0.1, [], [], NOW).response_id
        cycle(st)
    assert {n.allocated.memory_mb for n in st.nodes.values()} == {4096}
    rid = reserve(st)
    app_id = submit(st, "prod", mb=2048, reservation_id=rid)
    cycle(st)
    preempted = [c for c in st.containers.values() if c.exit_status == EXIT_PREEMPTED]
    assert len(preempted) == 4
    assert len({c.node_id for c in preempted}) == 1
    cycle(st)
    assert st.apps[app_id].used.memory_mb == 2048
    assert sum(1 for c in st.containers.values() if c.exit_status == EXIT_PREEMPTED) == 4


def accept(st: Ledger, job: str, rid: str, status: str = "accepted") -> None:
    st.decide_slo(SloDecisionRecord(job=job, status=status, reservation_id=rid if status == "accepted" else ""))


def test_an_accepted_recurring_jobs_apps_run_in_its_reservation_without_naming_it() -> None:
    st, _ = make_state()
    nightly = reserve(st, "prod")
    accept(st, "nightly", nightly)
    hourly = reserve(st, "default", mb=1024)
    accept(st, "hourly", hourly)
    accept(st, "weekly", "", status="rejected")

    def where(app_id: AppId) -> tuple[str, str, str | None]:
        app = st.apps[app_id]
        return app.queue, app.reservation_id, st.reservation_plan().reservation_of(app_id)

    # the default queue (what every front door names when the client names none): the reservation's queue
    a = submit(st, "default", name="nightly")
    assert where(a) == ("root.prod", nightly, nightly)
    assert st.apps[a].record().reservation_id == nightly
    assert where(submit(st, "root.default", name="nightly")) == ("root.prod", nightly, nightly)
    # the reservation's own queue, by leaf name or path
    assert where(submit(st, "prod", name="nightly")) == ("root.prod", nightly, nightly)
    assert where(submit(st, "default", name="hourly")) == ("root.default", hourly, hourly)
    # another queue named explicitly: the app runs there, outside the reservation
    assert where(submit(st, "prod", name="hourly")) == ("root.prod", "", None)
    # other jobs, rejected proposals and submissions that name a reservation are left alone
    assert where(submit(st, "default", name="adhoc")) == ("root.default", "", None)
    assert where(submit(st, "default", name="weekly")) == ("root.default", "", None)
    assert where(submit(st, "default", name="nightly", reservation_id=hourly)) == ("root.default", hourly, hourly)
    with pytest.raises(BadRequest, match=r"belongs to queue root\.default"):
        submit(st, "prod", name="nightly", reservation_id=hourly)

    # the reservation serves its app; a deleted reservation attaches nobody
    st.kill(a, "", NOW)
    for app_id in [x for x in st.apps if x != a]:
        st.kill(app_id, "", NOW)
    served = submit(st, "default", mb=2048, name="nightly")
    plan = cycle(st)
    assert any(p.app_id == served for p in plan.placements)
    assert st.counters["placed_in_reservation"] == 1
    (rec,) = [r for r in st.drain_records() if isinstance(r, ReservationRecord) and r.reservation_id == nightly]
    assert rec.apps == (served,)
    st.reservation_plan().delete(nightly)
    assert where(submit(st, "default", name="nightly")) == ("root.default", "", None)


def test_dynamic_reprovisioning_is_counted() -> None:
    st, _ = make_state()
    rid = reserve(st, "prod")  # one 2 GB container; the prod plan holds 4 GB
    app_id = submit(st, "prod", mb=2048, reservation_id=rid)
    token = start_am(st, app_id)
    st.am_allocate(token, 0, [Ask(1, 1, Resources.of(memory_mb=2048, vcores=1), 3)], [], 0.1, [], [], NOW)
    got = st.reprovision(NOW)
    (d,) = got.decisions
    assert (d.outcome, d.wanted, d.granted) == ("EXTENDED", 1, 1)  # capped at 2 × the skyline's 2 GB
    assert st.counters["reservation_extension_containers"] == 1
    assert st.dra_outcomes == {"EXTENDED": 1}
    # a minute on the cap counts the extension too (4 GB × 2), but the plan has room for one more only
    (d,) = st.reprovision(NOW + 60).decisions
    assert (d.outcome, d.wanted, d.granted) == ("EXTENDED_PARTIALLY", 3, 1)
    assert st.counters["reservation_extension_containers"] == 2
    assert st.dra_outcomes == {"EXTENDED": 1, "EXTENDED_PARTIALLY": 1}
