"""The service layer's operations over a real ledger and a fake store: YARN's submission defaults, the
resubmit and kill-after-end rules, persisting before answering (and failing when the store cannot take the
records), and waking the scheduler only for changes that can place or free a container."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from common.errors import ApplicationNotFound, BadRequest, InvalidResourceRequest, YarnError
from common.resources import Resources
from rm.core.ledger import Ledger
from rm.core.queues import build_queues
from rm.core.records import Record
from rm.core.state_types import CoreConfig, SubmitSpec
from rm.service.operations import Operations, normalized

TS = 1_700_000_000_000
QUEUES = {"default": {"capacity": 70}, "batch": {"capacity": 30}}
T = TypeVar("T")


class StoreDown(YarnError):
    status = 503


class FakeRM:
    """A ledger with a manual clock and a store that can be down (records stay queued, as in the RM)."""

    def __init__(self) -> None:
        self.state = Ledger(Ledger.fresh_meta(TS), build_queues(QUEUES), CoreConfig())
        self.state.register_node("n1:7040", "n1:8042", "", Resources.of(memory_mb=4096, vcores=4), [], self.now())
        self.queued: list[Record] = []
        self.stored: list[Record] = []
        self.down = False
        self.kicks = 0

    def now(self) -> float:
        return TS / 1000 + 10

    async def persist(self) -> None:
        self.queued += self.state.drain_records()
        if self.down:
            raise StoreDown("the state store is unavailable")
        self.stored += self.queued
        self.state.stored(self.queued)
        self.queued = []

    def kick(self) -> None:
        self.kicks += 1


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@pytest.fixture
def rm() -> FakeRM:
    fake = FakeRM()
    run(fake.persist())
    return fake


def spec(app_id: str, **fields: Any) -> SubmitSpec:
    """A submission as a door parses it: no type when the client sent none."""
    return SubmitSpec(**{"app_id": app_id, "name": "etl", "app_type": "", "am_launch": {"commands": ["sleep 1"]},
                         **fields})


def test_a_submission_gets_yarns_defaults_whichever_door_it_came_through() -> None:
    s = normalized(SubmitSpec(app_id="a", app_type="", queue=" ", tags=("Nightly", " nightly ", "",
                                                                          "shepherd.inputs=/Raw/A,/raw/b"),
                              inputs=("/declared",), am_resource=Resources.of(memory_mb=0, vcores=0)), 0.0)
    assert (s.app_type, s.queue) == ("YARN", "default")
    assert s.tags == ("nightly", "shepherd.inputs=/raw/a,/raw/b")
    assert s.inputs == ("/declared", "/Raw/A", "/raw/b")  # dataset paths keep their case
    assert s.am_resource == Resources.of(memory_mb=1024, vcores=1)
    assert normalized(SubmitSpec(app_id="a", app_type="T" * 30), 0.0).app_type == "T" * 20
    assert normalized(SubmitSpec(app_id="a", am_resource=Resources.of(memory_mb=512)), 0.0).am_resource == \
        Resources.of(memory_mb=512, vcores=1)
    negative = Resources.of(memory_mb=-1, vcores=1)
    assert normalized(SubmitSpec(app_id="a", am_resource=negative), 0.0).am_resource == negative


def test_submit_persists_before_it_answers_and_wakes_the_scheduler(rm: FakeRM) -> None:
    ops = Operations(rm)
    new = run(ops.new_application())
    assert new.max_allocation == Resources.of(memory_mb=4096, vcores=4)
    assert (rm.kicks, rm.queued) == (0, [])
    done = run(ops.submit(spec(new.app_id)))
    assert (done.created, done.app.app_type, rm.kicks, rm.queued) == (True, "YARN", 1, [])
    assert any(getattr(r, "app_id", None) == new.app_id for r in rm.stored)


def test_a_known_id_is_accepted_again_once_the_store_has_it(rm: FakeRM) -> None:
    ops = Operations(rm)
    app_id = run(ops.new_application()).app_id
    rm.down = True
    with pytest.raises(StoreDown):  # applied, not yet stored: the caller must not hear "accepted"
        run(ops.submit(spec(app_id)))
    assert rm.queued
    assert app_id in rm.state.apps
    with pytest.raises(StoreDown):  # the client's retry: still not stored, still not accepted
        run(ops.submit(spec(app_id, name="other")))
    rm.down = False
    kicks = rm.kicks
    again = run(ops.submit(spec(app_id, name="other", queue="nope")))
    assert (again.created, rm.kicks, rm.queued) == (False, kicks, [])
    assert (again.app.name, again.app.queue, len(again.app.attempts)) == ("etl", "root.default", 1)
    assert len(rm.state.apps) == 1



def test_a_job_file_no_node_could_run_is_refused_and_nothing_is_stored_or_woken(rm: FakeRM) -> None:
    ops = Operations(rm)
    app_id = run(ops.new_application()).app_id
    stored, kicks = len(rm.stored), rm.kicks
    job = json.dumps({"id": "huge", "stages": [{"name": "sort", "tasks": 4, "memory_mb": 40_960}]})
    with pytest.raises(InvalidResourceRequest, match=r"stage 'sort': a task of <memory-mb=40960, vcores=1>"):
        run(ops.submit(spec(app_id, app_type="SHEPHERD-DAG", job_spec_json=job)))
    assert (len(rm.stored), rm.queued, rm.kicks, rm.state.apps) == (stored, [], kicks, {})

def test_killing_an_app_that_ended_changes_nothing(rm: FakeRM) -> None:
    ops = Operations(rm)
    app_id = run(ops.new_application()).app_id
    run(ops.submit(spec(app_id)))
    killed = run(ops.kill(app_id, user="alice"))
    assert (killed.changed, killed.app.state) == (True, "KILLED")
    assert "alice" in killed.app.diagnostics
    stored, kicks = len(rm.stored), rm.kicks
    again = run(ops.kill(app_id))
    assert (again.changed, again.app.state, len(rm.stored), rm.kicks) == (False, "KILLED", stored, kicks)
    with pytest.raises(ApplicationNotFound):
        run(ops.kill(f"application_{TS}_9999"))
    with pytest.raises(BadRequest):
        run(ops.kill("bogus"))


def test_moves_priorities_and_lifetimes_persist(rm: FakeRM) -> None:
    ops = Operations(rm)
    app_id = run(ops.new_application()).app_id
    run(ops.submit(spec(app_id)))
    assert run(ops.move(app_id, "batch")).queue == "root.batch"
    assert run(ops.set_priority(app_id, 3)).priority == 3
    kicks = rm.kicks
    assert run(ops.set_lifetime(app_id, rm.now() + 60)).lifetime_expiry == rm.now() + 60
    assert (rm.kicks, rm.queued) == (kicks, [])  # a lifetime places nothing
    with pytest.raises(BadRequest):
        run(ops.move(app_id, "nope"))
    with pytest.raises(BadRequest):
        run(ops.move(app_id, " "))


def test_queues_by_path_or_leaf(rm: FakeRM) -> None:
    ops = Operations(rm)
    assert [ops.queue_path(q) for q in ("", "root", "batch", "root.batch")] == \
        ["root", "root", "root.batch", "root.batch"]
    with pytest.raises(BadRequest, match="Unknown queue: nope"):
        ops.queue_path("nope")
