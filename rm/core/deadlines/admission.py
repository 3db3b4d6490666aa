"""The ``deadlines`` admission rule (MRM): a submission that asks for a deadline is admitted only when the
queue's book can keep it without moving any admitted claim; every other submission is admitted as it is."""

from __future__ import annotations

from typing import ClassVar

from common.ids import AppId, QueuePath
from rm.core.admission import Admission, AdmissionDecision, Admit, Refuse
from rm.core.deadlines.system import Refusal
from rm.core.deadlines_glue import job_of
from rm.core.events import LedgerView
from rm.core.state_types import SubmitSpec


class DeadlineAdmission:
    name: ClassVar[str] = "deadlines"

    def admit(self, spec: SubmitSpec, queue: QueuePath, ledger: LedgerView, now: float) -> AdmissionDecision:
        if not spec.terms.wants_deadline:
            return Admit(spec.terms)
        system = ledger.deadline_system()
        job, declared = job_of(spec, queue, system.config.unit)
        try:
            terms = system.admit(AppId(spec.app_id), queue, spec.terms, job, declared, now)
        except Refusal as r:
            return Refuse(r.reason, r.quote, conflict=r.conflict)
        return Admit(terms)


_: type[Admission] = DeadlineAdmission
