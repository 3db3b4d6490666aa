"""Application endpoints: list with YARN's filters, one app, attempts, and the state (kill), queue (move),
priority and timeout (lifetime) resources. Every write is one call of ``rm.service.operations``, which
validates, applies, persists and wakes the scheduler; these handlers parse and render."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from common.errors import ApplicationNotFound, BadRequest, NotFound
from rm.core.entities import App
from rm.core.records import APP_STATES
from rm.service.authz import Authorizer
from rm.service.rest import render
from rm.service.rest.app_list import EndedReports, apps_document
from rm.service.rest.cluster import BASE
from rm.service.rest.errors import check_reader, check_writer, json_object, not_found_app

if TYPE_CHECKING:
    from rm.service.operations import Operations
    from rm.service.server import ResourceManager

APPS = f"{BASE}/apps"


def get_app(rm: ResourceManager, app_id: str) -> App:
    try:
        return rm.state.get_app(app_id)
    except ApplicationNotFound:
        raise not_found_app(app_id) from None


def parse_expiry(text: Any) -> float:
    """YARN's ``yyyy-MM-dd'T'HH:mm:ss.SSSZ`` (offsets as +hhmm or +hh:mm, or Z) in epoch seconds."""
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("expiryTime must be an ISO-8601 time such as 2030-01-01T00:00:00.000+0000")
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadRequest(f"Invalid date format for expiryTime {text!r}; expected "
                         "yyyy-MM-dd'T'HH:mm:ss.SSSZ") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def add_app_routes(api: FastAPI, rm: ResourceManager, ops: Operations) -> None:
    secret = rm.cfg.client_secret
    authz = Authorizer(rm)
    reports = EndedReports()

    def viewed(request: Request, app_id: str) -> App:
        """The app, for a caller that may view it in full (403 AccessControlException otherwise)."""
        a = get_app(rm, app_id)
        authz.view(check_reader(request, secret), a)
        return a

    @api.get(APPS, tags=["apps"], summary="Applications, with YARN's filters (restricted reports of the apps "
                                          "the caller may not view)")
    async def apps(request: Request) -> Response:
        who = check_reader(request, secret)
        body = apps_document(rm, ops, request.query_params, reports, lambda a: authz.may_view(who, a))
        return Response(body, media_type="application/json")

    @api.get(f"{APPS}/{{app_id}}", tags=["apps"], summary="One application (restricted for a caller that may not "
                                                         "view it)")
    async def app(app_id: str, request: Request) -> dict[str, Any]:
        a = get_app(rm, app_id)
        return {"app": render.app_json(rm, a, full=authz.may_view(check_reader(request, secret), a))}

    @api.get(f"{APPS}/{{app_id}}/appattempts", tags=["apps"], summary="The attempts of an application")
    async def attempts(app_id: str, request: Request) -> dict[str, Any]:
        a = viewed(request, app_id)
        return {"appAttempts": {"appAttempt": [render.attempt_json(rm, att) for att in a.attempts]}}

    @api.get(f"{APPS}/{{app_id}}/appattempts/{{attempt_id}}", tags=["apps"], summary="One attempt")
    async def attempt(app_id: str, attempt_id: str, request: Request) -> dict[str, Any]:
        a = viewed(request, app_id)
        for att in a.attempts:
            if att.attempt_id == attempt_id:
                return {"appAttempt": render.attempt_json(rm, att)}
        raise NotFound(f"appAttempt with id: {attempt_id} not found")

    @api.get(f"{APPS}/{{app_id}}/state", tags=["apps"], summary="Application state")
    async def app_state(app_id: str) -> dict[str, Any]:
        return {"state": rm.state.reported_state(get_app(rm, app_id))[0]}

    @api.put(f"{APPS}/{{app_id}}/state", tags=["apps"], summary="Kill: {\"state\": \"KILLED\"}")
    async def put_state(app_id: str, request: Request) -> JSONResponse:
        who = check_writer(request, secret)
        body = await json_object(request)
        target = body.get("state")
        if not isinstance(target, str) or target.upper() not in APP_STATES:
            raise BadRequest(f"Invalid application-state {target!r} specified. It should be one of "
                             f"[{', '.join(APP_STATES)}]")
        a = get_app(rm, app_id)
        if target.upper() == a.state:
            return JSONResponse({"state": a.state})
        if target.upper() != "KILLED":
            raise BadRequest("Only 'KILLED' is allowed as a target state.")
        authz.modify(who, a)
        try:  # an app that has ended is answered with its state, as YARN does
            killed = await ops.kill(app_id, user=who.user)
        except ApplicationNotFound:
            raise not_found_app(app_id) from None
        return JSONResponse({"state": killed.app.state})

    @api.get(f"{APPS}/{{app_id}}/queue", tags=["apps"], summary="Application queue")
    async def app_queue(app_id: str) -> dict[str, Any]:
        return {"queue": get_app(rm, app_id).queue}

    @api.put(f"{APPS}/{{app_id}}/queue", tags=["apps"], summary="Move: {\"queue\": \"name\"}")
    async def put_queue(app_id: str, request: Request) -> dict[str, Any]:
        who = check_writer(request, secret)
        body = await json_object(request)
        queue = body.get("queue")
        if not isinstance(queue, str) or not queue.strip():
            raise BadRequest("the body must name the target queue: {\"queue\": \"name\"}")
        authz.move(who, get_app(rm, app_id), queue)
        return {"queue": (await ops.move(app_id, queue)).queue}

    @api.get(f"{APPS}/{{app_id}}/priority", tags=["apps"], summary="Application priority")
    async def app_priority(app_id: str) -> dict[str, Any]:
        return {"priority": get_app(rm, app_id).priority}

    @api.put(f"{APPS}/{{app_id}}/priority", tags=["apps"], summary="Change priority: {\"priority\": n}")
    async def put_priority(app_id: str, request: Request) -> dict[str, Any]:
        who = check_writer(request, secret)
        body = await json_object(request)
        value = body.get("priority")
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadRequest("the body must give an integer priority: {\"priority\": n}")
        authz.modify(who, get_app(rm, app_id))
        return {"priority": (await ops.set_priority(app_id, value)).priority}

    @api.get(f"{APPS}/{{app_id}}/timeouts", tags=["apps"], summary="Application timeouts")
    async def timeouts(app_id: str) -> dict[str, Any]:
        return {"timeouts": {"timeout": [render.timeout_json(get_app(rm, app_id), rm.now())]}}

    @api.get(f"{APPS}/{{app_id}}/timeouts/{{kind}}", tags=["apps"], summary="One timeout (LIFETIME)")
    async def timeout(app_id: str, kind: str) -> dict[str, Any]:
        a = get_app(rm, app_id)
        if kind.upper() != "LIFETIME":
            raise BadRequest(f"Invalid timeout type {kind}; the only type is LIFETIME")
        return {"timeout": render.timeout_json(a, rm.now())}

    @api.put(f"{APPS}/{{app_id}}/timeout", tags=["apps"],
             summary="Set the lifetime: {\"timeout\": {\"type\": \"LIFETIME\", \"expiryTime\": ISO-8601}}")
    async def put_timeout(app_id: str, request: Request) -> dict[str, Any]:
        who = check_writer(request, secret)
        body = await json_object(request)
        spec = body.get("timeout")
        if not isinstance(spec, dict):
            raise BadRequest("the body must be {\"timeout\": {\"type\": \"LIFETIME\", \"expiryTime\": ...}}")
        kind = spec.get("type", "LIFETIME")
        if not isinstance(kind, str) or kind.upper() != "LIFETIME":
            raise BadRequest(f"Invalid timeout type {kind!r}; the only type is LIFETIME")
        expiry = parse_expiry(spec.get("expiryTime"))
        authz.modify(who, get_app(rm, app_id))
        a = await ops.set_lifetime(app_id, expiry)
        return {"timeout": render.timeout_json(a, rm.now())}
