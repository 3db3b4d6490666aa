"""One app against its deadline, over REST.

* ``GET /ws/v1/shepherd/apps/{id}/slo`` — its deadline, utility, status (ON_TRACK, AT_RISK, MET, MISSED,
  NONE), progress, predicted completion, requested and granted guarantee, Jockey's oracle allocation and the
  control decisions the AM reported (``rm.service.app_slo`` defines each).
* ``PUT /ws/v1/shepherd/apps/{id}/deadline`` with ``{"deadline": MS_SINCE_EPOCH}`` or ``{"deadline": "+45m"}``
  (``+SECONDS``, ``+90s``, ``+45m``, ``+2h`` from the RM's now) — a new deadline, admitted by the queue's
  deadline book as at submission: a refusal is a 409 ConflictException naming the earliest feasible finish,
  and changes nothing. Answers the app's SLO as ``GET .../slo`` would after the change.

Times are milliseconds since the epoch, as everywhere in YARN's REST API; work is in unit-seconds.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request

from common.errors import ApplicationNotFound, BadRequest
from common.resources import MEMORY, VCORES, Resources
from rm.service.app_slo import AppSlo, app_slo
from rm.service.authz import Authorizer
from rm.service.rest.errors import check_writer, json_object, not_found_app
from rm.service.rest.extras import SHEPHERD

if TYPE_CHECKING:
    from rm.service.operations import Operations
    from rm.service.server import ResourceManager

DEADLINE_EXAMPLE = {"deadline": "+45m"}
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_deadline(body: dict[str, Any], now: float) -> float:
    """The deadline a change asks for, in seconds since the epoch (``BadRequest`` for a malformed body)."""
    extra = sorted(set(body) - {"deadline"})
    if extra:
        raise BadRequest(f"a deadline change takes one field, deadline; got {', '.join(extra)}")
    raw = body.get("deadline")
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        if not math.isfinite(raw):
            raise BadRequest(f"deadline: {raw!r} is not a time")
        return float(raw) / 1000.0
    if isinstance(raw, str) and raw.strip().startswith("+"):
        text = raw.strip()[1:]
        scale = _UNITS.get(text[-1:].lower(), 0.0)
        try:
            seconds = float(text[:-1] if scale else text) * (scale or 1.0)
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds) and seconds > 0:
            return now + seconds
    raise BadRequest(f"deadline: {raw!r} is neither milliseconds since the epoch nor +SECONDS, +90s, +45m, "
                     "+2h from now")


def ms(t: float) -> int:
    return int(t * 1000)


def yarn_resource(r: Resources) -> dict[str, int]:  # as rest.render's (which imports the deadline routes)
    return {"memory": r.get(MEMORY), "vCores": r.get(VCORES)}


def _opt_ms(t: float | None) -> int | None:
    return None if t is None else ms(t)


def _opt_round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def slo_json(s: AppSlo) -> dict[str, Any]:
    return {
        "id": s.app_id, "deadline": _opt_ms(s.deadline), "deadlineSource": s.deadline_source,
        "utility": None if s.utility is None else [{"afterSubmitSec": t, "value": u} for t, u in s.utility],
        "status": s.status, "progress": round(s.progress, 4), "predictedFinish": _opt_ms(s.predicted_finish),
        "claimed": s.claimed, "totalWork": _opt_round(s.total_work), "remainingWork": _opt_round(s.remaining_work),
        "unit": yarn_resource(s.unit), "oracleUnits": s.oracle_units, "oracleUnitsNow": s.oracle_units_now,
        "requestedGuarantee": None if s.requested is None else yarn_resource(s.requested),
        "grantedGuarantee": None if s.granted is None else yarn_resource(s.granted),
        "controlTrace": [{"time": ms(c.time), "progress": round(c.progress, 4), "rawUnits": c.raw_units,
                          "smoothedUnits": round(c.smoothed_units, 3), "requestedUnits": c.requested_units,
                          "predictedFinish": ms(c.predicted_finish), "status": c.status, "held": c.held,
                          "pace": round(c.pace, 3)}
                         for c in s.trace],
        "profileRuns": list(s.profile_runs),
        "modelBuildSec": _opt_round(s.model_build_s), "workDone": _opt_round(s.work_done),
        "aboveOracle": _opt_round(s.above_oracle),
    }


def add_app_slo_routes(api: FastAPI, rm: ResourceManager, ops: Operations) -> None:
    secret = rm.cfg.client_secret

    def slo_of(app_id: str) -> dict[str, Any]:
        try:
            app = rm.state.get_app(app_id)
        except ApplicationNotFound:
            raise not_found_app(app_id) from None
        return {"slo": slo_json(app_slo(rm.state, app, rm.pipeline, rm.now()))}

    @api.get(f"{SHEPHERD}/apps/{{app_id}}/slo", tags=["shepherd"],
             summary="An app against its deadline: status, progress, predicted finish, guarantees, oracle")
    async def get_slo(app_id: str) -> dict[str, Any]:
        return slo_of(app_id)

    @api.put(f"{SHEPHERD}/apps/{{app_id}}/deadline", tags=["shepherd"],
             summary="Change a running app's deadline (ms since the epoch, or \"+45m\" from now); re-admitted "
                     "by its queue's deadline book, 409 with the earliest feasible finish when it cannot be kept",
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": {"type": "object"}, "example": DEADLINE_EXAMPLE}}}})
    async def put_deadline(app_id: str, request: Request) -> dict[str, Any]:
        who = check_writer(request, secret)
        body = await json_object(request)
        deadline = parse_deadline(body, rm.now())
        try:
            Authorizer(rm).modify(who, ops.app(app_id))
            await ops.change_deadline(app_id, deadline)
        except ApplicationNotFound:
            raise not_found_app(app_id) from None
        return slo_of(app_id)
