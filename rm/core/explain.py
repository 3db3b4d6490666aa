"""Why is it pending: a stable reason code, and the numbers behind it, for one application.

Pure. The reasons come from the last scheduling plan's rejections (what the DRF stage decided and why),
completed with what only the state knows: whether any node runs at all, the app's position in its queue,
its share against its use, and the queue and AM limits that apply to it. The same primary reason
is what the app's diagnostics field shows while it waits (``waiting_line``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from random import Random
from typing import Any

from common.ids import AppId, QueuePath
from common.resources import Resources
from rm.core.context import CycleContext
from rm.core.deadlines.stage import DEADLINE_LENT, DEADLINE_SHORT
from rm.core.entities import App
from rm.core.events import Event, Journal, LedgerView, PlanApplied
from rm.core.model import QueueView
from rm.core.plan import (
    AM_LIMIT,
    BELOW_SHARE_ORDER,
    LOCALITY_WAIT,
    NO_CAPACITY_NOW,
    NO_NODE_FITS,
    QUEUE_AT_MAX,
    Plan,
    Rejection,
)
from rm.core.policies.api import AppOrder
from rm.core.policies.drf import DrfOrder
from rm.core.reservation.stage import RESERVATION_LENT, RESERVATION_USED_UP
from rm.core.state_types import AM_ASK_ID

# Reason codes beyond the scheduler's own (rm.core.plan): stable, shown by REST, the CLI and diagnostics.
APP_FINISHED = "APP_FINISHED"
NOT_WAITING = "NOT_WAITING"
AM_STARTING = "AM_STARTING"
NO_RUNNING_NODES = "NO_RUNNING_NODES"
NOT_YET_SCHEDULED = "NOT_YET_SCHEDULED"




@dataclass(frozen=True, slots=True)
class Reason:
    code: str
    message: str
    numbers: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AskWait:
    allocation_request_id: int
    is_am: bool
    capability: dict[str, int]
    num_containers: int
    reason: str
    detail: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Explanation:
    app_id: str
    state: str
    queue: str
    user: str
    reason: Reason
    asks: tuple[AskWait, ...]
    position: int | None  # 1-based among the apps of its queue that wait, in the scheduler's order
    waiting_in_queue: int
    used: dict[str, int]
    fair_share: dict[str, int]
    dominant_share: float
    fair_dominant_share: float
    limits: dict[str, Any]
    cycle_version: int | None  # the snapshot version the last plan was based on
    deadline: dict[str, Any] | None = None  # a bought deadline (MRM): when, status, owed now, work to go

    def to_dict(self) -> dict[str, Any]:
        return {
            "appId": self.app_id,
            "state": self.state,
            "queue": self.queue,
            "user": self.user,
            "reason": self.reason.code,
            "message": self.reason.message,
            "numbers": self.reason.numbers,
            "positionInQueue": self.position,
            "waitingInQueue": self.waiting_in_queue,
            "used": self.used,
            "fairShare": self.fair_share,
            "dominantShare": round(self.dominant_share, 6),
            "fairDominantShare": round(self.fair_dominant_share, 6),
            "limits": self.limits,
            "asks": [
                {"allocationRequestId": a.allocation_request_id, "am": a.is_am, "capability": a.capability,
                 "numContainers": a.num_containers, "reason": a.reason, "detail": a.detail}
                for a in self.asks
            ],
            "planVersion": self.cycle_version,
            "deadline": self.deadline,
        }


# ------------------------------------------------------------------------------------------ reasons


def _res(amounts: Mapping[str, Any] | Resources | None) -> str:
    if amounts is None:
        return "<>"
    r = amounts if isinstance(amounts, Resources) else Resources({k: int(v) for k, v in amounts.items()})
    return str(r) if not r.is_zero() else "<nothing>"


def _what(rej: Rejection) -> str:
    return "the AM container" if rej.allocation_request_id == AM_ASK_ID else \
        f"ask {rej.allocation_request_id}"


def reason_of(rej: Rejection) -> Reason:
    """A scheduler rejection as a reason with a sentence and its numbers."""
    d = dict(rej.detail)
    what = _what(rej)
    ask = _res(d.get("ask"))
    if rej.reason == NO_NODE_FITS:
        if not d.get("nodes"):
            return Reason(NO_RUNNING_NODES, "no NodeManager is RUNNING, so nothing can be placed", d)
        return Reason(NO_NODE_FITS, f"{what} asks for {ask} per container, more than any node has: the "
                      f"largest ({d.get('node', '')}) offers {_res(d.get('largest_node'))} in total", d)
    if rej.reason == NO_CAPACITY_NOW:
        return Reason(NO_CAPACITY_NOW, f"{what} asks for {ask}; the most any node has free is "
                      f"{_res(d.get('largest_free'))} ({d.get('node', '')}); waiting for containers to end", d)
    if rej.reason == QUEUE_AT_MAX:
        return Reason(QUEUE_AT_MAX, f"queue {d.get('queue', '')} is at its maximum capacity: it uses "
                      f"{_res(d.get('used'))} of at most {_res(d.get('max'))}, and {what} ({ask}) would "
                      "go past it", d)
    if rej.reason == AM_LIMIT:
        return Reason(AM_LIMIT, f"queue {d.get('queue', '')}'s AM resource limit is reached: AMs use "
                      f"{_res(d.get('am_used'))} of {_res(d.get('am_limit'))}, and this AM needs {ask}", d)
    if rej.reason == LOCALITY_WAIT:
        return Reason(LOCALITY_WAIT, f"{what} ({ask}) must run on nodes {d.get('nodes', [])} or racks "
                      f"{d.get('racks', [])}, and none of them has room", d)
    if rej.reason == BELOW_SHARE_ORDER:
        return Reason(BELOW_SHARE_ORDER, f"{what} ({ask}) waits for apps further below their fair share", d)
    if rej.reason == RESERVATION_LENT:
        lenders = ", ".join(str(r.get("app", "")) for r in d.get("reclaim", [])) or "nobody"
        return Reason(RESERVATION_LENT, f"{what} ({ask}) is within reservation {d.get('reservation', '')}'s "
                      f"guarantee, but {_res(d.get('short'))} of it is lent out; taking it back from {lenders}", d)
    if rej.reason == RESERVATION_USED_UP:
        return Reason(RESERVATION_USED_UP, f"reservation {d.get('reservation', '')} is in full use (it "
                      f"guarantees {_res(d.get('guaranteed'))} now); {what} ({ask}) waits for a fair share", d)
    if rej.reason in (DEADLINE_LENT, DEADLINE_SHORT):
        due = f"its deadline ({_time(d.get('deadline'))}) is owed {float(d.get('owed', 0.0)):g} units now"
        if rej.reason == DEADLINE_SHORT:
            return Reason(DEADLINE_SHORT, f"{what} ({ask}) waits: {due}, and nothing beyond anyone's fair share "
                          "is left to take back, so the deadline is at risk", d)
        lenders = ", ".join(str(r.get("app", "")) for r in d.get("reclaim", [])) or "nobody"
        return Reason(DEADLINE_LENT, f"{what} ({ask}) waits: {due}, and that room is lent out; taking it back "
                      f"from {lenders}", d)
    return Reason(rej.reason, f"{what} ({ask}) waits: {rej.reason}", d)


def _time(epoch: Any) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(epoch)))
    except (TypeError, ValueError, OverflowError):
        return "unknown"


def _importance(rej: Rejection, asks: Mapping[int, tuple[int, str]]) -> tuple[int, int, bool, int]:
    """AM first, then as the DRF stage orders asks: priority, DEFAULT before ALTRUISTIC, request id."""
    priority, ask_type = asks.get(rej.allocation_request_id, (0, "DEFAULT"))
    is_am = rej.allocation_request_id == AM_ASK_ID
    return (0 if is_am else 1, priority, ask_type != "DEFAULT", rej.allocation_request_id)


def rejections_by_app(plan: Plan | None) -> dict[AppId, list[Rejection]]:
    out: dict[AppId, list[Rejection]] = {}
    if plan is not None:
        for rej in plan.rejections.values():
            out.setdefault(rej.app_id, []).append(rej)
    return out


def pending_asks(app: App) -> dict[int, tuple[int, str, Resources, int]]:
    """The app's outstanding asks: request id -> (priority, ask type, capability, containers)."""
    att = app.current
    out: dict[int, tuple[int, str, Resources, int]] = {}
    if app.final or att is None or att.final:
        return out
    if att.am_ask_pending:
        out[AM_ASK_ID] = (-1, "DEFAULT", app.am_resource, 1)
    for a in att.asks.values():
        if a.num_containers > 0:
            out[a.allocation_request_id] = (a.priority, a.ask_type, a.capability, a.num_containers)
    return out


