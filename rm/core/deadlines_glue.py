"""The deadline system inside the ledger: its books' capacities (each leaf queue's share of the cluster, less
what that queue's fixed reservations book), the listener that feeds it progress, runs and outcomes, and the
features of a submission. Pure (``now`` is an argument); the ledger owns one ``DeadlineSystem``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from common.ids import AppId, QueuePath
from common.resources import Resources
from rm.core.deadlines.book import FixedLoad, no_fixed_load
from rm.core.deadlines.estimate import JobFeatures, RunRecord, features_from_dict, features_to_dict
from rm.core.deadlines.features import Declared, Span, features, run_record
from rm.core.deadlines.system import DeadlineSystem
from rm.core.deadlines.view import units_done
from rm.core.entities import App
from rm.core.events import AppFinished, ContainerCompleted, Event, Journal
from rm.core.model import QueueView
from rm.core.records import WorkRunRecord
from rm.core.reservation.system import ReservationSystem
from rm.core.reservation.timeline import Timeline
from rm.core.state_types import SubmitSpec


def job_of(app: App | SubmitSpec, queue: QueuePath, unit: Resources) -> tuple[JobFeatures, Declared | None]:
    return features(name=app.name or "N/A", app_type=app.app_type or "SHEPHERD", user=app.user or "dr.who",
                    queue=str(queue), job_spec_json=app.job_spec_json, tags=app.tags, unit=unit)


def fixed_load(timeline: Timeline, unit: Resources, dt: float) -> FixedLoad:
    """What the queue's reservations book, in units, at the deadline book's steps."""
    scale = np.array([float(unit.get(t)) if unit.get(t) > 0 else np.inf for t in timeline.types])
    step_ms = timeline.step_ms

    def load(s0: int, s1: int) -> np.ndarray:
        n = s1 - s0
        if n <= 0 or not scale.size:
            return np.zeros(max(0, n))
        starts = (np.arange(s0, s1, dtype=np.float64) * dt * 1000).astype(np.int64) // step_ms
        ends = ((np.arange(s0 + 1, s1 + 1, dtype=np.float64) * dt * 1000).astype(np.int64) - 1) // step_ms
        p0, p1 = int(starts[0]), int(ends[-1]) + 1
        per = (timeline.load(p0, p1) / scale[:, None]).max(axis=0)
        out: np.ndarray = np.maximum(per[starts - p0], per[ends - p0])
        return out

    return load


def sync_capacities(system: DeadlineSystem, cluster: Resources, queues: Mapping[QueuePath, QueueView],
                    reservations: ReservationSystem) -> None:
    """Every leaf queue's book gets the queue's share of ``cluster`` (``NodeFacts.planned``), less its
    reservations' bookings."""
    unit, dt = system.config.unit, system.config.step_s
    for path, q in queues.items():
        if not q.is_leaf:
            continue
        share = Resources({r: int(v * q.abs_capacity) for r, v in cluster.amounts.items()})
        book = reservations.plans.get(path)
        has_fixed = book is not None and any(r.queue == path for r in reservations.reservations.values())
        fixed = fixed_load(book.timeline, unit, dt) if book is not None and has_fixed else no_fixed_load
        system.set_capacity(path, share, fixed)


def run_of(record: WorkRunRecord) -> RunRecord:
    """A stored run, as the estimators read it."""
    return RunRecord(features_from_dict(record.features), tuple(record.work), tuple(record.longest))


class DeadlineProgress:
    """Listens to the ledger: completed containers count as a deadline app's work done, a finished app's
    run trains the estimator and its deadline's outcome is counted."""

    hears: frozenset[type] = frozenset({ContainerCompleted, AppFinished})

    def __init__(self, system: DeadlineSystem,
                 sizes: Callable[[App], dict[str, Any]] = lambda _: {}) -> None:
        self.system = system
        self.sizes = sizes  # what the size tracker measured of an app that ends, kept with its run
        self.spans: dict[AppId, list[Span]] = defaultdict(list)

    def on_event(self, event: Event, journal: Journal) -> None:
        if isinstance(event, ContainerCompleted):
            c = event.container
            if c.is_am or c.start_time <= 0 or c.finish_time <= c.start_time:
                return
            spans = self.spans[c.app_id]
            spans.append((c.priority, c.start_time, c.finish_time, c.resource))
            if self.system.holds(c.app_id):  # a deadline app: its work done, its claim re-estimated
                self.system.container_done(c.app_id, units_done(c.resource, c.finish_time - c.start_time,
                                                                self.system.config.unit), c.priority)
                self.system.refresh(c.app_id, spans)
        elif isinstance(event, AppFinished):
            app = event.app
            spans = self.spans.pop(app.app_id, [])
            unit = self.system.config.unit
            succeeded = app.final_status == "SUCCEEDED"
            if not self.system.holds(app.app_id) and not journal.keep:
                # no claim to settle and no record to keep: the run is built only when an estimate needs it
                if spans and succeeded:
                    self.system.record_run_later(lambda: run_record(job_of(app, app.queue, unit)[0], spans, unit))
                return
            run = run_record(job_of(app, app.queue, unit)[0], spans, unit) if spans else None
            work = sum(run.work) if run is not None else None
            self.system.finished(app.app_id, event.now, succeeded=succeeded, work=work)
            if run is not None and succeeded:
                self.system.record_run(run)
                if journal.keep:  # its run kept for the next RM's estimators
                    journal.mark(WorkRunRecord(app.app_id, run.features.name, event.now,
                                               features_to_dict(run.features), run.work, run.longest, self.sizes(app)))
