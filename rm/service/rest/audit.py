"""One audit line per REST write (every method but GET, HEAD and OPTIONS under /ws), allowed or refused."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response

from rm.service import audit

_APP = r"/ws/v1/cluster/apps/(?P<app>[^/]+)"
_RES = "/ws/v1/cluster/reservation"
_OPERATIONS: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (method, re.compile(path + "$"), op) for method, path, op in (
        ("POST", "/ws/v1/cluster/apps/new-application", audit.NEW_APP),
        ("POST", "/ws/v1/cluster/apps", audit.SUBMIT_APP),
        ("PUT", f"{_APP}/state", audit.KILL_APP),
        ("PUT", f"{_APP}/queue", audit.MOVE_APP),
        ("PUT", f"{_APP}/priority", audit.UPDATE_PRIORITY),
        ("PUT", f"{_APP}/timeout", audit.UPDATE_TIMEOUTS),
        ("PUT", "/ws/v1/shepherd/apps/(?P<app>[^/]+)/deadline", audit.UPDATE_DEADLINE),
        ("POST", f"{_RES}/new-reservation", audit.NEW_RESERVATION),
        ("POST", f"{_RES}/submit", audit.SUBMIT_RESERVATION),
        ("POST", f"{_RES}/update", audit.UPDATE_RESERVATION),
        ("POST", f"{_RES}/delete", audit.DELETE_RESERVATION),
        ("POST", "/ws/v1/shepherd/slo/.+/(accept|reject)", audit.SLO_DECISION),
        ("POST", "/ws/v1/shepherd/plan", audit.PLAN),
        ("POST", "/ws/v1/shepherd/admin/refresh-queues", audit.REFRESH_QUEUES),
        ("POST", "/ws/v1/shepherd/admin/tokens", audit.ISSUE_USER_TOKEN),
        ("POST", "/ws/v1/shepherd/admin/nodes/[^/]+/decommission", audit.DECOMMISSION_NODE),
        ("POST", "/ws/v1/shepherd/admin/nodes/[^/]+/recommission", audit.RECOMMISSION_NODE),
    ))
_READS = ("GET", "HEAD", "OPTIONS")


def operation(method: str, path: str) -> tuple[str, str]:
    """(YARN's name of the operation, the app id the path names, if any)."""
    for m, pattern, op in _OPERATIONS:
        hit = pattern.match(path) if m == method else None
        if hit:
            return op, hit.groupdict().get("app") or ""
    return f"{method} {path}", ""


def install_audit(api: FastAPI) -> None:
    @api.middleware("http")
    async def _audit(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request.method in _READS or not request.url.path.startswith("/ws/"):
            return await call_next(request)
        response = await call_next(request)
        op, app_id = operation(request.method, request.url.path)
        ok = response.status_code < 400
        audit.record(
            user=getattr(request.state, "audit_user", "") or request.query_params.get("user.name", ""), ip=request.client.host if request.client else "",
            operation=op, target=audit.REST, ok=ok, app_id=app_id or getattr(request.state, "audit_app", ""),
            description="" if ok else getattr(request.state, "audit_refusal", f"HTTP {response.status_code}"))
        return response
