"""The guarantee stage (Jockey's floor): an app's requested guarantee is served from its own queue before fair
shares, bounded by the queue's guarantee fraction; room is taken back only from what others hold beyond what
they keep, and above an MRM claim only free room is used; without guarantees the ``jockey`` pipeline decides
exactly as ``mrm``; each cycle's floors reach its plan, the apps and their AMs' allocate answers."""

from __future__ import annotations

from dataclasses import replace
from random import Random

from am.jobspec import Job, parse_job
from common.ids import AppId, QueuePath
from common.resources import Resources
from common.terms import AmSignals, AppTerms
from rm.core.cycle import run_cycle
from rm.core.deadlines.view import DeadlineEntry, DeadlineView
from rm.core.entities import Ask
from rm.core.harness import Harness, ask
from rm.core.model import ClusterSnapshot
from rm.core.plan import Plan
from rm.core.policies.guarantee import GUARANTEE_LENT, MAX_GUARANTEE_FRACTION, GuaranteeStage, grants
from rm.core.policies.registry import SCHEDULERS, named_pipeline
from rm.core.policies.tetris import TetrisPacker
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.policies import make_policy
from tests.unit.test_state import add_node, make_state, running_app

GB = 1024
UNIT = Resources.of(memory_mb=GB, vcores=1)


def with_guarantees(snap: ClusterSnapshot, wanted: dict[AppId, int]) -> ClusterSnapshot:
    """The snapshot with these apps' AMs asking for ``units`` × 1 GB / 1 vcore guaranteed."""
    apps = dict(snap.apps)
    for aid, units in wanted.items():
        apps[aid] = replace(apps[aid], terms=AppTerms(guarantee=UNIT * units))
    return replace(snap, apps=apps)


def placed(plan: Plan, app: AppId) -> int:
    return plan.count(lambda p: p.app_id == app)


def two_queues() -> Harness:
    """20 containers in all; queues a and b hold half each and may grow to the whole cluster."""
    h = Harness()
    h.node("n1", vcores=10, memory_mb=10 * GB)
    h.node("n2", vcores=10, memory_mb=10 * GB)
    h.queue("root.a", 0.5)
    h.queue("root.b", 0.5)
    return h


def cycle(h: Harness, snap: ClusterSnapshot, scheduler: str) -> Plan:
    stages, shares = named_pipeline(scheduler)
    plan = run_cycle(snap, stages, shares=shares, now=0.0, rng=Random(0))
    h.validate(plan)
    return plan


def test_the_floor_comes_from_the_app_s_own_queue_before_fair_shares() -> None:
    h = two_queues()
    best_effort = h.app(queue="root.a", asks=[ask(num=20)]).id
    jockey = h.app(queue="root.a", asks=[ask(num=20)]).id
    other = h.app(queue="root.b", asks=[ask(num=20)]).id
    snap = with_guarantees(h.snapshot(), {jockey: 7})
    plain = cycle(h, h.snapshot(), "mrm")
    assert placed(plain, jockey) == placed(plain, best_effort) == 5  # DRF: queue a's 10 split evenly
    plan = cycle(h, snap, "jockey")
    assert plan.counters["placed_for_guarantee"] == 7
    assert placed(plan, jockey) == 7  # its floor, ahead of the fair shares
    assert placed(plan, best_effort) == 3  # the best-effort app of its queue shares what the floor leaves
    assert placed(plan, other) == 10  # the other queue keeps its whole share
    assert not plan.preemptions


def test_a_guarantee_never_exceeds_the_queue_s_fraction_and_the_first_come_is_served_first() -> None:
    h = two_queues()
    first = h.app(queue="root.a", asks=[ask(num=20)]).id
    second = h.app(queue="root.a", asks=[ask(num=20)]).id
    snap = with_guarantees(h.snapshot(), {first: 6, second: 6})
    budget = int(10 * MAX_GUARANTEE_FRACTION)  # 0.8 of queue a's 10 containers
    assert [g.floor.vcores for g in grants(snap)] == [6, budget - 6]
    assert [g.ceiling.vcores for g in grants(snap)] == [budget, budget]  # each could be granted the whole budget
    plan = run_cycle(snap, [GuaranteeStage(TetrisPacker())], now=0.0, rng=Random(0))
    assert placed(plan, first) == 6
    assert placed(plan, second) == budget - 6
    # one app alone asking for the whole cluster gets the fraction of its queue, no more
    h2 = two_queues()
    greedy = h2.app(queue="root.a", asks=[ask(num=20)]).id
    alone = run_cycle(with_guarantees(h2.snapshot(), {greedy: 20}), [GuaranteeStage(TetrisPacker())], now=0.0,
                      rng=Random(0))
    assert placed(alone, greedy) == budget


