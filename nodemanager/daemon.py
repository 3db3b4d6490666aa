"""The NodeManager daemon: ContainerManager gRPC + web server + RM heartbeats in one asyncio loop."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc

from common import credentials
from common.hadoop.server import IpcServer
from common.logs import FORMATS
from common.logs import configure as configure_logging
from common.resources import MEMORY, VCORES
from common.sdnotify import Notifier
from nodemanager.check_config import check_nm_config
from nodemanager.config import (
    FlagParser,
    NodeManagerConfig,
    default_work_dir,
    load_nm_settings,
    parse_resources,
)
from nodemanager.containers import ABORTED, KILLED_BY_RESOURCEMANAGER, ContainerTable
from nodemanager.heartbeat import VERSION, NodeStatusUpdater, disk_health
from nodemanager.http import NodeWebServer
from nodemanager.ipc import start_container_management
from nodemanager.limits import CgroupV2
from nodemanager.service import ContainerManagerService, TokenKeys
from proto import shepherd_pb2 as pb
from proto.serve import add_health_and_reflection, add_servicer

log = logging.getLogger("nodemanager")


def _bind_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


class NodeManager:
    """One node's daemon. ``start()`` binds the servers, ``serve()`` runs until stopped, ``shutdown()``
    stops every container and says goodbye to the RM."""

    def __init__(self, cfg: NodeManagerConfig) -> None:
        self.cfg = cfg
        self.keys = TokenKeys()
        self.capability: dict[str, int] = cfg.capability()
        self.host = cfg.advertised_host()
        self.port = 0
        self.http_port = 0
        self.ipc_port = 0  # the Hadoop-IPC ContainerManagement listener (nodemanager/ipc.py)
        self._ipc: IpcServer | None = None
        self._server: grpc.aio.Server | None = None
        self._web: NodeWebServer | None = None
        self._cgroups: CgroupV2 | None = None
        self._table: ContainerTable | None = None
        self._updater: NodeStatusUpdater | None = None

    @property
    def node_id(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def http_address(self) -> str:
        return f"{self.host}:{self.http_port}"

    @property
    def table(self) -> ContainerTable:
        assert self._table is not None, "start() first"
        return self._table

    @property
    def updater(self) -> NodeStatusUpdater:
        assert self._updater is not None, "start() first"
        return self._updater

    async def start(self) -> None:
        cfg = self.cfg
        for sub in ("containers", "logs"):
            (cfg.work_dir / sub).mkdir(parents=True, exist_ok=True)
        self._cgroups = CgroupV2.detect() if cfg.use_cgroups else None
        self._server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        address = _bind_address(cfg.host, cfg.port)
        try:
            self.port = self._server.add_insecure_port(address)
        except RuntimeError as exc:
            raise OSError(f"cannot bind the ContainerManager to {address}: {exc}") from exc
        if self.port == 0:
            raise OSError(f"cannot bind the ContainerManager to {address}")
        self._web = NodeWebServer(cfg.work_dir, self.node_info, cfg.rm_web_url or _rm_web_default(cfg.rm_address),
                                  reads_verifier=lambda: self.keys.reads_verifier)
        self.http_port = await self._web.start(cfg.host, cfg.http_port)
        self._table = ContainerTable(
            cfg, nm_host=self.host, nm_port=self.port, nm_http_port=self.http_port, cgroups=self._cgroups
        )
        self._web.table = self._table
        # before the first registration, which reports what was recovered
        await self._table.recover()
        service = ContainerManagerService(self._table, self.keys, self.node_id)
        add_servicer(self._server, "ContainerManager", service)
        checks = add_health_and_reflection(self._server, ["ContainerManager"])
        await self._server.start()
        await checks.set_serving()
        self._ipc, _ = await start_container_management(
            self._table, self.keys, bind_host=cfg.host, port=cfg.ipc_port, advertised_host=self.host,
            http_port=self.http_port, work_root=cfg.work_dir,
        )
        self.ipc_port = self._ipc.port
        self._updater = NodeStatusUpdater(
            cfg,
            node_id=pb.NodeId(host=self.host, port=self.port),
            http_address=self.http_address,
            capability=self.capability,
            table=self._table,
            keys=self.keys,
            ipc_port=self.ipc_port,
        )
        log.info(
            "ContainerManager on %s, web server on %s, offering %s",
            _bind_address(cfg.host, self.port),
            _bind_address(cfg.host, self.http_port),
            self.capability,
        )

    def node_info(self) -> dict[str, Any]:
        health = disk_health(self.cfg.work_dir, self.cfg.max_disk_utilization_percent)
        table = self._table
        return {
            "id": self.node_id,
            "nodeHostName": self.host,
            "nodeHTTPAddress": self.http_address,
            "rack": self.cfg.rack,
            "nodeManagerVersion": VERSION,
            "nodeHealthy": health.healthy,
            "healthReport": health.health_report,
            "lastNodeUpdateTime": health.last_health_report_time_ms,
            "totalPmemAllocatedContainersMB": self.capability.get(MEMORY, 0),
            "totalVCoresAllocatedContainers": self.capability.get(VCORES, 0),
            "capability": dict(self.capability),
            "used": table.used() if table else {},
            "numContainers": len(table.all()) if table else 0,
            "resourceManagerAddress": self.cfg.rm_address,
            "registered": bool(self._updater and self._updater.registered.is_set()),
            "memoryEnforcement": "cgroup-v2" if self._cgroups else "rss-monitor",
        }

    async def shutdown(self) -> None:
        diagnostics = "Container killed because the NodeManager is shutting down."
        status = ABORTED
        if self._updater is not None and self._updater.shutdown_reason:
            status, diagnostics = KILLED_BY_RESOURCEMANAGER, f"{diagnostics} {self._updater.shutdown_reason}"
        log.info("NodeManager %s shutting down", self.node_id)
        if self._server is not None:
            await self._server.stop(grace=1.0)
        if self._ipc is not None:
            await self._ipc.stop()
        if self._table is not None:
            await self._table.stop_all(status, diagnostics)
        if self._updater is not None:
            with contextlib.suppress(Exception):
                await self._updater.goodbye()
            await self._updater.close()
        if self._web is not None:
            await self._web.close()
        if self._table is not None:
            await self._table.close()
        if self._cgroups is not None:
            self._cgroups.close()
        log.info("NodeManager %s stopped", self.node_id)


async def run_nodemanager(
    cfg: NodeManagerConfig,
    *,
    ready: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[NodeManager], None] | None = None,
    notifier: Notifier | None = None,
) -> int:
    """Run a NodeManager until ``stop`` is set (0) or the RM orders it to shut down (1).

    ``ready`` is set (and ``on_ready`` called) once the node has registered with the RM.
    Containers are stopped before this returns. ``notifier`` (systemd's notify socket) hears READY=1 as soon
    as every listener accepts connections, before the node has reached the RM, then keep-alives while the
    heartbeat loop runs, and STOPPING=1.
    """
    stop = stop if stop is not None else asyncio.Event()
    notifier = notifier if notifier is not None else Notifier({})
    nm = NodeManager(cfg)
    try:
        await nm.start()
        listening = f"node_id={nm.node_id} http={nm.http_address} ipc={nm.host}:{nm.ipc_port}"
        notifier.ready(f"serving {listening}; registering with {cfg.rm_address}")
        heartbeats = asyncio.create_task(nm.updater.run(stop))
        registered = asyncio.create_task(nm.updater.registered.wait())
        stopped = asyncio.create_task(stop.wait())
        watchdog = asyncio.create_task(notifier.watchdog(lambda: not heartbeats.done()), name="watchdog")
        try:
            await asyncio.wait({heartbeats, registered, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if nm.updater.registered.is_set():
                notifier.status(f"serving {listening}; registered with {cfg.rm_address}")
                if ready is not None:
                    ready.set()
                if on_ready is not None:
                    on_ready(nm)
            await asyncio.wait({heartbeats, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            notifier.stopping("stopping")
            for task in (heartbeats, registered, stopped, watchdog):
                task.cancel()
            await asyncio.gather(heartbeats, registered, stopped, watchdog, return_exceptions=True)
        if heartbeats.done() and not heartbeats.cancelled() and heartbeats.exception() is not None:
            log.error("the heartbeat loop failed", exc_info=heartbeats.exception())
            return 1
        return 1 if nm.updater.shutdown_reason else 0
    finally:
        await nm.shutdown()


def _rm_web_default(rm_address: str) -> str:
    """YARN's default RM web address on the host of the (first) RM this node reports to."""
    first = rm_address.split(",")[0].strip()
    host = first.rpartition(":")[0] or first
    return f"http://{'127.0.0.1' if host in ('', '0.0.0.0') else host}:8088"


# ---------------------------------------------------------------- command line


def _parser() -> FlagParser:
    d = NodeManagerConfig.__dataclass_fields__
    p = FlagParser(prog="python -m nodemanager", description="shepherd NodeManager daemon")
    p.add_argument("--rm", default=d["rm_address"].default, help="ResourceTracker address HOST:PORT (with an active/standby "
                   "pair, every RM's, comma-separated)")
    p.add_argument("--rm-web", default=d["rm_web_url"].default, help="the RM's web UI URL, linked from the node's "
                   "page (default: yarn.resourcemanager.webapp.address, else http://<the --rm host>:8088)")
    p.add_argument("--host", default=d["host"].default, help="bind host for gRPC and HTTP")
    p.add_argument("--hostname", default=None, help="host name advertised to the RM (default: from --host)")
    p.add_argument("--port", type=int, default=d["port"].default, help="ContainerManager port (0 = any)")
    p.add_argument("--http-port", type=int, default=d["http_port"].default, help="web server port (0 = any)")
    p.add_argument("--ipc-port", type=int, default=d["ipc_port"].default,
                   help="Hadoop IPC ContainerManagement port, the NodeId YARN clients see (0 = any)")
    p.add_argument("--memory-mb", type=int, default=None, help="memory offered (default: detected)")
    p.add_argument("--vcores", type=int, default=None, help="vcores offered (default: CPU count)")
    p.add_argument("--resources", default="", help="extra resource types, e.g. gpu=2,fpga=1")
    p.add_argument("--work-dir", type=Path, default=None, help=f"default {default_work_dir()}")
    p.add_argument(
        "--node-secret",
        default=os.environ.get("SHEPHERD_NODE_SECRET"),
        help="cluster node secret (default: $SHEPHERD_NODE_SECRET, else --credentials)",
    )
    p.add_argument("--credentials", type=Path, default=None,
                   help="the cluster's credentials file, for the node secret (default: $SHEPHERD_CREDENTIALS, "
                        "else the file a ResourceManager on this machine recorded for --rm)")
    p.add_argument("--rack", default=d["rack"].default)
    p.add_argument("--container-user", default=None,
                   help="when run as root, the account containers run as (default: nobody; "
                        "yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user)")
    p.add_argument("--allow-root-containers", action="store_true",
                   help="when run as root, run containers as root too (logged as a warning)")
    p.add_argument("--limit-users", action=argparse.BooleanOptionalAction, default=d["limit_users"].default,
                   help="when run as root: every container runs as --container-user (the default); "
                        "--no-limit-users runs each as the local account of its app's user, never root "
                        "(yarn.nodemanager.linux-container-executor.nonsecure-mode.limit-users)")
    p.add_argument("--min-user-id", type=int, default=d["min_user_id"].default,
                   help="with --no-limit-users: the lowest uid a container may run as (default 1000)")
    p.add_argument("--heartbeat-interval", type=float, default=d["heartbeat_interval_s"].default)
    p.add_argument(
        "--stop-grace", type=float, default=d["stop_grace_s"].default, help="SIGTERM->SIGKILL secs"
    )
    p.add_argument("--no-cgroups", action="store_true", help="never use cgroup v2; monitor RSS instead")
    p.add_argument("--recovery", action=argparse.BooleanOptionalAction, default=d["recovery_enabled"].default,
                   help="take back the containers a previous run of this node left (same --port and --work-dir); "
                        "--no-recovery kills them on start (yarn.nodemanager.recovery.enabled)")
    p.add_argument("--stop-on-disconnect", action=argparse.BooleanOptionalAction,
                   default=d["stop_on_disconnect"].default,
                   help="stop the containers once the ResourceManager has not answered for longer than its node "
                        "expiry, when it has given their work to other nodes (default: they run on until it "
                        "answers; shepherd.nodemanager.stop-on-disconnect)")
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--log-format", default=None, choices=FORMATS,
                   help="text on a terminal, else JSON lines, unless told (default: $SHEPHERD_LOG_FORMAT, auto)")
    p.add_argument("--check-config", action="store_true",
                   help="check the configuration as this command would start with it and exit: 0 if valid, "
                        "else 2 naming each file and key")
    p.add_argument("--config", type=Path, default=None, help="shepherd YAML config file")
    p.add_argument("--hadoop-conf-dir", type=Path, default=None,
                   help="directory of yarn-site.xml (default: $YARN_CONF_DIR or $HADOOP_CONF_DIR)")
    return p


