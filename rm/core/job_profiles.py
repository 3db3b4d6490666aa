"""A recurring job's profile from its run history (Jockey §4.1): what the RM keeps of each run's stages, and the
profile it builds from the newest runs for the job's next ApplicationMaster.

* **The report.** When an AM unregisters it may send its run per stage (``StageRun``: the task count, the
  successful attempts' run times, queue and initialisation times when it measured them, attempts and failed
  attempts, the parents and the container size). ``check_report`` refuses a malformed one (a 400, nothing
  changed) and thins every sample list to ``MAX_SAMPLES`` equally spaced quantiles, so a run of 100,000 tasks
  keeps a bounded record. The RM stores it as a ``StageRunsRecord`` with the app's name, queue and user.
* **The profile.** ``profile_of`` pools the newest ``PROFILE_RUNS`` successful runs of the same job name,
  queue and user (``profile_from_runs``: samples pooled, the largest task count, failures / attempts). Runs
  whose stages cannot make a profile (a stage with no recorded run time, an unknown parent) are skipped.
* **What is shown.** ``render`` is the JSON of ``GET /ws/v1/shepherd/jobs/{name}/profile``.

Pure: records in, profiles out; the service reads the store and calls this off the event loop.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from am.policies.jockey.profile import JobProfile, ProfileError, StageRun, profile_from_runs
from common.errors import BadRequest
from common.resources import Resources
from rm.core.records import StageRunsRecord

MAX_STAGES = 2000  # stages in one report
MAX_SAMPLES = 256  # samples kept per stage and kind in one run's record
MAX_NAME = 256  # characters of a stage name
PROFILE_RUNS = 5  # the newest successful runs a profile pools
RUNS_READ = 50  # the newest reports of a job read to find them
RUNS_KEPT = 50  # reports per job kept in the store (older ones are pruned at start)


@dataclass(frozen=True, slots=True)
class StoredProfile:
    """A job's profile with where it came from."""

    job: str
    queue: str
    user: str
    profile: JobProfile
    runs: tuple[str, ...]  # the applications it was built from, oldest first
    init_measured: frozenset[str]  # stages whose runs recorded initialisation times (others: none measured)
    attempts: Mapping[str, tuple[int, int]]  # per stage, (attempts, failed attempts) over those runs


def thin(samples: Sequence[float], k: int = MAX_SAMPLES) -> tuple[float, ...]:
    """At most ``k`` samples: all of them when there are no more, else ``k`` equally spaced quantiles."""
    if len(samples) <= k:
        return tuple(samples)
    ordered = sorted(samples)
    n = len(ordered)
    return tuple(ordered[min(n - 1, int((i + 0.5) * n / k))] for i in range(k))


def _samples(stage: str, label: str, values: Sequence[float]) -> tuple[float, ...]:
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise BadRequest(f"stage {stage!r}: every {label} value must be a finite number >= 0")
    return thin(values)


def check_report_size(stages: Sequence[Any]) -> None:
    """The counts of a stage report (``StageRun``s, or the messages they come from): at most ``MAX_STAGES``
    stages, each with at most as many parents. A door checks them before any stage becomes an object: a 4 MB
    message of a million empty stages would otherwise hold the event loop for tens of seconds."""
    if len(stages) > MAX_STAGES:
        raise BadRequest(f"a stage report holds at most {MAX_STAGES} stages, got {len(stages)}")
    for stage in stages:
        if len(stage.parents) > MAX_STAGES:  # a parent is another stage of the report
            raise BadRequest(f"a stage of a stage report has at most {MAX_STAGES} parents, "
                             f"got {len(stage.parents)}")


def check_report(stages: Sequence[StageRun]) -> tuple[StageRun, ...]:
    """A run's per-stage report as the RM keeps it; ``BadRequest`` naming the first problem."""
    check_report_size(stages)
    names = {s.name for s in stages}
    seen: set[str] = set()
    out: list[StageRun] = []
    for s in stages:
        if not s.name or len(s.name) > MAX_NAME:
            raise BadRequest(f"a stage name must have 1 to {MAX_NAME} characters, got {s.name[:40]!r}")
        if s.name in seen:
            raise BadRequest(f"stage {s.name!r} appears twice in the stage report")
        seen.add(s.name)
        if s.tasks < 1:
            raise BadRequest(f"stage {s.name!r}: tasks must be >= 1, got {s.tasks}")
        if s.attempts < 0 or s.failed_attempts < 0:
            raise BadRequest(f"stage {s.name!r}: attempts and failed attempts must be >= 0")
        unknown = sorted(set(s.parents) - set(names))
        if unknown:
            raise BadRequest(f"stage {s.name!r}: parent(s) {', '.join(unknown)} are not in the stage report")
        if s.container is not None and any(v < 0 for v in s.container.amounts.values()):
            raise BadRequest(f"stage {s.name!r}: the container size must not be negative")
        out.append(StageRun(
            name=s.name, tasks=s.tasks, run_s=_samples(s.name, "run time", s.run_s),
            queue_s=_samples(s.name, "queue time", s.queue_s), init_s=_samples(s.name, "init time", s.init_s),
            attempts=max(s.attempts, s.failed_attempts), failed_attempts=s.failed_attempts,
            parents=tuple(dict.fromkeys(s.parents)), container=s.container))
    return tuple(out)


