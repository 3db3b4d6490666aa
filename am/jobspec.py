"""The native job description: a DAG of stages, each a set of identical tasks.

The same description serves three readers: ``shepherd submit`` (a YAML or JSON job file), the DAG
ApplicationMaster (the job arrives as JSON in ``SHEPHERD_JOB_JSON``) and the simulator (a workload
is a JSON Lines file, one job per line, with ``arrival_s`` set). ``docs/workload-format.md``
documents every field. Pure: parsing and validation only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from common.resources import MEMORY, VCORES, Resources

DEFAULT_TASK_DURATION_S = 60.0
"""The per-task estimate used when a stage gives neither ``duration_s`` nor ``durations_s``."""

_NAME_PATTERN = r"^[A-Za-z0-9_.\-]+$"

AmPolicyName = Literal["greedy", "carbyne", "jockey", "jockey-static", "jockey-amdahl", "jockey-max"]
"""The DAG AM's ask policies a job file may name (``am.policies.ASK_POLICIES``)."""


class JobSpecError(ValueError):
    """A job description is malformed; the message says where and why."""


class Stage(BaseModel):
    """A set of ``tasks`` identical tasks that may start once every parent stage has finished."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=128, pattern=_NAME_PATTERN)
    tasks: int = Field(ge=1)
    duration_s: float | None = Field(default=None, gt=0)
    memory_mb: int = Field(ge=1)
    vcores: int = Field(default=1, ge=1)
    parents: tuple[str, ...] = ()
    command: str | None = None
    durations_s: tuple[float, ...] | None = None
    resources: dict[str, int] = Field(default_factory=dict)
    max_attempts: int = Field(default=3, ge=1)

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.durations_s is not None:
            if len(self.durations_s) != self.tasks:
                raise ValueError(
                    f"stage {self.name!r}: durations_s has {len(self.durations_s)} entries "
                    f"but the stage has {self.tasks} tasks"
                )
            if any(d < 0 for d in self.durations_s):
                raise ValueError(f"stage {self.name!r}: durations_s entries must be >= 0")
        for kind, amount in self.resources.items():
            if kind in (MEMORY, VCORES, "memory_mb"):
                raise ValueError(
                    f"stage {self.name!r}: give {kind!r} with memory_mb / vcores, not in resources"
                )
            if amount < 0:
                raise ValueError(f"stage {self.name!r}: resource {kind!r} must be >= 0, got {amount}")
        if len(set(self.parents)) != len(self.parents):
            raise ValueError(f"stage {self.name!r}: a parent is listed twice in {list(self.parents)}")
        if self.name in self.parents:
            raise ValueError(f"stage {self.name!r} lists itself as a parent (cycle {self.name} -> {self.name})")
        if self.command is not None and not self.command.strip():
            raise ValueError(f"stage {self.name!r}: command is empty")
        return self

    @property
    def capability(self) -> Resources:
        """What one task of this stage needs from a node."""
        return Resources({MEMORY: self.memory_mb, VCORES: self.vcores, **self.resources})

    @property
    def estimated_task_s(self) -> float:
        """The spec's per-task duration estimate (measured durations refine it at run time)."""
        if self.duration_s is not None:
            return self.duration_s
        if self.durations_s:
            return sum(self.durations_s) / len(self.durations_s)
        return DEFAULT_TASK_DURATION_S

    def task_duration_s(self, index: int) -> float:
        """Task ``index``'s duration: its own entry in ``durations_s`` if given, else the estimate."""
        if self.durations_s is not None:
            return self.durations_s[index]
        return self.estimated_task_s


