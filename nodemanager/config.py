"""NodeManager configuration: where the RM is, what this node offers, where containers live."""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import psutil

from common.resource_types import NODE_PREFIX, RESOURCE_TYPES, node_resources, read_resource_types
from common.resources import MEMORY, VCORES

MIN_DETECTED_MEMORY_MB = 512
_MIB = 1024 * 1024


def default_work_dir() -> Path:
    """YARN's ``${hadoop.tmp.dir}/nm-local-dir``, per user."""
    user = os.environ.get("USER") or str(os.getuid())
    return Path(tempfile.gettempdir()) / f"shepherd-{user}" / "nm-local-dir"


@dataclass(frozen=True, slots=True)
class NodeManagerConfig:
    rm_address: str = "127.0.0.1:7030"  # the RM's ResourceTracker gRPC address
    rm_web_url: str = ""  # the RM's web UI, linked from the node's page ("": http://<RM host>:8088)
    host: str = "127.0.0.1"  # bind host of the ContainerManager and HTTP servers
    port: int = 7040  # ContainerManager gRPC port (0 = ephemeral)
    http_port: int = 8042  # web server port, as YARN's NM (0 = ephemeral)
    ipc_port: int = 0  # Hadoop-IPC ContainerManagement port (yarn.nodemanager.address; 0 = ephemeral, as YARN's)
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
    container_user: str | None = "nobody"  # the account containers run as when this daemon is root
    allow_root_containers: bool = False  # run containers as root when this daemon is root (logged)
    # True (YARN's default): every container runs as ``container_user``; False: as the local account of its app's
    # user (never root, never an account below ``min_user_id``)
    limit_users: bool = True
    min_user_id: int = 1000  # container-executor.cfg's min.user.id
    # a restarted NodeManager (same node id, same work dir) takes back the containers it left running and
    # reports those that ended meanwhile (yarn.nodemanager.recovery.enabled); off: it kills them on start
    recovery_enabled: bool = True
    # stop the containers once the RM has not answered for longer than its node expiry (the RM has declared the
    # node LOST by then and handed its work to others), so a partitioned node runs no copy beside a replacement;
    # off (YARN's way): they run on until the RM answers again, then it stops what it gave up on
    stop_on_disconnect: bool = False

    def __post_init__(self) -> None:
        if not (0 <= self.port < 65536 and 0 <= self.http_port < 65536 and 0 <= self.ipc_port < 65536):
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


# ---------------------------------------------------------------- layered settings (Hadoop XML, YAML, env)

# (NodeManagerConfig field, the flag that sets it, the property that sets it otherwise)
_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("rm_address", "rm", "shepherd.resourcemanager.grpc.address"),
    ("rm_web_url", "rm_web", "yarn.resourcemanager.webapp.address"),
    ("host", "host", "shepherd.nodemanager.grpc.address"),
    ("port", "port", "shepherd.nodemanager.grpc.address"),
    ("http_port", "http_port", "yarn.nodemanager.webapp.address"),
    ("ipc_port", "ipc_port", "yarn.nodemanager.address"),
    ("memory_mb", "memory_mb", "yarn.nodemanager.resource.memory-mb"),
    ("vcores", "vcores", "yarn.nodemanager.resource.cpu-vcores"),
    ("extra_resources", "resources", "shepherd.nodemanager.resources"),
    ("work_dir", "work_dir", "yarn.nodemanager.local-dirs"),
    ("node_secret", "node_secret", "shepherd.nodemanager.node-secret"),
    ("rack", "rack", "shepherd.nodemanager.rack"),
    ("container_user", "container_user", "yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user"),
    ("allow_root_containers", "allow_root_containers", "shepherd.nodemanager.allow-root-containers"),
    ("limit_users", "limit_users", "yarn.nodemanager.linux-container-executor.nonsecure-mode.limit-users"),
    ("min_user_id", "min_user_id", "shepherd.nodemanager.min-user-id"),
    ("heartbeat_interval_s", "heartbeat_interval", "shepherd.nodemanager.heartbeat-interval-ms"),
    ("stop_grace_s", "stop_grace", "yarn.nodemanager.sleep-delay-before-sigkill.ms"),
    ("recovery_enabled", "recovery", "yarn.nodemanager.recovery.enabled"),
    ("stop_on_disconnect", "stop_on_disconnect", "shepherd.nodemanager.stop-on-disconnect"),
)


