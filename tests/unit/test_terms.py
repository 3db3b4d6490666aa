"""An app's terms (deadline, requested guarantee, size estimate) and the admission rule, through the ledger."""

from __future__ import annotations

from typing import ClassVar

import pytest

from common.errors import AdmissionRefused, BadRequest
from common.ids import AppId, NodeId, QueuePath
from common.resources import Resources
from common.terms import AmSignals, AppTerms, SizeEstimate
from rm.core.admission import Admission, AdmissionDecision, Admit, Refuse
from rm.core.entities import Ask
from rm.core.events import LedgerView
from rm.core.ledger import Ledger
from rm.core.plan import Place, Plan
from rm.core.queues import build_queues
from rm.core.records import AppRecord, StoredState
from rm.core.state_types import AM_ASK_ID, SubmitSpec
from rm.service.operations import normalized

NOW = 1_000.0
AM = {"commands": ["am"]}


class DeadlinesOnly:
    """Admits apps with a deadline at least a minute away; quotes that minute to the others."""

    name: ClassVar[str] = "deadlines-only"

    def admit(self, spec: SubmitSpec, queue: QueuePath, ledger: LedgerView, now: float) -> AdmissionDecision:
        if spec.terms.deadline is None or spec.terms.deadline < now + 60:
            return Refuse("needs a deadline a minute away", {"earliestDeadline": now + 60})
        return Admit(spec.terms)


_: type[Admission] = DeadlinesOnly


def ledger(admission: Admission | None = None) -> Ledger:
    st = Ledger(Ledger.fresh_meta(1), build_queues(), admission=admission)
    st.register_node("n1:7040", "n1:8042", "", Resources.of(memory_mb=8192, vcores=8), [], NOW)
    return st


def test_a_deadline_travels_from_the_submission_to_the_snapshot_the_store_and_back() -> None:
    st = ledger()
    app_id = st.new_application(NOW)
    st.submit(SubmitSpec(app_id=app_id, am_launch=AM, terms=AppTerms(deadline=NOW + 600)), NOW)
    assert st.apps[app_id].terms.deadline == NOW + 600
    assert st.snapshot().apps[app_id].terms.deadline == NOW + 600
    (rec,) = [r for r in st.drain_records() if isinstance(r, AppRecord)]
    assert rec.terms == {"deadline": NOW + 600}
    again = Ledger.recover(StoredState(meta=st.meta, apps=[rec], attempts=[], containers=[], nodes=[]), build_queues(), None, now=NOW + 5)
    assert again.apps[app_id].terms == AppTerms(deadline=NOW + 600)


def test_a_deadline_must_lie_ahead_and_excludes_a_reservation() -> None:
    st = ledger()
    app_id = st.new_application(NOW)
    with pytest.raises(BadRequest, match="future"):
        st.submit(SubmitSpec(app_id=app_id, am_launch=AM, terms=AppTerms(deadline=NOW - 1)), NOW)
    with pytest.raises(BadRequest, match="not both"):
        st.submit(SubmitSpec(app_id=app_id, am_launch=AM, terms=AppTerms(deadline=NOW + 60),
                             reservation_id="reservation_1_0001"), NOW)
    assert st.apps == {}


def test_the_admission_rule_refuses_with_a_quote_and_nothing_changes() -> None:
    st = ledger(DeadlinesOnly())
    app_id = st.new_application(NOW)
    st.drain_records()
    version = st.version
    with pytest.raises(AdmissionRefused, match="deadlines-only refused") as refused:
        st.submit(SubmitSpec(app_id=app_id, am_launch=AM, terms=AppTerms(deadline=NOW + 10)), NOW)
    assert refused.value.quote == {"earliestDeadline": NOW + 60}
    assert refused.value.status == 400
    assert st.apps == {}
    assert st.version == version
    assert st.drain_records() == []
    st.submit(SubmitSpec(app_id=app_id, am_launch=AM, terms=AppTerms(deadline=NOW + 120)), NOW)
    assert st.apps[app_id].state == "ACCEPTED"


def test_an_am_declares_its_size_but_never_over_a_stronger_estimate() -> None:
    st = ledger()
    app_id = st.new_application(NOW)
    st.submit(SubmitSpec(app_id=app_id, am_launch=AM), NOW)
    st.apply_plan(_am_plan(st, AppId(app_id)), NOW)
    (launch,) = st.drain_launches()
    st.am_register(launch.amrm_token, "h", 1, "", NOW)
    one = Resources.of(memory_mb=1024, vcores=1)
    res = st.am_allocate(launch.amrm_token, 0, [Ask(1, 1, one, 2)], [], 0.1, [], [], NOW,
                         signals=AmSignals(size=SizeEstimate(300.0), guarantee=one * 2))
    assert st.apps[app_id].terms.size == SizeEstimate(300.0, "declared")
    assert st.snapshot().apps[app_id].size_hint_s == 300.0
    assert st.apps[app_id].terms.guarantee == one * 2
    st.report_size(app_id, SizeEstimate(120.0, "slearn", confidence=0.8))
    st.am_allocate(launch.amrm_token, res.response_id, [], [], 0.2, [], [], NOW,
                   signals=AmSignals(size=SizeEstimate(290.0)))
    assert st.apps[app_id].terms.size == SizeEstimate(120.0, "slearn", confidence=0.8)
    assert st.check_views() == []


def test_rest_and_ipc_submissions_give_a_deadline_as_a_tag() -> None:
    spec = normalized(SubmitSpec(app_id="application_1_0001", tags=("shepherd.deadline=1700000000",)), 0.0)
    assert spec.terms.deadline == 1_700_000_000
    relative = normalized(SubmitSpec(app_id="application_1_0001", tags=("shepherd.deadline=+90",
                                                                         "shepherd.max-price=250",
                                                                         "shepherd.quote=quote_1_0001")), 1000.0)
    assert relative.terms.deadline == 1090.0
    assert relative.terms.max_price == 250.0
    assert relative.terms.quote_id == "quote_1_0001"
    with pytest.raises(BadRequest, match=r"shepherd\.deadline"):
        normalized(SubmitSpec(app_id="application_1_0001", tags=("shepherd.deadline=tomorrow",)), 0.0)


def test_terms_survive_their_json_form() -> None:
    terms = AppTerms(deadline=5.0, guarantee=Resources.of(memory_mb=2048, vcores=2),
                     size=SizeEstimate(40.0, "history", total_s=90.0, confidence=0.5))
    assert AppTerms.from_dict(terms.to_dict()) == terms
    assert AppTerms.from_dict({}) == AppTerms()
    with pytest.raises(ValueError, match="source"):
        SizeEstimate(1.0, "guess")  # type: ignore[arg-type]


def _am_plan(st: Ledger, app_id: AppId) -> Plan:
    return Plan(based_on=st.version, placements=[
        Place(app_id=AppId(app_id), allocation_request_id=AM_ASK_ID, node_id=NodeId("n1:7040"),
              resource=st.apps[AppId(app_id)].am_resource, priority=-1, is_am=True)])
