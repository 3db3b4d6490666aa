"""Aggregate views of the RM state shared by the gRPC, REST and Prometheus front doors."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rm.core.resources import Resources
from rm.core.state import ClusterState


@dataclass(frozen=True, slots=True)
class ClusterMetricsView:
    apps_submitted: int
    apps_pending: int
    apps_running: int
    apps_completed: int
    apps_failed: int
    apps_killed: int
    total: Resources
    allocated: Resources
    available: Resources
    pending: Resources
    containers_allocated: int
    containers_pending: int
    nodes: dict[str, int] = field(default_factory=dict)


def cluster_metrics(st: ClusterState) -> ClusterMetricsView:
    states = Counter(a.state for a in st.apps.values())
    total = st.cluster_capacity()
    allocated = Resources()
    for n in st.nodes.values():
        if n.schedulable:
            allocated = allocated + n.allocated
    pending = Resources()
    pending_n = 0
    for app in st.apps.values():
        res, n, _, _ = st.pending_of(app)
        pending = pending + res
        pending_n += n
    return ClusterMetricsView(
        apps_submitted=len(st.apps),
        apps_pending=states["NEW"] + states["NEW_SAVING"] + states["SUBMITTED"] + states["ACCEPTED"],
        apps_running=states["RUNNING"],
        apps_completed=states["FINISHED"],
        apps_failed=states["FAILED"],
        apps_killed=states["KILLED"],
        total=total,
        allocated=allocated,
        available=(total - allocated).clamp_min_zero(),
        pending=pending,
        containers_allocated=sum(1 for c in st.containers.values() if c.live),
        containers_pending=pending_n,
        nodes=dict(Counter(n.state for n in st.nodes.values())),
    )


def queue_usage(st: ClusterState) -> dict[str, tuple[Resources, int]]:
    """(resources used, number of unfinished apps) per queue path, parents included."""
    out: dict[str, tuple[Resources, int]] = {p: (Resources(), 0) for p in st.queues}
    for app in st.apps.values():
        if app.final:
            continue
        path: str | None = app.queue
        while path is not None and path in st.queues:
            used, n = out[path]
            out[path] = (used + app.used, n + 1)
            path = st.queues[path].parent  # type: ignore[index]
    return out
