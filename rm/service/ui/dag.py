"""A DAG job's stages (``rm.service.stages``) drawn as an inline SVG layered by depth."""

from __future__ import annotations

from rm.service.stages import StageState
from rm.service.ui.page import esc

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 168, 50, 64, 18, 12


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
