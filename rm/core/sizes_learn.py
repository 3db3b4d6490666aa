"""What the RM's size tracker keeps of SLearn across an RM restart, and what it learns across runs.

* :class:`Gate` — an app held to its pilots: the ratio it was sampled at, how many pilots it gets, which of
  its containers were those pilots, whether (when, why) the gate opened. It is stored with the app
  (``AppRecord.sizing``), so a restarted RM neither samples an app a second time nor starts pilots beyond
  the ones it planned, and the gate's timeout still counts from when the app was first gated.
* :func:`job_key` — an app's features for the history predictor (SLearn §5.1.3's 3Sigma baseline): its name,
  user, queue, application type, the hour of day it was submitted (UTC) and the task container it asks for.
* :func:`combine` — a history's sizes and the runtimes of finished tasks through the §4.1 posterior (of logs).
* :func:`summary` / :func:`learn` — what a finished run leaves in run history (``WorkRunRecord.sizes``), and
  how a restarted RM learns the history predictor and the adaptive ratio from it again.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from common.resources import MEMORY, VCORES
from rm.core.entities import App
from rm.core.sizes.history import FEATURES, HistoryPredictor, JobKey
from rm.core.sizes.sampling import AdaptiveRatio, FixedRatio, posterior

MIN_PRIOR_ERROR = 0.01  # a history that was always exact still leaves the pilots a say
MAX_RUNTIMES = 1000  # task runtimes kept per task group in a run's summary


@dataclass(slots=True)
class Gate:
    """An app held to its pilots until they finish (SLearn's sampling gate)."""

    ratio: float
    since: float
    pilots: int = 0  # planned; 0 until the app's task count is known (a stock AM's first asks)
    open: bool = False
    opened_by: str = ""  # pilots, timeout, guarantee, unsampled (restored under a scheduler that does not sample)
    opened_at: float = 0.0
    marks: list[str] = field(default_factory=list)  # its pilot containers, in the order they were allocated

    def to_dict(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "since": self.since, "pilots": self.pilots, "open": self.open,
                "openedBy": self.opened_by, "openedAt": self.opened_at, "marks": list(self.marks)}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Gate:
        return Gate(ratio=float(d["ratio"]), since=float(d["since"]), pilots=int(d.get("pilots", 0)),
                    open=bool(d.get("open", False)), opened_by=str(d.get("openedBy", "")),
                    opened_at=float(d.get("openedAt", 0.0)), marks=[str(m) for m in d.get("marks", ())])


class HistoryLearner(Protocol):
    """What learns a finished run's size (the size tracker): the whole job's, and each stage's of a DAG."""

    history: HistoryPredictor | None

    def observe(self, key: JobKey, total_s: float, stages: Mapping[int, float]) -> None: ...
    def measured(self, name: str, runtimes: Iterable[Sequence[float]], pilot_error: float | None) -> None: ...


class SizeWatcher(Protocol):
    """Told what the tracker measured (the service's metrics)."""

    def gate_opened(self, why: str, waited_s: float) -> None: ...
    def app_sized(self, errors: Mapping[str, float]) -> None: ...


def _requested(app: App) -> str:
    """The task container the job file's first stage asks for, else the AM's, as ``"<MB>MB,<vcores>vc"``."""
    memory, vcores = app.am_resource.get(MEMORY), app.am_resource.get(VCORES)
    try:
        spec = json.loads(app.job_spec_json) if app.job_spec_json else {}
        stages = spec.get("stages") if isinstance(spec, dict) else None
        if isinstance(stages, list) and stages and isinstance(stages[0], dict):
            memory, vcores = int(stages[0].get("memory_mb", 0)), int(stages[0].get("vcores", 1))
    except (TypeError, ValueError):
        pass
    return f"{memory}MB,{vcores}vc"


def job_key(app: App) -> JobKey:
    return JobKey(name=app.name, user=app.user, queue=str(app.queue), app_type=app.app_type,
                  submit_hour=int(app.submit_time // 3600) % 24, resources=_requested(app))


def key_dict(key: JobKey) -> dict[str, Any]:
    return {f: getattr(key, f) for f in FEATURES}


def combine(prior: tuple[float, float | None], tasks: int, samples: Sequence[float],
            task_cov: float | None = None) -> float:
    """The job's mean task length from what its history says of its total and the runtimes of its finished
    tasks, by the §4.1 posterior taken over logarithms.

    The variations SLearn measures (Table 4) are coefficients of variation: a run differs from the last by a
    factor, and a task from its run's mean by a factor. So the posterior is of the logarithm of the job's mean
    task length M. ``prior`` is the history's past sizes of the job as the mean and variance of their natural
    logarithms (``HistoryPredictor.log_moments``); over ``tasks`` tasks it says ln M ~ N(mean − ln tasks,
    variance), the job-wise σ_o² (at least that of :data:`MIN_PRIOR_ERROR`; without a variance, from a single
    past size, there is no usable prior and the samples decide alone). The k samples' mean ȳ is M times a
    mean-1 log-normal factor whose coefficient of variation is c²/k (c the tasks' own, times (S − k)/(S − 1) for
    the S − k tasks not yet seen), so ln ȳ + s/2 ~ N(ln M, s) with s = ln(1 + that): c is ``task_cov`` (what
    past runs of the job measured among their tasks); unknown, the samples' own, or with one sample 1. With one
    pilot this is the posterior of that pilot; as tasks finish it tends to their mean, which it is once all
    have."""
    if tasks < 1 or not samples:
        raise ValueError(f"need tasks >= 1 and samples, got {tasks} tasks and {len(samples)} samples")
    sample_mean = statistics.fmean(samples)
    log_mean, log_var = prior
    if log_var is None or not math.isfinite(log_var) or not math.isfinite(log_mean) or min(samples) <= 0:
        return sample_mean
    if task_cov is not None and task_cov >= 0:
        cov = task_cov
    else:
        cov = statistics.pstdev(samples) / sample_mean if len(samples) >= 2 else 1.0
    k = len(samples)
    unseen = max(0.0, (tasks - k) / (tasks - 1)) if tasks > 1 else 0.0
    s = math.log1p(cov * cov / k * unseen)
    if s == 0.0:
        return sample_mean  # tasks known not to vary, or all of them measured: the samples are exact
    var_prior = max(log_var, math.log1p(MIN_PRIOR_ERROR**2))
    return math.exp(posterior(log_mean - math.log(tasks), var_prior, s, [math.log(sample_mean) + s / 2.0])[0])


def summary(key: JobKey, tasks: Mapping[int, int], finished: Mapping[int, Sequence[float]],
            estimates: Mapping[str, float], gate: Gate | None, jct_s: float, runtime_s: float) -> dict[str, Any]:
    """A finished run as run history keeps it: its features, per task group its task count and finished
    task runtimes (the first :data:`MAX_RUNTIMES`), its size (the runtimes' sum), the first estimate each
    source gave, its gate, its JCT and own runtime (the adaptive ratio's observation)."""
    groups: dict[str, dict[str, Any]] = {
        str(g): {"tasks": tasks.get(g, len(finished.get(g, ()))),
                 "runtimes": [round(r, 3) for r in list(finished.get(g, ()))[:MAX_RUNTIMES]],
                 "finished": len(finished.get(g, ())), "total": math.fsum(finished.get(g, ()))}
        for g in sorted(set(tasks) | set(finished))}
    total = math.fsum(float(g["total"]) for g in groups.values())
    return {"key": key_dict(key), "groups": groups, "total": total,
            "estimates": dict(estimates), "gate": None if gate is None else gate.to_dict(),
            "jct": jct_s, "runtime": runtime_s}


def learn(summaries: Sequence[Mapping[str, Any]], learner: HistoryLearner, ratio: AdaptiveRatio | FixedRatio) -> int:
    """Feed stored run summaries (oldest first) to the history predictor (and its stage histories) and the
    adaptive ratio, as their runs ended. Returns how many the predictor learned; a malformed summary is
    skipped."""
    learned = 0
    for s in summaries:
        try:
            if learner.history is not None and s.get("key"):
                groups = dict(s.get("groups") or {})
                stages = {int(g): float(v["total"]) for g, v in groups.items()} if len(groups) > 1 else {}
                learner.observe(JobKey(**{f: s["key"][f] for f in FEATURES}), float(s["total"]), stages)
                learned += 1
            gate = s.get("gate")
            if s.get("key"):
                total, pilots = float(s["total"]), dict(s.get("estimates") or {}).get("slearn")
                learner.measured(str(s["key"]["name"]),
                                 [[float(r) for r in g.get("runtimes", ())] for g in dict(s.get("groups") or {}).values()],
                                 abs(float(pilots) - total) / total if gate and pilots is not None and total > 0 else None)
            if gate and float(s.get("runtime", 0.0)) > 0:
                ratio.observe(float(gate["ratio"]), float(s["jct"]), float(s["runtime"]))
        except (KeyError, TypeError, ValueError):
            continue
    return learned
