"""YARN's error model for the REST API: every refusal is a RemoteException body with the right status,
and nothing the client sends can produce a 500.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from common.errors import ApplicationNotFound, BadRequest, NotFound, YarnError
from common.errors import Forbidden as CommonForbidden
from rm.service.authz import Caller, Unauthenticated, caller, viewer
from rm.service.limits import MAX_MESSAGE, parse_json_object

if TYPE_CHECKING:
    from rm.service.bounds_worker import BoundsChecks

log = logging.getLogger("shepherd.rm.rest")

MAX_BODY = MAX_MESSAGE  # the same bound as gRPC and Hadoop IPC


Unauthorized = Unauthenticated  # no credentials (401)


class Forbidden(YarnError):
    status = 403
    exception = "ForbiddenException"
    java_class = "org.apache.hadoop.yarn.webapp.ForbiddenException"


class TooLarge(YarnError):
    status = 413
    exception = "BadRequestException"
    java_class = "org.apache.hadoop.yarn.webapp.BadRequestException"


class MethodNotAllowed(YarnError):
    status = 405
    exception = "WebApplicationException"
    java_class = "javax.ws.rs.WebApplicationException"


class InternalError(YarnError):
    status = 500
    exception = "WebApplicationException"
    java_class = "javax.ws.rs.WebApplicationException"


RETRY_AFTER_S = 1  # a 503 (the state store is catching up) asks the client to come back this soon


def remote_exception(err: YarnError) -> JSONResponse:
    return JSONResponse(
        status_code=err.status,
        content={"RemoteException": {"exception": err.exception, "message": err.message,
                                     "javaClassName": err.java_class}},
        headers={"Retry-After": str(RETRY_AFTER_S)} if err.status == 503 else None,
    )


def install_handlers(api: FastAPI) -> None:
    @api.exception_handler(YarnError)
    async def _yarn(request: Request, exc: YarnError) -> JSONResponse:
        request.state.audit_refusal = f"{exc.exception}: {exc.message}"
        return remote_exception(exc)

    @api.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for e in exc.errors():
            where = ".".join(str(p) for p in e.get("loc", ()) if p not in ("query", "path", "body"))
            parts.append(f"{where}: {e.get('msg', 'invalid')}" if where else str(e.get("msg", "invalid")))
        request.state.audit_refusal = "; ".join(parts) or "invalid request"
        return remote_exception(BadRequest("; ".join(parts) or "invalid request"))

    @api.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return remote_exception(NotFound(f"no resource at {request.url.path}"))
        if exc.status_code == 405:
            return remote_exception(MethodNotAllowed(f"{request.method} is not supported on {request.url.path}"))
        err = BadRequest(str(exc.detail))
        err.status = exc.status_code
        return remote_exception(err)

    @api.middleware("http")
    async def _bounded(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        """A body announced larger than the RM takes is refused before it is read."""
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > MAX_BODY:
            return remote_exception(TooLarge(f"the request body is larger than {MAX_BODY} bytes"))
        return await call_next(request)

    @api.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return remote_exception(InternalError(f"internal error: {type(exc).__name__}"))


async def bounded_body(request: Request) -> bytes:
    """The request body, refused (413) as soon as more than ``MAX_BODY`` bytes have come: a body sent without a
    Content-Length (chunked), which the middleware cannot judge up front, is never held whole (S19)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise TooLarge(f"the request body is larger than {MAX_BODY} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def json_object(request: Request, *, required: bool = True, reduce: tuple[BoundsChecks, str] | None = None
                      ) -> dict[str, Any]:
    """The request body as a JSON object (an empty body is ``{}`` unless a body is required). ``reduce`` names
    the helper and its check that parse a big body off the event loop and hand back what the RM keeps of it."""
    body: bytes = await bounded_body(request)
    if not body.strip():
        if required:
            raise BadRequest("the request has no body; a JSON object is expected")
        return {}
    if reduce is not None and len(body) >= reduce[0].off_loop_bytes:
        body = await reduce[0].check(reduce[1], body) or body
    return parse_json_object(body)


def bearer_of(header: str) -> str:
    """The credential of an ``Authorization: Bearer ...`` header ("" for none or another scheme)."""
    return header[len("Bearer "):].strip() if header.startswith("Bearer ") else ""


def _credential(request: Request, secret: str | None) -> tuple[str, str]:
    """The bearer credential the request presents ("" for none), and the user it names (``?doAs=``,
    ``?user.name=``)."""
    header = request.headers.get("authorization", "")
    token = bearer_of(header)
    if secret and header and not token:
        raise Forbidden("the Authorization header must be Bearer <client secret or user token>")
    return token, request.query_params.get("doAs") or request.query_params.get("user.name") or ""


def check_writer(request: Request, secret: str | None) -> Caller:
    """The caller of a write (:mod:`rm.service.authz`): the client secret's owner, acting for ``?doAs=`` or
    ``?user.name=`` if given, or the user of a user token. Without a client secret (insecure) the name given."""
    token, acting_for = _credential(request, secret)
    try:
        who = caller(secret, token, acting_for)
    except CommonForbidden as exc:
        raise Forbidden(exc.message) from None
    request.state.audit_user = who.user
    return who


def check_reader(request: Request, secret: str | None) -> Caller:
    """The caller of a read: as for a write when the request presents a credential (a wrong one is refused);
    without one, the anonymous web user ``dr.who`` (:func:`rm.service.authz.viewer`)."""
    token, acting_for = _credential(request, secret)
    try:
        return viewer(secret, token, acting_for)
    except CommonForbidden as exc:
        raise Forbidden(exc.message) from None


def install_read_check(api: FastAPI, secret: str) -> None:
    """With ``shepherd.resourcemanager.authenticate-reads``: every read under ``/ws/`` and of ``/metrics`` needs a
    credential as a write does (Prometheus presents it as a bearer token). The web UI's pages ask for it
    themselves (``rm.service.ui``), as a page with the sign-in field."""
    @api.middleware("http")
    async def _reads(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        path = request.url.path
        if request.method in ("GET", "HEAD") and (path.startswith("/ws/") or path == "/metrics"):
            try:
                check_writer(request, secret)
            except YarnError as err:
                return remote_exception(err)
        return await call_next(request)


def not_found_app(app_id: str) -> NotFound:
    return NotFound(f"app with id: {app_id} not found")


def rest_errors(exc: YarnError, app_id: str = "") -> YarnError:
    """YARN's REST spelling of an error the core raised for the gRPC API."""
    if isinstance(exc, ApplicationNotFound):
        return not_found_app(app_id)
    return exc
