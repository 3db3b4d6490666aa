"""Carbyne's AM side: reverse packing decides which runnable tasks must start now."""

from __future__ import annotations

from am.dag_state import DagState
from am.jobspec import parse_job
from am.policies.altruism import CarbyneAsks
from am.policies.greedy import GreedyAsks
from am.policies.timepack import INFINITE, StagePlan, pack_forward, pack_reverse
from common.resources import Resources

# Figure 2 of the Carbyne paper on one bottleneck resource, in hundredths (vcores here): J1 has a
# barrier stage S2 after S0 (2 tasks of 0.04) and S1 (3 tasks of 0.21); J2 has 2 tasks of 0.29.
J1 = parse_job({"id": "j1", "stages": [
    {"name": "s0", "tasks": 2, "duration_s": 1, "memory_mb": 1, "vcores": 4},
    {"name": "s1", "tasks": 3, "duration_s": 1, "memory_mb": 1, "vcores": 21},
    {"name": "s2", "tasks": 1, "duration_s": 0.1, "memory_mb": 1, "vcores": 1, "parents": ["s0", "s1"]},
]})
J2 = parse_job({"id": "j2", "stages": [{"name": "s0", "tasks": 2, "duration_s": 1, "memory_mb": 1, "vcores": 29}]})
HALF = Resources.of(memory_mb=50, vcores=50)


def asked(policy: CarbyneAsks, job: object, share: Resources = HALF) -> dict[tuple[str, str], int]:
    decisions = policy.asks(DagState(job), share, 0.0)  # type: ignore[arg-type]
    return {(d.stage, d.ask_type): d.num_containers for d in decisions}


def test_figure_2_j1_keeps_its_completion_time_and_yields_the_rest() -> None:
    policy = CarbyneAsks(horizon_s=0.0)
    assert asked(policy, J1) == {("s1", "DEFAULT"): 1, ("s0", "ALTRUISTIC"): 2, ("s1", "ALTRUISTIC"): 2}
    assert policy.last is not None
    assert abs(policy.last.completion_s - 2.1) < 1e-9


def test_figure_2_j2_runs_one_task_now_and_yields_the_other() -> None:
    policy = CarbyneAsks(horizon_s=0.0)
    assert asked(policy, J2) == {("s0", "DEFAULT"): 1, ("s0", "ALTRUISTIC"): 1}


def test_a_share_that_cannot_cover_the_critical_path_asks_everything_default() -> None:
    chain = parse_job({"id": "chain", "stages": [
        {"name": "a", "tasks": 3, "duration_s": 5, "memory_mb": 100, "vcores": 1},
        {"name": "b", "tasks": 1, "duration_s": 5, "memory_mb": 100, "vcores": 1, "parents": ["a"]},
    ]})
    exactly_wide_enough = Resources.of(memory_mb=300, vcores=3)  # no slack: every task is critical
    assert asked(CarbyneAsks(), chain, exactly_wide_enough) == {("a", "DEFAULT"): 3}
    one_at_a_time = Resources.of(memory_mb=100, vcores=1)  # the share serializes: one now, two later
    assert asked(CarbyneAsks(), chain, one_at_a_time) == {("a", "DEFAULT"): 1, ("a", "ALTRUISTIC"): 2}
    no_memory = Resources.of(vcores=3)  # a needed resource with no share at all: take what comes
    assert asked(CarbyneAsks(), chain, no_memory) == {("a", "DEFAULT"): 3}
    assert asked(CarbyneAsks(), chain, Resources()) == {("a", "DEFAULT"): 3}  # no share known yet


def test_a_share_smaller_than_one_task_plans_as_time_sharing_and_still_yields() -> None:
    chain = parse_job({"id": "chain", "stages": [
        {"name": "a", "tasks": 3, "duration_s": 5, "memory_mb": 100, "vcores": 1},
        {"name": "b", "tasks": 1, "duration_s": 5, "memory_mb": 100, "vcores": 1, "parents": ["a"]},
    ]})
    policy = CarbyneAsks()
    half_a_task = Resources.of(memory_mb=50, vcores=1)  # DRF runs one task half of the time
    assert asked(policy, chain, half_a_task) == {("a", "DEFAULT"): 1, ("a", "ALTRUISTIC"): 2}
    assert policy.last is not None
    assert abs(policy.last.completion_s - 40.0) < 1e-9  # 4 tasks of 5 s, one at a time, at rate 1/2


def test_p_altruism_zero_asks_like_the_greedy_policy() -> None:
    for job in (J1, J2):
        dag = DagState(job)
        assert CarbyneAsks(p_altruism=0.0).asks(dag, HALF, 0.0) == GreedyAsks().asks(dag, HALF, 0.0)


def test_p_altruism_half_flips_once_per_event_and_replays_with_its_seed() -> None:
    def pattern(seed: int) -> list[bool]:
        p = CarbyneAsks(p_altruism=0.5, seed=seed, horizon_s=0.0)
        out = []
        for i in range(40):
            share = Resources.of(memory_mb=50 + i, vcores=50)  # the share moved: a scheduling event
            decided = set()
            for _ in range(3):  # heartbeats between events keep the event's decision
                p.asks(DagState(J1), share, 0.0)
                assert p.last is not None
                decided.add(p.last.yielded)
            assert len(decided) == 1
            out.append(decided.pop())
        return out

    first = pattern(7)
    assert 5 < sum(first) < 35
    assert pattern(7) == first


