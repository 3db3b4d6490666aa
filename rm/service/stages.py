"""A DAG job's stages as the RM sees them: for the web UI's DAG, the REST stages route and the application
report (``submit --wait`` draws a bar per stage).

The job file is the app's ``job_spec_json``. The RM knows no task of a stage by name, but the DAG AM asks for
each stage under its own allocation request id (``am.policies.api.request_id``), so the app's containers say
which stage they ran for: finished ones with exit 0 are done tasks, live ones are running tasks, and the
current attempt's asks are the tasks still waiting for a container. A stage's state follows from those counts,
its parents' states and whether the app has ended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from am.jobspec import Job, JobSpecError, parse_job
from am.policies.api import stage_index_of

if TYPE_CHECKING:
    from rm.core.entities import App, Container

SUCCEEDED, RUNNING, WAITING, READY, BLOCKED, FAILED, KILLED = (
    "SUCCEEDED", "RUNNING", "WAITING", "READY", "BLOCKED", "FAILED", "KILLED")


@dataclass(frozen=True, slots=True)
class StageState:
    name: str
    parents: tuple[str, ...]
    depth: int
    tasks: int
    done: int  # tasks whose container ended with exit 0
    running: int  # live containers of the stage
    waiting: int  # containers asked for and not yet placed
    failed: int  # containers that ended with another exit status (retried by the AM while attempts last)
    state: str


def job_of(app: App) -> Job | None:
    """The app's DAG job file, or None when it has none (or one the RM cannot read)."""
    if not app.job_spec_json:
        return None
    try:
        return parse_job(json.loads(app.job_spec_json), where="the job")
    except (ValueError, JobSpecError):
        return None


def stage_states(app: App, job: Job, containers: list[Container]) -> list[StageState]:
    """Every stage of ``job`` with its task counts and state, in the job file's order."""
    n = len(job.stages)
    done, running, failed, waiting = [0] * n, [0] * n, [0] * n, [0] * n
    for c in containers:
        i = stage_index_of(c.allocation_request_id)
        if c.is_am or i is None or not 0 <= i < n:
            continue
        if c.live:
            running[i] += 1
        elif c.exit_status == 0:
            done[i] += 1
        else:
            failed[i] += 1
    att = app.current
    if att is not None and not att.final and not app.final:
        index = {s.name: k for k, s in enumerate(job.stages)}
        for ask in att.asks.values():
            i = index.get(ask.stage, -1) if ask.stage else stage_index_of(ask.allocation_request_id)
            if i is not None and 0 <= i < n:
                waiting[i] += max(0, ask.num_containers)
    depth = depths(job)
    states: dict[str, str] = {}
    for i, s in sorted(enumerate(job.stages), key=lambda p: depth[p[1].name]):  # parents before children
        states[s.name] = _state(app, s.tasks, done[i], running[i], waiting[i],
                                [states.get(p, BLOCKED) for p in s.parents])
    return [StageState(s.name, tuple(s.parents), depth[s.name], s.tasks, min(done[i], s.tasks), running[i],
                       waiting[i], failed[i], states[s.name]) for i, s in enumerate(job.stages)]


def _state(app: App, tasks: int, done: int, running: int, waiting: int, parents: list[str]) -> str:
    if done >= tasks or (app.final and app.final_status == "SUCCEEDED"):
        return SUCCEEDED
    if app.final:
        return FAILED if app.final_status == "FAILED" else KILLED
    if running:
        return RUNNING
    if waiting:
        return WAITING
    if all(p == SUCCEEDED for p in parents) and app.state == "RUNNING":
        return READY
    return BLOCKED


def depths(job: Job) -> dict[str, int]:
    """Each stage's depth: 0 for a stage without parents, else one more than its deepest parent."""
    by_name = {s.name: s for s in job.stages}
    memo: dict[str, int] = {}

    def depth(name: str, seen: frozenset[str]) -> int:
        if name in memo:
            return memo[name]
        stage = by_name.get(name)
        if stage is None or name in seen:
            return 0
        d = 1 + max((depth(p, seen | {name}) for p in stage.parents if p in by_name), default=-1)
        memo[name] = d
        return d

    return {s.name: depth(s.name, frozenset()) for s in job.stages}


def app_stages(app: App, containers: Iterable[Container]) -> list[StageState]:
    """The stages of ``app``'s job file (none when it has none), from the RM's containers (of any app)."""
    job = job_of(app)
    if job is None:
        return []
    return stage_states(app, job, [c for c in containers if c.app_id == app.app_id])
