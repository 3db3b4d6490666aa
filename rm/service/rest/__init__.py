"""HTTP front door: YARN's ResourceManager REST API (``/ws/v1/cluster``), shepherd's extensions
(``/ws/v1/shepherd``), Prometheus ``/metrics`` and the OpenAPI docs (``/docs``).

Paths, JSON shapes, field names, status codes and error bodies follow Hadoop YARN so existing clients
(yarn-api-client, scripts, UIs) work unchanged; docs/rest.md lists what is implemented. The handlers only
translate: every change is an operation of ``rm.service.operations``, shared with gRPC and Hadoop IPC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI

from rm.service.operations import Operations
from rm.service.rest.admin import add_admin_routes
from rm.service.rest.apps import add_app_routes
from rm.service.rest.audit import install_audit
from rm.service.rest.cluster import add_cluster_routes
from rm.service.rest.deadlines import add_deadline_routes
from rm.service.rest.errors import install_handlers, install_read_check, remote_exception
from rm.service.rest.extras import add_extra_routes
from rm.service.rest.job_profile import add_job_profile_routes
from rm.service.rest.openapi import install_openapi
from rm.service.rest.plan import add_plan_routes
from rm.service.rest.reservations import add_reservation_routes
from rm.service.rest.slo import add_slo_routes
from rm.service.rest.submit import add_submit_routes

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

__all__ = ["build_app", "remote_exception"]


def build_app(rm: ResourceManager) -> FastAPI:
    api = FastAPI(
        title="shepherd ResourceManager", version="0.1.0", docs_url=None, redoc_url=None,
        description="YARN's ResourceManager REST API (/ws/v1/cluster) and shepherd's extensions "
                    "(/ws/v1/shepherd). Errors are YARN RemoteException bodies.",
    )
    install_handlers(api)
    install_audit(api)
    if rm.cfg.authenticate_reads and rm.cfg.client_secret:
        install_read_check(api, rm.cfg.client_secret)
    install_openapi(api)
    ops = Operations(rm)
    add_cluster_routes(api, rm)
    add_submit_routes(api, rm, ops)  # before the app routes: /apps/new-application is not an app id
    add_app_routes(api, rm, ops)
    add_reservation_routes(api, rm, ops)
    add_slo_routes(api, rm, ops)
    add_job_profile_routes(api, rm)
    add_plan_routes(api, rm)
    add_deadline_routes(api, rm, ops)
    add_extra_routes(api, rm)
    add_admin_routes(api, rm, ops)
    from rm.service.ui import add_ui_routes  # here: the UI's pages import this package's renderers

    add_ui_routes(api, rm, ops)
    return api
