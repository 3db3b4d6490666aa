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
1–5 % by the paper's Fig. 4 rule on the sampled jobs' normalised completion times (``AdaptiveRatio``), unless
the configuration fixes it (``SamplingConfig.ratio``: ``FixedRatio``).

**History** (a durable ledger, i.e. the live RM): a 3Sigma-like predictor learns each successful run's size and
estimates an app of a known family when it starts (source ``history``, ahead of ``declared``); once its tasks
finish, a single-group app's history mean and its finished runtimes combine by the §4.1 posterior. The
tracker's own history estimate neither skips sampling nor opens a gate. A gate, and the first estimate of each
source of a gated app, are kept in the app's record (``App.sizing``) and restored as a restarted RM replays
the app's start; what a finished run measured goes to its work run (``run_summary``) and is learned again at
start (``learn``; ``rm.core.sizes_learn``). Pure: a listener of the ledger's events.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from common.ids import AppId
from common.resources import Resources
from common.terms import SizeEstimate
from rm.core.deadlines.features import features
from rm.core.entities import App
from rm.core.events import AppFinished, AppStarted, ContainerCompleted, Event, Journal
from rm.core.sizes.history import HistoryPredictor, JobKey
from rm.core.sizes.recent import RecentByName
from rm.core.sizes.sampling import THIN_LIMIT, AdaptiveRatio, FixedRatio, pilot_count
from rm.core.sizes_learn import Gate, SizeWatcher, combine, job_key, learn, summary
from rm.core.state_types import SamplingConfig

THIN, SAMPLING, ESTIMATED, DECLARED, UNKNOWN = "THIN", "SAMPLING", "ESTIMATED", "DECLARED", "UNKNOWN"
STRONGER = frozenset({"history", "slearn", "oracle"})  # a size from these needs no sampling
_UNIT = Resources.of(memory_mb=1024, vcores=1)


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
    key: JobKey | None = None  # its features, for the history predictor
    prior: tuple[float, float | None] | None = None  # the history's estimate (task-seconds) and its past error
    stage_prior: dict[int, float] = field(default_factory=dict)  # per group of a DAG: the history's estimate
    task_cov: float | None = None  # the spread of this job's task runtimes, as past runs of it measured
    moments: tuple[float, float | None] | None = None  # its history's sizes: mean and variance of logs (§4.1)
    prior_error: float | None = None  # the history estimate's median relative error in the past
    first: dict[str, float] = field(default_factory=dict)  # per source, the first total it estimated
    pilots_finished: int = 0
    sums: dict[int, float] = field(default_factory=dict)  # per group: the sum of ``finished``, kept as they come
    count: int = 0  # finished tasks, all groups

    def add(self, group: int, runtime: float) -> None:
        """One more finished task of the group; the sums are kept so that an estimate costs per group, not per
        task."""
        self.finished[group].append(runtime)
        self.sums[group] = self.sums.get(group, 0.0) + runtime
        self.count += 1

    @property
    def total_tasks(self) -> int:
        return sum(self.tasks.values())

    @property
    def thin(self) -> bool:
        """Its job file names fewer tasks than sampling is worth."""
        return bool(self.tasks) and self.total_tasks < THIN_LIMIT

    def state(self) -> str:
        if self.gate is not None and not self.gate.open:
            return SAMPLING
        if self.thin:
            return THIN
        if self.count:
            return ESTIMATED
        if self.declared:
            return DECLARED
        return UNKNOWN

    def size(self) -> tuple[float, float, str, float] | None:
        """(total task-seconds, done, source, confidence), or None when unknown."""
        done = sum(self.sums.values())
        if not self.count:
            if self.prior is not None:
                err = self.prior[1]
                return self.prior[0], 0.0, "history", 0.5 if err is None else max(0.0, 1.0 - min(1.0, err))
            if not self.declared:
                return None
            total = sum(self.declared.values())
            return total, 0.0, "declared", 0.0
        total = 0.0
        scale = 1.0  # measured / declared, over the groups with finished tasks so far (the DAG hybrid)
        measured_n = 0
        hist_scale = 1.0  # measured / the history's estimate, the same over the groups with a stage history
        for g in sorted(set(self.tasks) | set(self.finished)):
            runs = self.finished.get(g, [])
            k = len(runs)
            n = self.tasks.get(g, k)
            if k:
                mean = self.sums[g] / k
                if self.moments is not None and len(self.tasks) == 1 and n > 0:  # §4.1: history and pilots
                    mean = combine(self.moments, n, runs, self.task_cov)
                total += mean * max(n, k)
                if self.declared.get(g) and n:
                    scale = mean / (self.declared[g] / n)
                if self.stage_prior.get(g, 0.0) > 0:
                    hist_scale = mean * max(n, k) / self.stage_prior[g]  # SLearn-DAG's d_s / d_h
                measured_n += k
            elif g in self.stage_prior:
                total += self.stage_prior[g] * hist_scale
            elif g in self.declared:
                total += self.declared[g] * scale
            # a group with neither adds nothing known
        confidence = min(1.0, measured_n / max(1, self.total_tasks)) if self.tasks else 0.5
        return total, done, "slearn", confidence


