"""Prometheus metrics of the ResourceManager: YARN's ClusterMetrics and QueueMetrics quantities under
Prometheus naming (base units, ``_total`` counters), computed from the live state at scrape time, plus
histograms the RM observes as it works. docs/metrics.md maps every family to its YARN name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from common.ids import QueuePath
from common.resources import MEMORY, VCORES, Resources
from rm.core.deadlines.system import DELAY_BUCKETS
from rm.core.ledger import Ledger
from rm.core.plan import Plan
from rm.core.reservation.dra import EXTENDED, NO_ROOM, NO_SKYLINE, PARTIAL, WITHIN_SKYLINE
from rm.core.reservation.stage import RESERVATION_LENT
from rm.service.size_metrics import SizeMetrics
from rm.service.slo_metrics import SloOutcomes, slo_families
from rm.service.views import QueueMetricsView, queue_metrics

if TYPE_CHECKING:
    from rm.service.persistence import StoreWriter
    from rm.service.server import ResourceManager

MIB = 1024 * 1024
VERSION = "0.1.0"
LAG_PROBE_S = 0.25  # how often the event loop's lag is sampled
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# queue waits run from sub-second to hours (Kueue widened its admission-wait buckets to ~11 h)
WAIT_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600, 86400)
DRA_OUTCOMES = (EXTENDED, PARTIAL, NO_ROOM, WITHIN_SKYLINE, NO_SKYLINE)
NODE_STATES = ("NEW", "RUNNING", "UNHEALTHY", "DECOMMISSIONING", "DECOMMISSIONED", "LOST", "REBOOTED",
               "SHUTDOWN")

# (family, help, YARN QueueMetrics name, how to read it from a QueueMetricsView)
_Family = tuple[str, str, str, Callable[[QueueMetricsView], float]]
_COUNTERS: tuple[_Family, ...] = (
    ("shepherd_queue_apps_submitted", "Applications submitted to the queue", "AppsSubmitted",
     lambda m: m.apps_submitted),
    ("shepherd_queue_apps_completed", "Applications that finished", "AppsCompleted", lambda m: m.apps_completed),
    ("shepherd_queue_apps_failed", "Applications that failed", "AppsFailed", lambda m: m.apps_failed),
    ("shepherd_queue_apps_killed", "Applications that were killed", "AppsKilled", lambda m: m.apps_killed),
    ("shepherd_queue_containers_preempted", "Containers preempted from the queue's applications",
     "AggregateContainersPreempted", lambda m: m.containers_preempted),
)
_GAUGES: tuple[_Family, ...] = (
    ("shepherd_queue_apps_pending", "Applications accepted and not yet running", "AppsPending",
     lambda m: m.apps_pending),
    ("shepherd_queue_apps_running", "Applications running", "AppsRunning", lambda m: m.apps_running),
    ("shepherd_queue_allocated_memory_bytes", "Memory allocated to containers", "AllocatedMB",
     lambda m: m.allocated.get(MEMORY) * MIB),
    ("shepherd_queue_allocated_vcores", "Virtual cores allocated to containers", "AllocatedVCores",
     lambda m: m.allocated.get(VCORES)),
    ("shepherd_queue_allocated_containers", "Containers allocated", "AllocatedContainers",
     lambda m: m.allocated_containers),
    ("shepherd_queue_available_memory_bytes", "Memory the queue could still get (its headroom)", "AvailableMB",
     lambda m: m.available.get(MEMORY) * MIB),
    ("shepherd_queue_available_vcores", "Virtual cores the queue could still get", "AvailableVCores",
     lambda m: m.available.get(VCORES)),
    ("shepherd_queue_pending_memory_bytes", "Memory asked for and not yet allocated", "PendingMB",
     lambda m: m.pending.get(MEMORY) * MIB),
    ("shepherd_queue_pending_vcores", "Virtual cores asked for and not yet allocated", "PendingVCores",
     lambda m: m.pending.get(VCORES)),
    ("shepherd_queue_pending_containers", "Containers asked for and not yet allocated", "PendingContainers",
     lambda m: m.pending_containers),
    ("shepherd_queue_reserved_memory_bytes", "Memory reserved on nodes for waiting containers", "ReservedMB",
     lambda m: 0),
    ("shepherd_queue_reserved_vcores", "Virtual cores reserved on nodes for waiting containers",
     "ReservedVCores", lambda m: 0),
    ("shepherd_queue_reserved_containers", "Containers holding a reservation", "ReservedContainers",
     lambda m: 0),
    ("shepherd_queue_am_memory_bytes", "Memory held by ApplicationMaster containers", "UsedAMResourceMB",
     lambda m: m.am_used.get(MEMORY) * MIB),
    ("shepherd_queue_active_users", "Users with unfinished applications", "ActiveUsers", lambda m: len(m.users)),
    ("shepherd_queue_active_applications", "Applications holding or asking for containers",
     "ActiveApplications", lambda m: m.active_apps),
)


class _StateCollector(Collector):
    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm

    def collect(self) -> Iterator[Metric]:
        st = self.rm.state
        info = InfoMetricFamily("shepherd_resourcemanager", "ResourceManager build and cluster id")
        info.add_metric([], {"version": VERSION, "cluster_id": str(st.meta.cluster_timestamp)})
        yield info
        per_queue = queue_metrics(st)
        yield from _queue_families(per_queue)
        total = st.cluster_capacity()
        mem = GaugeMetricFamily("shepherd_cluster_capacity_memory_bytes",
                                "Memory of the RUNNING NodeManagers (totalMB)")
        mem.add_metric([], total.get(MEMORY) * MIB)
        yield mem
        cpu = GaugeMetricFamily("shepherd_cluster_capacity_vcores",
                                "Virtual cores of the RUNNING NodeManagers (totalVirtualCores)")
        cpu.add_metric([], total.get(VCORES))
        yield cpu
        nodes = GaugeMetricFamily("shepherd_nodes", "NodeManagers by state (NumActiveNMs, NumLostNMs, ...)",
                                  labels=["state"])
        counts: dict[str, int] = {}
        for n in st.nodes.values():
            counts[n.state] = counts.get(n.state, 0) + 1
        for state in NODE_STATES:
            nodes.add_metric([state.lower()], counts.get(state, 0))
        yield nodes
        yield from _reservation_families(st, self.rm.now())
        yield from _deadline_families(st)
        yield from slo_families(st, getattr(self.rm, "pipeline", ()), self.rm.now())
        yield from _store_families(getattr(self.rm, "writer", None))


def _store_families(writer: StoreWriter | None) -> Iterator[Metric]:
    """The state store's write queue (rm/service/persistence.py)."""
    if writer is None:
        return
    pending = GaugeMetricFamily("shepherd_store_pending_records",
                                "Changed records waiting to be written to the state store")
    pending.add_metric([], writer.pending)
    yield pending
    yield _counter("shepherd_store_write_failures", "State store write transactions that failed",
                   writer.failed_writes)
    yield _counter("shepherd_store_records_dropped", "Records the state store refused for good (never retried)",
                   writer.dropped)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    c = CounterMetricFamily(name, doc)
    c.add_metric([], value)
    return c


