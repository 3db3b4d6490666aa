"""SLO proposals as served: overrides a user signs off with, the status from decisions, the JSON shape."""

from __future__ import annotations

from typing import Any

import pytest

from common.errors import BadRequest
from common.resources import Resources
from rm.core.records import SloDecisionRecord
from rm.core.reservation.inference import SloProposal
from rm.core.reservation.slo import (
    Overrides,
    apply_overrides,
    parse_overrides,
    parse_statuses,
    render,
    status_of,
)

DAY = 86_400
HOUR = 3600
CORE = Resources.of(memory_mb=1024, vcores=1)


def proposal(**kw: Any) -> SloProposal:
    fields: dict[str, Any] = {
        "job": "nightly-report", "queue": "root.default", "user": "etl", "period_s": DAY,
        "earliest_start_s": 2 * HOUR, "deadline_s": 6 * HOUR, "skyline": (2, 4, 4, 1), "unit": CORE, "step_s": 60,
        "runs": 5, "actionable": True,
    }
    fields.update(kw)
    return SloProposal(**fields)


def test_overrides_are_parsed_strictly() -> None:
    o = parse_overrides({"deadline": 25_200, "earliestStart": 3600.5, "period": 43_200, "queue": " prod ",
                         "skyline": [1, 0, 2]}, step_s=60)
    assert o == Overrides(25_200.0, 3600.5, 43_200, "prod", (1, 0, 2))
    assert o.any()
    assert not Overrides().any()
    assert o.to_json() == {"deadline": 25_200.0, "earliestStart": 3600.5, "period": 43_200, "queue": "prod",
                           "skyline": [1, 0, 2]}
    for bad, why in [({"deadlin": 1}, "unknown field"), ({"deadline": "7h"}, "number of seconds"),
                     ({"deadline": True}, "number of seconds"), ({"earliestStart": -1}, "negative"),
                     ({"period": 90}, "whole number of plan steps"), ({"period": 0}, "whole number"),
                     ({"queue": ""}, "queue"), ({"queue": 3}, "queue"), ({"skyline": [1, -1]}, "skyline"),
                     ({"skyline": [0, 0]}, "at least one"), ({"skyline": "1,2"}, "skyline"),
                     ({"deadline": float("inf")}, "number of seconds")]:
        with pytest.raises(BadRequest, match=why):
            parse_overrides(bad, step_s=60)


def test_applying_overrides_checks_the_window() -> None:
    p = proposal()
    signed = apply_overrides(p, Overrides(deadline_s=7 * HOUR, queue="prod"))
    assert (signed.deadline_s, signed.earliest_start_s, signed.queue, signed.skyline) == (7 * HOUR, 2 * HOUR, "prod",
                                                                                         p.skyline)
    with pytest.raises(BadRequest, match="after the earliest start"):
        apply_overrides(p, Overrides(deadline_s=HOUR))
    with pytest.raises(BadRequest, match="inside the period"):
        apply_overrides(p, Overrides(period_s=HOUR))
    with pytest.raises(BadRequest, match="shorter than the period"):
        apply_overrides(p, Overrides(earliest_start_s=0, deadline_s=DAY))
    d = apply_overrides(p, Overrides(skyline=(3,))).to_definition(now=20_000 * DAY)
    assert d.recurrence_ms == DAY * 1000
    assert d.requests[0].num_containers == 3


def test_status_follows_the_decision_and_new_runs() -> None:
    rejected = SloDecisionRecord("j", "rejected", based_on="application_1_0005")
    accepted = SloDecisionRecord("j", "accepted", reservation_id="reservation_1_0001")
    assert status_of(None, basis="application_1_0005", reservation_active=False) == "proposed"
    assert status_of(rejected, basis="application_1_0005", reservation_active=False) == "rejected"
    assert status_of(rejected, basis="application_1_0006", reservation_active=False) == "proposed"  # a new run
    assert status_of(accepted, basis="application_1_0006", reservation_active=True) == "accepted"
    assert status_of(accepted, basis="application_1_0006", reservation_active=False) == "proposed"  # deleted
    assert parse_statuses(" Accepted,rejected,") == {"accepted", "rejected"}
    with pytest.raises(BadRequest, match="Invalid status"):
        parse_statuses("done")


def test_render_shows_the_proposal_its_next_window_and_the_decision() -> None:
    now = 20_000 * DAY + 3 * HOUR  # past today's earliest start, before today's deadline
    decision = SloDecisionRecord("nightly-report", "accepted", "reservation_1_0001", "application_1_0005", 5,
                                 decided_at=now, user="alice", overrides={"deadline": 21_600})
    out = render(proposal(reasons=("window clipped to one period",)), status="accepted", decision=decision,
                 basis="application_1_0005", now=now)
    assert out["period"] == DAY
    assert out["earliestStart"] == 2 * HOUR
    assert out["deadline"] == 6 * HOUR
    assert out["skyline"] == [2, 4, 4, 1]
    assert out["peakContainers"] == 4
    assert out["containerSeconds"] == 11 * 60
    assert out["unit"] == {"memory-mb": 1024, "vcores": 1}
    assert out["nextInstance"] == {"arrival": (20_000 * DAY + 2 * HOUR) * 1000,
                                   "deadline": (20_000 * DAY + 6 * HOUR) * 1000}
    assert out["reservationId"] == "reservation_1_0001"
    assert out["reasons"] == ["window clipped to one period"]
    assert out["decision"]["user"] == "alice"
    assert out["decision"]["decidedAt"] == now * 1000
    assert render(proposal(), status="proposed", decision=decision, basis="x", now=now)["reservationId"] == ""