class SizeTracker:
    """Listens to the ledger: an app's task groups when it starts, each finished task's runtime; reports the
    app's size (``report``: the ledger's ``report_size``) and, with ``sampling`` on, gates wide apps of unknown
    size to their pilots. ``changed(app)`` tells the ledger the app's view must be rebuilt and its gate
    (:meth:`stored`) stored. With ``history``, a history predictor learns every successful run's size and
    estimates a new app of a known family before it runs (source ``history``); its pilots then refine that
    estimate through the §4.1 posterior."""

    hears: frozenset[type] = frozenset({AppStarted, ContainerCompleted, AppFinished})

    def __init__(self, report: Callable[[AppId, SizeEstimate | None], None],
                 changed: Callable[[AppId], None] = lambda _: None, *, history: bool = False,
                 config: SamplingConfig | None = None) -> None:
        self.report = report
        self.changed = changed
        self.apps: dict[AppId, Sizing] = {}
        self.sampling = False  # the driver's pipeline has the sampling stage
        # what the tracker reports (``ESTIMATORS``; the pipeline's GS stage chooses, ``policies.gs.size_setup``):
        # ``slearn`` what it measures (with the history as prior), ``history`` the history's estimate only,
        # ``las`` the service an app attained so far (its finished tasks' seconds)
        self.mode: str = "slearn"
        cfg = config or SamplingConfig()
        self.gate_timeout_s = cfg.gate_timeout_s  # a gate opens after this long even if its pilots have not finished
        self.trust_history = cfg.trust_history
        self.ratio: AdaptiveRatio | FixedRatio = AdaptiveRatio() if cfg.ratio is None else FixedRatio(cfg.ratio)
        self.history = HistoryPredictor() if history else None
        self.stage_history: dict[int, HistoryPredictor] = {}  # per DAG depth, its stages' sizes (SLearn-DAG)
        # by job name (and of all runs): how far sampled runs' pilots were from their size, relative; and the
        # CoV of a finished run's task runtimes within a task group (the tasks' spread the §4.1 posterior needs)
        self.pilot_errors = RecentByName()
        self.task_cov = RecentByName()
        self.counters: dict[str, int] = {}
        self.watchers: list[SizeWatcher] = []
        # apps whose finished tasks changed their estimate since it was last reported: reported by ``flush``
        # (the ledger's snapshot, a reader of one app's estimate), so a wide app's estimate is worked out once per
        # scheduling cycle rather than once per finished task
        self.dirty: set[AppId] = set()

    def on_event(self, event: Event, journal: Journal) -> None:
        if isinstance(event, AppStarted):
            self._started(event.app, event.now)
        elif isinstance(event, ContainerCompleted):
            c = event.container
            known = self.apps.get(c.app_id)
            if known is None or c.is_am or c.start_time <= 0 or c.finish_time <= c.start_time:
                return
            known.add(c.priority, c.finish_time - c.start_time)
            known.first_task = min(known.first_task or c.start_time, c.start_time)
            known.last_task = max(known.last_task, c.finish_time)
            gate = known.gate
            if gate is not None and c.container_id in gate.marks:
                known.pilots_finished += 1
            if "slearn" in known.first and (gate is None or gate.open):
                self.dirty.add(c.app_id)
            else:  # the first measured estimate, or a gate that may open now: reported at once
                self._report(c.app_id)
            if gate is not None and not gate.open and gate.pilots and self.finished(c.app_id) >= gate.pilots:
                if known.estimate is not None and known.estimate.source == "slearn":
                    known.first["slearn"] = known.estimate.total_s or 0.0  # what the pilots said
                self._open(c.app_id, "pilots", event.now)
        elif isinstance(event, AppFinished):
            self._finished(event.app, event.now)

    def _started(self, app: App, now: float) -> None:
        sizing = self.apps[app.app_id] = declared_sizing(app)
        if self.history is not None:
            sizing.key = job_key(app)
            sizing.task_cov = self.task_cov.median(sizing.key.name)  # the typical run's spread
            got = self.history.predict(sizing.key)
            if got is not None:
                sizing.prior = (got[0], self.history.error(sizing.key, got[1]))
                sizing.prior_error = self.history.median_error(sizing.key, got[1])
                sizing.moments = self.history.log_moments(sizing.key)
            if len(sizing.tasks) > 1:  # a DAG: each stage's own history (3Sigma-DAG), the prior their sum
                for g in sizing.tasks:
                    stage = self.stage_history.get(g)
                    got_g = stage.predict(sizing.key) if stage is not None else None
                    if got_g is not None:
                        sizing.stage_prior[g] = got_g[0]
                if sizing.stage_prior and len(sizing.stage_prior) == len(sizing.tasks):
                    err = None if sizing.prior is None else sizing.prior[1]
                    sizing.prior = (sum(sizing.stage_prior.values()), err)
        stored = app.sizing.get("gate")
        if stored:  # a restarted RM: the gate as it was, its pilots and ratio kept
            sizing.gate = Gate.from_dict(stored)
            sizing.first.update({str(k): float(v) for k, v in dict(app.sizing.get("first", {})).items()})
        elif self.sampling and _samplable(app, sizing) and not self._history_suffices(sizing):
            sizing.gate = Gate(self.ratio.take(), now)
            if sizing.tasks:  # of a DAG (or maps and reduces), its first stage's tasks are sampled
                first = sizing.tasks[min(sizing.tasks)]
                sizing.gate.pilots = (pilot_count(max(sizing.total_tasks, THIN_LIMIT), sizing.gate.ratio)
                                      if len(sizing.tasks) == 1 else
                                      min(first, pilot_count(max(first, THIN_LIMIT), sizing.gate.ratio)))
            self._count("apps_sampled")
            self.changed(app.app_id)
        self._report(app.app_id)

    def _history_suffices(self, sizing: Sizing) -> bool:
        """Whether the history's estimate of this job has been at least as accurate as pilots were: then the
        job is not held to pilots (SLearn §7: switch between the two by their errors). The history's error is
        its chosen feature's median relative error over past runs; the pilots' is their median relative error
        on this job name's sampled runs (from 3), else on every sampled run (from 10). With neither measured, the
        job is sampled."""
        if not self.trust_history or sizing.prior_error is None or sizing.key is None:
            return False
        pilots = self.pilot_errors.median(sizing.key.name)
        if pilots is not None and sizing.prior_error <= pilots:
            self._count("apps_history_trusted")
            return True
        return False

    def flush(self, app_id: AppId | None = None) -> None:
        """Report the estimates that changed since they were last reported (of one app, or of all)."""
        if app_id is not None:
            if app_id in self.dirty:
                self.dirty.discard(app_id)
                self._report(app_id)
            return
        while self.dirty:
            got = self.dirty.pop()
            if got in self.apps:
                self._report(got)

    def _finished(self, app: App, now: float) -> None:
        self.flush(app.app_id)
        ended = self.apps.pop(app.app_id, None)
        if ended is None or app.final_status != "SUCCEEDED":
            return
        actual = sum(sum(v) for v in ended.finished.values())
        if actual > 0:
            errors = {src: abs(est - actual) / actual for src, est in ended.first.items()}
            for w in self.watchers:
                w.app_sized(errors)
                sized = getattr(w, "job_sized", None)  # an evaluation's recorder: what each job was estimated at
                if sized is not None:
                    sized(app.app_id, ended.total_tasks, dict(ended.first), actual, sampled=ended.gate is not None)
            self.measured((ended.key or job_key(app)).name, ended.finished.values(),
                          errors.get("slearn") if ended.gate is not None else None)
            if self.history is not None and ended.key is not None:
                self.observe(ended.key, actual, {g: sum(v) for g, v in ended.finished.items()}
                             if len(ended.tasks) > 1 else {})
        if ended.gate is not None and ended.first_task > 0:
            runtime = max(1e-3, ended.last_task - ended.first_task)
            self.ratio.observe(ended.gate.ratio, now - app.submit_time, runtime)

    def observe(self, key: JobKey, total_s: float, stages: Mapping[int, float]) -> None:
        """The history learns a successful run: its size and, for a DAG, each stage's (the stage histories
        of SLearn-DAG, one predictor per depth, over the same features)."""
        if self.history is None:
            return
        self.history.observe(key, total_s)
        for g, stage_s in stages.items():
            if stage_s > 0:
                self.stage_history.setdefault(g, HistoryPredictor()).observe(key, stage_s)

    def measured(self, name: str, runtimes: Iterable[Sequence[float]], pilot_error: float | None) -> None:
        """What a finished run of ``name`` says of sampling: its pilots' relative error, if it was sampled, and
        the spread (CoV) of each of its task groups' runtimes (from 3 tasks)."""
        if pilot_error is not None:
            self.pilot_errors.add(name, pilot_error)
        for runs in runtimes:
            if len(runs) >= 3 and (mean := math.fsum(runs) / len(runs)) > 0:
                self.task_cov.add(name, statistics.pstdev(runs) / mean)

    def run_summary(self, app: App) -> dict[str, Any]:
        """What run history keeps of the app that ends now (``rm.core.sizes_learn.summary``); {} if unknown."""
        sizing = self.apps.get(app.app_id)
        if sizing is None:
            return {}
        runtime = max(1e-3, sizing.last_task - sizing.first_task) if sizing.first_task > 0 else 0.0
        return summary(sizing.key or job_key(app), sizing.tasks, sizing.finished, sizing.first, sizing.gate,
                       (app.finish_time or sizing.last_task) - app.submit_time, runtime)

    def learn(self, summaries: list[dict[str, Any]]) -> int:
        """Learn from stored runs (oldest first), as at their end: an RM start."""
        return learn(summaries, self, self.ratio)

    def stored(self, app_id: AppId) -> dict[str, Any]:
        """What the app's record keeps of it (``App.sizing``): its gate, and the first estimate each source gave
        (the pilots' one is not measured again after a restart)."""
        sizing = self.apps.get(app_id)
        if sizing is None or sizing.gate is None:
            return {}
        return {"gate": sizing.gate.to_dict(), "first": dict(sizing.first)}

    def thin(self, app_id: AppId) -> bool:
        """Its job file names fewer tasks than sampling is worth."""
        sizing = self.apps.get(app_id)
        return sizing is not None and sizing.thin

    def finished(self, app_id: AppId) -> int:
        sizing = self.apps.get(app_id)
        return sizing.count if sizing is not None else 0

    def placed(self, app_id: AppId, container_id: str) -> None:
        """A task container was allocated to the app: while its gate is closed, its first ``pilots`` are
        marked as its pilots."""
        sizing = self.apps.get(app_id)
        gate = sizing.gate if sizing is not None else None
        if gate is not None and not gate.open and len(gate.marks) < gate.pilots:
            gate.marks.append(container_id)
            self._count("pilot_containers")
            self.changed(app_id)

    def pilots_left(self, app: App, running_tasks: int, asked: int, now: float) -> int | None:
        """How many more task containers a gated app may get now (None: not gated). The pilot count of an
        app whose size the job file does not say is fixed from its first asks."""
        sizing = self.apps.get(app.app_id)
        gate = sizing.gate if sizing is not None else None
        if sizing is None or gate is None or gate.open:
            return None
        if not self.sampling:  # a gate stored under a scheduler that sampled, restored under one that does not
            self._open(app.app_id, "unsampled", now)
            return None
        size = app.terms.size
        if app.terms.claim is not None or app.reservation_id or (
                size is not None and size != sizing.estimate and size.source in STRONGER - {"slearn"}):
            self._open(app.app_id, "guarantee", now)
            return None
        if now - gate.since >= self.gate_timeout_s:
            self._open(app.app_id, "timeout", now)
            return None
        done = self.finished(app.app_id)
        if not gate.pilots:
            tasks = asked + running_tasks + done
            if tasks < THIN_LIMIT:
                return max(0, tasks)  # thin so far: nothing held
            gate.pilots = pilot_count(tasks, gate.ratio)
            self.changed(app.app_id)
        return max(0, gate.pilots - running_tasks - done)

    def gated(self) -> list[AppId]:
        return [a for a, s in self.apps.items() if s.gate is not None and not s.gate.open]

    def _open(self, app_id: AppId, why: str, now: float) -> None:
        sizing = self.apps[app_id]
        gate = sizing.gate
        if gate is not None and not gate.open:
            gate.open = True
            gate.opened_by = why
            gate.opened_at = now
            self._count(f"gates_opened_{why}")
            for w in self.watchers:
                w.gate_opened(why, max(0.0, now - gate.since))
            self.changed(app_id)

    def _count(self, key: str) -> None:
        self.counters[key] = self.counters.get(key, 0) + 1

    def _report(self, app_id: AppId) -> None:
        sizing = self.apps[app_id]
        got = sizing.size() if self.mode == "slearn" else _baseline(sizing, self.mode)
        if got is None:
            return
        total, done, source, confidence = got
        est = SizeEstimate(max(0.0, total - done), source, total, confidence)  # type: ignore[arg-type]
        sizing.first.setdefault(source, total)
        if est != sizing.estimate:
            sizing.estimate = est
            self.report(app_id, est)

    def sampler(self) -> dict[str, Any]:
        """The sampler's state for REST (``/ws/v1/shepherd/sampling``): whether the pipeline samples, the
        ratio rule and the ratio the next wide app gets, each ratio's jobs and score (Fig. 4's score map),
        how many apps are held to their pilots now and the tracker's counters."""
        return {
            "enabled": self.sampling,
            "rule": "adaptive" if isinstance(self.ratio, AdaptiveRatio) else "fixed",
            "nextRatio": self.ratio.ratio,
            "ratios": self.ratio.state(),
            "gateTimeoutSeconds": self.gate_timeout_s,
            "trustHistory": self.trust_history,
            "gatedApps": len(self.gated()),
            "counters": dict(sorted(self.counters.items())),
        }

    def describe(self, app_id: AppId) -> dict[str, Any]:
        """The app's estimate state for REST (``/ws/v1/shepherd/apps/{id}/estimate``)."""
        self.flush(app_id)
        sizing = self.apps.get(app_id)
        if sizing is None:
            return {"state": UNKNOWN, "groups": []}
        est = sizing.estimate
        gate = sizing.gate
        return {
            "state": sizing.state(),
            "tasks": sizing.total_tasks,
            "finishedTasks": sizing.count,
            "sampling": None if gate is None else {"ratio": gate.ratio, "pilots": gate.pilots, "open": gate.open,
                                                   "openedBy": gate.opened_by or None,
                                                   "pilotsStarted": len(gate.marks),
                                                   "pilotsFinished": sizing.pilots_finished},
            "history": None if sizing.prior is None else {
                "totalTaskSeconds": round(sizing.prior[0], 3),
                "error": None if sizing.prior[1] is None else round(sizing.prior[1], 3)},
            "estimate": None if est is None else {"totalTaskSeconds": round(est.total_s or 0.0, 3),
                                                   "remainingTaskSeconds": round(est.remaining_s, 3),
                                                   "source": est.source, "confidence": round(est.confidence, 3)},
            "groups": [{"priority": g, "tasks": sizing.tasks.get(g, 0),
                        "declaredTaskSeconds": round(sizing.declared.get(g, 0.0), 3),
                        "finished": len(sizing.finished.get(g, [])),
                        "meanRuntime": round(sum(r) / len(r), 3) if (r := sizing.finished.get(g)) else None}
                       for g in sorted(set(sizing.tasks) | set(sizing.finished))],
        }


def _baseline(sizing: Sizing, mode: str) -> tuple[float, float, str, float] | None:
    """The size a baseline estimator reports: the history's estimate as it stood at the app's start (never
    refined by its tasks), or the service attained so far (LAS: it starts at 0 and only grows)."""
    if mode == "las":
        return sum(sizing.sums.values()), 0.0, "las", 0.0
    if mode == "history" and sizing.prior is not None:
        err = sizing.prior[1]
        return sizing.prior[0], 0.0, "history", 0.5 if err is None else max(0.0, 1.0 - min(1.0, err))
    return None


def _samplable(app: App, sizing: Sizing) -> bool:
    """Worth sampling: not thin, no guarantee, no stronger size, not a Spark app."""
    if sizing.thin:
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