def _reservation_families(st: Ledger, now: float) -> Iterator[Metric]:
    """Preemption, the reservation stage, dynamic reprovisioning (counted since the RM started) and the
    reservations the plans hold."""
    preempted = CounterMetricFamily("shepherd_containers_preempted",
                                    "Containers preempted by the scheduler (exit -102), by reason", labels=["reason"])
    for reason, n in sorted({RESERVATION_LENT: 0, **st.preempted_by_reason}.items()):
        preempted.add_metric([reason], n)
    yield preempted
    yield _counter("shepherd_reservation_reclaims",
                   "Reclaims the reservation stage issued: capacity a reservation lent out, asked back from one app",
                   st.counters.get("reservation_reclaims", 0))
    yield _counter("shepherd_reservation_containers_placed",
                   "Containers the reservation stage placed within reservations' guarantees",
                   st.counters.get("placed_in_reservation", 0))
    yield _counter("shepherd_reservation_extension_containers",
                   "Extra containers booked by dynamic reprovisioning, summed over its rounds (each for one period)",
                   st.counters.get("reservation_extension_containers", 0))
    decisions = CounterMetricFamily("shepherd_reservation_dra_decisions",
                                    "Dynamic reprovisioning decisions, by outcome", labels=["outcome"])
    for outcome, n in sorted({**dict.fromkeys(DRA_OUTCOMES, 0), **st.dra_outcomes}.items()):
        decisions.add_metric([outcome], n)
    yield decisions
    system = st.reservations
    held = dict.fromkeys((p for p, q in st.queues.items() if q.is_leaf), 0)  # every leaf queue is reservable
    for res in system.reservations.values():
        held[res.queue] = held.get(res.queue, 0) + 1
    active = dict.fromkeys(held, 0)
    for a in system.view(now).active if system.reservations else ():
        active[a.queue] = active.get(a.queue, 0) + 1
    total = GaugeMetricFamily("shepherd_reservations", "Reservations accepted into the queue's plan",
                              labels=["queue"])
    now_active = GaugeMetricFamily("shepherd_reservations_active",
                                   "Reservations guaranteeing capacity at this plan step", labels=["queue"])
    for queue in sorted(held):
        total.add_metric([queue], held[queue])
        now_active.add_metric([queue], active[queue])
    yield total
    yield now_active