def stage_to_dict(s: StageRun) -> dict[str, Any]:
    return {"name": s.name, "tasks": s.tasks, "run_s": list(s.run_s), "queue_s": list(s.queue_s),
            "init_s": list(s.init_s), "attempts": s.attempts, "failed_attempts": s.failed_attempts,
            "parents": list(s.parents), "container": None if s.container is None else s.container.to_dict()}


def stage_from_dict(d: Mapping[str, Any]) -> StageRun:
    container = d.get("container")
    return StageRun(
        name=str(d["name"]), tasks=int(d["tasks"]), run_s=tuple(float(x) for x in d.get("run_s", ())),
        queue_s=tuple(float(x) for x in d.get("queue_s", ())), init_s=tuple(float(x) for x in d.get("init_s", ())),
        attempts=int(d.get("attempts", 0)), failed_attempts=int(d.get("failed_attempts", 0)),
        parents=tuple(str(p) for p in d.get("parents", ())),
        container=None if container is None else Resources({str(k): int(v) for k, v in container.items()}))


def record_of(app_id: str, job: str, queue: str, user: str, finish_time: float, succeeded: bool,
              stages: Iterable[StageRun]) -> StageRunsRecord:
    return StageRunsRecord(app_id, job, queue, user, finish_time, succeeded,
                           tuple(stage_to_dict(s) for s in stages))


def profile_of(job: str, queue: str, user: str, records: Sequence[StageRunsRecord], *,
               runs: int = PROFILE_RUNS) -> StoredProfile | None:
    """The profile of ``job`` in ``queue`` for ``user`` from the newest ``runs`` of ``records`` (oldest first)
    that succeeded and can make one; None when none can."""
    good: list[tuple[str, list[StageRun]]] = []
    for rec in reversed(records):
        if len(good) >= runs:
            break
        if not (rec.succeeded and rec.job == job and rec.queue == queue and rec.user == user and rec.stages):
            continue
        stages = [stage_from_dict(d) for d in rec.stages]
        try:
            profile_from_runs(job, [stages])
        except (ProfileError, ValueError):
            continue
        good.append((rec.app_id, stages))
    good.reverse()
    if not good:
        return None
    try:
        profile = profile_from_runs(job, [stages for _, stages in good])
    except (ProfileError, ValueError):  # runs that disagree on the DAG: the newest alone
        good = good[-1:]
        profile = profile_from_runs(job, [good[0][1]])
    profile = JobProfile(profile.name, tuple(replace(s, run_s=thin(s.run_s), init_s=thin(s.init_s))
                                             for s in profile.stages))
    measured = frozenset(s.name for _, stages in good for s in stages if s.init_s)
    attempts: dict[str, tuple[int, int]] = {}
    for _, stages in good:
        for s in stages:
            a, f = attempts.get(s.name, (0, 0))
            attempts[s.name] = (a + max(s.attempts, len(s.run_s)), f + s.failed_attempts)
    return StoredProfile(job, queue, user, profile, tuple(app for app, _ in good), measured, attempts)


def _quantile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def render(sp: StoredProfile) -> dict[str, Any]:
    """The profile as ``GET /ws/v1/shepherd/jobs/{name}/profile`` shows it (times in milliseconds)."""
    stages = []
    for s in sp.profile.stages:
        attempts, failed = sp.attempts.get(s.name, (0, 0))
        container = s.container.to_dict() if s.container is not None else {}
        stages.append({
            "name": s.name, "tasks": s.tasks, "parents": list(s.parents),
            "samples": len(s.run_s), "meanTaskTime": _ms(s.mean_run_s), "p90TaskTime": _ms(_quantile(s.run_s, 0.9)),
            "longestTaskTime": _ms(s.longest_s),
            "initTime": _ms(s.mean_init_s) if s.name in sp.init_measured else None,
            "queueTime": None if s.queue_s is None else _ms(s.queue_s),
            "attempts": attempts, "failedAttempts": failed, "failureProbability": round(s.failure_p, 6),
            "container": {"memory": container.get("memory-mb", 0), "vCores": container.get("vcores", 0)},
        })
    return {"job": sp.job, "queue": sp.queue, "user": sp.user, "runs": list(sp.runs),
            "totalTasks": sp.profile.total_tasks, "totalWork": round(sp.profile.total_work_s, 3), "stages": stages}
