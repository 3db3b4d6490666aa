"""A standby ResourceManager (``yarn.resourcemanager.ha.enabled``): while another RM holds the state store's lease
it waits to take over, serving only its web port — ``/ws/v1/cluster/info`` with ``haState: STANDBY``, ``/metrics``
and ``/healthz`` — and redirecting every other request to the active RM, as YARN's standby does. Its gRPC and
Hadoop IPC ports stay closed, so clients given every RM's address fail over to the one that answers."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from rm.service.store import StoreError

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

ENDPOINTS_TTL_S = 1.0  # how long the active RM's advertised addresses are trusted before they are read again


def build_standby_app(rm: ResourceManager) -> FastAPI:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    since = time.time()
    cache: dict[str, Any] = {"at": -ENDPOINTS_TTL_S, "endpoints": {}}

    async def active() -> dict[str, str]:
        if time.monotonic() - cache["at"] > ENDPOINTS_TTL_S:
            try:
                cache["endpoints"] = await rm.in_store(rm.store.active_endpoints)
            except StoreError:
                cache["endpoints"] = {}
            cache["at"] = time.monotonic()
        got: dict[str, str] = cache["endpoints"]
        return got

    @app.get("/ws/v1/cluster/info")
    async def info() -> dict[str, Any]:
        endpoints = await active()
        return {"clusterInfo": {
            "id": 0, "startedOn": int(since * 1000), "state": "STARTED", "haState": "STANDBY",
            "rmStateStoreName": "shepherd.SqlStateStore",
            "haZooKeeperConnectionState": "ResourceManager HA through the state store's lease",
            "activeResourceManager": endpoints.get("rest", ""),
        }}

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "standby"}

    @app.get("/metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse("# HELP shepherd_rm_active 1 when this ResourceManager is the active one\n"
                                 "# TYPE shepherd_rm_active gauge\nshepherd_rm_active 0\n")

    @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
    async def redirect(path: str, request: Request) -> Response:
        rest = (await active()).get("rest", "")
        if not rest:
            return JSONResponse(status_code=503, content={"RemoteException": {
                "exception": "StandbyException", "javaClassName": "org.apache.hadoop.ipc.StandbyException",
                "message": "This is a standby ResourceManager, and the active one is not known yet"}})
        query = f"?{request.url.query}" if request.url.query else ""
        # 307 keeps the method and the body, so writes are redirected as they were sent
        return RedirectResponse(f"{rest.rstrip('/')}/{path}{query}", status_code=307,
                                headers={"X-Shepherd-Standby": "true"})

    return app
