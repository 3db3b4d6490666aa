"""An app against its deadline (``rm.service.app_slo``) and a deadline changed at run time, on hand-built
ledgers: the guarantee granted (by the last cycle applied) is the request cut to the queue's budget, earliest
first; the status and the predicted finish of an app whose deadline comes from its job file follow its
reported progress; a book re-admits a moved claim or leaves it exactly as it was."""

from __future__ import annotations

import json
import math

import pytest

from common.errors import AdmissionRefused, BadRequest, Conflict
from common.ids import AppId
from common.resources import Resources
from common.terms import AppTerms
from rm.core.deadlines.admission import DeadlineAdmission
from rm.core.deadlines.book import DeadlineBook, Infeasible
from rm.core.deadlines.layout import Phase
from rm.core.harness import Harness, ask
from rm.core.policies.registry import named_pipeline
from rm.core.state_types import SubmitSpec
from rm.service.app_slo import app_slo

GB = 1024
UNIT = Resources.of(memory_mb=GB, vcores=1)


def cluster() -> Harness:
    """20 containers; queue a holds half of them, so its guarantees may hold 0.8 × 10 = 8 units together."""
    h = Harness()
    h.node("n1", vcores=10, memory_mb=10 * GB)
    h.node("n2", vcores=10, memory_mb=10 * GB)
    h.queue("root.a", 0.5)
    h.queue("root.b", 0.5)
    return h


def ask_guarantee(h: Harness, app_id: AppId, units: int) -> None:
    app = h.ledger.apps[app_id]
    app.terms = app.terms.with_guarantee(UNIT * units)
    h.ledger.views_changed(app_id)


def test_granted_is_the_request_cut_to_the_queue_budget_earliest_first() -> None:
    h = cluster()
    waiting = [ask(vcores=1, memory_mb=GB, num=10)]  # the snapshot holds apps that hold or ask for something
    first, second = h.app("root.a", waiting).id, h.app("root.a", waiting).id
    ask_guarantee(h, first, 6)
    ask_guarantee(h, second, 5)
    jockey, shares = named_pipeline("jockey")
    assert app_slo(h.ledger, h.ledger.apps[first], jockey, 10.0).granted == Resources()  # no cycle yet
    h.apply(h.cycle(jockey, 10.0, shares=shares), 10.0)  # the grants of the last cycle applied
    a = app_slo(h.ledger, h.ledger.apps[first], jockey, 10.0)
    b = app_slo(h.ledger, h.ledger.apps[second], jockey, 10.0)
    assert a.requested == UNIT * 6
    assert a.granted == UNIT * 6
    assert b.requested == UNIT * 5
    assert b.granted == UNIT * 2  # 8 − 6 left in queue a's budget
    assert a.status == "NONE"
    assert a.oracle_units is None
    # a scheduler without the guarantee stage grants nothing of its own: not reported
    assert app_slo(h.ledger, h.ledger.apps[first], named_pipeline("mrm")[0], 10.0).granted is None


def test_a_job_file_deadline_is_judged_by_the_reported_progress() -> None:
    h = cluster()
    aid = h.app("root.a", submit_time=0.0).id
    app = h.ledger.apps[aid]
    app.job_spec_json = json.dumps({"id": "j", "deadline_s": 100, "utility": [[0, 1], [2, 1], [3, -1]],
                                    "stages": [{"name": "s", "tasks": 10, "duration_s": 20, "memory_mb": 1024,
                                                "command": "x"}]})
    app.start_time = 0.0
    app.progress = 0.5
    pipeline = named_pipeline("drf")[0]
    on_time = app_slo(h.ledger, app, pipeline, 40.0)  # half done at 40 s: done at 80 s, due at 100 s
    assert on_time.deadline == 100.0
    assert on_time.deadline_source == "job"
    assert on_time.predicted_finish == pytest.approx(80.0)
    assert on_time.status == "ON_TRACK"
    assert on_time.utility == ((0.0, 1.0), (120.0, 1.0), (180.0, -1.0))
    assert on_time.total_work == 200.0  # 10 tasks × 20 s, one unit each
    assert on_time.oracle_units == 2  # ⌈200 / 100⌉
    assert on_time.oracle_units_now == math.ceil(100.0 / 60.0)  # half the work left, 60 s to go
    late = app_slo(h.ledger, app, pipeline, 60.0)  # half done at 60 s: done at 120 s
    assert late.predicted_finish == pytest.approx(120.0)
    assert late.status == "AT_RISK"


