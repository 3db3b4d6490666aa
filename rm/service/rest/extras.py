"""shepherd's own HTTP resources beside YARN's: Prometheus ``/metrics``, the explain endpoint under
``/ws/v1/shepherd``, and the OpenAPI docs at ``/docs`` and ``/redoc`` served from bundled assets (no CDN,
so they work on clusters without internet access)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from common.errors import ApplicationNotFound
from rm.core.explain import explain
from rm.core.policies.api import queue_order
from rm.service.authz import Authorizer
from rm.service.rest.errors import check_reader, check_writer, not_found_app
from rm.service.stages import app_stages

if TYPE_CHECKING:
    from rm.core.entities import App
    from rm.service.server import ResourceManager

log = logging.getLogger("shepherd.rm.rest")
SHEPHERD = "/ws/v1/shepherd"
ASSETS = "/static/docs"


def docs_assets() -> Path | None:
    """The Swagger UI and ReDoc files shipped by the fastapi-offline package, if it is installed."""
    try:
        import fastapi_offline
    except ImportError:
        return None
    path = Path(fastapi_offline.__file__).resolve().parent / "static"
    return path if (path / "swagger-ui-bundle.js").is_file() else None


def add_extra_routes(api: FastAPI, rm: ResourceManager) -> None:
    authz = Authorizer(rm)

    def known_app(app_id: str, request: Request) -> App:
        """The app, for a caller that may view it in full (what it waits for, its size and its stages are
        details of its run, as its attempts are): 403 AccessControlException otherwise."""
        try:
            app = rm.state.get_app(app_id)
        except ApplicationNotFound:
            raise not_found_app(app_id) from None
        authz.view(check_reader(request, rm.cfg.client_secret), app)
        return app

    @api.get("/metrics", tags=["shepherd"], summary="Prometheus metrics", response_class=PlainTextResponse)
    async def prometheus() -> Response:
        return Response(generate_latest(rm.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @api.get(f"{SHEPHERD}/apps/{{app_id}}/explain", tags=["shepherd"],
             summary="Why an application waits: a stable reason code and the numbers behind it")
    async def explain_app(app_id: str, request: Request) -> dict[str, Any]:
        known_app(app_id, request)
        try:
            async with rm.cycle_lock:  # its snapshot and the pipeline's order are the cycle's too
                return {"explanation": explain(rm.state, app_id, queue_order(rm.pipeline), now=rm.now()).to_dict()}
        except ApplicationNotFound:
            raise not_found_app(app_id) from None

    @api.post(f"{SHEPHERD}/admin/refresh-queues", tags=["shepherd"],
              summary="Read the queue tree again from the configuration files and apply it (YARN's refreshQueues); "
                      "refused with the old queues kept when the new tree is invalid or strands unfinished apps. "
                      "With dryRun=true: validate the files against the running RM and apply nothing")
    async def refresh_queues(request: Request, dryRun: bool = False) -> dict[str, Any]:
        authz.admin(check_writer(request, rm.cfg.client_secret), "refreshQueues")
        leaves = await rm.refresh_queues(dry_run=dryRun)  # a refusal is answered as a RemoteException
        return {"queues": leaves, "dryRun": dryRun}

    @api.get(f"{SHEPHERD}/apps/{{app_id}}/estimate", tags=["shepherd"],
             summary="The RM's own estimate of an application's size, from its finished tasks (SLearn's data): "
                     "state (ESTIMATED, DECLARED, THIN, UNKNOWN), task groups, total and remaining task-seconds")
    async def estimate_app(app_id: str, request: Request) -> dict[str, Any]:
        app = known_app(app_id, request)
        out = rm.state.sizes.describe(app.app_id)
        size = app.terms.size
        out["best"] = None if size is None else {"remainingTaskSeconds": round(size.remaining_s, 3),
                                                 "totalTaskSeconds": size.total_s, "source": size.source,
                                                 "confidence": size.confidence}
        return {"estimate": out}

    @api.get(f"{SHEPHERD}/sampling", tags=["shepherd"],
             summary="SLearn's sampler: whether the scheduler samples wide apps of unknown size, the ratio rule and "
                     "the ratio the next one gets, each ratio's jobs sampled and finished and its score (mean "
                     "completion time over runtime), the apps held to their pilots now")
    async def sampling_state(request: Request) -> dict[str, Any]:
        check_reader(request, rm.cfg.client_secret)
        return {"sampling": rm.state.sizes.sampler()}

    @api.get(f"{SHEPHERD}/apps/{{app_id}}/stages", tags=["shepherd"],
             summary="A DAG job's stages, in its job file's order: tasks done, running, waiting for a container and "
                     "failed, and each stage's state (SUCCEEDED, RUNNING, WAITING, READY, BLOCKED, FAILED, KILLED); "
                     "empty for an app without a job file")
    async def stages_of_app(app_id: str, request: Request) -> dict[str, Any]:
        stages = app_stages(known_app(app_id, request), rm.state.containers.values())
        return {"stages": {"stage": [{"name": s.name, "parents": list(s.parents), "depth": s.depth, "tasks": s.tasks,
                                      "done": s.done, "running": s.running, "waiting": s.waiting,
                                      "failed": s.failed, "state": s.state} for s in stages]}}

    assets = docs_assets()
    if assets is None:
        log.warning("the fastapi-offline package is not installed: /docs and /redoc are off (/openapi.json works)")

        @api.get("/docs", include_in_schema=False, response_class=PlainTextResponse)
        async def no_docs() -> str:
            return "The API docs need the fastapi-offline package; the OpenAPI document is at /openapi.json\n"

        return
    api.mount(ASSETS, StaticFiles(directory=assets), name="docs-assets")

    @api.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json", title=f"{api.title} - API docs",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None, "defaultModelsExpandDepth": 0},
        )

    @api.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url="/openapi.json", title=f"{api.title} - API reference",
                              redoc_js_url=f"{ASSETS}/redoc.standalone.js",
                              redoc_favicon_url=f"{ASSETS}/favicon.png", with_google_fonts=False)
