"""The dry run's parts: ``Ledger.fork()``, the simulator resumed from a ledger that runs apps
(``sim.resume``), and ``plan_job`` (``sim.dryrun``). The "live" ledger here is driven through the protocol as
the RM's doors drive it (submit, AM register and allocate, NodeManager heartbeats), durable, on a wall-clock
like time."""

from __future__ import annotations

import pickle
from random import Random
from typing import Any

import pytest

from am.jobspec import Job, parse_job
from common import tokens
from common.errors import BadRequest, InvalidResourceRequest
from common.ids import AppId
from common.resources import Resources
from rm.core.cycle import run_cycle
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.policies.registry import named_pipeline
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig, NodeStatus, SubmitSpec
from sim.dryrun import DELAY_MIN_S, plan_job
from sim.policies import make_policy
from sim.resume import HOLD_FLOOR_S, RESUME_FLOOR_S, ResumedSimulator

T0 = 1_700_000_000.0
TASK = Resources.of(memory_mb=256, vcores=1)
AM = Resources.of(memory_mb=256, vcores=1)


def _stage(name: str, tasks: int, seconds: float, parents: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"name": name, "tasks": tasks, "duration_s": seconds, "memory_mb": 256, "parents": list(parents)}


DAG = parse_job({"id": "etl", "stages": [_stage("a", 3, 5), _stage("b", 2, 4, ("a",))]})


class Live:
    """A durable ledger on three 4-vcore nodes, driven as the live RM's doors drive it."""

    def __init__(self, nodes: int = 3, vcores: int = 4) -> None:
        self.ledger = Ledger(Ledger.fresh_meta(1_700_000_000_000), build_queues(), CoreConfig())
        self.pipeline, self.shares = named_pipeline("drf")
        for i in range(nodes):
            self.ledger.register_node(f"n{i}:8041", f"n{i}:8042", "/r", Resources.of(memory_mb=8192, vcores=vcores),
                                      (), T0 + 0.3 * i)

    def cycle(self, t: float) -> None:
        plan = run_cycle(self.ledger.snapshot(t), self.pipeline, shares=self.shares, now=t, rng=Random(0))
        self.ledger.apply_plan(plan, t)

    def submit(self, t: float, job: Job | None, name: str = "etl") -> tuple[AppId, str]:
        """Submit and start an app (its AM container placed and running, registered); returns its AMRM token."""
        app_id = self.ledger.new_application(t)
        self.ledger.submit(SubmitSpec(app_id=app_id, name=name, app_type="SHEPHERD-DAG" if job else "SPARK",
                                      am_resource=AM, am_launch={"commands": ["am"]},
                                      job_spec_json=job.to_json() if job else ""), t)
        self.cycle(t + 0.1)
        launch = self.ledger.drain_launches()[0]
        self.running(launch.node_id, launch.container_id, t + 0.4)
        self.ledger.am_register(launch.amrm_token, "h", 0, "", t + 0.7)
        return app_id, launch.amrm_token

    def running(self, node: str, container: str, t: float) -> None:
        self.ledger.node_heartbeat(node, 0, [NodeStatus(container, "RUNNING", start_time=t)], True, "", t)

    def completed(self, node: str, container: str, started: float, t: float, exit_status: int = 0) -> None:
        self.ledger.node_heartbeat(node, 0, [NodeStatus(container, "COMPLETE", exit_status, start_time=started)],
                                   True, "", t)


def _running_dag(live: Live) -> tuple[AppId, list[tuple[str, str]]]:
    """``DAG`` at T0 + 6.2: stage a's three tasks started at T0 + 1.4, one of them done at T0 + 6."""
    app_id, token = live.submit(T0, DAG)
    live.ledger.am_allocate(token, 0, [Ask(1, 0, TASK, 3, stage="a")], [], 0.0, (), (), T0 + 0.8)
    live.cycle(T0 + 0.9)
    got = live.ledger.am_allocate(token, 1, [], [], 0.0, (), (), T0 + 1.3).allocated
    assert len(got) == 3
    for c in got:
        live.running(c.node_id, c.container_id, T0 + 1.4)
    live.completed(got[0].node_id, got[0].container_id, T0 + 1.4, T0 + 6.0)
    live.ledger.drain_records()
    return app_id, [(c.node_id, c.container_id) for c in got]


