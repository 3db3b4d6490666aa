"""Administration under ``/ws/v1/shepherd/admin``: decommission a node, gracefully or at once, and recommission it
(YARN's ``rmadmin -refreshNodes [-g TIMEOUT]``); issue a user its own credentials. Cluster admins only
(``yarn.admin.acl``)."""

from __future__ import annotations

import base64
import math
import re
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request

from common.errors import BadRequest
from rm.service.authz import DEFAULT_TOKEN_LIFETIME_S, MAX_TOKEN_LIFETIME_S, Authorizer, issue_user_token
from rm.service.limits import MAX_NAME
from rm.service.operations import Operations
from rm.service.rest import render
from rm.service.rest.errors import check_writer, json_object

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

ADMIN = "/ws/v1/shepherd/admin"
TIMEOUT_KEY = "gracefulTimeoutSeconds"
TOKEN_EXAMPLE = {"user": "alice", "lifetimeSeconds": 604800}
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]*")


def token_request(body: dict[str, Any]) -> tuple[str, float]:
    """(user, lifetime in seconds) of a token request; anything else is a 400."""
    unknown = sorted(set(body) - {"user", "lifetimeSeconds"})
    if unknown:
        raise BadRequest(f"unknown field {unknown[0]!r}; the body is {{\"user\": NAME, \"lifetimeSeconds\": N}}")
    user = body.get("user")
    if not isinstance(user, str) or len(user) > MAX_NAME or not _USER.fullmatch(user):
        raise BadRequest("user: a user name (letters, digits, _ . @ -)")
    lifetime = body.get("lifetimeSeconds", DEFAULT_TOKEN_LIFETIME_S)
    if isinstance(lifetime, bool) or not isinstance(lifetime, int | float) or not math.isfinite(lifetime) \
            or not 0 < lifetime <= MAX_TOKEN_LIFETIME_S:
        raise BadRequest(f"lifetimeSeconds: a number of seconds above 0 and at most {MAX_TOKEN_LIFETIME_S:.0f}")
    return user, float(lifetime)


def graceful_timeout(body: dict[str, Any]) -> float | None:
    """The graceful timeout a decommission body asks for (None: at once); anything else is a 400."""
    unknown = sorted(set(body) - {TIMEOUT_KEY})
    if unknown:
        raise BadRequest(f"unknown field {unknown[0]!r}; the body is {{\"{TIMEOUT_KEY}\": SECONDS}} or empty")
    value = body.get(TIMEOUT_KEY)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise BadRequest(f"{TIMEOUT_KEY} must be a number of seconds >= 0, not {value!r}")
    return float(value)


def add_admin_routes(api: FastAPI, rm: ResourceManager, ops: Operations) -> None:
    @api.post(f"{ADMIN}/nodes/{{node_id}}/decommission", tags=["shepherd"],
              summary="Decommission a node (YARN's refreshNodes): with gracefulTimeoutSeconds it is DECOMMISSIONING "
                      "(no new containers; running ones finish) until it runs nothing or the timeout passes, then "
                      "DECOMMISSIONED (what still runs is killed) and its NodeManager shuts down; without, at once")
    async def decommission(node_id: str, request: Request) -> dict[str, Any]:
        Authorizer(rm).admin(check_writer(request, rm.cfg.client_secret), "decommission")
        timeout = graceful_timeout(await json_object(request, required=False))
        done = await ops.decommission(node_id, timeout)
        return {"node": render.node_json(done.node, rm.now()), "changed": done.changed}

    @api.post(f"{ADMIN}/nodes/{{node_id}}/recommission", tags=["shepherd"],
              summary="Take a decommissioning node back into service at once, or let a decommissioned one "
                      "register again (NEW until its NodeManager is started again)")
    async def recommission(node_id: str, request: Request) -> dict[str, Any]:
        Authorizer(rm).admin(check_writer(request, rm.cfg.client_secret), "recommission")
        await json_object(request, required=False)
        done = await ops.recommission(node_id)
        return {"node": render.node_json(done.node, rm.now()), "changed": done.changed}

    @api.post(f"{ADMIN}/tokens", tags=["shepherd"],
              summary="Issue a user its own credentials (cluster admins only): a bearer token for REST and gRPC, "
                      "and a Hadoop token file (base64) holding an RM delegation token for Hadoop IPC. The user is "
                      "then who its calls are made for, and the ACLs are checked for it",
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                  "schema": {"type": "object"}, "example": TOKEN_EXAMPLE}}}})
    async def issue_token(request: Request) -> dict[str, Any]:
        who = check_writer(request, rm.cfg.client_secret)
        Authorizer(rm).admin(who, "issueToken")
        user, lifetime = token_request(await json_object(request))
        secret = rm.cfg.client_secret
        if not secret:
            raise BadRequest("this ResourceManager runs without a client secret (insecure): it issues no tokens")
        now = rm.now()
        out: dict[str, Any] = {"user": user, "token": issue_user_token(secret, user, now=now, lifetime_s=lifetime),
                               "expires": int((now + lifetime) * 1000)}
        if rm.ipc is not None and rm.ipc.client_address:
            out["hadoopTokenFile"] = base64.b64encode(rm.ipc.token_file(user)).decode("ascii")
        return {"userToken": out}
