"""The ResourceManager's web UI: server-rendered pages at ``/`` and under ``/ui``, from the same ledger and the
same REST renderers as ``/ws/v1/...`` (so every number agrees with the API), with their CSS and JS shipped in
this package (no CDN: it works on clusters without internet access). docs/ui.md describes the pages.

Handlers run on the RM's event loop, like the REST ones, so each page reads one consistent ledger.

An application's details are shown to whoever may view it (YARN's VIEW_APP, as on every other door): its owner,
the cluster's and its queue's administrators and the users of its VIEW_APP ACL. The reader is the user of the
credential the browser carries — the ``Authorization`` header, or the ``shepherd_credential`` cookie the sign-in
field in the header sets (the client secret or a user token) — else the anonymous web user ``dr.who``, who sees
other users' applications in YARN's restricted form.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from common.errors import Forbidden, NotFound, YarnError
from rm.service.authz import ANONYMOUS, Authorizer, Caller, viewer
from rm.service.rest.errors import bearer_of
from rm.service.ui.app_page import app_page
from rm.service.ui.apps import apps_page
from rm.service.ui.deadlines import deadlines_page
from rm.service.ui.nodes import node_page, nodes_page
from rm.service.ui.overview import overview_page
from rm.service.ui.page import STATIC, Reader, esc, page
from rm.service.ui.queues import queues_page
from rm.service.ui.reservations import reservations_page

if TYPE_CHECKING:
    from rm.service.operations import Operations
    from rm.service.server import ResourceManager

ASSETS = Path(__file__).resolve().parent / "static"
HTML_HEADERS = {"Cache-Control": "no-store"}
COOKIE = "shepherd_credential"  # set by ui.js from the sign-in field; path /ui, SameSite=Strict


def ui_reader(request: Request, client_secret: str | None) -> Reader:
    """Who reads a page: the user of the request's bearer credential (header, else the sign-in cookie), else
    ``dr.who``; on an insecure RM, ``?user.name=``. A credential that is refused reads as ``dr.who``, and the
    page says why."""
    token = bearer_of(request.headers.get("authorization", "")) or unquote(request.cookies.get(COOKIE, "")).strip()
    try:
        return Reader(viewer(client_secret, token, request.query_params.get("user.name", "")),
                      signed_in=bool(token), secured=bool(client_secret))
    except Forbidden as exc:
        return Reader(Caller(ANONYMOUS, authenticated=False), secured=True,
                      refused=f"the credential this browser holds was refused ({exc.message})")


def add_ui_routes(api: FastAPI, rm: ResourceManager, ops: Operations) -> None:
    api.mount(STATIC, StaticFiles(directory=ASSETS), name="ui-static")
    authz = Authorizer(rm)

    def html(text: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(text, status_code=status, headers=HTML_HEADERS)

    if rm.cfg.authenticate_reads and rm.cfg.client_secret:
        @api.middleware("http")
        async def _signed_in(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            """With authenticate-reads, every page (not its CSS and JS) is for a signed-in reader only; anyone
            else gets the sign-in field and nothing of the cluster."""
            path = request.url.path
            if path == "/":  # the sign-in cookie is for /ui only
                return RedirectResponse("/ui", status_code=307)
            if path.startswith("/ui") and not path.startswith(STATIC + "/"):
                reader = ui_reader(request, rm.cfg.client_secret)
                if not reader.signed_in or reader.refused:
                    body = ('<p class="warn">This ResourceManager shows its pages to signed-in readers only: '
                            "enter the client secret or a user token above.</p>")
                    return html(page("Sign in", "", body, now=rm.now(), refresh=False, reader=reader), 401)
            return await call_next(request)

    def missing(err: YarnError, active: str) -> HTMLResponse:
        """An id that names nothing (404) or is malformed (400), as a page rather than a JSON error."""
        back = f'<a href="/ui/{active}">Back to the list</a>' if active else '<a href="/ui">Overview</a>'
        body = f'<p class="warn">{esc(err.message)}.</p><p>{back}</p>'
        title = "Not found" if err.status == 404 else "Bad request"
        return html(page(title, active, body, now=rm.now(), refresh=False), err.status)

    @api.get("/", include_in_schema=False)
    @api.get("/ui", include_in_schema=False)
    @api.get("/ui/", include_in_schema=False)
    async def overview() -> HTMLResponse:
        return html(overview_page(rm))

    @api.get("/ui/apps", include_in_schema=False)
    async def apps(request: Request) -> HTMLResponse:
        reader = ui_reader(request, rm.cfg.client_secret)
        return html(apps_page(rm, dict(request.query_params), reader.view(authz)))

    @api.get("/ui/apps/{app_id}", include_in_schema=False)
    async def app(app_id: str, request: Request) -> HTMLResponse:
        reader = ui_reader(request, rm.cfg.client_secret)
        try:
            async with rm.cycle_lock:  # a waiting app's page explains why, as the explain call does
                return html(app_page(rm, app_id, reader.view(authz)))
        except YarnError as err:
            return missing(err, "apps")

    @api.get("/ui/nodes", include_in_schema=False)
    async def nodes() -> HTMLResponse:
        return html(nodes_page(rm))

    @api.get("/ui/nodes/{node_id}", include_in_schema=False)
    async def node(node_id: str) -> HTMLResponse:
        try:
            return html(node_page(rm, node_id))
        except YarnError as err:
            return missing(err, "nodes")

    @api.get("/ui/queues", include_in_schema=False)
    async def queues() -> HTMLResponse:
        return html(queues_page(rm))

    @api.get("/ui/reservations", include_in_schema=False)
    async def reservations(request: Request) -> HTMLResponse:
        return html(reservations_page(rm, dict(request.query_params)))

    @api.get("/ui/deadlines", include_in_schema=False)
    async def deadlines(queue: str | None = None) -> HTMLResponse:
        return html(deadlines_page(rm, ops, queue))

    @api.get("/ui/{rest:path}", include_in_schema=False)
    async def unknown(rest: str) -> HTMLResponse:
        return missing(NotFound(f"the UI has no page /ui/{rest}"), "")


__all__ = ["COOKIE", "add_ui_routes", "ui_reader"]