def _state(ledger: Ledger) -> bytes:
    return pickle.dumps((ledger.meta, ledger.nodes, ledger.apps, ledger.containers, ledger.version))


def test_a_fork_is_a_non_durable_copy_and_nothing_done_to_it_reaches_the_ledger() -> None:
    live = Live()
    app_id, _ = _running_dag(live)

    class Foreign:
        hears: frozenset[type] = frozenset()

        def on_event(self, event: object, journal: object) -> None: ...

    foreign = Foreign()
    live.ledger.subscribe(foreign)
    before = _state(live.ledger)
    fork = live.ledger.fork()
    assert foreign not in fork.listeners
    assert len(fork.listeners) == len(live.ledger.listeners) - 1
    assert not fork.config.durable
    assert live.ledger.config.durable
    fork.kill(app_id, "gone", T0 + 7)
    other = fork.new_application(T0 + 7)
    fork.submit(SubmitSpec(app_id=other, am_resource=AM, am_launch={"commands": ["x"]}), T0 + 7)
    fork.apply_plan(run_cycle(fork.snapshot(T0 + 7), live.pipeline, shares=live.shares, now=T0 + 7, rng=Random(0)),
                    T0 + 7)
    assert fork.drain_records() == []
    assert fork.apps[app_id].state == "KILLED"
    assert _state(live.ledger) == before
    assert live.ledger.apps[app_id].state == "RUNNING"
    assert live.ledger.drain_records() == []


def test_a_running_dag_is_continued_from_its_progress() -> None:
    live = Live()
    app_id, got = _running_dag(live)
    now = T0 + 6.2
    sim = ResumedSimulator(live.ledger.fork(), make_policy("drf"), now=now)
    assert sim.resumed == [app_id]
    am = sim.ams[0]
    dag = am.dag
    assert dag.succeeded == 1
    assert dag.task("a", 0).status == "SUCCEEDED"
    assert dag.measured_durations("a") == [pytest.approx(4.6)]  # start to its completion's report
    running = sorted((t.index, t.container_id, t.started_at) for t in dag.running())
    assert running == [(1, got[1][1], T0 + 1.4), (2, got[2][1], T0 + 1.4)]
    assert dag.runnable("a") == []
    assert dag.count("b", "WAITING") == 2
    # the stage's estimate is the measured mean (4.6 s) from their start: overrun, so the floor from now
    assert {cid: run.end for cid, run in sim.runs.items()} == {
        got[1][1]: pytest.approx(now + RESUME_FLOOR_S), got[2][1]: pytest.approx(now + RESUME_FLOOR_S)}
    assert am.response_id == live.ledger.apps[app_id].current.response_id  # type: ignore[union-attr]
    assert am.registered
    sim.run_until(now + 3600)
    record = sim.record_of(app_id)
    assert record is not None
    assert record.status == "SUCCEEDED"
    assert record.finish is not None
    # a's last two end by the next heartbeat after now + 0.5 s, then b's two tasks of ~4.6 s (the estimate the AM
    # measured) run after an AM round trip, and their end is heard at the next heartbeat
    assert now + 5.1 < record.finish < now + 9.0


def test_running_tasks_end_after_their_stage_estimate_counted_from_their_start() -> None:
    live = Live()
    _app_id, token = live.submit(T0, DAG)
    live.ledger.am_allocate(token, 0, [Ask(1, 0, TASK, 3, stage="a")], [], 0.0, (), (), T0 + 0.8)
    live.cycle(T0 + 0.9)
    got = live.ledger.am_allocate(token, 1, [], [], 0.0, (), (), T0 + 1.3).allocated
    live.running(got[0].node_id, got[0].container_id, T0 + 1.4)  # the others not started yet
    now = T0 + 2.0
    sim = ResumedSimulator(live.ledger.fork(), make_policy("drf"), now=now)
    ends = {cid: run.end for cid, run in sim.runs.items()}
    assert ends[got[0].container_id] == pytest.approx(T0 + 1.4 + 5)  # the spec's 5 s from its start
    assert ends[got[1].container_id] == pytest.approx(T0 + 0.9 + 5)  # from its allocation: not started yet
    assert sim.ams[0].dag.count("a", "RUNNING") == 3


