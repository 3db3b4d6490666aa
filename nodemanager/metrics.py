"""Prometheus metrics of a NodeManager (YARN's NodeManagerMetrics under Prometheus naming). The counters
are kept by the container table as containers start and end (a completed container is forgotten soon
after the RM has seen it, well within a scrape interval); the gauges are read from the table at scrape
time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from common.resources import MEMORY, VCORES
from nodemanager.containers import ContainerTable

MIB = 1024 * 1024
COUNTED = ("launched", "completed", "failed", "killed")


class _NodeCollector(Collector):
    def __init__(self, table: Callable[[], ContainerTable | None], info: Callable[[], dict[str, Any]]) -> None:
        self._table = table
        self._info = info

    def collect(self) -> Iterator[Metric]:
        table = self._table()
        info = self._info()
        capability: dict[str, int] = info.get("capability", {})
        used: dict[str, int] = info.get("used", {})
        states: dict[str, int] = {}
        for container in table.all() if table is not None else ():
            states[container.state] = states.get(container.state, 0) + 1
        counts = table.counts if table is not None else dict.fromkeys(COUNTED, 0)
        for kind, help_text, yarn in (("launched", "Containers started", "ContainersLaunched"),
                                      ("completed", "Containers that exited with status 0", "ContainersCompleted"),
                                      ("failed", "Containers that exited with an error", "ContainersFailed"),
                                      ("killed", "Containers stopped by the RM, the AM or a limit",
                                       "ContainersKilled")):
            c = CounterMetricFamily(f"shepherd_nodemanager_containers_{kind}", f"{help_text} (YARN {yarn})")
            c.add_metric([], counts[kind])
            yield c
        g = GaugeMetricFamily("shepherd_nodemanager_containers", "Containers on this node by state "
                              "(YARN ContainersIniting/ContainersRunning)", labels=["state"])
        for state in ("NEW", "RUNNING", "COMPLETE"):
            g.add_metric([state.lower()], states.get(state, 0))
        yield g
        for name, doc, value in (
            ("allocated_memory_bytes", "Memory of the containers here (YARN AllocatedGB)", used.get(MEMORY, 0) * MIB),
            ("available_memory_bytes", "Memory still free for containers (YARN AvailableGB)",
             max(0, capability.get(MEMORY, 0) - used.get(MEMORY, 0)) * MIB),
            ("capacity_memory_bytes", "Memory offered to containers", capability.get(MEMORY, 0) * MIB),
            ("allocated_vcores", "Virtual cores of the containers here (YARN AllocatedVCores)",
             used.get(VCORES, 0)),
            ("available_vcores", "Virtual cores still free (YARN AvailableVCores)",
             max(0, capability.get(VCORES, 0) - used.get(VCORES, 0))),
            ("capacity_vcores", "Virtual cores offered to containers", capability.get(VCORES, 0)),
            ("healthy", "1 when the node's disks are healthy", 1 if info.get("nodeHealthy", True) else 0),
            ("registered", "1 once registered with the ResourceManager", 1 if info.get("registered") else 0),
        ):
            m = GaugeMetricFamily(f"shepherd_nodemanager_{name}", doc)
            m.add_metric([], value)
            yield m


class NodeMetrics:
    def __init__(self, table: Callable[[], ContainerTable | None], info: Callable[[], dict[str, Any]]) -> None:
        self.registry = CollectorRegistry()
        self.collector = _NodeCollector(table, info)
        self.registry.register(self.collector)

    def render(self) -> bytes:
        return generate_latest(self.registry)
