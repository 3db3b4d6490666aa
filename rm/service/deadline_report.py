"""How an app that bought a deadline stands, in one form for every door (REST, gRPC, the CLI)."""

from __future__ import annotations

from dataclasses import dataclass

from rm.core.deadlines.system import MET, MISSED, DeadlineSystem
from rm.core.entities import App


@dataclass(frozen=True, slots=True)
class DeadlineReport:
    deadline: float  # seconds since the epoch
    price: float  # tokens
    earliest: float  # the earliest feasible finish when it was admitted
    mean: float  # estimated work, unit-seconds
    std: float
    upper: float  # the prediction interval's upper bound: what its claim holds
    z: float
    method: str
    runs: int
    quote_id: str
    remaining: float  # unit-seconds of its claim not yet done
    laxity: float | None  # seconds to spare before its claim falls due (None once it ended)
    status: str  # ON_TRACK, AT_RISK, MET, MISSED


def deadline_report(app: App, system: DeadlineSystem, now: float) -> DeadlineReport | None:
    claim, deadline = app.terms.claim, app.terms.deadline
    if claim is None or deadline is None:
        return None
    if app.final:
        status = MET if app.final_status == "SUCCEEDED" and app.finish_time <= deadline + 1e-6 else MISSED
        laxity, remaining = None, 0.0
    else:
        status = system.status(app.app_id) or "ON_TRACK"
        laxity, remaining = system.laxity(app.app_id, now), system.remaining_work(app.app_id)
    return DeadlineReport(deadline, claim.price, claim.earliest, claim.mean, claim.std, claim.upper, claim.z,
                          claim.method, claim.runs, claim.quote_id, remaining, laxity, status)