def test_apps_without_a_job_spec_keep_their_containers_as_long_again_and_ask_for_nothing() -> None:
    live = Live()
    app_id, token = live.submit(T0, None, name="spark-pi")
    live.ledger.am_allocate(token, 0, [Ask(1, 0, TASK, 6)], [], 0.0, (), (), T0 + 1.0)
    live.cycle(T0 + 2.0)
    got = live.ledger.am_allocate(token, 1, [Ask(1, 0, TASK, 10)], [], 0.0, (), (), T0 + 2.5).allocated
    assert len(got) == 6
    now = T0 + 12.0
    fork = live.ledger.fork()
    sim = ResumedSimulator(fork, make_policy("drf"), now=now)
    assert sim.resumed == []
    [held] = sim.held
    assert held.app_id == app_id
    assert held.containers == 7  # six and its AM's
    assert held.until == pytest.approx(now + (now - (T0 + 0.1)))  # its AM container was placed at T0 + 0.1
    assert all(a.num_containers == 0 for a in fork.apps[app_id].current.asks.values())  # type: ignore[union-attr]
    assert {round(run.end - now, 6) for run in sim.runs.values()} == {10.0}  # as long again as since T0 + 2
    sim.run_until(now + 11.5, done=lambda: False)  # released at the nodes' heartbeats after now + 10
    assert fork.apps[app_id].used == AM
    sim.run_until(now + 3600, done=lambda: False)
    assert fork.apps[app_id].final
    assert sim.now == pytest.approx(held.until)
    assert live.ledger.apps[app_id].state == "RUNNING"


def test_an_app_without_a_job_spec_that_waits_for_its_am_is_left_out() -> None:
    live = Live(nodes=1, vcores=1)
    live.submit(T0, None, name="first")
    waiting = live.ledger.new_application(T0 + 1)
    live.ledger.submit(SubmitSpec(app_id=waiting, am_resource=AM, am_launch={"commands": ["am"]}), T0 + 1)
    live.cycle(T0 + 1.5)
    assert live.ledger.apps[waiting].current.am_ask_pending  # type: ignore[union-attr]
    sim = ResumedSimulator(live.ledger.fork(), make_policy("drf"), now=T0 + 2)
    assert sim.left_out == [waiting]
    assert sim.ledger.apps[waiting].final
    assert not live.ledger.apps[waiting].final
    assert HOLD_FLOOR_S > 0


def test_a_plan_changes_nothing_and_names_the_queue_placements_and_finish() -> None:
    live = Live()
    _running_dag(live)
    before = _state(live.ledger)
    now = T0 + 6.2
    job = parse_job({"id": "next", "stages": [_stage("x", 4, 3), _stage("y", 1, 2, ("x",))]})
    report = plan_job(live.ledger.fork(), job, make_policy("drf"), now=now, user="ann")
    assert _state(live.ledger) == before
    assert len(live.ledger.apps) == 1
    assert report.queue == "root.default"
    assert report.user == "ann"
    assert report.status == "SUCCEEDED"
    assert report.am is not None
    assert report.am.node in live.ledger.nodes
    assert report.first_stage == "x"
    assert len(report.first_stage_placements) == 4
    assert {p.node for p in report.first_stage_placements} <= set(live.ledger.nodes)
    assert report.start is not None
    assert report.finish is not None
    assert now < report.start < report.finish
    # AM start-up, two waves of nothing (the cluster has room): x's 3 s, y's 2 s, plus heartbeats
    assert 5.0 < report.finish - now < 9.0
    assert report.delays == []
    data = report.to_dict()
    assert data["planTime"] == round(now * 1000)
    assert sum(p["tasks"] for p in data["firstStage"]["placements"]) == 4


