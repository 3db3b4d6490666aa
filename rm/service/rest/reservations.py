"""YARN's reservation REST API (``/ws/v1/cluster/reservation/...``): ``rm.core.reservation.yarn`` parses and
renders the JSON shapes, the reservation operations of ``rm.service.operations`` do the rest (every change
is in the store before the answer). ``GET /ws/v1/shepherd/reservation-plans`` adds what YARN's API does not
say: each reservable queue's plan capacity, step and reservation ids (``shepherd reservation`` charts against
it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from rm.core.reservation import yarn
from rm.service.authz import Authorizer
from rm.service.reservations import require_reservation_stage
from rm.service.rest.cluster import BASE
from rm.service.rest.errors import check_writer, json_object
from rm.service.rest.extras import SHEPHERD

if TYPE_CHECKING:
    from rm.service.operations import Operations
    from rm.service.server import ResourceManager

RESERVATION = f"{BASE}/reservation"
PLANS = f"{SHEPHERD}/reservation-plans"

SUBMIT_EXAMPLE = {
    "queue": "default",
    "reservation-id": "reservation_1700000000000_0001",
    "reservation-definition": {
        "arrival": 1765000000000,
        "deadline": 1765003600000,
        "reservation-name": "nightly",
        "reservation-requests": {
            "reservation-request-interpreter": 1,
            "reservation-request": [{"capability": {"memory": 1024, "vCores": 1}, "num-containers": 4,
                                     "min-concurrency": 1, "duration": 600000}],
        },
    },
}


def add_reservation_routes(api: FastAPI, rm: ResourceManager, ops: Operations) -> None:
    secret = rm.cfg.client_secret
    body_doc = {"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"type": "object"}, "example": SUBMIT_EXAMPLE}}}}

    @api.post(f"{RESERVATION}/new-reservation", tags=["reservations"], summary="A new reservation id (no body)")
    async def new_reservation(request: Request) -> dict[str, str]:
        check_writer(request, secret)
        return yarn.render_new_reservation(await ops.new_reservation())

    @api.post(f"{RESERVATION}/submit", tags=["reservations"], openapi_extra=body_doc,
              summary="Submit a reservation (200, empty body; 400 when the plan has no room)")
    async def submit(request: Request) -> Response:
        who = check_writer(request, secret)
        require_reservation_stage(rm)
        body = yarn.parse_submit(await json_object(request))
        Authorizer(rm).reserve(who, body.queue)
        await ops.submit_reservation(body.reservation_id, body.queue, body.definition, who.user)
        return Response(status_code=200)

    @api.post(f"{RESERVATION}/update", tags=["reservations"],
              summary="Replace a reservation's definition (try-and-swap: on failure the old one stays)")
    async def update(request: Request) -> Response:
        who = check_writer(request, secret)
        rid, definition = yarn.parse_update(await json_object(request))
        Authorizer(rm).change_reservation(who, rid)
        await ops.update_reservation(rid, definition)
        return Response(status_code=200)

    @api.post(f"{RESERVATION}/delete", tags=["reservations"], summary="Delete a reservation")
    async def delete(request: Request) -> Response:
        who = check_writer(request, secret)
        rid = yarn.parse_delete(await json_object(request))
        Authorizer(rm).change_reservation(who, rid)
        await ops.delete_reservation(rid)
        return Response(status_code=200)

    @api.get(f"{RESERVATION}/list", tags=["reservations"],
             summary="A queue's reservations (one object for one match, an array for several)")
    async def list_reservations(request: Request) -> dict[str, Any]:
        q = yarn.parse_list_query(request.query_params)
        infos = ops.list_reservations(q.queue, q.reservation_id, q.start_ms, q.end_ms, q.include_allocations)
        return yarn.render_list(infos)

    @api.get(PLANS, tags=["shepherd"],
             summary="Each reservable queue's plan: capacity, step and the ids of its reservations")
    async def reservation_plans() -> dict[str, Any]:
        return {"reservationPlans": {"plan": [
            {"queue": p.queue, "capacity": yarn.resource_json(p.capacity), "stepMs": p.step_ms,
             "reservationIds": list(p.reservation_ids)}
            for p in ops.reservation_plans()]}}
