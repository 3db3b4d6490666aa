"""SLO proposals (Morpheus §4–5) under ``/ws/v1/shepherd/slo-proposals``: what inference proposes for each
recurring job, and the sign-off (accept, optionally with overrides) or rejection of a proposal. Thin over
``rm.service.slo`` (inference) and the SLO operations of ``rm.service.operations``; an accepted proposal is
a periodic reservation in the store before the answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request

from common.errors import BadRequest
from rm.core.reservation import slo
from rm.service.reservations import require_reservation_stage
from rm.service.rest.errors import check_writer, json_object
from rm.service.rest.extras import SHEPHERD

if TYPE_CHECKING:
    from rm.service.operations import Operations
    from rm.service.server import ResourceManager

SLO = f"{SHEPHERD}/slo-proposals"

ACCEPT_EXAMPLE = {"deadline": 25_200, "earliestStart": 3_600}


def add_slo_routes(api: FastAPI, rm: ResourceManager, ops: Operations) -> None:
    secret = rm.cfg.client_secret

    @api.get(SLO, tags=["shepherd"], summary="SLO proposals of every recurring job with enough runs "
             "(?status=proposed,accepted,rejected)")
    async def list_proposals(request: Request) -> dict[str, Any]:
        wanted = slo.parse_statuses(request.query_params.get("status"))
        found = await rm.slo.proposals()
        items = [rm.slo.render(d) for d in found if not wanted or d.status in wanted]
        return {"sloProposals": {"sloProposal": items}}

    @api.get(f"{SLO}/{{job}}", tags=["shepherd"],
             summary="One job's SLO proposal: period, earliest start, deadline, skyline and the reasons")
    async def get_proposal(job: str) -> dict[str, Any]:
        return {"sloProposal": rm.slo.render(await rm.slo.proposal(job))}

    @api.post(f"{SLO}/{{job}}/accept", tags=["shepherd"],
              summary="Sign off a proposal (optional overrides in seconds: deadline, earliestStart, period; "
                      "queue; skyline): it becomes a periodic reservation",
              openapi_extra={"requestBody": {"required": False, "content": {"application/json": {
                  "schema": {"type": "object"}, "example": ACCEPT_EXAMPLE}}}})
    async def accept(job: str, request: Request) -> dict[str, Any]:
        who = check_writer(request, secret)
        require_reservation_stage(rm)  # an accepted SLO is a periodic reservation
        body = await json_object(request, required=False)
        user = who.user if secret else request.query_params.get("user.name") or ""
        rid, d = await ops.accept_slo(job, body, user)
        return {"reservation-id": rid, "sloProposal": rm.slo.render(d)}

    @api.post(f"{SLO}/{{job}}/reject", tags=["shepherd"],
              summary="Reject a proposal: not proposed again until a new run of the job ends")
    async def reject(job: str, request: Request) -> dict[str, Any]:
        who = check_writer(request, secret)
        body = await json_object(request, required=False)
        if body:
            raise BadRequest(f"a reject request takes no fields, got {', '.join(sorted(body))}")
        user = who.user if secret else request.query_params.get("user.name") or ""
        return {"sloProposal": rm.slo.render(await ops.reject_slo(job, user))}