def test_a_plan_names_the_running_apps_it_delays() -> None:
    live = Live(nodes=1, vcores=4)
    app_id, token = live.submit(T0, parse_job({"id": "long", "stages": [_stage("w", 12, 10)]}), name="long")
    live.ledger.am_allocate(token, 0, [Ask(1, 0, TASK, 12, stage="w")], [], 0.0, (), (), T0 + 0.8)
    live.cycle(T0 + 0.9)
    got = live.ledger.am_allocate(token, 1, [], [], 0.0, (), (), T0 + 1.3).allocated
    for c in got:
        live.running(c.node_id, c.container_id, T0 + 1.4)
    now = T0 + 2.0
    big = parse_job({"id": "big", "stages": [_stage("x", 6, 20)]})
    report = plan_job(live.ledger.fork(), big, make_policy("drf"), now=now, user="bob")
    [delay] = report.delays
    assert delay.app_id == app_id
    assert delay.name == "long"
    assert delay.delay_s is not None
    assert delay.delay_s > DELAY_MIN_S
    assert any("continued from their progress" in n for n in report.notes)


def test_a_plan_refuses_what_a_submission_would_refuse() -> None:
    live = Live()
    with pytest.raises(BadRequest, match="queue"):
        plan_job(live.ledger.fork(), DAG.model_copy(update={"queue": "nope"}), make_policy("drf"), now=T0, user="u")
    huge = parse_job({"id": "huge", "stages": [{"name": "a", "tasks": 1, "memory_mb": 65_536}]})
    with pytest.raises(InvalidResourceRequest) as planned:
        plan_job(live.ledger.fork(), huge, make_policy("drf"), now=T0, user="u")
    assert str(planned.value).startswith("stage 'a': a task of <memory-mb=65536, vcores=1> exceeds")
    with pytest.raises(InvalidResourceRequest) as submitted:  # the same check, the same words
        live.submit(T0, huge)
    assert str(submitted.value) == str(planned.value)


def test_a_plan_that_cannot_finish_within_the_horizon_says_so() -> None:
    live = Live()
    slow = parse_job({"id": "slow", "stages": [_stage("a", 1, 600)]})
    report = plan_job(live.ledger.fork(), slow, make_policy("drf"), now=T0, user="u", horizon_s=60)
    assert report.status == "UNFINISHED"
    assert report.finish is None
    assert report.start is not None
    assert any("horizon" in n for n in report.notes)
    assert report.to_dict()["predictedFinishTime"] is None


def test_a_plan_says_whether_the_jobs_deadline_is_feasible() -> None:
    from rm.commands.job import plan_table
    from rm.commands.output import console
    from rm.sdk import JobPlan

    live = Live()
    spec = {"id": "due", "stages": [_stage("x", 2, 3)]}
    none = plan_job(live.ledger.fork(), parse_job(spec), make_policy("drf"), now=T0, user="u")
    assert none.deadline_feasible is None
    assert none.to_dict()["deadlineFeasible"] is None
    # the job takes some 5 s (AM start-up, one wave of 3 s): 60 s is feasible, 2 s is not
    loose = plan_job(live.ledger.fork(), parse_job({**spec, "deadline_s": 60}), make_policy("drf"), now=T0, user="u")
    tight = plan_job(live.ledger.fork(), parse_job({**spec, "deadline_s": 2}), make_policy("drf"), now=T0, user="u")
    assert loose.duration_s is not None
    assert 2 < loose.duration_s < 60
    assert (loose.deadline_feasible, tight.deadline_feasible) == (True, False)
    assert (loose.to_dict()["deadlineFeasible"], tight.to_dict()["deadlineFeasible"]) == (True, False)
    assert tight.to_dict()["deadlineSec"] == 2
    with console.capture() as cap:
        for report in (loose, tight, none):  # the REST answer as the SDK reads it (rm.sdk.JobPlan)
            console.print(plan_table(JobPlan.from_dict(report.to_dict())))
    lines = [" ".join(ln.replace("│", " ").split()) for ln in cap.get().splitlines() if "deadline feasible" in ln]
    assert lines == ["deadline feasible yes (deadline 60 s after submission)",
                     "deadline feasible no (deadline 2 s after submission)",
                     "deadline feasible - (the job sets no deadline_s)"]


def test_tokens_of_the_fork_are_the_ledgers() -> None:
    """The resumed AMs authenticate with the ledger's own AMRM key (kept in the fork)."""
    live = Live()
    app_id, token = live.submit(T0, DAG)
    fork = live.ledger.fork()
    attempt = fork.apps[app_id].current
    assert attempt is not None
    assert tokens.amrm_token(fork.amrm_key, attempt.attempt_id) == token