def primary_reason(app: App, rejections: Iterable[Rejection],
                   asks: dict[int, tuple[int, str, Resources, int]] | None = None) -> Reason | None:
    """The reason of the app's most important waiting ask, or None when no outstanding ask was refused
    (``asks``: its ``pending_asks``, when the caller has them)."""
    asks = pending_asks(app) if asks is None else asks
    live = [r for r in rejections if r.allocation_request_id in asks]
    if not live:
        return None
    kinds = {k: (v[0], v[1]) for k, v in asks.items()}
    return reason_of(min(live, key=lambda r: _importance(r, kinds)))


def waiting_line(reason: Reason | None) -> str:
    """The diagnostics line of a waiting app: ``[CODE] sentence``."""
    return f"[{reason.code}] {reason.message}" if reason is not None else ""


class WaitingNotes:
    """Listens to the ledger: after every applied plan, each unfinished app's diagnostics say why its asks
    still wait (``App.waiting``), and stop saying it once they no longer do. A ledger that keeps no records
    (the simulator's, a dry run's) has no clients to read them, and skips the work.

    A line is written again when what it says changes (which asks wait, for which reasons), and otherwise at
    most every ``refresh_s`` for its numbers (the free room it names moves every cycle): on a busy cluster
    every app waits at every cycle, and writing each line anew each time took a fifth of the cycle."""

    hears: frozenset[type] = frozenset({PlanApplied})

    def __init__(self, apps: Mapping[AppId, App], refresh_s: float = 1.0) -> None:
        self.apps = apps
        self.refresh_s = refresh_s
        self.waiting: dict[AppId, tuple[object, float]] = {}  # apps whose diagnostics show a waiting reason:
        #                                                       what the line says and when it was written

    def on_event(self, event: Event, journal: Journal) -> None:
        if not isinstance(event, PlanApplied) or not journal.keep:  # no store, no clients to read them
            return
        refused = rejections_by_app(event.plan)
        still: dict[AppId, tuple[object, float]] = {}
        for app_id in self.waiting.keys() | refused.keys():
            app = self.apps.get(app_id)
            if app is None:
                continue
            rejections = refused.get(app_id, ())
            asks = pending_asks(app)
            says = tuple(sorted((r.allocation_request_id, r.reason) for r in rejections
                                if r.allocation_request_id in asks))
            if not says:
                app.waiting = ""
                continue
            shown = self.waiting.get(app_id)
            if shown is not None and shown[0] == says and event.now - shown[1] < self.refresh_s and app.waiting:
                still[app_id] = shown
                continue
            app.waiting = waiting_line(primary_reason(app, rejections, asks))
            still[app_id] = (says, event.now)
        self.waiting = still