def _deadline_families(st: Ledger) -> Iterator[Metric]:
    """Deadlines bought (MRM): quotes, admissions by outcome, the deadlines held, outcomes and how late or
    early the apps finished, and prediction-interval misses (counted since the RM started)."""
    system = st.deadlines
    n = system.counters
    yield _counter("shepherd_deadline_quotes", "Price–deadline quotes given", n.get("quotes", 0))
    admissions = CounterMetricFamily("shepherd_deadline_admissions", "Submissions that asked for a deadline, "
                                     "by outcome", labels=["outcome"])
    for outcome in ("admitted", "infeasible", "expired", "invalid"):
        admissions.add_metric([outcome], n.get(f"admissions_{outcome}", 0))
    yield admissions
    active = GaugeMetricFamily("shepherd_deadlines_active", "Admitted deadlines of unfinished apps",
                               labels=["queue"])
    per_queue = dict.fromkeys((p for p, q in st.queues.items() if q.is_leaf), 0)
    for held in system.held.values():
        per_queue[held.queue] = per_queue.get(held.queue, 0) + 1
    for queue in sorted(per_queue):
        active.add_metric([queue], per_queue[queue])
    yield active
    outcomes = CounterMetricFamily("shepherd_deadline_outcomes", "Apps with a deadline that ended, met or missed",
                                   labels=["outcome"])
    outcomes.add_metric(["met"], n.get("met", 0))
    outcomes.add_metric(["missed"], n.get("missed", 0))
    yield outcomes
    yield _counter("shepherd_deadline_pi_misses", "Deadline apps whose work exceeded the prediction interval "
                   "they were admitted with", n.get("pi_misses", 0))
    late = "How late apps that missed their deadline finished"
    early = "How early apps that met their deadline finished"
    for name, doc, hist in (("shepherd_deadline_tardiness_seconds", late, system.tardiness),
                            ("shepherd_deadline_earliness_seconds", early, system.earliness)):
        family = HistogramMetricFamily(name, doc)
        family.add_metric([], [(_bound(b), float(c)) for b, c in zip(DELAY_BUCKETS, hist.counts, strict=True)],
                          hist.total)
        yield family


def _bound(b: float) -> str:
    return "+Inf" if b == float("inf") else f"{b:g}"


