"""Hadoop SLS-native job traces (``inputsls.json``, ``sls_dag.json``) as native jobs.

Each SLS job becomes one job arriving at ``job.start.ms``. Its containers become tasks, grouped into stages
of identical demand: maps first, then reduces, which depend on every map stage (the MapReduce AM's order).
A DAG AM's containers (``yarn.sls.am.type: dag``) carry ``container.request.delay``: containers with a
later delay form a later stage, each depending on the one before, which is the ordering the delays encode
(their exact timing is not kept). A task runs ``container.duration.ms``, else ``end.ms − start.ms``.
Containers without a size get SLS's default, 1024 MB and 1 vcore; ``count`` repeats a task or a job.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from am.jobspec import Job, JobSpecError, parse_job
from sim.traces.jsonstream import iter_objects

DEFAULT_MEMORY_MB = 1024
DEFAULT_VCORES = 1
_RESERVED = {"container.memory-mb", "container.vcores"}


def _duration_s(task: dict[str, Any]) -> float:
    if "container.duration.ms" in task:
        return float(task["container.duration.ms"]) / 1000.0
    if "container.start.ms" in task and "container.end.ms" in task:
        return (float(task["container.end.ms"]) - float(task["container.start.ms"])) / 1000.0
    raise JobSpecError(f"SLS task without a duration: {task}")


def _others(task: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, value in task.items():
        if key.startswith("container.") and key not in _RESERVED and key.split(".", 1)[1] in ("gpu", "fpga"):
            out[key.split(".", 1)[1]] = int(value)
    return out


def sls_job(obj: dict[str, Any], *, suffix: str = "") -> Job:
    dag = str(obj.get("yarn.sls.am.type", "mapreduce")) == "dag"
    groups: dict[tuple[int, str, int, int, tuple[tuple[str, int], ...]], list[float]] = {}
    for task in obj.get("job.tasks", []):
        kind = str(task.get("container.type", "map"))
        order = int(task.get("container.request.delay", 0)) if dag else (1 if kind == "reduce" else 0)
        key = (order, kind, int(task.get("container.memory-mb", DEFAULT_MEMORY_MB)),
               int(task.get("container.vcores", DEFAULT_VCORES)), tuple(sorted(_others(task).items())))
        groups.setdefault(key, []).extend([_duration_s(task)] * int(task.get("count", 1)))
    job_id = str(obj.get("job.id", "job")) + suffix
    if not groups:
        raise JobSpecError(f"SLS job {job_id} has no tasks")
    stages: list[dict[str, Any]] = []
    levels = sorted({k[0] for k in groups})
    names: dict[int, list[str]] = {}
    for key in sorted(groups):
        order, kind, memory, vcores, others = key
        name = f"{kind}{len(stages)}"
        level = levels.index(order)
        parents = names.get(levels[level - 1], []) if level > 0 else []
        stage: dict[str, Any] = {"name": name, "tasks": len(groups[key]), "memory_mb": memory,
                                 "vcores": vcores, "durations_s": groups[key], "parents": parents}
        if others:
            stage["resources"] = dict(others)
        stages.append(stage)
        names.setdefault(order, []).append(name)
    data = {"id": job_id, "user": obj.get("job.user", "default"), "queue": str(obj.get("job.queue.name", "default")),
            "arrival_s": max(0.0, float(obj.get("job.start.ms", 0)) / 1000.0), "stages": stages}
    return parse_job(data, where=f"SLS job {job_id}")


def load_sls(path: str | Path) -> list[Job]:
    """Every job of an SLS-native trace (a leading ``num.nodes`` object is skipped), in arrival order."""
    jobs: list[Job] = []
    for obj in iter_objects(path):
        if "job.tasks" not in obj:
            continue  # {"num.nodes": N, "num.racks": R} sizes a synthetic cluster
        repeat = int(obj.get("job.count", 1))
        for i in range(repeat):
            jobs.append(sls_job(obj, suffix=f"-{i}" if repeat > 1 else ""))
    return _sorted(jobs)


def _sorted(jobs: Iterable[Job]) -> list[Job]:
    return sorted(jobs, key=lambda j: j.arrival_s)