def full(snap: ClusterSnapshot, n1_used: int, n2_used: int) -> ClusterSnapshot:
    """The snapshot with its two nodes holding these many containers (what the seeded apps hold)."""
    nodes = dict(snap.nodes)
    for node_id, n in zip(sorted(nodes), (n1_used, n2_used), strict=True):
        nodes[node_id] = replace(nodes[node_id], allocated=Resources.of(memory_mb=n * GB, vcores=n))
    return replace(snap, nodes=nodes, total=None)


def units(r: Resources) -> int:
    return r.vcores


def test_a_floor_without_a_claim_takes_back_only_what_others_hold_beyond_their_keep() -> None:
    h = two_queues()
    hog = h.app(queue="root.a", asks=[ask(num=5)], used=UNIT * 8, fair_share=UNIT * 5).id
    jockey = h.app(queue="root.a", asks=[ask(num=10)], fair_share=UNIT * 5).id
    lender = h.app(queue="root.b", asks=[ask(num=5)], used=UNIT * 12, fair_share=UNIT * 10).id
    snap = full(with_guarantees(h.snapshot(), {jockey: 8}), 10, 10)
    plan = run_cycle(snap, [GuaranteeStage(TetrisPacker())], now=0.0, rng=Random(0))
    assert placed(plan, jockey) == 0  # nothing is free
    taken = {p.app_id: units(p.amount) for p in plan.preemptions}
    assert {p.reason for p in plan.preemptions} == {GUARANTEE_LENT}
    assert sum(taken.values()) == 8  # its floor, taken back for next cycle
    assert taken[lender] == 2  # the newest app first, what it holds beyond its fair share
    # the best-effort app of its queue keeps its share of what the floor leaves: 5 × (1 − 8/10) = 1 of 8
    assert taken[hog] == 6
    assert 8 - taken[hog] >= 1
    # the freed room goes to the floor the next cycle, before the fair shares
    snap = full(with_guarantees(h.snapshot(), {jockey: 8}), 2, 10)
    plan = cycle(h, snap, "jockey")
    assert placed(plan, jockey) == 8
    assert not plan.preemptions


def test_above_an_mrm_claim_the_guarantee_takes_free_room_only() -> None:
    h = two_queues()
    h.app(queue="root.a", asks=[ask(num=5)], used=UNIT * 17, fair_share=UNIT * 10)
    jockey = h.app(queue="root.a", asks=[ask(num=10)], used=UNIT * 2, fair_share=UNIT * 10).id
    snap = full(with_guarantees(h.snapshot(), {jockey: 6}), 10, 9)
    entry = DeadlineEntry(jockey, QueuePath("root.a"), deadline=100.0, owed=0.0, unit=UNIT)
    claimed = replace(snap, deadlines=DeadlineView((entry,)))
    plan = run_cycle(claimed, [GuaranteeStage(TetrisPacker())], now=0.0, rng=Random(0))
    assert placed(plan, jockey) == 1  # the one free container, not the 3 more its floor of 6 would want
    assert not plan.preemptions
    unclaimed = run_cycle(snap, [GuaranteeStage(TetrisPacker())], now=0.0, rng=Random(0))
    assert placed(unclaimed, jockey) == 1
    assert sum(units(p.amount) for p in unclaimed.preemptions) == 3  # without a claim its floor may reclaim
    # on an empty cluster an app is topped up to its floor: 2 held + 4 placed, its AM not counted
    h2 = two_queues()
    app = h2.app(queue="root.a", asks=[ask(num=10)], used=UNIT * 2, am_used=UNIT).id
    topped = run_cycle(with_guarantees(h2.snapshot(), {app: 6}), [GuaranteeStage(TetrisPacker())], now=0.0,
                       rng=Random(0))
    assert placed(topped, app) == 4


def test_altruistic_asks_and_the_am_container_are_left_to_the_later_stages() -> None:
    h = two_queues()
    app = h.app(queue="root.a", asks=[ask(num=4, ask_type="ALTRUISTIC"), ask(num=2)]).id
    plan = run_cycle(with_guarantees(h.snapshot(), {app: 6}), [GuaranteeStage(TetrisPacker())], now=0.0,
                     rng=Random(0))
    assert placed(plan, app) == 2
    assert all(p.ask_type == "DEFAULT" for p in plan.placements)


