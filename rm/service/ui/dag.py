"""A DAG job's stages as the RM sees them, drawn as an inline SVG layered by depth.

The job file is the app's ``job_spec_json``. The RM knows no task of a stage by name, but the DAG AM asks for
each stage under its own allocation request id (``am.policies.api.request_id``), so the app's containers say
which stage they ran for: finished ones with exit 0 are done tasks, live ones are running tasks, and the
current attempt's asks are the tasks still waiting for a container. A stage's state follows from those counts,
its parents' states and whether the app has ended.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from am.jobspec import Job, JobSpecError, parse_job
from am.policies.api import stage_index_of
from rm.service.ui.page import esc

if TYPE_CHECKING:
    from rm.core.entities import App, Container

SUCCEEDED, RUNNING, WAITING, READY, BLOCKED, FAILED, KILLED = (
    "SUCCEEDED", "RUNNING", "WAITING", "READY", "BLOCKED", "FAILED", "KILLED")
NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 168, 50, 64, 18, 12


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


def dag_svg(stages: list[StageState]) -> str:
    """Columns by depth, one box per stage (its state, tasks done of total, running and waiting counts), an
    arrow from each parent to each child."""
    columns: dict[int, list[StageState]] = {}
    for s in stages:
        columns.setdefault(s.depth, []).append(s)
    where: dict[str, tuple[float, float]] = {}
    tallest = max(len(c) for c in columns.values()) if columns else 0
    height = PAD * 2 + tallest * NODE_H + max(0, tallest - 1) * GAP_Y
    for d, col in sorted(columns.items()):
        col_h = len(col) * NODE_H + (len(col) - 1) * GAP_Y
        top = (height - col_h) / 2
        for k, s in enumerate(col):
            where[s.name] = (PAD + d * (NODE_W + GAP_X), top + k * (NODE_H + GAP_Y))
    width = PAD * 2 + (max(columns) + 1 if columns else 0) * (NODE_W + GAP_X) - GAP_X
    edges, boxes = [], []
    for s in stages:
        x, y = where[s.name]
        for p in s.parents:
            if p not in where:
                continue
            px, py = where[p]
            x1, y1, x2, y2 = px + NODE_W, py + NODE_H / 2, x, y + NODE_H / 2
            mid = (x1 + x2) / 2
            edges.append(f'<path class="edge" d="M{x1:.0f},{y1:.0f} C{mid:.0f},{y1:.0f} {mid:.0f},{y2:.0f} '
                         f'{x2 - 4:.0f},{y2:.0f}" marker-end="url(#arrow)"/>')
        counts = f"{s.done}/{s.tasks} done"
        extra = ", ".join(part for part in (f"{s.running} running" if s.running else "",
                                            f"{s.waiting} waiting" if s.waiting else "",
                                            f"{s.failed} failed" if s.failed else "") if part)
        title = f"{s.name}: {s.state}, {counts}" + (f", {extra}" if extra else "")
        done_w = (NODE_W - 2) * s.done / s.tasks if s.tasks else 0
        boxes.append(
            f'<g class="stage st-{s.state.lower()}" data-stage="{esc(s.name)}" data-state="{s.state}" '
            f'data-done="{s.done}" data-tasks="{s.tasks}" transform="translate({x:.0f},{y:.0f})">'
            f"<title>{esc(title)}</title>"
            f'<rect class="box" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
            f'<rect class="done" x="1" y="{NODE_H - 6}" width="{done_w:.1f}" height="5" rx="2"/>'
            f'<text class="sname" x="10" y="19">{esc(_clip(s.name, 20))}</text>'
            f'<text class="sinfo" x="10" y="37">{s.state.lower()} · {counts}</text></g>')
    return (f'<svg class="dag" role="img" aria-label="job stages" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" xmlns="http://www.w3.org/2000/svg">'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>'
            f'{"".join(edges)}{"".join(boxes)}</svg>')


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
