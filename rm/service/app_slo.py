"""How one app stands against its deadline (Jockey's and MRM's view of it), in one form for every door: the
REST ``/ws/v1/shepherd/apps/{id}/slo`` resource, the CLI's ``app slo`` and the metrics.

* **deadline**: the app's terms (bought or set at submission, or changed since); else, for a job file with
  ``deadline_s``, submission + ``deadline_s`` (the deadline its ApplicationMaster keeps by itself).
* **status**: ``NONE`` without a deadline; once the app ended ``MET`` (succeeded by the deadline) or
  ``MISSED``; while it runs, for an app holding a claim the deadline book's own status (``AT_RISK`` when its
  remaining work no longer fits by the deadline), else ``AT_RISK`` when the predicted completion is after the
  deadline, ``ON_TRACK`` otherwise.
* **predicted completion**: for an app holding a claim, the end of its claim's current layout in the book (by
  the deadline less the book's margin when it fits; as early as the free room allows when it does not); else
  a straight extrapolation of the progress its ApplicationMaster reports (start + elapsed / progress); None
  before any progress.
* **oracle**: Jockey's oracle allocation ⌈T / d⌉ in deadline units (by default 1024 MB and 1 vcore), T the
  estimated total work in unit-seconds and d the deadline less the submission time; ``oracle_now`` is the same
  for what is left, ⌈remaining work / (deadline − now)⌉.
* **requested guarantee**: what the AM asked to be guaranteed (``AppTerms.guarantee``); **granted**: the floor
  the ``guarantee`` stage served it in the last cycle applied (its request cut to its queue's budget, earliest
  deadline first; ``App.granted``, the value its AM hears in its allocate answers), 0 while no cycle granted
  it one (it neither holds nor asks for a container, or no cycle ran since it asked or since an RM restart),
  None when the scheduler has no such stage or the app ended.
* **above the oracle** (Jockey's impact measure, once the app ended): of the units its AM asked to be
  guaranteed over the run (its control trace, each request held until the next), the share above the oracle
  allocation of the work it did, ⌈work done / d⌉; the work done is its containers' unit-seconds (the AM's
  included), the dominant of memory and vcores. None without a deadline or a control trace.
* **model build**: how long the app's AM took to build its model of the job (Jockey's C(p, a) precompute),
  as it reported it; not kept across an RM restart.
* **trace**: the control decisions the app's AM reported in its allocate calls (Jockey's AM does, each period),
  the newest ``CONTROL_TRACE_CAP``: empty for other AMs. A running app's are kept in memory (after an RM
  restart the trace starts again from the AM's next report); an ended app's are stored with it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from common.ids import AppId
from common.resources import Resources
from rm.core.deadlines.system import MET, MISSED
from rm.core.deadlines_glue import job_of
from rm.core.entities import App
from rm.core.ledger import Ledger
from rm.core.policies.api import Stage
from rm.core.policies.guarantee import GuaranteeStage

ON_TRACK = "ON_TRACK"
AT_RISK = "AT_RISK"
NONE = "NONE"
SLO_STATUSES = (ON_TRACK, AT_RISK, MET, MISSED, NONE)


@dataclass(frozen=True, slots=True)
class AppSlo:
    app_id: AppId
    deadline: float | None  # seconds since the epoch
    deadline_source: str  # terms | job | none
    utility: tuple[tuple[float, float], ...] | None  # (seconds after submission, value)
    status: str
    progress: float  # 0..1, as the AM reports it
    predicted_finish: float | None  # seconds since the epoch
    total_work: float | None  # unit-seconds
    remaining_work: float | None  # unit-seconds
    unit: Resources
    oracle_units: int | None
    oracle_units_now: int | None
    requested: Resources | None
    granted: Resources | None
    claimed: bool  # it holds an admitted deadline in its queue's book
    trace: tuple[ControlRecord, ...] = field(default_factory=tuple)
    profile_runs: tuple[str, ...] = ()  # the earlier runs its AM was handed the profile of
    model_build_s: float | None = None  # how long its AM took to build its model (since the RM's start)
    work_done: float | None = None  # once it ended: the unit-seconds its containers held
    above_oracle: float | None = None  # once it ended: the share of its requested units above ⌈work_done / d⌉


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """One control decision of the app's AM, its times in the RM's clock (seconds since the epoch)."""

    time: float
    progress: float
    raw_units: int
    smoothed_units: float
    requested_units: int
    predicted_finish: float
    status: str
    held: bool
    pace: float = 1.0


def _job_file(app: App) -> dict[str, object]:
    if not app.job_spec_json:
        return {}
    try:
        loaded = json.loads(app.job_spec_json)
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _utility(spec: dict[str, object]) -> tuple[tuple[float, float], ...] | None:
    points = spec.get("utility")
    if not isinstance(points, list):
        return None
    try:
        return tuple((float(t) * 60.0, float(u)) for t, u in points)
    except (TypeError, ValueError):
        return None


def _oracle(work: float | None, seconds: float) -> int | None:
    if work is None or seconds <= 0:
        return None
    return math.ceil(work / seconds - 1e-9)


def work_done(app: App, unit: Resources) -> float:
    """The unit-seconds the app's containers held: the dominant of its memory- and vcore-seconds in units."""
    shares = [seconds / amount for seconds, amount in ((app.memory_seconds, unit.memory_mb),
                                                        (app.vcore_seconds, unit.vcores)) if amount > 0]
    return max(shares, default=0.0)