def test_without_deadline_admission_a_change_only_sets_the_terms() -> None:
    h = cluster()
    aid = h.app("root.a").id
    app = h.ledger.change_deadline(aid, 500.0, 10.0)
    assert app.terms.deadline == 500.0
    assert aid not in h.ledger.deadlines.held
    with pytest.raises(BadRequest):
        h.ledger.change_deadline(aid, 5.0, 10.0)  # in the past
    with pytest.raises(BadRequest):
        h.ledger.change_deadline(aid, math.inf, 10.0)
    assert h.ledger.apps[aid].terms.deadline == 500.0


def test_a_change_is_admitted_as_a_submission_and_an_ended_app_refuses() -> None:
    h = Harness(admission=DeadlineAdmission())
    h.node("n1", vcores=10, memory_mb=10 * GB)
    job = json.dumps({"id": "j", "stages": [{"name": "s", "tasks": 4, "duration_s": 100, "memory_mb": 1024,
                                            "command": "x"}]})
    handle = h.ledger.new_application(0.0)
    h.ledger.submit(SubmitSpec(app_id=handle, name="j", queue="default", am_launch={"commands": ["am"]},
                               job_spec_json=job, terms=AppTerms(deadline=10_000.0)), 0.0)
    app = h.ledger.apps[AppId(handle)]
    assert app.terms.claim is not None
    book = h.ledger.deadlines.books[app.queue]
    h.ledger.change_deadline(handle, 20_000.0, 1.0)
    assert book.claims[handle].deadline == 20_000.0
    assert app.terms.deadline == 20_000.0
    placed = book.claims[handle].placed
    with pytest.raises(AdmissionRefused) as refused:
        h.ledger.change_deadline(handle, 30.0, 1.0)  # 4 × 100 s of work on at most 8 units: not by 30 s
    assert refused.value.status == 409
    assert 100.0 < float(refused.value.quote["earliestFinish"]) < 20_000.0  # type: ignore[arg-type]
    assert book.claims[handle].placed is placed
    assert app.terms.deadline == 20_000.0
    h.ledger.kill(handle, "done", 2.0)
    with pytest.raises(Conflict):
        h.ledger.change_deadline(handle, 40_000.0, 3.0)


def test_book_move_frees_its_own_room_and_never_moves_another_claim() -> None:
    book = DeadlineBook(4.0, dt=1.0)
    book.admit("a", (Phase(400.0, 4.0, 100.0),), 200.0, 0.0)  # 4 units from 100 s to 200 s
    book.admit("b", (Phase(200.0, 4.0, 50.0),), 100.0, 0.0)  # 4 units from 50 s to 100 s
    a_layout = book.claims["a"].placed
    # b earlier: 50 s of 4 units fits in [0, 50); a does not move
    book.move("b", (Phase(200.0, 4.0, 50.0),), 50.0, 0.0)
    assert book.claims["b"].deadline == 50.0
    assert book.claims["a"].placed is a_layout
    # b sooner than its own work allows: refused, with the earliest finish it could have
    with pytest.raises(Infeasible) as refused:
        book.move("b", (Phase(200.0, 4.0, 50.0),), 30.0, 0.0)
    assert refused.value.earliest == pytest.approx(50.0)
    assert book.claims["b"].deadline == 50.0
    assert book.claims["a"].placed is a_layout


def test_book_move_of_a_key_it_does_not_hold_admits_it() -> None:
    book = DeadlineBook(4.0, dt=1.0)
    claim = book.move("c", (Phase(40.0, 4.0, 10.0),), 100.0, 0.0)
    assert book.claims["c"] is claim
    assert claim.deadline == 100.0
