"""The RM's own measure of a job's size (SLearn's data), inside the ledger: per app and per task group (an ask
priority: the DAG AM asks each stage at its depth, MapReduce maps and reduces at two priorities), the tasks it
has and the runtimes of those that finished. From them the app's size in task-seconds:

* a group with finished tasks: their mean runtime × the group's task count (SLearn's sampled estimate);
* a group with none yet: what the job file declares for it, scaled by how the finished tasks of the groups
  before it compared with their declared durations (SLearn's DAG hybrid, §6), else as declared;
* no finished task and nothing declared: unknown.

The estimate (total and remaining task-seconds, source ``slearn`` once a task finished, ``declared`` before)
goes to the app's terms through ``report_size``, where a stronger source (the simulator's exact sizes) is never
replaced. States: THIN (fewer tasks than sampling is worth), SAMPLING (tasks running, none finished),
ESTIMATED, DECLARED, UNKNOWN. Pure: a listener of the ledger's events.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common.ids import AppId
from common.resources import Resources
from common.terms import SizeEstimate
from rm.core.deadlines.features import features
from rm.core.entities import App
from rm.core.events import AppFinished, AppStarted, ContainerCompleted, Event, Journal

THIN_LIMIT = 3  # jobs with fewer tasks are not worth sampling (SLearn's thinLimit)
THIN, SAMPLING, ESTIMATED, DECLARED, UNKNOWN = "THIN", "SAMPLING", "ESTIMATED", "DECLARED", "UNKNOWN"
_UNIT = Resources.of(memory_mb=1024, vcores=1)


@dataclass(slots=True)
class Sizing:
    """What the RM measured of one app."""

    tasks: dict[int, int] = field(default_factory=dict)  # per group (ask priority): tasks, as declared
    declared: dict[int, float] = field(default_factory=dict)  # per group: declared task-seconds
    finished: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))  # runtimes, seconds
    estimate: SizeEstimate | None = None

    @property
    def total_tasks(self) -> int:
        return sum(self.tasks.values())

    def state(self) -> str:
        if self.tasks and self.total_tasks < THIN_LIMIT:
            return THIN
        if any(self.finished.values()):
            return ESTIMATED
        if self.declared:
            return DECLARED
        return UNKNOWN

    def size(self) -> tuple[float, float, str, float] | None:
        """(total task-seconds, done, source, confidence), or None when unknown."""
        done = sum(sum(v) for v in self.finished.values())
        if not any(self.finished.values()):
            if not self.declared:
                return None
            total = sum(self.declared.values())
            return total, 0.0, "declared", 0.0
        total = 0.0
        scale = 1.0  # measured / declared, over the groups with finished tasks so far (the DAG hybrid)
        measured_n = 0
        for g in sorted(set(self.tasks) | set(self.finished)):
            runs = self.finished.get(g, [])
            n = self.tasks.get(g, len(runs))
            if runs:
                mean = sum(runs) / len(runs)
                total += mean * max(n, len(runs))
                if self.declared.get(g) and n:
                    scale = mean / (self.declared[g] / n)
                measured_n += len(runs)
            elif g in self.declared:
                total += self.declared[g] * scale
            # a group with neither adds nothing known
        confidence = min(1.0, measured_n / max(1, self.total_tasks)) if self.tasks else 0.5
        return total, done, "slearn", confidence


class SizeTracker:
    """Listens to the ledger: an app's task groups when it starts, each finished task's runtime, and reports
    the app's size (``report``: the ledger's ``report_size``)."""

    hears: frozenset[type] = frozenset({AppStarted, ContainerCompleted, AppFinished})

    def __init__(self, report: Callable[[AppId, SizeEstimate | None], None]) -> None:
        self.report = report
        self.apps: dict[AppId, Sizing] = {}

    def on_event(self, event: Event, journal: Journal) -> None:
        if isinstance(event, AppStarted):
            self.apps[event.app.app_id] = declared_sizing(event.app)
            self._report(event.app.app_id)
        elif isinstance(event, ContainerCompleted):
            c = event.container
            sizing = self.apps.get(c.app_id)
            if sizing is None or c.is_am or c.start_time <= 0 or c.finish_time <= c.start_time:
                return
            sizing.finished[c.priority].append(c.finish_time - c.start_time)
            self._report(c.app_id)
        elif isinstance(event, AppFinished):
            self.apps.pop(event.app.app_id, None)

    def _report(self, app_id: AppId) -> None:
        sizing = self.apps[app_id]
        got = sizing.size()
        if got is None:
            return
        total, done, source, confidence = got
        est = SizeEstimate(max(0.0, total - done), source, total, confidence)  # type: ignore[arg-type]
        if est != sizing.estimate:
            sizing.estimate = est
            self.report(app_id, est)

    def describe(self, app_id: AppId) -> dict[str, Any]:
        """The app's estimate state for REST (``/ws/v1/shepherd/apps/{id}/estimate``)."""
        sizing = self.apps.get(app_id)
        if sizing is None:
            return {"state": UNKNOWN, "groups": []}
        est = sizing.estimate
        return {
            "state": sizing.state(),
            "tasks": sizing.total_tasks,
            "finishedTasks": sum(len(v) for v in sizing.finished.values()),
            "estimate": None if est is None else {"totalTaskSeconds": round(est.total_s or 0.0, 3),
                                                   "remainingTaskSeconds": round(est.remaining_s, 3),
                                                   "source": est.source, "confidence": round(est.confidence, 3)},
            "groups": [{"priority": g, "tasks": sizing.tasks.get(g, 0),
                        "declaredTaskSeconds": round(sizing.declared.get(g, 0.0), 3),
                        "finished": len(sizing.finished.get(g, [])),
                        "meanRuntime": round(sum(r) / len(r), 3) if (r := sizing.finished.get(g)) else None}
                       for g in sorted(set(sizing.tasks) | set(sizing.finished))],
        }


def declared_sizing(app: App) -> Sizing:
    """The app's task groups as its job file declares them (one per DAG depth, at that priority)."""
    job, declared = features(name=app.name, app_type=app.app_type, user=app.user, queue=str(app.queue),
                             job_spec_json=app.job_spec_json, tags=app.tags, unit=_UNIT)
    sizing = Sizing()
    for depth, shape in enumerate(job.phases):
        sizing.tasks[depth] = shape.tasks
    if declared is not None:
        for depth, (work, shape) in enumerate(zip(declared.work, job.phases, strict=True)):
            sizing.declared[depth] = work / max(shape.units, 1e-9)  # unit-seconds back to task-seconds
    return sizing