# ------------------------------------------------------------------------------------------ explain


def _queue_lineage(queues: Mapping[QueuePath, QueueView], leaf: QueuePath) -> list[QueuePath]:
    out: list[QueuePath] = []
    path: QueuePath | None = leaf
    while path is not None and path in queues and path not in out:
        out.append(path)
        path = queues[path].parent
    return out


def _scaled(capacity: Resources, fraction: float) -> dict[str, int]:
    return {r: math.floor(v * fraction + 1e-6) for r, v in capacity.amounts.items()}


def _limits(st: LedgerView, app: App, capacity: Resources) -> dict[str, Any]:
    q = st.queues.get(app.queue)
    if q is None:
        return {}
    lineage = set(_queue_lineage(st.queues, app.queue))
    queue_used = Resources()
    am_used = Resources()
    for other in st.apps.values():
        if other.final or other.queue != app.queue:
            continue
        queue_used = queue_used + other.used
        am_used = am_used + other.am_used
    return {
        "queue": {
            "path": q.path,
            "absoluteCapacity": round(q.abs_capacity * 100, 4),
            "absoluteMaxCapacity": round(q.abs_max_capacity * 100, 4),
            "guaranteed": _scaled(capacity, q.abs_capacity),
            "max": _scaled(capacity, q.abs_max_capacity),
            "used": queue_used.to_dict(),
            "state": "RUNNING" if q.running else "STOPPED",
            "ancestors": sorted(p for p in lineage if p != q.path),
        },
        "am": {
            "maxAmResourcePercent": round(q.max_am_share * 100, 4),
            "limit": _scaled(capacity, q.max_am_share * q.abs_max_capacity),
            "used": am_used.to_dict(),
        },
    }


def queue_position(st: LedgerView, app: App, order: AppOrder, now: float) -> tuple[int | None, int]:
    """(the app's place among the waiting apps of its queue in ``order``, how many wait), as the
    scheduler's own order ranks them on the current snapshot."""
    snap = st.snapshot()
    ctx = CycleContext(snap=snap, now=now, rng=Random(0), plan=Plan(based_on=snap.version))
    waiting = [v for a in st.apps.values()
               if a.queue == app.queue and pending_asks(a) and (v := snap.apps.get(a.app_id)) is not None]
    waiting.sort(key=lambda v: order.sort_key(v, ctx))
    position = next((i + 1 for i, v in enumerate(waiting) if v.app_id == app.app_id), None)
    return position, len(waiting)