def nm_settings() -> tuple[Any, ...]:
    """The NodeManager's settings (defaults as the daemon's own; see docs/configuration.md)."""
    from common.settings import COMMON, Setting

    return (
        *COMMON,
        Setting("yarn.nodemanager.hostname", "127.0.0.1", "SHEPHERD_NM_HOSTNAME",
                "the NodeManager's host (YARN's default is 0.0.0.0)"),
        Setting("shepherd.nodemanager.grpc.address", "${yarn.nodemanager.hostname}:7040", None,
                "ContainerManager gRPC address (the node id)"),
        Setting("yarn.nodemanager.address", "${yarn.nodemanager.hostname}:0", None,
                "Hadoop IPC ContainerManagement address"),
        Setting("yarn.nodemanager.webapp.address", "${yarn.nodemanager.hostname}:8042"),
        Setting("yarn.resourcemanager.webapp.address", "${yarn.resourcemanager.hostname}:8088", None,
                "the RM's web UI, linked from the node's page"),
        Setting("yarn.nodemanager.resource.memory-mb", "-1", None, "-1: physical memory minus 1 GB"),
        Setting("yarn.nodemanager.resource.cpu-vcores", "-1", None, "-1: the number of CPUs"),
        Setting("shepherd.nodemanager.resources", None, None,
                "extra resource types, e.g. gpu=2 (added to yarn.nodemanager.resource-type.<type>; "
                "this wins for a type both name)"),
        Setting("yarn.nodemanager.local-dirs", None, None, f"first entry: the work dir ({default_work_dir()})"),
        Setting("shepherd.nodemanager.node-secret", None, "SHEPHERD_NODE_SECRET", secret=True),
        Setting("shepherd.nodemanager.rack", "/default-rack"),
        Setting("yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user", "nobody", None,
                "the account containers run as when the NodeManager runs as root"),
        Setting("shepherd.nodemanager.allow-root-containers", "false", None,
                "true: a NodeManager running as root runs containers as root (logged as a warning)"),
        Setting("yarn.nodemanager.linux-container-executor.nonsecure-mode.limit-users", "true", None,
                "false: a NodeManager running as root runs each container as its app's user's local account"),
        Setting("shepherd.nodemanager.min-user-id", "1000", None,
                "with limit-users false: the lowest uid a container may run as (container-executor's min.user.id)"),
        Setting("shepherd.nodemanager.heartbeat-interval-ms", "1000", None, "until the RM names its own"),
        Setting("yarn.nodemanager.sleep-delay-before-sigkill.ms", "3000", None, "YARN's default is 250"),
        Setting("yarn.nodemanager.recovery.enabled", "true", None,
                "a restarted NodeManager takes back its running containers (YARN's default is false)"),
        Setting("shepherd.nodemanager.stop-on-disconnect", "false", None,
                "true: containers stop once the RM has not answered for longer than its node expiry"),
    )


@dataclass(frozen=True, slots=True)
class NMSettings:
    config: NodeManagerConfig
    rows: list[tuple[str, str, str]]  # (property, value, source)
    files: list[str]


class FlagParser(argparse.ArgumentParser):
    """An argument parser that also tells which options the command line gave."""

    def explicit(self, argv: Sequence[str] | None) -> set[str]:
        """The destinations of the options given on the command line (not left at their defaults)."""
        saved = [(a, a.default) for a in self._actions]
        for a, _ in saved:
            a.default = argparse.SUPPRESS
        try:
            ns, _ = self.parse_known_args(argv)
        finally:
            for a, default in saved:
                a.default = default
        return set(vars(ns))


