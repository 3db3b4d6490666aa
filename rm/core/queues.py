"""The queue tree: YARN capacity-scheduler style hierarchical queues with capacities and weights.

Configured as nested mappings, percentages as in capacity-scheduler.xml::

    {"default": {"capacity": 70}, "batch": {"capacity": 30, "maximum-capacity": 60,
     "queues": {"etl": {"capacity": 100}}}}

Children's capacities under one parent must add up to 100. ``root.default`` exists out of the box.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.ids import QueuePath
from rm.core.model import QueueView

DEFAULT_QUEUES: dict[str, Any] = {"default": {"capacity": 100}}


class QueueConfigError(ValueError):
    pass


def build_queues(children: Mapping[str, Any] | None = None) -> dict[QueuePath, QueueView]:
    """Turn a queue configuration into views, validating it."""
    out: dict[QueuePath, QueueView] = {}
    _build(QueuePath("root"), None, children or DEFAULT_QUEUES, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, True, 1.0, out)
    return out


def _pct(value: Any, what: str) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError) as exc:
        raise QueueConfigError(f"{what} must be a number, got {value!r}") from exc
    if not 0 <= f <= 100:
        raise QueueConfigError(f"{what} must be between 0 and 100, got {f}")
    return f / 100.0


def _state(value: Any, what: str) -> bool:
    state = str(value).strip().upper()
    if state not in ("RUNNING", "STOPPED"):
        raise QueueConfigError(f"{what} state must be RUNNING or STOPPED, got {value!r}")
    return state == "RUNNING"


def _factor(value: Any, what: str) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError) as exc:
        raise QueueConfigError(f"{what} must be a number, got {value!r}") from exc
    if not f > 0:
        raise QueueConfigError(f"{what} must be above 0, got {f}")
    return f


def _build(
    path: QueuePath,
    parent: QueuePath | None,
    children: Mapping[str, Any],
    capacity: float,
    max_capacity: float,
    abs_cap: float,
    abs_max: float,
    weight: float,
    am_share: float,
    running: bool,
    user_limit_factor: float,
    out: dict[QueuePath, QueueView],
) -> None:
    child_paths = tuple(QueuePath(f"{path}.{name}") for name in children)
    out[path] = QueueView(
        path=path,
        parent=parent,
        children=child_paths,
        capacity=capacity,
        max_capacity=max_capacity,
        abs_capacity=abs_cap,
        abs_max_capacity=abs_max,
        weight=weight,
        max_am_share=am_share,
        running=running,
        user_limit_factor=user_limit_factor,
    )
    if not children:
        return
    total = 0.0
    for name, spec in children.items():
        if not name or "." in name:
            raise QueueConfigError(f"invalid queue name {name!r} under {path}")
        spec = spec or {}
        if not isinstance(spec, Mapping):
            raise QueueConfigError(f"queue {path}.{name} must be a mapping")
        cap = _pct(spec.get("capacity", 0), f"{path}.{name} capacity")
        mx = _pct(spec.get("maximum-capacity", 100), f"{path}.{name} maximum-capacity")
        if mx < cap:
            raise QueueConfigError(f"{path}.{name}: maximum-capacity {mx * 100:g} is below capacity {cap * 100:g}")
        total += cap
        am = spec.get("maximum-am-resource-percent", am_share * 100)
        _build(
            QueuePath(f"{path}.{name}"),
            path,
            spec.get("queues") or {},
            cap,
            mx,
            abs_cap * cap,
            abs_max * mx,
            float(spec.get("weight", 1.0)),
            _pct(am, f"{path}.{name} maximum-am-resource-percent"),
            _state(spec.get("state", "RUNNING"), f"{path}.{name}"),
            _factor(spec.get("user-limit-factor", 1.0), f"{path}.{name} user-limit-factor"),
            out,
        )
    if abs(total - 1.0) > 1e-6:
        raise QueueConfigError(f"capacities of the children of {path} add up to {total * 100:g}, not 100")


def resolve_queue(queues: Mapping[QueuePath, QueueView], name: str) -> QueueView:
    """Find a leaf queue by full path or by its leaf name (as YARN allows)."""
    if not name:
        name = "default"
    candidates = [name] if name.startswith("root") else [f"root.{name}"]
    for c in candidates:
        q = queues.get(QueuePath(c))
        if q is not None:
            if not q.is_leaf:
                raise QueueConfigError(f"queue {c} is not a leaf queue")
            return q
    leaf = [q for q in queues.values() if q.is_leaf and q.path.rsplit(".", 1)[-1] == name]
    if len(leaf) == 1:
        return leaf[0]
    raise QueueConfigError(f"unknown queue: {name}")
