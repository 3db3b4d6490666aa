"""ResourceManager configuration (YARN's property names where one exists)."""

from __future__ import annotations

import getpass
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from common.acl import AccessList, AclConfig
from common.credentials import FILE_NAME
from common.credentials import ensure as ensure_credentials
from common.resources import Resources
from common.settings import DEFAULT_GRPC_PORT, DEFAULT_REST_PORT
from rm.core.deadlines.system import DeadlineConfig
from rm.core.policies.api import PolicyArgs
from rm.core.state_types import CoreConfig, SamplingConfig


@dataclass(frozen=True, slots=True)
class RMConfig:
    host: str = "127.0.0.1"  # gRPC bind host (and the REST one unless rest_host is set)
    grpc_port: int = DEFAULT_GRPC_PORT
    rest_port: int = DEFAULT_REST_PORT
    rest_host: str | None = None  # the host of yarn.resourcemanager.webapp.address; None: host
    data_dir: Path = field(default_factory=lambda: Path(".shepherd"))
    store_url: str | None = None  # None: SQLite file in data_dir
    create_store: bool = False  # create the store if it does not exist (shepherd rm --create-store)
    store_lease_s: float = 15.0  # shepherd.resourcemanager.store.lease-ms: a killed RM's store is taken over after it
    queues: dict[str, Any] | None = None  # children of root; None: root.default only
    nm_expiry_s: float = 600.0  # yarn.nm.liveness-monitor.expiry-interval-ms
    am_expiry_s: float = 600.0  # yarn.am.liveness-monitor.expiry-interval-ms
    container_alloc_expiry_s: float = 600.0  # yarn.resourcemanager.rm.container-allocation.expiry-interval-ms
    heartbeat_interval_s: float = 1.0  # yarn.resourcemanager.nodemanagers.heartbeat-interval-ms
    container_key_roll_s: float = 86_400.0  # yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs
    max_app_attempts: int = 2  # yarn.resourcemanager.am.max-attempts
    work_preserving: bool = True  # yarn.resourcemanager.work-preserving-recovery.enabled
    ha_enabled: bool = False  # yarn.resourcemanager.ha.enabled: stand by while another RM holds the store
    ha_addresses: tuple[str, ...] = ()  # shepherd.resourcemanager.ha.grpc-addresses: every RM, for AMs and NMs
    # yarn.scheduler.maximum-allocation-{mb,vcores}, yarn.resource-types.<type>.maximum-allocation: per type
    # named, the largest ask (the other types: the largest node's amount)
    maximum_allocation: Resources | None = None
    resource_types: frozenset[str] | None = None  # yarn.resource-types + memory-mb, vcores; None: the nodes'
    scheduling_interval_s: float = 0.05  # the smallest gap between two scheduling cycles
    # the policy pipeline runs on a thread of its own (``ResourceManager.cycle_lock``), so calls keep being
    # answered while a long cycle decides; False runs it on the event loop
    cycle_off_loop: bool = True
    max_priority: int = 10  # yarn.cluster.max-application-priority
    scheduler: str = "mrm"  # a scheduler of rm.core.policies.registry.SCHEDULERS
    admission: str | None = None  # a rule of rm.core.policies.registry.ADMISSIONS; None: the scheduler's
    leftover_cap: float | None = None  # LeftoverArgs.cap: what one app takes from the leftover, × its fair share
    share_interval_s: float = 1.0  # how often DRF fair shares are recomputed for the AMs
    node_secret: str | None = None  # NodeManagers must present it (None: the credentials file's)
    client_secret: str | None = None  # clients that change anything must present it (None: the file's)
    credentials_file: Path | None = None  # None: data_dir/credentials.json (created 0600 if missing)
    insecure: bool = False  # no secrets at all: loopback only, and loudly logged
    # Hadoop IPC for stock YARN clients (rm/service/ipc/config.py): None = from yarn-site.xml, else YARN's
    # 8032/8030/8033; 0 = any free port; negative = no listener
    ipc_client_port: int | None = None  # yarn.resourcemanager.address
    ipc_scheduler_port: int | None = None  # yarn.resourcemanager.scheduler.address
    ipc_admin_port: int | None = None  # yarn.resourcemanager.admin.address (None with the client port given: 0/off)
    yarn_site: Path | None = None  # None: $YARN_CONF_DIR or $HADOOP_CONF_DIR/yarn-site.xml, if any
    deadlines: DeadlineConfig = field(default_factory=DeadlineConfig)  # MRM: quotes, estimates, books
    sampling: SamplingConfig = field(default_factory=SamplingConfig)  # SLearn: pilots per task, the gate's timeout
    acls: AclConfig | None = None  # yarn.acl.enable, yarn.admin.acl, the queues' ACLs; None: the defaults
    authenticate_reads: bool = False  # reads (REST /ws/*, gRPC and Hadoop IPC reports) need a credential too

    @property
    def acl_config(self) -> AclConfig:
        """The ACLs in force (the defaults: enabled, this process's user the only admin, no queue ACLs)."""
        return self.acls if self.acls is not None else AclConfig(admins=AccessList(frozenset({own_user()})))

    def core(self) -> CoreConfig:
        return CoreConfig(
            nm_expiry_s=self.nm_expiry_s,
            am_expiry_s=self.am_expiry_s,
            container_alloc_expiry_s=self.container_alloc_expiry_s,
            heartbeat_interval_s=self.heartbeat_interval_s,
            container_key_roll_s=self.container_key_roll_s,
            max_app_attempts=self.max_app_attempts,
            work_preserving=self.work_preserving,
            maximum_allocation=self.maximum_allocation,
            resource_types=self.resource_types,
            max_priority=self.max_priority,
            deadlines=self.deadlines,
            sampling=self.sampling,
        )

    @property
    def credentials_path(self) -> Path:
        return self.credentials_file if self.credentials_file is not None else self.data_dir / FILE_NAME

    def with_secrets(self) -> tuple[RMConfig, Path | None]:
        """This configuration with both secrets set: those not configured come from the credentials file,
        which is created with random ones if missing. Also the file, if the client secret came from it.
        The insecure setting leaves unset secrets unset."""
        if self.insecure or (self.client_secret and self.node_secret):
            return self, None
        creds, _ = ensure_credentials(self.credentials_path)
        cfg = replace(self, client_secret=self.client_secret or creds.client_secret,
                      node_secret=self.node_secret or creds.node_secret)
        return cfg, None if self.client_secret else self.credentials_path

    @property
    def http_host(self) -> str:
        return self.rest_host if self.rest_host is not None else self.host

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host) and is_loopback(self.http_host)

    def validate(self) -> None:
        if self.nm_expiry_s < self.heartbeat_interval_s:
            raise ValueError("the NodeManager expiry interval must not be shorter than the heartbeat interval")
        if self.insecure and not self.loopback:
            where = self.host if not is_loopback(self.host) else self.http_host
            raise ValueError(
                f"listening on {where} (not loopback) needs the node and client secrets: the insecure setting "
                "(shepherd.resourcemanager.insecure) is for loopback only"
            )
        self.check_scheduler()
        if self.max_app_attempts < 1:
            raise ValueError("max-app-attempts must be at least 1")
        if self.max_priority < 0:
            raise ValueError("the maximum application priority must not be negative")
        if not self.container_key_roll_s > 0:
            raise ValueError(f"the container-token key rolling interval must be positive, got "
                             f"{self.container_key_roll_s} s")
        if not self.store_lease_s > 0:
            raise ValueError(f"the store lease time must be positive, got {self.store_lease_s} s")
        for name, port in (("gRPC", self.grpc_port), ("REST", self.rest_port)):
            if not 0 <= port < 65536:
                raise ValueError(f"the {name} port {port} is not between 0 and 65535")

    def policy_settings(self) -> tuple[PolicyArgs, ...]:
        """The typed settings of the scheduler's policies that the configuration sets."""
        from rm.core.policies.registry import leftover_cap_of

        return leftover_cap_of(self.scheduler, self.leftover_cap)

    def check_scheduler(self) -> None:
        """A known scheduler whose settings are valid and whose pipeline reads nothing the live RM lacks."""
        from rm.core.policies.api import SIZES
        from rm.core.policies.registry import ADMISSIONS, SCHEDULERS, reads

        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {self.scheduler!r}; known: {', '.join(sorted(SCHEDULERS))}")
        if self.admission is not None and self.admission not in ADMISSIONS:
            raise ValueError(f"unknown admission rule {self.admission!r}; known: {', '.join(sorted(ADMISSIONS))}")
        args = SCHEDULERS[self.scheduler].pipeline.with_settings(*self.policy_settings())
        args.validate()
        if SIZES in reads(args):
            live = sorted(n for n, s in SCHEDULERS.items() if SIZES not in reads(s.pipeline))
            raise ValueError(
                f"scheduler {self.scheduler!r} orders jobs by their remaining size, and the live RM fills in "
                f"no job size yet (only the remaining work an AM declares on its asks, which the leftover "
                f"order reads), so it would silently run as FIFO; it runs in the simulator (shepherd sim), "
                f"which knows every size. Live schedulers: {', '.join(live)}")


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def own_user() -> str:
    """The user this process runs as: the owner of the cluster's client secret, and its admin by default."""
    return getpass.getuser()
