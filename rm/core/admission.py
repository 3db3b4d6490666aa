"""The admission extension point: at submission, a rule admits an app (with the terms it is given), or refuses
it with a reason and, where it can, a quote — the alternative it would admit (an earlier feasible deadline,
a price). The ledger asks its rule once per new submission, after validating the request and before anything
changes; a refusal changes nothing and reaches the client as ``AdmissionRefused``.

Rules are registered by name in ``rm.core.policies.registry.ADMISSIONS``; ``admit-all`` admits every app
with the terms it asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from common.ids import QueuePath
from common.terms import AppTerms
from rm.core.events import LedgerView
from rm.core.state_types import SubmitSpec


@dataclass(frozen=True, slots=True)
class Admit:
    terms: AppTerms  # what the app runs with (the rule may settle a quote here)


@dataclass(frozen=True, slots=True)
class Refuse:
    reason: str
    quote: Mapping[str, object] = field(default_factory=dict)  # the alternative the rule would admit
    conflict: bool = False  # valid but not possible now (409, e.g. a deadline before the earliest finish)


AdmissionDecision = Admit | Refuse


class Admission(Protocol):
    name: ClassVar[str]

    def admit(self, spec: SubmitSpec, queue: QueuePath, ledger: LedgerView, now: float) -> AdmissionDecision: ...


class AdmitAll:
    """Every app, with the terms it asked for."""

    name: ClassVar[str] = "admit-all"

    def admit(self, spec: SubmitSpec, queue: QueuePath, ledger: LedgerView, now: float) -> AdmissionDecision:
        return Admit(spec.terms)


_: type[Admission] = AdmitAll
