"""Aggregate views of the RM state shared by the gRPC, REST and Prometheus front doors.

One pass over the apps gives every queue's YARN QueueMetrics quantities; the root queue's are the
cluster's (as in YARN, where ClusterMetricsInfo reads the root queue's metrics).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from common.ids import QueuePath
from common.resources import Resources
from rm.core.ledger import Ledger

ROOT = QueuePath("root")
PENDING_STATES = frozenset({"NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED"})


@dataclass(slots=True)
class QueueMetricsView:
    apps_submitted: int = 0
    apps_pending: int = 0
    apps_running: int = 0
    apps_completed: int = 0
    apps_failed: int = 0
    apps_killed: int = 0
    allocated: Resources = field(default_factory=Resources)
    allocated_containers: int = 0
    pending: Resources = field(default_factory=Resources)
    pending_containers: int = 0
    available: Resources = field(default_factory=Resources)
    am_used: Resources = field(default_factory=Resources)
    users: set[str] = field(default_factory=set)
    active_apps: int = 0
    containers_preempted: int = 0  # YARN's AggregateContainersPreempted (finished apps' too)


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


def _lineage(st: Ledger, queue: QueuePath) -> list[QueuePath]:
    if queue not in st.queues:
        return [ROOT]
    out: list[QueuePath] = []
    path: QueuePath | None = queue
    while path is not None and path in st.queues and path not in out:
        out.append(path)
        path = st.queues[path].parent
    return out


def queue_metrics(st: Ledger) -> dict[QueuePath, QueueMetricsView]:
    out = {p: QueueMetricsView() for p in st.queues}
    out.setdefault(ROOT, QueueMetricsView())
    for app in st.apps.values():
        pending, n_pending, _, _ = st.pending_of(app)
        for path in _lineage(st, app.queue):
            m = out[path]
            m.apps_submitted += 1
            if app.state in PENDING_STATES:
                m.apps_pending += 1
            elif app.state == "RUNNING":
                m.apps_running += 1
            elif app.state == "FINISHED":
                m.apps_completed += 1
            elif app.state == "FAILED":
                m.apps_failed += 1
            elif app.state == "KILLED":
                m.apps_killed += 1
            m.containers_preempted += app.preempted_containers + app.preempted_am_containers
            if app.final:
                continue
            m.allocated = m.allocated + app.used
            m.allocated_containers += len(app.containers)
            m.pending = m.pending + pending
            m.pending_containers += n_pending
            m.am_used = m.am_used + app.am_used
            m.users.add(app.user)
            if n_pending or not app.used.is_zero():
                m.active_apps += 1
    total = st.cluster_capacity()
    free = Resources()
    for n in st.nodes.values():
        if n.schedulable:
            free = free + (n.capability - n.allocated).clamp_min_zero()
    for path, m in out.items():
        q = st.queues.get(path)
        fraction = q.abs_max_capacity if q is not None else 1.0
        room = Resources({r: int(v * fraction + 1e-6) for r, v in total.amounts.items()}) - m.allocated
        m.available = Resources({r: min(room.get(r), free.get(r)) for r in total.amounts}).clamp_min_zero()
    return out


def cluster_metrics(st: Ledger) -> ClusterMetricsView:
    root = queue_metrics(st)[ROOT]
    return ClusterMetricsView(
        apps_submitted=root.apps_submitted,
        apps_pending=root.apps_pending,
        apps_running=root.apps_running,
        apps_completed=root.apps_completed,
        apps_failed=root.apps_failed,
        apps_killed=root.apps_killed,
        total=st.cluster_capacity(),
        allocated=root.allocated,
        available=root.available,
        pending=root.pending,
        containers_allocated=root.allocated_containers,
        containers_pending=root.pending_containers,
        nodes=dict(Counter(n.state for n in st.nodes.values())),
    )


def queue_usage(st: Ledger) -> dict[str, tuple[Resources, int]]:
    """(resources used, number of unfinished apps) per queue path, parents included."""
    out: dict[str, tuple[Resources, int]] = {p: (Resources(), 0) for p in st.queues}
    for app in st.apps.values():
        if app.final:
            continue
        for path in _lineage(st, app.queue):
            used, n = out.get(path, (Resources(), 0))
            out[path] = (used + app.used, n + 1)
    return out
