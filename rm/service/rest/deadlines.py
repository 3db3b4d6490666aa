"""Deadlines you can buy (MRM) over REST.

* ``POST /ws/v1/shepherd/quotes`` with ``{"queue": ..., "job": <a job file as JSON>}`` (or, for a job without a
  shepherd job file, ``{"queue", "name", "applicationType", "tags"}``, estimated from the same name's runs)
  answers a quote: the work estimate with its prediction interval, the earliest feasible finish and the
  price–deadline curve. It expires after ``quoteTtl``; buy it by submitting with the tag
  ``shepherd.quote=ID`` (and ``shepherd.deadline=`` for a later point of the curve), or over gRPC.
* ``GET /ws/v1/shepherd/quotes/{id}`` — a quote again.
* ``GET /ws/v1/shepherd/deadlines[?queue=]`` — every app that bought a deadline, earliest deadline first,
  with its price, estimate, remaining work, laxity and status (ON_TRACK, AT_RISK, MET, MISSED).
* ``GET /ws/v1/shepherd/apps/{id}/slo`` and ``PUT /ws/v1/shepherd/apps/{id}/deadline`` (``rest.app_slo``).

Times are milliseconds since the epoch, as everywhere in YARN's REST API; prices are tokens (one token buys
one unit-second, a unit being the deadline unit container, by default 1024 MB and 1 vcore).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request

from am.jobspec import JobSpecError, parse_job
from common.errors import BadRequest
from rm.core.deadlines.system import DeadlineSystem, Quote
from rm.core.entities import App
from rm.service.deadline_report import deadline_report
from rm.service.rest.app_slo import add_app_slo_routes
from rm.service.rest.errors import check_writer, json_object
from rm.service.rest.extras import SHEPHERD

if TYPE_CHECKING:
    from rm.service.operations import Operations
    from rm.service.server import ResourceManager

QUOTES = f"{SHEPHERD}/quotes"
DEADLINES = f"{SHEPHERD}/deadlines"
QUOTE_EXAMPLE = {
    "queue": "default",
    "job": {"id": "nightly-etl", "stages": [
        {"name": "extract", "tasks": 8, "duration_s": 30, "memory_mb": 1024, "command": "..."},
        {"name": "load", "tasks": 1, "duration_s": 20, "memory_mb": 1024, "parents": ["extract"],
         "command": "..."}]},
}


def _ms(t: float) -> int:
    return round(t * 1000)


def quote_json(q: Quote) -> dict[str, Any]:
    est = q.estimate
    return {
        "id": q.quote_id, "queue": str(q.queue), "job": q.job.name, "created": _ms(q.created),
        "expires": _ms(q.expires),
        "estimate": {"mean": round(est.mean, 3), "stddev": round(est.std, 3), "piUpper": round(est.upper, 3),
                     "z": est.z, "method": est.method, "runs": est.runs,
                     "phases": [{"mean": round(p.mean, 3), "stddev": round(p.std, 3), "piUpper": round(p.upper, 3),
                                 "tasks": s.tasks, "units": s.units}
                                for p, s in zip(est.phases, est.shapes, strict=True)]},
        "criticalPath": round(q.price.critical_path, 3),
        "earliestFinish": _ms(q.price.earliest),
        "curve": [{"deadline": _ms(p.deadline), "price": round(p.price, 4), "jumpAhead": round(p.jump_ahead, 4),
                   "jumpsAhead": p.jumps} for p in q.price.curve],
    }


def deadline_json(app: App, system: DeadlineSystem, now: float) -> dict[str, Any]:
    """What an app that bought a deadline is promised and how it stands (``{}`` for an app without one)."""
    d = deadline_report(app, system, now)
    if d is None:
        return {}
    return {
        "id": app.app_id, "name": app.name, "queue": str(app.queue), "user": app.user, "state": app.state,
        "deadline": _ms(d.deadline), "price": round(d.price, 2), "earliestFinish": _ms(d.earliest),
        "estimate": {"mean": round(d.mean, 3), "stddev": round(d.std, 3), "piUpper": round(d.upper, 3),
                     "z": d.z, "method": d.method, "runs": d.runs},
        "quoteId": d.quote_id or None, "remainingWork": round(d.remaining, 3),
        "laxity": None if d.laxity is None else round(d.laxity, 3), "status": d.status,
        "finishedTime": _ms(app.finish_time) if app.final else None,
    }


def add_deadline_routes(api: FastAPI, rm: ResourceManager, ops: Operations) -> None:
    secret = rm.cfg.client_secret

    @api.post(QUOTES, tags=["shepherd"],
              summary="A price–deadline quote for a job about to be submitted: its estimate with a prediction "
                      "interval, earliest feasible finish and price curve",
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                  "schema": {"type": "object"}, "example": QUOTE_EXAMPLE}}}})
    async def quote(request: Request) -> dict[str, Any]:
        who = check_writer(request, secret)
        body = await json_object(request)
        user = who.user if secret else request.query_params.get("user.name") or str(body.get("user") or "dr.who")
        queue = body.get("queue") or "default"
        if not isinstance(queue, str):
            raise BadRequest("queue: a queue name is a string")
        job = body.get("job")
        if job is not None:
            if not isinstance(job, dict):
                raise BadRequest("job: a job file as a JSON object")
            try:
                spec = parse_job(job, where="the job")
            except JobSpecError as exc:
                raise BadRequest(str(exc)) from None
            q = ops.quote(queue=body.get("queue") or spec.queue, user=user, name=spec.name or spec.id,
                          job_spec_json=json.dumps(spec.to_dict()))
        else:
            name = body.get("name")
            tags = body.get("tags") or []
            if not isinstance(name, str) or not name.strip():
                raise BadRequest("a quote needs a job (a job file) or the name of a job that ran before")
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise BadRequest("tags: a list of strings")
            q = ops.quote(queue=queue, user=user, name=name, app_type=str(body.get("applicationType") or "YARN"),
                          tags=tags)
        return {"quote": quote_json(q)}

    @api.get(f"{QUOTES}/{{quote_id}}", tags=["shepherd"], summary="A quote again (it may have expired)")
    async def get_quote(quote_id: str) -> dict[str, Any]:
        return {"quote": quote_json(ops.quote_of(quote_id))}

    @api.get(DEADLINES, tags=["shepherd"],
             summary="Apps that bought a deadline, earliest deadline first: price, estimate, laxity, status")
    async def deadlines(queue: str | None = None) -> dict[str, Any]:
        now = rm.now()
        system = rm.state.deadlines
        return {"deadlines": {"deadline": [deadline_json(a, system, now) for a in ops.deadline_apps(queue)]}}

    add_app_slo_routes(api, rm, ops)  # one app against its deadline, and its deadline changed