def share_above(trace: Sequence[ControlRecord], oracle: int, end: float) -> float | None:
    """Of the units requested over the trace (each request held until the next, the last until ``end``), the
    share above ``oracle``; None when nothing was requested."""
    asked = above = 0.0
    for c, nxt in zip(trace, [*trace[1:], None], strict=True):
        span = max(0.0, (end if nxt is None else nxt.time) - c.time)
        asked += c.requested_units * span
        above += max(0, c.requested_units - oracle) * span
    return above / asked if asked > 0 else None


def control_records(app: App) -> tuple[ControlRecord, ...]:
    """The app's control trace in the RM's clock."""
    return tuple(ControlRecord(heard - c.age_s, c.progress, c.raw_units, c.smoothed_units, c.requested_units,
                               heard + c.finish_in_s, c.status, c.held, c.pace) for heard, c in app.control)


def above_oracle(app: App, deadline: float | None, unit: Resources, trace: Sequence[ControlRecord],
                 now: float) -> float | None:
    """An ended app's share of requested units above the oracle of the work it did (see the module docstring)."""
    if deadline is None or deadline <= app.submit_time or not trace:
        return None
    oracle = _oracle(work_done(app, unit), deadline - app.submit_time) or 0
    return share_above(trace, oracle, app.finish_time or now)


def guarantee_stage(pipeline: Sequence[Stage]) -> GuaranteeStage | None:
    return next((s for s in pipeline if isinstance(s, GuaranteeStage)), None)


def deadline_of(app: App, spec: dict[str, object] | None = None) -> tuple[float | None, str]:
    """The app's deadline (seconds since the epoch) and where it comes from: ``terms``, ``job`` or ``none``."""
    if app.terms.deadline is not None:
        return app.terms.deadline, "terms"
    rel = (_job_file(app) if spec is None else spec).get("deadline_s")
    if isinstance(rel, int | float) and not isinstance(rel, bool) and rel > 0:
        return app.submit_time + float(rel), "job"
    return None, "none"


def met_deadline(app: App, deadline: float) -> bool:
    """An ended app met its deadline: it succeeded by then."""
    return app.final_status == "SUCCEEDED" and app.finish_time <= deadline + 1e-6


def granted_floor(app: App, pipeline: Sequence[Stage]) -> Resources | None:
    """The floor the ``guarantee`` stage serves an unfinished app that asks for one (see the module docstring;
    None: no such stage, no guarantee asked, or the app ended)."""
    if app.final or app.terms.guarantee is None or guarantee_stage(pipeline) is None:
        return None
    return app.granted if app.granted is not None else Resources()


def standing(state: Ledger, app: App, deadline: float | None, now: float) -> tuple[str, float | None]:
    """The app's SLO status against ``deadline`` and its predicted completion (see the module docstring)."""
    system = state.deadlines
    held = system.held.get(app.app_id)
    predicted: float | None = None
    if app.final:
        predicted = app.finish_time
    elif held is not None:
        book = system.books[held.queue]
        c = book.claims.get(app.app_id)
        if c is not None and len(c.placed.rate):
            nz = np.flatnonzero(c.placed.rate > 1e-9)
            predicted = (c.placed.start + (int(nz[-1]) + 1 if len(nz) else 0)) * book.dt
    elif app.progress > 0:
        predicted = app.start_time + (now - app.start_time) / app.progress
    if deadline is None:
        return NONE, predicted
    if app.final:
        return (MET if met_deadline(app, deadline) else MISSED), predicted
    if held is not None:
        return system.status(app.app_id) or ON_TRACK, predicted
    late = predicted is not None and predicted > deadline + 1e-6
    return (AT_RISK if late or now > deadline else ON_TRACK), predicted


def app_slo(state: Ledger, app: App, pipeline: Sequence[Stage], now: float) -> AppSlo:
    system = state.deadlines
    unit = system.config.unit
    state.sizes.flush(app.app_id)
    spec = _job_file(app)
    deadline, source = deadline_of(app, spec)
    claim = app.terms.claim
    held = system.held.get(app.app_id)
    if claim is not None:
        total: float | None = claim.mean
    else:
        declared = job_of(app, app.queue, unit)[1]
        total = sum(declared.work) if declared is not None else (
            app.terms.size.total_s if app.terms.size is not None else None)
    remaining: float | None
    if app.final:
        remaining = 0.0
    elif held is not None:
        remaining = system.remaining_work(app.app_id)
    elif app.terms.size is not None:
        remaining = app.terms.size.remaining_s
    elif total is not None:
        remaining = total * (1.0 - app.progress)
    else:
        remaining = None
    status, predicted = standing(state, app, deadline, now)
    trace = control_records(app)
    done = work_done(app, unit) if app.final else None
    above = above_oracle(app, deadline, unit, trace, now) if app.final else None
    return AppSlo(
        app_id=app.app_id, deadline=deadline, deadline_source=source, utility=_utility(spec), status=status,
        progress=1.0 if app.final and app.final_status == "SUCCEEDED" else app.progress,
        predicted_finish=predicted, total_work=total, remaining_work=remaining, unit=unit,
        oracle_units=_oracle(total, deadline - app.submit_time) if deadline is not None else None,
        oracle_units_now=_oracle(remaining, deadline - now) if deadline is not None and not app.final else None,
        requested=app.terms.guarantee, granted=granted_floor(app, pipeline), claimed=held is not None,
        trace=trace, profile_runs=app.profile_runs, model_build_s=app.model_build_s, work_done=done,
        above_oracle=above)
