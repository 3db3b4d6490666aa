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
ESTIMATED, DECLARED, UNKNOWN.

**Sampling** (SLearn §3–5), when the driver turns it on (``sampling``: a pipeline with the ``sampling``
stage): a wide app (at least ``THIN_LIMIT`` tasks) the RM knows no size of from a stronger source, with no
guarantee (no reservation, no bought deadline) and not a Spark app (long-lived executors say nothing about
size), is *gated* when it starts: its first ``k = max(1, ⌈r·S⌉)`` task containers are pilots; the snapshot shows
only as many of its task asks as pilots remain, and holds the rest back (``AppView.held``) for the pipeline's
last stage, which places them only on capacity nothing else wants (work conservation). The gate opens when
the pilots finished, after ``gate_timeout_s``, or when the app gets a guarantee; the ratio ``r`` adapts over
1–5 % by the paper's Fig. 4 rule on the sampled jobs' normalised completion times (``AdaptiveRatio``). Pure: a
listener of the ledger's events.
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
from rm.core.sizes.sampling import THIN_LIMIT, AdaptiveRatio, pilot_count

THIN, SAMPLING, ESTIMATED, DECLARED, UNKNOWN = "THIN", "SAMPLING", "ESTIMATED", "DECLARED", "UNKNOWN"
GATE_TIMEOUT_S = 300.0  # a gate opens after this long even if its pilots have not finished
STRONGER = frozenset({"history", "slearn", "oracle"})  # a size from these needs no sampling
_UNIT = Resources.of(memory_mb=1024, vcores=1)


@dataclass(slots=True)
class Gate:
    """An app held to its pilots until they finish (SLearn's sampling gate)."""

    ratio: float
    since: float
    pilots: int = 0  # planned; 0 until the app's task count is known (a stock AM's first asks)
    open: bool = False
    opened_by: str = ""  # pilots, timeout, guarantee


