"""NodeManager configuration: where the RM is, what this node offers, where containers live."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from rm.core.resources import MEMORY, VCORES

MIN_DETECTED_MEMORY_MB = 512
_MIB = 1024 * 1024


def default_work_dir() -> Path:
    """YARN's ``${hadoop.tmp.dir}/nm-local-dir``, per user."""
    user = os.environ.get("USER") or str(os.getuid())
    return Path(tempfile.gettempdir()) / f"shepherd-{user}" / "nm-local-dir"


@dataclass(frozen=True, slots=True)
class NodeManagerConfig:
    rm_address: str = "127.0.0.1:7030"  # the RM's ResourceTracker gRPC address
    host: str = "127.0.0.1"  # bind host of the ContainerManager and HTTP servers
    port: int = 7040  # ContainerManager gRPC port (0 = ephemeral)
    http_port: int = 8042  # web server port, as YARN's NM (0 = ephemeral)
    memory_mb: int | None = None  # None = physical memory minus reserved_memory_mb
    vcores: int | None = None  # None = CPU count minus reserved_vcores
    reserved_memory_mb: int = 1024
    reserved_vcores: int = 0
    extra_resources: Mapping[str, int] = field(default_factory=dict)  # e.g. {"gpu": 2}
    work_dir: Path = field(default_factory=default_work_dir)
    heartbeat_interval_s: float = 1.0  # used until the RM names its own interval
    stop_grace_s: float = 3.0  # SIGTERM -> SIGKILL delay when stopping a container
    node_secret: str | None = None  # sent to the RM as "authorization: Bearer <secret>"
    rack: str = "/default-rack"
    hostname: str | None = None  # advertised host; None = derived from the bind host
    memory_check_interval_s: float = 0.5
    use_cgroups: bool = True  # cgroup v2 memory limits where the host allows them
    completed_retention_s: float = 600.0  # how long acknowledged completed containers stay queryable
    delete_app_dirs: bool = True  # remove an app's working dirs when the RM says the app ended
    max_disk_utilization_percent: float = 98.0  # above this the work_dir disk counts as full

    def __post_init__(self) -> None:
        if not (0 <= self.port < 65536 and 0 <= self.http_port < 65536):
            raise ValueError("ports must be between 0 and 65535")
        if self.memory_mb is not None and self.memory_mb <= 0:
            raise ValueError("memory_mb must be positive")
        if self.vcores is not None and self.vcores <= 0:
            raise ValueError("vcores must be positive")
        if self.heartbeat_interval_s <= 0 or self.stop_grace_s < 0:
            raise ValueError("heartbeat_interval_s must be positive and stop_grace_s non-negative")
        for name, amount in self.extra_resources.items():
            if name in (MEMORY, VCORES) or not name or amount < 0:
                raise ValueError(f"invalid extra resource {name}={amount}")
        object.__setattr__(self, "work_dir", Path(self.work_dir))
        object.__setattr__(self, "extra_resources", dict(self.extra_resources))

    def resolved_memory_mb(self) -> int:
        if self.memory_mb is not None:
            return self.memory_mb
        total_mb = psutil.virtual_memory().total // _MIB
        return max(MIN_DETECTED_MEMORY_MB, int(total_mb) - self.reserved_memory_mb)

    def resolved_vcores(self) -> int:
        if self.vcores is not None:
            return self.vcores
        return max(1, (psutil.cpu_count() or os.cpu_count() or 1) - self.reserved_vcores)

    def capability(self) -> dict[str, int]:
        """What this node offers to containers: memory-mb, vcores and the extra types."""
        out = {MEMORY: self.resolved_memory_mb(), VCORES: self.resolved_vcores()}
        out.update(self.extra_resources)
        return out

    def advertised_host(self) -> str:
        if self.hostname:
            return self.hostname
        if self.host in ("", "0.0.0.0", "::", "[::]"):
            return socket.getfqdn()
        return self.host


def parse_resources(text: str) -> dict[str, int]:
    """``"gpu=2,fpga=1"`` -> ``{"gpu": 2, "fpga": 1}``."""
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, amount = part.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"expected NAME=AMOUNT, got {part!r}")
        out[name.strip()] = int(amount)
    return out