def explain(st: LedgerView, app_id: str, order: AppOrder | None = None, *, now: float = 0.0) -> Explanation:
    """Why ``app_id`` waits (or that it does not), its place in its queue in ``order`` (the scheduler's
    fair-share order; DRF's by default). Raises the state's errors for unknown ids."""
    app = st.get_app(app_id)
    capacity = st.cluster_capacity()
    plan = st.last_plan
    asks = pending_asks(app)
    rejections = [r for r in rejections_by_app(plan).get(app.app_id, []) if r.allocation_request_id in asks]
    by_id = {r.allocation_request_id: r for r in rejections}
    waits = tuple(
        AskWait(allocation_request_id=k, is_am=k == AM_ASK_ID, capability=v[2].to_dict(), num_containers=v[3],
                reason=reason_of(by_id[k]).code if k in by_id else NOT_YET_SCHEDULED,
                detail=dict(by_id[k].detail) if k in by_id else {})
        for k, v in sorted(asks.items())
    )
    reason = _overall(st, app, asks, rejections)
    position, waiting_in_queue = queue_position(st, app, order or DrfOrder(), now)
    return Explanation(
        app_id=app.app_id, state=app.state, queue=app.queue, user=app.user, reason=reason, asks=waits,
        position=position, waiting_in_queue=waiting_in_queue, used=app.used.to_dict(),
        fair_share=app.fair_share.to_dict(),
        dominant_share=app.used.dominant_share(capacity) if not capacity.is_zero() else 0.0,
        fair_dominant_share=app.fair_share.dominant_share(capacity) if not capacity.is_zero() else 0.0,
        limits=_limits(st, app, capacity), cycle_version=plan.based_on if plan is not None else None,
        deadline=_deadline(st, app, now),
    )


def _deadline(st: LedgerView, app: App, now: float) -> dict[str, Any] | None:
    """What a deadline app was promised and is owed now (None for an app without a deadline)."""
    claim, deadline = app.terms.claim, app.terms.deadline
    if claim is None or deadline is None:
        return None
    system = st.deadline_system()
    if app.final:
        status = "MET" if app.final_status == "SUCCEEDED" and app.finish_time <= deadline + 1e-6 else "MISSED"
        return {"deadline": round(deadline * 1000), "status": status, "price": round(claim.price, 2)}
    book = system.books.get(app.queue)
    laxity = system.laxity(app.app_id, now)
    return {"deadline": round(deadline * 1000), "status": system.status(app.app_id) or "ON_TRACK",
            "price": round(claim.price, 2), "claimed": round(claim.upper, 1),
            "remainingWork": round(system.remaining_work(app.app_id), 1),
            "owedUnitsNow": round(book.owed(app.app_id, now), 2) if book is not None else 0.0,
            "laxity": None if laxity is None else round(laxity, 1)}


def _overall(st: LedgerView, app: App, asks: Mapping[int, Any], rejections: list[Rejection]) -> Reason:
    if app.final:
        return Reason(APP_FINISHED, f"the application is {app.state} ({app.final_status})",
                      {"finalStatus": app.final_status})
    found = primary_reason(app, rejections)
    if found is not None:
        return found
    if asks:
        if not any(n.schedulable for n in st.nodes.values()):
            return Reason(NO_RUNNING_NODES, "no NodeManager is RUNNING, so nothing can be placed",
                          {"nodes": len(st.nodes)})
        return Reason(NOT_YET_SCHEDULED, "its asks are newer than the last scheduling cycle; they are "
                      "considered in the next one", {"pending": {str(k): v[3] for k, v in asks.items()}})
    att = app.current
    if att is not None and not att.final and not att.registered and app.unmanaged:
        return Reason(AM_STARTING, "waiting for its unmanaged ApplicationMaster (run outside the cluster) to "
                      "register", {"attempt": att.attempt_id})
    if att is not None and not att.final and not att.registered and att.state in ("ALLOCATED", "LAUNCHED") \
            and app.state != "RUNNING":
        return Reason(AM_STARTING, f"its AM container {att.am_container_id} is {att.state}; waiting for it "
                      "to start", {"attempt": att.attempt_id, "node": att.node_id or ""})
    return Reason(NOT_WAITING, "nothing waits: every container it asked for is allocated",
                  {"runningContainers": len(app.containers)})