def config_from_args(args: argparse.Namespace) -> NodeManagerConfig:
    extra: dict[str, Any] = {}
    if args.work_dir is not None:
        extra["work_dir"] = args.work_dir
    return NodeManagerConfig(
        rm_address=args.rm,
        rm_web_url=args.rm_web,
        host=args.host,
        hostname=args.hostname,
        port=args.port,
        http_port=args.http_port,
        ipc_port=args.ipc_port,
        memory_mb=args.memory_mb,
        vcores=args.vcores,
        extra_resources=parse_resources(args.resources),
        node_secret=args.node_secret or None,
        rack=args.rack,
        container_user=args.container_user,
        allow_root_containers=args.allow_root_containers,
        limit_users=args.limit_users,
        min_user_id=args.min_user_id,
        heartbeat_interval_s=args.heartbeat_interval,
        stop_grace_s=args.stop_grace,
        use_cgroups=not args.no_cgroups,
        recovery_enabled=args.recovery,
        stop_on_disconnect=args.stop_on_disconnect,
        **extra,
    )


def with_node_secret(cfg: NodeManagerConfig, path: Path | None) -> NodeManagerConfig:
    """``cfg`` with the node secret of the cluster's credentials file, unless it has one already."""
    if cfg.node_secret:
        return cfg
    path = path or credentials.find_file(cfg.rm_address.split(",")[0].strip())
    if path is None:
        logging.getLogger("shepherd.nm").warning(
            "no node secret (--node-secret, $SHEPHERD_NODE_SECRET or --credentials): the ResourceManager will "
            "refuse this node")
        return cfg
    return dataclasses.replace(cfg, node_secret=credentials.load(path).node_secret)


def _print_ready(nm: NodeManager) -> None:
    print(f"nodemanager ready node_id={nm.node_id} http={nm.http_address} ipc={nm.host}:{nm.ipc_port}", flush=True)


async def _main_async(cfg: NodeManagerConfig) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    notifier = Notifier.from_environment()  # under systemd; containers do not inherit the socket
    return await run_nodemanager(cfg, stop=stop, on_ready=_print_ready, notifier=notifier)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        configure_logging("nodemanager", args.log_level, args.log_format)
        explicit = _parser().explicit(argv)
        cfg = load_nm_settings(config_from_args(args), env=os.environ, explicit=explicit,
                               config_file=args.config, conf_dir=args.hadoop_conf_dir).config
        cfg = with_node_secret(cfg, args.credentials)
        problems = check_nm_config(cfg, env=os.environ, config_file=args.config, conf_dir=args.hadoop_conf_dir)
        for problem in problems:
            print(f"nodemanager: invalid: {problem}", file=sys.stderr)
        if problems:
            return 2
        if args.check_config:
            print("configuration is valid")
            return 0
        return asyncio.run(_main_async(cfg))
    except (OSError, ValueError) as exc:
        print(f"nodemanager: {exc}", file=sys.stderr)
        return 1
