"""SLO proposals as the RM serves them (Morpheus §4): a proposal's status from users' decisions, the overrides
a user may sign off with, and the JSON shape of ``/ws/v1/shepherd/slo-proposals``.

Status of a recurring job's proposal:

* ``accepted`` — a user signed it off and its periodic reservation still exists;
* ``rejected`` — a user rejected it and no successful run has ended since (a newer run makes it
  ``proposed`` again, with the new inference);
* ``proposed`` — otherwise (also after an accepted reservation was deleted).

Times in the JSON are seconds: ``period``, and ``earliestStart`` / ``deadline`` as offsets from the start of
the period (periods aligned to the epoch, UTC); ``nextInstance`` gives the next window in epoch milliseconds,
as YARN's reservation API does.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from common.errors import BadRequest
from rm.core.records import SloDecisionRecord
from rm.core.reservation.inference import SloProposal

Status = Literal["proposed", "accepted", "rejected"]
STATUSES: tuple[Status, ...] = ("proposed", "accepted", "rejected")
MAX_SKYLINE_STEPS = 7 * 24 * 60
OVERRIDE_FIELDS = ("deadline", "earliestStart", "period", "queue", "skyline")


@dataclass(frozen=True, slots=True)
class Overrides:
    """What a user changes when signing off a proposal (None: keep the inferred value)."""

    deadline_s: float | None = None
    earliest_start_s: float | None = None
    period_s: int | None = None
    queue: str | None = None
    skyline: tuple[int, ...] | None = None

    def any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in dataclasses.fields(self))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in (("deadline", self.deadline_s), ("earliestStart", self.earliest_start_s),
                           ("period", self.period_s), ("queue", self.queue), ("skyline", self.skyline)):
            if value is not None:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out


def _seconds(body: Mapping[str, Any], key: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadRequest(f"{key} must be a number of seconds, got {value!r}")
    if value < 0:
        raise BadRequest(f"{key} must not be negative, got {value}")
    return float(value)


def parse_overrides(body: Mapping[str, Any], *, step_s: int) -> Overrides:
    """The overrides in an accept request's JSON body; anything malformed is a 400."""
    unknown = sorted(set(body) - set(OVERRIDE_FIELDS))
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(unknown)}; an accept request may override "
                         f"{', '.join(OVERRIDE_FIELDS)}")
    period = _seconds(body, "period")
    if period is not None and (period <= 0 or period != int(period) or int(period) % step_s):
        raise BadRequest(f"period must be a positive whole number of plan steps ({step_s} s), got {period:g}")
    queue = body.get("queue")
    if queue is not None and (not isinstance(queue, str) or not queue.strip()):
        raise BadRequest(f"queue must be a queue name or path, got {queue!r}")
    skyline = body.get("skyline")
    if skyline is not None:
        if not isinstance(skyline, list) or not all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in skyline):
            raise BadRequest("skyline must be a list of non-negative whole numbers of containers per step")
        if not any(skyline) or len(skyline) > MAX_SKYLINE_STEPS:
            raise BadRequest(f"skyline must hold at least one container and at most {MAX_SKYLINE_STEPS} steps")
    return Overrides(
        deadline_s=_seconds(body, "deadline"), earliest_start_s=_seconds(body, "earliestStart"),
        period_s=int(period) if period is not None else None, queue=queue.strip() if isinstance(queue, str) else None,
        skyline=tuple(skyline) if skyline is not None else None,
    )


def apply_overrides(p: SloProposal, o: Overrides) -> SloProposal:
    """The proposal as the user signs it off; an impossible combination is a 400."""
    period = o.period_s if o.period_s is not None else p.period_s
    earliest = o.earliest_start_s if o.earliest_start_s is not None else p.earliest_start_s
    deadline = o.deadline_s if o.deadline_s is not None else p.deadline_s
    if earliest >= period:
        raise BadRequest(f"the earliest start ({earliest:g} s) must lie inside the period ({period} s)")
    if deadline <= earliest:
        raise BadRequest(f"the deadline ({deadline:g} s) must come after the earliest start ({earliest:g} s)")
    if deadline - earliest > period - p.step_s:
        raise BadRequest(f"the window from earliest start to deadline ({deadline - earliest:g} s) must be shorter "
                         f"than the period ({period} s)")
    return dataclasses.replace(
        p, period_s=period, earliest_start_s=earliest, deadline_s=deadline, queue=o.queue or p.queue,
        skyline=o.skyline if o.skyline is not None else p.skyline,
    )


def status_of(decision: SloDecisionRecord | None, *, basis: str, reservation_active: bool) -> Status:
    """The effective status of a proposal inferred from runs up to ``basis`` (the newest successful run)."""
    if decision is None:
        return "proposed"
    if decision.status == "accepted":
        return "accepted" if reservation_active else "proposed"
    if decision.status == "rejected" and decision.based_on == basis:
        return "rejected"
    return "proposed"


def parse_statuses(text: str | None) -> set[Status]:
    out: set[Status] = set()
    for part in (text or "").split(","):
        s = part.strip().lower()
        if not s:
            continue
        if s not in STATUSES:
            raise BadRequest(f"Invalid status {part.strip()} specified. It should be one of [{', '.join(STATUSES)}]")
        out.add(s)
    return out


def render(p: SloProposal, *, status: Status, decision: SloDecisionRecord | None, basis: str,
           now: float) -> dict[str, Any]:
    """The JSON object of one proposal."""
    next_instance: dict[str, int] | None = None
    if any(p.skyline):
        d = p.to_definition(now=now)
        next_instance = {"arrival": d.arrival_ms, "deadline": d.deadline_ms}
    out: dict[str, Any] = {
        "job": p.job,
        "status": status,
        "reservationId": decision.reservation_id if decision is not None and status == "accepted" else "",
        "queue": p.queue,
        "user": p.user,
        "runs": p.runs,
        "basedOn": basis,
        "period": p.period_s,
        "earliestStart": round(p.earliest_start_s, 3),
        "deadline": round(p.deadline_s, 3),
        "actionable": p.actionable,
        "reasons": list(p.reasons),
        "alignment": p.alignment,
        "step": p.step_s,
        "unit": p.unit.to_dict(),
        "skyline": list(p.skyline),
        "peakContainers": max(p.skyline, default=0),
        "containerSeconds": sum(p.skyline) * p.step_s,
        "nextInstance": next_instance,
        "decision": None,
    }
    if decision is not None:
        out["decision"] = {
            "status": decision.status, "reservationId": decision.reservation_id, "user": decision.user,
            "decidedAt": int(decision.decided_at * 1000), "basedOn": decision.based_on, "runs": decision.runs,
            "overrides": dict(decision.overrides),
        }
    return out
