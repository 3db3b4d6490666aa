"""The application list (``GET /ws/v1/cluster/apps``) with YARN's filters, built for many apps: the figures every
report shares are worked out once per answer (``render.AppsView``), reports are encoded with orjson and joined
as bytes, and the report of an app that ended, which no longer changes, is encoded once and kept (``EndedReports``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import orjson

from common.errors import BadRequest
from common.ids import AppId, QueuePath
from rm.core.entities import App
from rm.core.records import APP_STATES, FINAL_STATUSES
from rm.service.rest import render
from rm.service.rest.cluster import parse_states

if TYPE_CHECKING:
    from rm.service.operations import Operations
    from rm.service.server import ResourceManager

DESELECTABLE = ("resourceRequests",)


class EndedReports:
    """The encoded reports of apps that ended, per (app, full or restricted, with requests or not), and the apps
    in submission order. An app's report is kept once its end is in the store (before, it is reported as it was,
    YARN's FINAL_SAVING); it is then fixed but for a later change the ledger records, which the app's
    ``changes`` count tells. A report is kept only while its app is."""

    def __init__(self) -> None:
        self._docs: dict[tuple[AppId, bool, bool], tuple[int, bytes]] = {}
        self._order: list[App] = []
        self._order_of: tuple[object, int, AppId | None] | None = None  # (ledger, apps, last app) of the order

    def in_order(self, rm: ResourceManager) -> list[App]:
        """Every app, oldest submission first (sorted again only when apps came or went)."""
        apps = rm.state.apps
        key = (rm.state, len(apps), next(reversed(apps), None))
        was = self._order_of
        if was is None or was[0] is not rm.state or was[1:] != key[1:]:
            self._order = sorted(apps.values(), key=lambda a: (a.submit_time, a.app_id))
            self._order_of = key
        return self._order

    def encoded(self, rm: ResourceManager, app: App, view: render.AppsView, *, with_requests: bool,
                full: bool) -> bytes:
        if not app.final or app.app_id in rm.state.saving:  # running, or its end not stored yet (FINAL_SAVING)
            return orjson.dumps(render.app_json(rm, app, with_requests=with_requests, full=full, view=view))
        key = (app.app_id, full, with_requests)
        kept = self._docs.get(key)
        if kept is not None and kept[0] == app.changes:
            return kept[1]
        doc = orjson.dumps(render.app_json(rm, app, with_requests=with_requests, full=full, view=view))
        self._docs[key] = (app.changes, doc)
        return doc

    def prune(self, rm: ResourceManager) -> None:
        """Forget the reports of apps the RM no longer keeps (once they are a good part of what is kept)."""
        if len(self._docs) > 4 * len(rm.state.apps) + 1024:
            apps = rm.state.apps
            self._docs = {k: v for k, v in self._docs.items() if k[0] in apps}


def _long(name: str, value: str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        n = int(value)
    except ValueError:
        raise BadRequest(f"{name} must be a number of milliseconds, got {value!r}") from None
    if n < 0:
        raise BadRequest(f"{name} must be greater than 0")
    return n


def _range(prefix: str, begin: str | None, end: str | None) -> tuple[int, int]:
    b = _long(f"{prefix}Begin", begin)
    e = _long(f"{prefix}End", end)
    lo, hi = b if b is not None else 0, e if e is not None else 2**63 - 1
    if lo > hi:
        raise BadRequest(f"{prefix}End must be greater than {prefix}Begin")
    return lo, hi


def _queue_filter(rm: ResourceManager, ops: Operations, name: str) -> set[QueuePath]:
    """The queue named by full path or leaf name, with its descendants."""
    path = ops.queue_path(name)
    return {p for p in rm.state.queues if p == path or p.startswith(f"{path}.")}


def apps_document(rm: ResourceManager, ops: Operations, params: Mapping[str, str], reports: EndedReports,
                  may_view: Callable[[App], bool] = lambda app: True) -> bytes:
    """``{"apps": {"app": [...]}}``, encoded: the apps the filters select, oldest first, each in full for a caller
    ``may_view`` lets see it, else restricted."""
    states = parse_states(params.get("states"), APP_STATES, "application-state") | \
        parse_states(params.get("state"), APP_STATES, "application-state")
    finals = parse_states(params.get("finalStatus"), FINAL_STATUSES, "final status")
    limit = params.get("limit")
    max_rows: int | None = None
    if limit is not None:
        try:
            max_rows = int(limit)
        except ValueError:
            raise BadRequest(f"limit must be a number, got {limit!r}") from None
        if max_rows <= 0:
            raise BadRequest("limit value must be greater then 0")
    started = _range("startedTime", params.get("startedTimeBegin"), params.get("startedTimeEnd"))
    finished = _range("finishedTime", params.get("finishedTimeBegin"), params.get("finishedTimeEnd"))
    finished_given = "finishedTimeBegin" in params or "finishedTimeEnd" in params
    queues = _queue_filter(rm, ops, params["queue"]) if params.get("queue") else None
    types = {t.strip().lower() for t in params.get("applicationTypes", "").split(",") if t.strip()}
    tags = {t.strip().lower() for t in params.get("applicationTags", "").split(",") if t.strip()}
    deselect = {d.strip() for d in params.get("deSelects", "").split(",") if d.strip()}
    unknown = deselect - set(DESELECTABLE)
    if unknown:
        raise BadRequest(f"Invalid deSelects string {min(unknown)}; it should be one of "
                         f"{list(DESELECTABLE)}")
    user, name = params.get("user"), params.get("name")
    rows: list[bytes] = []
    view = render.AppsView(rm)
    with_requests = "resourceRequests" not in deselect
    for app in reports.in_order(rm):
        state, final_status = rm.state.reported_state(app)
        if (states and state not in states) or (finals and final_status not in finals):
            continue
        if (user and app.user != user) or (name and app.name != name):
            continue
        if queues is not None and (app.final or app.queue not in queues):
            continue
        if types and app.app_type.lower() not in types:
            continue
        if tags and not tags & {t.lower() for t in app.tags}:
            continue
        if not started[0] <= render.ms(app.start_time) <= started[1]:
            continue
        if finished_given and not (app.finish_time and finished[0] <= render.ms(app.finish_time) <= finished[1]):
            continue
        rows.append(reports.encoded(rm, app, view, with_requests=with_requests, full=may_view(app)))
        if max_rows is not None and len(rows) >= max_rows:
            break
    reports.prune(rm)
    return b'{"apps":{"app":[' + b",".join(rows) + b"]}}"