@dataclass(slots=True)
class Sizing:
    """What the RM measured of one app."""

    tasks: dict[int, int] = field(default_factory=dict)  # per group (ask priority): tasks, as declared
    declared: dict[int, float] = field(default_factory=dict)  # per group: declared task-seconds
    finished: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))  # runtimes, seconds
    estimate: SizeEstimate | None = None
    gate: Gate | None = None  # sampling: its pilots and whether it is open
    first_task: float = 0.0  # when its first task started (its runtime, for the adaptive ratio)
    last_task: float = 0.0

    @property
    def total_tasks(self) -> int:
        return sum(self.tasks.values())

    def state(self) -> str:
        if self.gate is not None and not self.gate.open:
            return SAMPLING
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
    """Listens to the ledger: an app's task groups when it starts, each finished task's runtime; reports the
    app's size (``report``: the ledger's ``report_size``) and, with ``sampling`` on, gates wide apps of unknown
    size to their pilots (``changed(app)`` tells the ledger an app's view must be rebuilt)."""

    hears: frozenset[type] = frozenset({AppStarted, ContainerCompleted, AppFinished})

    def __init__(self, report: Callable[[AppId, SizeEstimate | None], None],
                 changed: Callable[[AppId], None] = lambda _: None) -> None:
        self.report = report
        self.changed = changed
        self.apps: dict[AppId, Sizing] = {}
        self.sampling = False  # the driver's pipeline has the sampling stage
        self.gate_timeout_s = GATE_TIMEOUT_S
        self.ratio = AdaptiveRatio()
        self.counters: dict[str, int] = {}

    def on_event(self, event: Event, journal: Journal) -> None:
        if isinstance(event, AppStarted):
            sizing = self.apps[event.app.app_id] = declared_sizing(event.app)
            if self.sampling and _samplable(event.app, sizing):
                sizing.gate = Gate(self.ratio.ratio, event.now)
                if sizing.tasks:
                    sizing.gate.pilots = pilot_count(max(sizing.total_tasks, THIN_LIMIT), sizing.gate.ratio)
                self._count("apps_sampled")
            self._report(event.app.app_id)
        elif isinstance(event, ContainerCompleted):
            c = event.container
            known = self.apps.get(c.app_id)
            if known is None or c.is_am or c.start_time <= 0 or c.finish_time <= c.start_time:
                return
            known.finished[c.priority].append(c.finish_time - c.start_time)
            known.first_task = min(known.first_task or c.start_time, c.start_time)
            known.last_task = max(known.last_task, c.finish_time)
            gate = known.gate
            if gate is not None and not gate.open and gate.pilots and self.finished(c.app_id) >= gate.pilots:
                self._open(c.app_id, "pilots")
            self._report(c.app_id)
        elif isinstance(event, AppFinished):
            ended = self.apps.pop(event.app.app_id, None)
            if ended is not None and ended.gate is not None and ended.first_task > 0 \
                    and event.app.final_status == "SUCCEEDED":
                runtime = max(1e-3, ended.last_task - ended.first_task)
                self.ratio.observe(ended.gate.ratio, event.now - event.app.submit_time, runtime)

    def finished(self, app_id: AppId) -> int:
        sizing = self.apps.get(app_id)
        return sum(len(v) for v in sizing.finished.values()) if sizing is not None else 0

    def pilots_left(self, app: App, running_tasks: int, asked: int, now: float) -> int | None:
        """How many more task containers a gated app may get now (None: not gated). The pilot count of an
        app whose size the job file does not say is fixed from its first asks."""
        sizing = self.apps.get(app.app_id)
        gate = sizing.gate if sizing is not None else None
        if sizing is None or gate is None or gate.open:
            return None
        if app.terms.claim is not None or app.reservation_id or (
                app.terms.size is not None and app.terms.size.source in STRONGER - {"slearn"}):
            self._open(app.app_id, "guarantee")
            return None
        if now - gate.since >= self.gate_timeout_s:
            self._open(app.app_id, "timeout")
            return None
        done = self.finished(app.app_id)
        if not gate.pilots:
            tasks = asked + running_tasks + done
            if tasks < THIN_LIMIT:
                return max(0, tasks)  # thin so far: nothing held
            gate.pilots = pilot_count(tasks, gate.ratio)
        return max(0, gate.pilots - running_tasks - done)

    def gated(self) -> list[AppId]:
        return [a for a, s in self.apps.items() if s.gate is not None and not s.gate.open]

    def _open(self, app_id: AppId, why: str) -> None:
        sizing = self.apps[app_id]
        if sizing.gate is not None and not sizing.gate.open:
            sizing.gate.open = True
            sizing.gate.opened_by = why
            self._count(f"gates_opened_{why}")
            self.changed(app_id)

    def _count(self, key: str) -> None:
        self.counters[key] = self.counters.get(key, 0) + 1

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
        gate = sizing.gate
        return {
            "state": sizing.state(),
            "tasks": sizing.total_tasks,
            "finishedTasks": sum(len(v) for v in sizing.finished.values()),
            "sampling": None if gate is None else {"ratio": gate.ratio, "pilots": gate.pilots, "open": gate.open,
                                                   "openedBy": gate.opened_by or None},
            "estimate": None if est is None else {"totalTaskSeconds": round(est.total_s or 0.0, 3),
                                                   "remainingTaskSeconds": round(est.remaining_s, 3),
                                                   "source": est.source, "confidence": round(est.confidence, 3)},
            "groups": [{"priority": g, "tasks": sizing.tasks.get(g, 0),
                        "declaredTaskSeconds": round(sizing.declared.get(g, 0.0), 3),
                        "finished": len(sizing.finished.get(g, [])),
                        "meanRuntime": round(sum(r) / len(r), 3) if (r := sizing.finished.get(g)) else None}
                       for g in sorted(set(sizing.tasks) | set(sizing.finished))],
        }


def _samplable(app: App, sizing: Sizing) -> bool:
    """Worth sampling: not thin, no guarantee, no stronger size, not a Spark app."""
    if sizing.tasks and sizing.total_tasks < THIN_LIMIT:
        return False
    if app.terms.claim is not None or app.reservation_id or "SPARK" in app.app_type.upper():
        return False
    return not (app.terms.size is not None and app.terms.size.source in STRONGER)


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