def test_a_floor_keeps_that_fraction_of_the_share_default_most_urgent_first() -> None:
    # Figure 2's J1 on half the cluster (50): only one S1 task (21) must start now
    assert asked(CarbyneAsks(horizon_s=0.0, floor=0.5), J1) == {
        ("s1", "DEFAULT"): 1, ("s0", "DEFAULT"): 1, ("s0", "ALTRUISTIC"): 1, ("s1", "ALTRUISTIC"): 2}  # 21 + 4 = 25
    assert asked(CarbyneAsks(horizon_s=0.0, floor=1.0), J1) == {
        ("s1", "DEFAULT"): 2, ("s0", "DEFAULT"): 2, ("s1", "ALTRUISTIC"): 1}  # 2·21 + 2·4 = 50: the whole share
    # below the floor a job keeps asking even when the next task goes past it: J2 holds 29 < 50, so its
    # second task (29 + 29 = 58) is DEFAULT too; rounding down instead would leave a job whose tasks are
    # larger than floor × share with nothing
    assert asked(CarbyneAsks(horizon_s=0.0, floor=1.0), J2) == {("s0", "DEFAULT"): 2}
    assert asked(CarbyneAsks(horizon_s=0.0, floor=0.5), J2) == {("s0", "DEFAULT"): 1, ("s0", "ALTRUISTIC"): 1}


def test_running_tasks_hold_their_share_while_they_run() -> None:
    dag = DagState(J1)
    for i in range(2):
        dag.start("s1", dag.runnable("s1")[0], f"c{i}", 0.0)
    # two S1 tasks already run (0.42 of 0.5): only the small S0 tasks fit beside them
    policy = CarbyneAsks(horizon_s=0.0)
    decisions = {(d.stage, d.ask_type): d.num_containers for d in policy.asks(dag, HALF, 0.0)}
    assert sum(n for (_, kind), n in decisions.items() if kind == "DEFAULT") <= 2


def test_forward_packing_finishes_stages_in_dependency_order() -> None:
    cap = Resources.of(memory_mb=10, vcores=2)
    plans = [StagePlan("a", Resources.of(memory_mb=1, vcores=1), 2.0, pending=4),
             StagePlan("b", Resources.of(memory_mb=1, vcores=1), 1.0, pending=1, parents=("a",))]
    forward = pack_forward(plans, cap)
    assert forward.makespan == 5.0  # two waves of a, then b
    latest = pack_reverse(plans, cap, forward.makespan)
    assert latest["b"] == [4.0]
    assert latest["a"] == [0.0, 0.0, 2.0, 2.0]
    assert pack_forward(plans, Resources.of(memory_mb=10, vcores=0)).makespan == INFINITE


# Breadth-first forward packing on two slots runs the short wide stage first and the long chain z -> zz
# after it (done at 7), while the chain could start at once (done at 6): a slack of one second that the
# reverse packing gives away now. A job that re-planned from its forward packing at every event would find
# that second again each time and put the chain off for ever.
SLACK = parse_job({"id": "slack", "stages": [
    {"name": "a", "tasks": 2, "duration_s": 1, "memory_mb": 10, "vcores": 1},
    {"name": "z", "tasks": 1, "duration_s": 3, "memory_mb": 10, "vcores": 1},
    {"name": "zz", "tasks": 1, "duration_s": 3, "memory_mb": 10, "vcores": 1, "parents": ["z"]},
]})
TWO = Resources.of(memory_mb=20, vcores=2)


def default_asks(policy: CarbyneAsks, dag: DagState, share: Resources, now: float) -> dict[str, int]:
    return {d.stage: d.num_containers for d in policy.asks(dag, share, now) if d.ask_type == "DEFAULT"}


def test_a_yielding_job_holds_to_its_completion_time_when_the_share_wiggles() -> None:
    policy, dag = CarbyneAsks(horizon_s=0.0), DagState(SLACK)
    assert default_asks(policy, dag, TWO, 0.0) == {}  # everything can wait a second
    assert policy.last is not None
    assert policy.last.completion_s == 7.0
    # the share moves without changing what the job can run (more memory than it uses): T_k stays at 7
    assert default_asks(policy, dag, Resources.of(memory_mb=30, vcores=2), 0.5) == {}
    assert policy.last.completion_s == 6.5
    assert default_asks(policy, dag, TWO, 1.0) == {"z": 1}  # the chain's latest start has come
    assert policy.last.completion_s == 6.0


def test_a_share_change_moves_the_completion_time_by_what_it_moves_the_packing() -> None:
    policy, dag = CarbyneAsks(horizon_s=0.0), DagState(SLACK)
    policy.asks(dag, TWO, 0.0)
    # one slot instead of two: the forward packing of the same state goes from 7 to 8 (the four tasks in a
    # row), so T_k moves from 7 to 7 + (8 - 7) = 8
    policy.asks(dag, Resources.of(memory_mb=10, vcores=1), 0.0)
    assert policy.last is not None
    assert policy.last.completion_s == 8.0
    # back to two slots: back to 7, never to the 7 of a fresh packing plus the time already yielded
    policy.asks(dag, TWO, 0.5)
    assert policy.last.completion_s == 6.5


def test_a_job_ahead_of_its_completion_time_keeps_the_earlier_one() -> None:
    policy, dag = CarbyneAsks(horizon_s=0.0), DagState(SLACK)
    policy.asks(dag, TWO, 0.0)
    # leftover came its way: both a tasks and z ran from 0, so when z ends at 3 the job can finish at 6
    for i, stage in enumerate(("a", "a", "z")):
        dag.start(stage, dag.runnable(stage)[0], f"c{i}", 0.0)
    dag.complete("c0", 0, 1.0)
    dag.complete("c1", 0, 1.0)
    dag.complete("c2", 0, 3.0)
    assert default_asks(policy, dag, TWO, 3.0) == {"zz": 1}  # not put off to 4, the old T_k less 3 s
    assert policy.last is not None
    assert policy.last.completion_s == 3.0
