"""Rumen job histories (``2jobs2min-rumen-jh.json``) as native map → reduce jobs.

As SLS replays them: every task becomes one container whose duration is its *last* attempt's
``finishTime − startTime`` (``durations="task"`` takes the task's own span instead, which also counts the
time the task waited for its container); containers get SLS's default size (1024 MB, 1 vcore) rather than the job's
configuration; times are rebased to the earliest submit. Maps form one stage, reduces a second that
depends on it (a job without reduces is map-only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from am.jobspec import Job, JobSpecError, parse_job
from sim.traces.jsonstream import iter_objects

DEFAULT_MEMORY_MB = 1024
DEFAULT_VCORES = 1


def _task_duration_s(task: dict[str, Any], span: bool) -> float | None:
    if span:
        if task.get("startTime", -1) < 0 or task.get("finishTime", -1) < 0:
            return None
        return max(0.0, (float(task["finishTime"]) - float(task["startTime"])) / 1000.0)
    attempts = [a for a in task.get("attempts", []) if a.get("startTime", -1) >= 0 and a.get("finishTime", -1) >= 0]
    if not attempts:
        return None
    last = attempts[-1]
    return max(0.0, (float(last["finishTime"]) - float(last["startTime"])) / 1000.0)


def _stage(name: str, tasks: list[dict[str, Any]], parents: list[str], span: bool) -> dict[str, Any] | None:
    durations = [d for d in (_task_duration_s(t, span) for t in tasks) if d is not None]
    if not durations:
        return None
    return {"name": name, "tasks": len(durations), "memory_mb": DEFAULT_MEMORY_MB, "vcores": DEFAULT_VCORES,
            "durations_s": durations, "parents": parents}


def load_rumen(path: str | Path, *, durations: Literal["attempt", "task"] = "attempt") -> list[Job]:
    raw = [obj for obj in iter_objects(path) if "jobID" in obj]
    if not raw:
        raise JobSpecError(f"{path}: no Rumen jobs")
    origin = min(float(o["submitTime"]) for o in raw)
    jobs: list[Job] = []
    for obj in raw:
        stages = []
        span = durations == "task"
        maps = _stage("map", obj.get("mapTasks", []), [], span)
        if maps is not None:
            stages.append(maps)
        reduces = _stage("reduce", obj.get("reduceTasks", []), ["map"] if maps is not None else [], span)
        if reduces is not None:
            stages.append(reduces)
        if not stages:
            continue
        data = {"id": str(obj["jobID"]), "name": str(obj.get("jobName") or obj["jobID"]),
                "user": str(obj.get("user") or "default"), "queue": str(obj.get("queue") or "default"),
                "arrival_s": (float(obj["submitTime"]) - origin) / 1000.0, "stages": stages}
        jobs.append(parse_job(data, where=f"Rumen job {obj['jobID']}"))
    return sorted(jobs, key=lambda j: j.arrival_s)
