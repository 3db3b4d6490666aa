"""ResourceManager configuration (YARN's property names where one exists)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rm.core.resources import Resources
from rm.core.state import CoreConfig

DEFAULT_GRPC_PORT = 7030  # YARN's own RM ports (8030-8033, 8088, 8090) stay free for YARN protocols
DEFAULT_REST_PORT = 8088


@dataclass(frozen=True, slots=True)
class RMConfig:
    host: str = "127.0.0.1"
    grpc_port: int = DEFAULT_GRPC_PORT
    rest_port: int = DEFAULT_REST_PORT
    data_dir: Path = field(default_factory=lambda: Path(".shepherd"))
    store_url: str | None = None  # None: SQLite file in data_dir
    queues: dict[str, Any] | None = None  # children of root; None: root.default only
    nm_expiry_s: float = 600.0  # yarn.nm.liveness-monitor.expiry-interval-ms
    am_expiry_s: float = 600.0  # yarn.am.liveness-monitor.expiry-interval-ms
    container_alloc_expiry_s: float = 600.0  # yarn.resourcemanager.rm.container-allocation.expiry-interval-ms
    heartbeat_interval_s: float = 1.0  # yarn.resourcemanager.nodemanagers.heartbeat-interval-ms
    max_app_attempts: int = 2  # yarn.resourcemanager.am.max-attempts
    maximum_allocation: Resources | None = None  # yarn.scheduler.maximum-allocation-{mb,vcores}
    scheduling_interval_s: float = 0.05  # the smallest gap between two scheduling cycles
    node_secret: str | None = None  # NodeManagers must present it (required off loopback)
    client_secret: str | None = None  # clients that submit or kill must present it (required off loopback)

    def core(self) -> CoreConfig:
        return CoreConfig(
            nm_expiry_s=self.nm_expiry_s,
            am_expiry_s=self.am_expiry_s,
            container_alloc_expiry_s=self.container_alloc_expiry_s,
            heartbeat_interval_s=self.heartbeat_interval_s,
            max_app_attempts=self.max_app_attempts,
            maximum_allocation=self.maximum_allocation,
        )

    @property
    def loopback(self) -> bool:
        return self.host in ("127.0.0.1", "localhost", "::1") or self.host.startswith("127.")

    def validate(self) -> None:
        if self.nm_expiry_s < self.heartbeat_interval_s:
            raise ValueError("the NodeManager expiry interval must not be shorter than the heartbeat interval")
        if not self.loopback and (not self.node_secret or not self.client_secret):
            raise ValueError(
                f"listening on {self.host} (not loopback) needs both a node secret and a client secret "
                "(--node-secret/--client-secret or SHEPHERD_NODE_SECRET/SHEPHERD_CLIENT_SECRET)"
            )
        if self.max_app_attempts < 1:
            raise ValueError("max-app-attempts must be at least 1")