def _queue_families(per_queue: Mapping[QueuePath, QueueMetricsView]) -> Iterator[Metric]:
    for name, doc, yarn, read in _COUNTERS:
        c = CounterMetricFamily(name, f"{doc} (YARN {yarn})", labels=["queue"])
        for path, m in sorted(per_queue.items()):
            c.add_metric([path], read(m))
        yield c
    for name, doc, yarn, read in _GAUGES:
        g = GaugeMetricFamily(name, f"{doc} (YARN {yarn})", labels=["queue"])
        for path, m in sorted(per_queue.items()):
            g.add_metric([path], read(m))
        yield g


class RMMetrics:
    def __init__(self, rm: ResourceManager) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_StateCollector(rm))
        self.cycle_seconds = Histogram(
            "shepherd_scheduling_cycle_seconds", "Time of one scheduling cycle (snapshot, policies, apply)",
            registry=self.registry, buckets=LATENCY_BUCKETS,
        )
        self.heartbeat_seconds = Histogram(
            "shepherd_node_heartbeat_seconds", "Time to handle one NodeManager heartbeat", registry=self.registry,
            buckets=LATENCY_BUCKETS,
        )
        self.queue_wait_seconds = Histogram(
            "shepherd_queue_wait_seconds", "Time from an attempt's start until its AM container is allocated",
            ["queue"], registry=self.registry, buckets=WAIT_BUCKETS,
        )
        # each leaf queue's series from 0, so that a first wait is an increase to rate() and histogram_quantile()
        for path, queue in (getattr(rm, "queues", None) or {}).items():
            if queue.is_leaf:
                self.queue_wait_seconds.labels(queue=str(path))
        state = getattr(rm, "state", None)
        unit = state.deadlines.config.unit if state is not None else Resources.of(memory_mb=1024, vcores=1)
        self.slo_outcomes = SloOutcomes(self.registry, unit)  # observed as apps end
        if state is not None:
            state.subscribe(self.slo_outcomes)
        self.sizes = SizeMetrics(self.registry, state)  # size estimates and SLearn's sampling
        self.placements = Counter("shepherd_containers_placed", "Containers placed by the scheduler",
                                  registry=self.registry)
        self.leftover = Counter("shepherd_leftover_containers",
                                "Containers placed from capacity other jobs yielded", registry=self.registry)
        self.out_of_band_batch = Gauge(
            "shepherd_out_of_band_batch", "Completions a NodeManager's early (out-of-band) heartbeat is asked to carry "
            "while the RM is busy; 0: any, the RM is quiet (rm/service/heartbeat_pace.py)", registry=self.registry)
        self.loop_lag_seconds = Histogram(
            "shepherd_event_loop_lag_seconds",
            f"How late the RM's event loop ran a timer due every {LAG_PROBE_S:g} s (time it was busy elsewhere)",
            registry=self.registry, buckets=LATENCY_BUCKETS,
        )

        # every change is written before it is answered: callers wait for these writes (group commits)
        self.store_write_seconds = Histogram(
            "shepherd_store_write_seconds", "Time of one state store write (every change queued meanwhile)",
            registry=self.registry, buckets=LATENCY_BUCKETS,
        )
        self.store_write_records = Histogram(
            "shepherd_store_write_records", "Records in one state store write", registry=self.registry,
            buckets=(1, 10, 100, 1000, 10_000, 100_000),
        )

    def observe_store_write(self, seconds: float, records: int) -> None:
        self.store_write_seconds.observe(seconds)
        self.store_write_records.observe(records)

    def observe_cycle(self, seconds: float, plan: Plan) -> None:
        self.cycle_seconds.observe(seconds)
        self.placements.inc(plan.counters.get("placed", 0))
        self.leftover.inc(plan.counters.get("placed_from_leftover", 0))

    def observe_loop_lag(self, seconds: float) -> None:
        self.loop_lag_seconds.observe(max(0.0, seconds))

    def observe_heartbeat(self, seconds: float) -> None:
        self.heartbeat_seconds.observe(seconds)

    def observe_queue_wait(self, queue: str, seconds: float) -> None:
        self.queue_wait_seconds.labels(queue=queue).observe(max(0.0, seconds))