class Job(BaseModel):
    """A job: stages forming a DAG, plus who runs it where and what it promises or needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=256)
    name: str | None = None
    user: str | None = None
    queue: str = "default"
    arrival_s: float = Field(default=0.0, ge=0)
    stages: tuple[Stage, ...] = Field(min_length=1)
    deadline_s: float | None = Field(default=None, gt=0)
    period_s: float | None = Field(default=None, gt=0)
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    priority: int = 0
    max_app_attempts: int | None = Field(default=None, ge=1)
    am_policy: AmPolicyName | None = None  # which asks the DAG AM makes
    altruism: float | None = Field(default=None, ge=0.0, le=1.0)  # P(altruism) for the carbyne policy
    altruism_floor: float = Field(default=0.0, ge=0.0, le=1.0)  # carbyne: never yield below this of the share
    reservation_id: str | None = None  # YARN's reservation-id: the job runs inside that reservation
    # the value of finishing t minutes after submission: [[minutes, value], ...], values never rising (Jockey)
    utility: tuple[tuple[float, float], ...] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _check_dag(self) -> Self:
        seen: set[str] = set()
        for stage in self.stages:
            if stage.name in seen:
                raise ValueError(f"duplicate stage name {stage.name!r}")
            seen.add(stage.name)
        for stage in self.stages:
            for parent in stage.parents:
                if parent not in seen:
                    raise ValueError(f"stage {stage.name!r} has unknown parent {parent!r}")
        cycle = _find_cycle(self.stages)
        if cycle:
            raise ValueError("stages form a cycle: " + " -> ".join(cycle))
        for key in self.env:
            if not key or "=" in key:
                raise ValueError(f"env: invalid variable name {key!r}")
        if self.utility is not None:
            self.utility_points_s()  # a rising or malformed utility is refused here, naming the point
        return self

    def utility_points_s(self) -> tuple[tuple[float, float], ...] | None:
        """The ``utility`` points with times in seconds since submission, checked to be non-increasing;
        None when the job gives no utility."""
        if self.utility is None:
            return None
        from am.policies.jockey.utility import Utility, UtilityError  # the policies import this module

        try:
            Utility(self.utility)  # checked as written, so a message names the minutes the file gives
        except UtilityError as exc:
            raise ValueError(f"utility: {exc}") from None
        return tuple((t * 60.0, u) for t, u in self.utility)

    # ------------------------------------------------------------------ DAG views

    @property
    def key(self) -> str:
        """The recurring-job key: ``name`` when given, else ``id``."""
        return self.name or self.id

    @property
    def total_tasks(self) -> int:
        return sum(s.tasks for s in self.stages)

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    def stage_index(self, name: str) -> int:
        for i, s in enumerate(self.stages):
            if s.name == name:
                return i
        raise KeyError(name)

    def children(self, name: str) -> list[Stage]:
        return [s for s in self.stages if name in s.parents]

    def topological_order(self) -> list[Stage]:
        """Stages with every parent before its children; ties keep file order."""
        done: set[str] = set()
        order: list[Stage] = []
        while len(order) < len(self.stages):
            for s in self.stages:
                if s.name not in done and all(p in done for p in s.parents):
                    order.append(s)
                    done.add(s.name)
                    break
        return order

    def depths(self) -> dict[str, int]:
        """Per stage: 0 for stages without parents, else one more than the deepest parent."""
        out: dict[str, int] = {}
        for s in self.topological_order():
            out[s.name] = 1 + max((out[p] for p in s.parents), default=-1)
        return out

    def total_work_s(self) -> float:
        """Container-seconds of the whole job by the spec's estimates."""
        return sum(s.task_duration_s(i) for s in self.stages for i in range(s.tasks))

    def to_json(self) -> str:
        """Compact JSON that ``parse_job(json.loads(...))`` reads back to an equal job."""
        return self.model_dump_json(exclude_none=True)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def _find_cycle(stages: Sequence[Stage]) -> list[str]:
    """One cycle as ``[a, b, ..., a]`` (following parent edges reversed), or [] when acyclic."""
    parents = {s.name: [p for p in s.parents if p != s.name] for s in stages}
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    path: list[str] = []

    def visit(name: str) -> list[str]:
        state[name] = 1
        path.append(name)
        for parent in parents.get(name, []):
            if state.get(parent) == 1:
                start = path.index(parent)
                return [*path[start:], parent][::-1]
            if parent not in state:
                found = visit(parent)
                if found:
                    return found
        path.pop()
        state[name] = 2
        return []

    for s in stages:
        if s.name not in state:
            found = visit(s.name)
            if found:
                return found
    return []


def _format_error(exc: ValidationError, where: str) -> str:
    errors = exc.errors()
    in_stages = any(len(e["loc"]) > 1 and e["loc"][0] == "stages" for e in errors)
    lines = []
    for err in errors:
        if in_stages and err["loc"] == ("stages",) and err["type"] == "too_short":
            continue  # a side effect of a bad stage, reported on its own
        loc = ".".join(str(part) for part in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        lines.append(f"{loc}: {msg}" if loc else msg)
    return f"{where}: " + "; ".join(lines)


def parse_job(data: Mapping[str, Any], *, where: str = "job") -> Job:
    """Validate a job given as a mapping; raise ``JobSpecError`` naming what is wrong."""
    if not isinstance(data, Mapping):
        raise JobSpecError(f"{where}: expected a mapping, got {type(data).__name__}")
    try:
        return Job.model_validate(dict(data))
    except ValidationError as exc:
        raise JobSpecError(_format_error(exc, where)) from None


def load_job(path: str | Path) -> Job:
    """Read one job from a YAML (``.yaml``/``.yml``) or JSON file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise JobSpecError(f"{p}: cannot read job file: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise JobSpecError(f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {exc}") from None
    return parse_job(data, where=str(p))


def load_workload(path: str | Path) -> list[Job]:
    """Read a workload: JSON Lines, one job per line; blank lines and ``#`` comments are skipped.

    Jobs come back sorted by ``arrival_s`` (file order among equal arrivals); job ids must be unique.
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise JobSpecError(f"{p}: cannot read workload: {exc.strerror or exc}") from None
    jobs: list[Job] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        where = f"{p}:{number}"
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise JobSpecError(f"{where}: not valid JSON: {exc.msg}") from None
        job = parse_job(data, where=where)
        if job.id in seen:
            raise JobSpecError(f"{where}: duplicate job id {job.id!r} (first on line {seen[job.id]})")
        seen[job.id] = number
        jobs.append(job)
    return sorted(jobs, key=lambda j: j.arrival_s)


def dump_workload(jobs: Sequence[Job]) -> str:
    """The JSON Lines text ``load_workload`` reads."""
    return "".join(job.to_json() + "\n" for job in jobs)