def load_nm_settings(
    base: NodeManagerConfig,
    *,
    env: Mapping[str, str],
    explicit: set[str] | frozenset[str] = frozenset(),
    config_file: Path | None = None,
    conf_dir: Path | None = None,
) -> NMSettings:
    """``base`` (built from the flags) with every field whose flag was not given taken from the layers:
    defaults < Hadoop site files < the YAML file < environment."""
    from common.settings import load_layers

    layers = load_layers(nm_settings(), env=env, conf_dir=conf_dir, config_file=config_file)
    types = read_resource_types(layers.conf)
    offered = node_resources(layers.conf, types)  # node-resources.xml: yarn.nodemanager.resource-type.<type>
    extra = {k: v for k, v in offered.items() if k not in (MEMORY, VCORES)}
    extra.update(parse_resources(layers.text("shepherd.nodemanager.resources") or ""))
    known = {f.name for f in fields(NodeManagerConfig)}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    grpc_host, grpc_port = layers.address("shepherd.nodemanager.grpc.address")
    layered: dict[str, Any] = {
        "rm_address": layers.text("shepherd.resourcemanager.grpc.address"),
        "rm_web_url": (None if layers.source("yarn.resourcemanager.webapp.address") == "default"  # the --rm host's
                       else web_url(layers.text("yarn.resourcemanager.webapp.address"))),
        "host": grpc_host,
        "port": grpc_port,
        "http_port": layers.address("yarn.nodemanager.webapp.address")[1],
        "ipc_port": layers.address("yarn.nodemanager.address")[1],
        "memory_mb": offered.get(MEMORY) or _positive(layers.integer("yarn.nodemanager.resource.memory-mb")),
        "vcores": offered.get(VCORES) or _positive(layers.integer("yarn.nodemanager.resource.cpu-vcores")),
        "extra_resources": extra or None,
        "work_dir": _first_dir(layers.text("yarn.nodemanager.local-dirs")),
        "node_secret": layers.text("shepherd.nodemanager.node-secret"),
        "rack": layers.text("shepherd.nodemanager.rack"),
        "container_user": layers.text("yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user"),
        "allow_root_containers": (layers.text("shepherd.nodemanager.allow-root-containers") or "false").strip().lower()
        == "true",
        "heartbeat_interval_s": layers.seconds("shepherd.nodemanager.heartbeat-interval-ms"),
        "stop_grace_s": _ms(layers.number("yarn.nodemanager.sleep-delay-before-sigkill.ms")),
        "recovery_enabled": _flag(layers, "yarn.nodemanager.recovery.enabled"),
        "limit_users": _flag(layers, "yarn.nodemanager.linux-container-executor.nonsecure-mode.limit-users"),
        "min_user_id": layers.integer("shepherd.nodemanager.min-user-id"),
        "stop_on_disconnect": _flag(layers, "shepherd.nodemanager.stop-on-disconnect"),
    }
    for name, flag, prop in _FIELDS:
        if name not in known:
            continue
        if flag in explicit:
            sources[prop] = f"flag --{flag.replace('_', '-')}"
            continue
        value = layered[name]
        if value is not None or name in ("memory_mb", "vcores"):
            values[name] = value
        sources.setdefault(prop, layers.source(prop))
    cfg = replace(base, **values)
    extra_source = _extra_source(layers, "resources" in explicit)
    declared = types.names()
    undeclared = sorted(t for t in cfg.extra_resources if declared is not None and t not in declared)
    if undeclared:  # Hadoop's NodeManager does not start either
        raise ValueError(f"the node offers {', '.join(undeclared)} (from {extra_source}), which "
                         f"{RESOURCE_TYPES} (from {types.source}) does not define: it defines "
                         f"{', '.join(t.hadoop_name for t in types.extra) or 'no extra type'}")
    rows = [(k, v, sources.get(k, s)) for k, v, s in layers.rows()]
    rows.append(("extra resources", ",".join(f"{k}={v}" for k, v in sorted(cfg.extra_resources.items())),
                 extra_source))
    return NMSettings(cfg, rows, layers.files)


def _extra_source(layers: Any, flag: bool) -> str:
    """Where the node's extra resources came from: the flag, else the properties that name them."""
    if flag:
        return "flag --resources"
    where = [layers.source(k) for k in layers.conf.names()
             if k.startswith(NODE_PREFIX) and k[len(NODE_PREFIX):] not in (MEMORY, VCORES)]
    if layers.text("shepherd.nodemanager.resources"):
        where.append(layers.source("shepherd.nodemanager.resources"))
    return ", ".join(dict.fromkeys(where)) or "default"


def web_url(address: str | None) -> str | None:
    """``host:port`` (or a URL) as an http URL; a wildcard host as loopback."""
    if not address:
        return None
    if "://" in address:
        return address.rstrip("/")
    host, _, port = address.rpartition(":")
    return f"http://{'127.0.0.1' if host in ('', '0.0.0.0', '::') else host}:{port}"


def _flag(layers: Any, key: str) -> bool | None:
    value = layers.text(key)
    if value is None or not value.strip():
        return None
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"{key} must be true or false, not {value!r}")
    return text == "true"


def _positive(value: int | None) -> int | None:
    return value if value is not None and value > 0 else None


def _ms(value: float | None) -> float | None:
    return value / 1000.0 if value is not None else None


def _first_dir(value: str | None) -> Path | None:
    if not value:
        return None
    first = value.split(",")[0].strip().removeprefix("file://")
    return Path(first) if first else None