def _job(job_id: str, arrival: float, tasks: int, seconds: float) -> Job:
    return parse_job({"id": job_id, "arrival_s": arrival,
                      "stages": [{"name": "s", "tasks": tasks, "duration_s": seconds, "memory_mb": GB}]})


def test_without_guarantees_jockey_decides_as_mrm() -> None:
    jobs = [_job(f"j{i}", 3.0 * i, 8 + i, 4.0 + i) for i in range(5)]

    def decisions(policy: str) -> list[tuple[float, str, str, str]]:
        sim = Simulator(jobs, uniform_nodes(2, 6 * GB, 6), make_policy(policy),
                        SimConfig(seed=2, ask_policy="carbyne", record_decisions=True))
        sim.run()
        return sim.decisions

    assert decisions("jockey") == decisions("mrm")
    jockey, mrm = SCHEDULERS["jockey"], SCHEDULERS["mrm"]
    assert jockey.ask_policy == "jockey"
    assert jockey.admission == mrm.admission
    stages = list(mrm.pipeline.stages)
    stages.insert(stages.index("deadline") + 1, "guarantee")
    assert jockey.pipeline.stages == tuple(stages)


def test_the_floors_reach_the_plan_the_app_and_its_am_s_allocate_answer() -> None:
    st = make_state()
    node = add_node(st)  # 8 vcores, 8 GB in root.default: its guarantees may hold 0.8 of that together
    app_id, token = running_app(st, node)
    plain_id, plain_token = running_app(st, node)
    first = st.am_allocate(token, 0, [Ask(1, 1, UNIT, 10)], [], 0.1, [], [], 1.0,
                           signals=AmSignals(guarantee=UNIT * 8))
    assert first.granted_guarantee is None  # no cycle has granted it anything yet
    st.am_allocate(plain_token, 0, [Ask(1, 1, UNIT, 10)], [], 0.1, [], [], 1.0)
    stages, shares = named_pipeline("jockey")
    plan = run_cycle(st.snapshot(2.0), stages, shares=shares, now=2.0, rng=Random(0))
    floor = Resources.of(memory_mb=int(8 * GB * MAX_GUARANTEE_FRACTION), vcores=int(8 * MAX_GUARANTEE_FRACTION))
    assert plan.guarantees == {app_id: floor}  # the request cut to the queue's budget, not the request
    assert plan.ceilings == {app_id: floor}  # and the whole budget is the most it could ever be granted
    st.apply_plan(plan, 2.0)
    assert st.apps[app_id].granted == floor
    assert st.apps[plain_id].granted is None
    answer = st.am_allocate(token, first.response_id, [], [], 0.2, [], [], 3.0)
    assert answer.granted_guarantee == floor
    assert answer.guarantee_ceiling == floor
    plain = st.am_allocate(plain_token, 1, [], [], 0.2, [], [], 3.0)
    assert plain.granted_guarantee is None
    assert plain.guarantee_ceiling is None
    # a smaller request: the next cycle grants it in full
    st.am_allocate(token, answer.response_id, [], [], 0.3, [], [], 4.0, signals=AmSignals(guarantee=UNIT * 2))
    st.apply_plan(run_cycle(st.snapshot(5.0), stages, shares=shares, now=5.0, rng=Random(0)), 5.0)
    assert st.apps[app_id].granted == UNIT * 2
    assert st.apps[app_id].guarantee_ceiling == floor  # the ceiling is the queue's, whatever the request
    # it asks for none: the next cycle's plan grants it nothing, and the app keeps none
    st.am_allocate(token, answer.response_id + 1, [], [], 0.4, [], [], 6.0, signals=AmSignals(guarantee=Resources()))
    again = run_cycle(st.snapshot(7.0), stages, shares=shares, now=7.0, rng=Random(0))
    assert again.guarantees == {}
    st.apply_plan(again, 7.0)
    assert st.apps[app_id].granted is None
    assert st.apps[app_id].guarantee_ceiling is None
    # a scheduler without the stage puts no floors in its plans
    assert run_cycle(st.snapshot(8.0), named_pipeline("mrm")[0], now=8.0, rng=Random(0)).guarantees is None
