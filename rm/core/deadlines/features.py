"""A job's features for the work estimators, and what one finished run of it measured.

From a shepherd job file (``job_spec_json``): one phase per DAG depth, holding every task of the stages at
that depth, with the largest container among them in units. From a stock YARN or Spark client there is no
job file: the job is known by its name and type; tags may say more (``shepherd.tasks=N[,M...]`` the task count
of each phase, ``shepherd.input-bytes=B``), and the estimators fall back on the same name's runs.

A run's work per phase is measured from its containers: the DAG AM asks at priority = the stage's depth, and
stock MapReduce asks maps and reduces at two priorities, so containers are grouped by priority and the groups
ordered by their first start. Each container's work is its run time × its size in units.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from common.resources import MEMORY, VCORES, Resources
from rm.core.deadlines.estimate import JobFeatures, PhaseShape, RunRecord
from rm.core.deadlines.layout import Phase
from rm.core.deadlines.view import units_of

TASKS_TAG = "shepherd.tasks"
INPUT_TAG = "shepherd.input-bytes"


def _tag(tags: Iterable[str], key: str) -> str | None:
    for t in tags:
        k, sep, v = t.partition("=")
        if sep and k.strip().lower() == key:
            return v.strip()
    return None


def _depths(stages: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    by_name = {str(s["name"]): s for s in stages}
    out: dict[str, int] = {}

    def depth(name: str, seen: frozenset[str] = frozenset()) -> int:
        if name in out:
            return out[name]
        parents = [str(p) for p in by_name[name].get("parents", ()) if str(p) in by_name and p not in seen]
        d = 0 if not parents else 1 + max(depth(p, seen | {name}) for p in parents)
        out[name] = d
        return d

    for name in by_name:
        depth(name)
    return out


def _capability(stage: Mapping[str, Any]) -> Resources:
    extra = {str(k): int(v) for k, v in dict(stage.get("resources") or {}).items()}
    return Resources({MEMORY: int(stage.get("memory_mb", 0)), VCORES: int(stage.get("vcores", 1)), **extra})


@dataclass(frozen=True, slots=True)
class Declared:
    """What a job file says of its own durations: per phase, its work and longest task (seconds)."""

    work: tuple[float, ...]
    longest: tuple[float, ...]


def features(*, name: str, app_type: str, user: str, queue: str, job_spec_json: str, tags: Iterable[str],
             unit: Resources) -> tuple[JobFeatures, Declared | None]:
    """The job's features, and what its job file declares of its durations (None when it declares none)."""
    tags = tuple(tags)
    input_bytes = 0.0
    raw_input = _tag(tags, INPUT_TAG)
    if raw_input:
        try:
            input_bytes = max(0.0, float(raw_input))
        except ValueError:
            input_bytes = 0.0
    spec: Mapping[str, Any] = {}
    if job_spec_json:
        try:
            loaded = json.loads(job_spec_json)
            spec = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            spec = {}
    stages = [s for s in spec.get("stages", ()) if isinstance(s, dict) and "name" in s]
    if stages:
        depths = _depths(stages)
        n = max(depths.values()) + 1
        tasks = [0] * n
        units = [0.0] * n
        work = [0.0] * n
        longest = [0.0] * n
        declared = True
        for s in stages:
            d = depths[str(s["name"])]
            k = int(s.get("tasks", 1))
            size = units_of(_capability(s), unit)
            tasks[d] += k
            units[d] = max(units[d], size)
            durations = s.get("durations_s")
            if durations:
                work[d] += sum(float(x) for x in durations) * size
                longest[d] = max(longest[d], max(float(x) for x in durations))
            elif s.get("duration_s"):
                work[d] += float(s["duration_s"]) * k * size
                longest[d] = max(longest[d], float(s["duration_s"]))
            else:
                declared = False
        shapes = tuple(PhaseShape(t, max(u, 1e-9)) for t, u in zip(tasks, units, strict=True))
        job = JobFeatures(str(spec.get("name") or spec.get("id") or name), shapes, kind=app_type, user=user,
                          queue=queue, input_bytes=input_bytes)
        return job, Declared(tuple(work), tuple(longest)) if declared else None
    counts: list[int] = []
    raw = _tag(tags, TASKS_TAG)
    if raw:
        try:
            counts = [max(1, int(x)) for x in raw.split(",") if x.strip()]
        except ValueError:
            counts = []
    shapes = tuple(PhaseShape(c, 1.0) for c in counts)
    return JobFeatures(name, shapes, kind=app_type, user=user, queue=queue, input_bytes=input_bytes), None


def declared_phases(declared: Declared, job: JobFeatures) -> tuple[Phase, ...]:
    return tuple(Phase(w, max(s.tasks, 1) * s.units, m)
                 for w, s, m in zip(declared.work, job.phases, declared.longest, strict=True))


Span = tuple[int, float, float, Resources]
"""A finished non-AM container: (priority, start, finish, resource)."""


def measured(spans: Iterable[Span], unit: Resources) -> tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...],
                                                              tuple[float, ...]]:
    """Per phase (containers grouped by priority, groups in order of first start): work in unit-seconds, the
    longest container, the container count and the largest container in units."""
    groups: dict[int, list[tuple[float, float, float]]] = defaultdict(list)
    for prio, start, finish, res in spans:
        if finish > start:
            groups[prio].append((start, finish - start, units_of(res, unit)))
    order = sorted(groups, key=lambda p: (min(s for s, _, _ in groups[p]), p))
    work = tuple(sum(d * u for _, d, u in groups[p]) for p in order)
    longest = tuple(max(d for _, d, _ in groups[p]) for p in order)
    counts = tuple(len(groups[p]) for p in order)
    sizes = tuple(max(u for _, _, u in groups[p]) for p in order)
    return work, longest, counts, sizes


def run_record(job: JobFeatures, spans: Iterable[Span], unit: Resources) -> RunRecord | None:
    """A finished run for the history; when the job declared no phases (a stock client), the phases come
    from what ran. None when nothing ran."""
    work, longest, counts, sizes = measured(spans, unit)
    if not work:
        return None
    if len(job.phases) != len(work):
        job = JobFeatures(job.name, tuple(PhaseShape(c, s) for c, s in zip(counts, sizes, strict=True)),
                          kind=job.kind, user=job.user, queue=job.queue, input_bytes=job.input_bytes)
    return RunRecord(job, work, longest)
