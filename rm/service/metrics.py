"""Prometheus metrics for the ResourceManager, collected from the live state at scrape time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rm.core.plan import Plan
from rm.service.views import cluster_metrics

if TYPE_CHECKING:
    from rm.service.server import ResourceManager


class _StateCollector(Collector):
    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm

    def collect(self) -> Iterator[Metric]:
        st = self.rm.state
        m = cluster_metrics(st)
        apps = GaugeMetricFamily("shepherd_apps", "Applications by state", labels=["state"])
        for name, value in (("pending", m.apps_pending), ("running", m.apps_running),
                            ("completed", m.apps_completed), ("failed", m.apps_failed),
                            ("killed", m.apps_killed)):
            apps.add_metric([name], value)
        yield apps
        mem = GaugeMetricFamily("shepherd_cluster_memory_bytes", "Cluster memory", labels=["kind"])
        cpu = GaugeMetricFamily("shepherd_cluster_vcores", "Cluster virtual cores", labels=["kind"])
        for kind, r in (("total", m.total), ("allocated", m.allocated), ("available", m.available),
                        ("pending", m.pending)):
            mem.add_metric([kind], r.memory_mb * 1024 * 1024)
            cpu.add_metric([kind], r.vcores)
        yield mem
        yield cpu
        containers = GaugeMetricFamily("shepherd_containers", "Containers", labels=["kind"])
        containers.add_metric(["allocated"], m.containers_allocated)
        containers.add_metric(["pending"], m.containers_pending)
        yield containers
        nodes = GaugeMetricFamily("shepherd_nodes", "NodeManagers by state", labels=["state"])
        for state in ("RUNNING", "UNHEALTHY", "LOST", "DECOMMISSIONED", "SHUTDOWN", "NEW"):
            nodes.add_metric([state.lower()], m.nodes.get(state, 0))
        yield nodes


class RMMetrics:
    def __init__(self, rm: ResourceManager) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_StateCollector(rm))
        self.cycle_seconds = Histogram(
            "shepherd_scheduling_cycle_seconds", "Time of one scheduling cycle", registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
        )
        self.heartbeat_seconds = Histogram(
            "shepherd_node_heartbeat_seconds", "Time to handle one NodeManager heartbeat", registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
        )
        self.placements = Counter("shepherd_containers_placed_total", "Containers placed by the scheduler",
                                  registry=self.registry)
        self.leftover = Counter("shepherd_leftover_containers_total",
                                "Containers placed from capacity other jobs yielded", registry=self.registry)

    def observe_cycle(self, seconds: float, plan: Plan) -> None:
        self.cycle_seconds.observe(seconds)
        self.placements.inc(plan.counters.get("placed", 0))
        self.leftover.inc(plan.counters.get("placed_from_leftover", 0))

    def observe_heartbeat(self, seconds: float) -> None:
        self.heartbeat_seconds.observe(seconds)
