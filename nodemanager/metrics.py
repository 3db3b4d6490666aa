"""Prometheus metrics of a NodeManager (YARN's NodeManagerMetrics under Prometheus naming), read from
the container table at scrape time. Completed containers stay in the table until the RM has seen them
and their app ended (or the retention passed), so counting them when first seen counts each once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from common.resources import MEMORY, VCORES
from nodemanager.containers import (
    ABORTED,
    KILLED_AFTER_APP_COMPLETION,
    KILLED_BY_APPMASTER,
    KILLED_BY_RESOURCEMANAGER,
    KILLED_EXCEEDED_PMEM,
    ContainerTable,
)

MIB = 1024 * 1024
KILLED = frozenset({ABORTED, KILLED_BY_APPMASTER, KILLED_BY_RESOURCEMANAGER, KILLED_AFTER_APP_COMPLETION,
                    KILLED_EXCEEDED_PMEM})


class _NodeCollector(Collector):
    def __init__(self, table: Callable[[], ContainerTable | None], info: Callable[[], dict[str, Any]]) -> None:
        self._table = table
        self._info = info
        self._launched: set[str] = set()
        self._ended: set[str] = set()
        self.counts = {"launched": 0, "completed": 0, "failed": 0, "killed": 0}

    def _observe(self, table: ContainerTable) -> dict[str, int]:
        states = {"NEW": 0, "RUNNING": 0, "COMPLETE": 0}
        present = set()
        for c in table.all():
            present.add(c.container_id)
            states[c.state] = states.get(c.state, 0) + 1
            if c.state in ("RUNNING", "COMPLETE") and c.pid is not None and c.container_id not in self._launched:
                self._launched.add(c.container_id)
                self.counts["launched"] += 1
            if c.state == "COMPLETE" and c.container_id not in self._ended:
                self._ended.add(c.container_id)
                kind = "completed" if c.exit_status == 0 else "killed" if c.exit_status in KILLED or \
                    c.kill_request is not None else "failed"
                self.counts[kind] += 1
        self._launched &= present
        self._ended &= present
        return states

    def collect(self) -> Iterator[Metric]:
        table = self._table()
        info = self._info()
        capability: dict[str, int] = info.get("capability", {})
        used: dict[str, int] = info.get("used", {})
        states = self._observe(table) if table is not None else {}
        for kind, help_text, yarn in (("launched", "Containers started", "ContainersLaunched"),
                                      ("completed", "Containers that exited with status 0", "ContainersCompleted"),
                                      ("failed", "Containers that exited with an error", "ContainersFailed"),
                                      ("killed", "Containers stopped by the RM, the AM or a limit",
                                       "ContainersKilled")):
            c = CounterMetricFamily(f"shepherd_nodemanager_containers_{kind}", f"{help_text} (YARN {yarn})")
            c.add_metric([], self.counts[kind])
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
