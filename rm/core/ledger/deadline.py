"""A deadline changed while its app runs (Jockey §5.2, MRM's admission): the new deadline is admitted by the
queue's deadline book exactly as a submission's would be, or refused with the earliest feasible finish and
nothing changed."""

from __future__ import annotations

import math
from dataclasses import replace

from common.errors import AdmissionRefused, BadRequest, Conflict
from rm.core.deadlines.admission import DeadlineAdmission
from rm.core.deadlines.system import Refusal
from rm.core.deadlines_glue import job_of
from rm.core.entities import App
from rm.core.ledger.base import LedgerBase


class DeadlineCommands(LedgerBase):

    def change_deadline(self, app_id: str, deadline: float, now: float) -> App:
        """Give an unfinished app the deadline ``deadline`` (seconds since the epoch).

        * An app holding an admitted claim has its remaining work admitted again by its queue's book with the
          new deadline, in the room the other claims leave (none of them moves); the claim is re-laid.
        * An app without a claim, where the admission rule holds deadlines (``deadlines``), buys one as a
          submission would (its whole estimated work, at the estimate's price).
        * Under any other admission rule the deadline is the app's own to keep: only its terms change.

        A refusal (``AdmissionRefused``, 409 with ``earliestFinish``) changes nothing."""
        app = self.get_app(app_id)
        if app.final:
            raise Conflict(f"application {app_id} is already {app.state}; its deadline cannot change")
        if not (math.isfinite(deadline) and deadline > now):
            raise BadRequest(f"the deadline {deadline!r} is not a time in the future (seconds since the epoch)")
        if app.reservation_id:
            raise BadRequest("an application runs inside a reservation or under a deadline, not both")
        terms = replace(app.terms, deadline=deadline)
        system = self.deadline_system()
        try:
            if app.app_id in system.held:
                system.move(app.app_id, deadline, now)
            elif isinstance(self.admission, DeadlineAdmission):
                job, declared = job_of(app, app.queue, system.config.unit)
                terms = system.admit(app.app_id, app.queue, replace(terms, quote_id=None, max_price=None),
                                     job, declared, now)
        except Refusal as r:
            raise AdmissionRefused(f"the admission rule {self.admission.name} refused the new deadline of "
                                   f"{app_id}: {r.reason}", dict(r.quote), conflict=r.conflict) from None
        app.terms = terms
        self._touch_app(app)
        return app
