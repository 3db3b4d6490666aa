"""Node administration under ``/ws/v1/shepherd/admin`` (YARN's ``rmadmin -refreshNodes [-g TIMEOUT]``): decommission
a node, gracefully or at once, and recommission it. Writes: they need the client secret, as every REST write."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request

from common.errors import BadRequest
from rm.service.operations import Operations
from rm.service.rest import render
from rm.service.rest.errors import check_writer, json_object

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

ADMIN = "/ws/v1/shepherd/admin"
TIMEOUT_KEY = "gracefulTimeoutSeconds"


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
        check_writer(request, rm.cfg.client_secret)
        timeout = graceful_timeout(await json_object(request, required=False))
        done = await ops.decommission(node_id, timeout)
        return {"node": render.node_json(done.node, rm.now()), "changed": done.changed}

    @api.post(f"{ADMIN}/nodes/{{node_id}}/recommission", tags=["shepherd"],
              summary="Take a decommissioning node back into service at once, or let a decommissioned one "
                      "register again (NEW until its NodeManager is started again)")
    async def recommission(node_id: str, request: Request) -> dict[str, Any]:
        check_writer(request, rm.cfg.client_secret)
        await json_object(request, required=False)
        done = await ops.recommission(node_id)
        return {"node": render.node_json(done.node, rm.now()), "changed": done.changed}
