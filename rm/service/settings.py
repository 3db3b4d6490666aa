"""The ResourceManager's settings: the properties it reads (``RM_SETTINGS``), layered as every daemon's are
(``common.settings``: defaults < Hadoop site files < shepherd's YAML file < environment < flags, each value
with its source), and :func:`load_rm_settings`, which resolves them into an ``RMConfig``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from common.acl import QUEUE_ACL_NAMES, AccessList, AclConfig, queue_acls
from common.hadoop_conf import HadoopConfError, capacity_scheduler_queues
from common.resource_types import RESOURCE_TYPES, ResourceTypes, read_resource_types
from common.resources import MEMORY, VCORES, Resources
from common.settings import (
    COMMON,
    DEFAULT,
    DEFAULT_REST_PORT,
    Layered,
    Setting,
    SettingsError,
    load_layers,
)
from rm.core.deadlines.system import DeadlineConfig
from rm.core.policies.registry import LEFTOVER_CAP
from rm.core.state_types import SamplingConfig
from rm.service.config import RMConfig, own_user

RM_SETTINGS: tuple[Setting, ...] = (
    *COMMON,
    Setting("yarn.resourcemanager.webapp.address", f"${{yarn.resourcemanager.hostname}}:{DEFAULT_REST_PORT}",
            "SHEPHERD_RM_WEBAPP_ADDRESS", "REST API, /metrics and /docs"),
    Setting("shepherd.resourcemanager.data-dir", ".shepherd", "SHEPHERD_DATA_DIR",
            "where the SQLite state store lives by default"),
    Setting("shepherd.resourcemanager.store.url", None, "SHEPHERD_STORE_URL",
            "SQLAlchemy URL of the state store (sqlite:/// or postgresql://)", secret=True),
    Setting("shepherd.resourcemanager.store.lease-ms", "15000", "SHEPHERD_STORE_LEASE_MS",
            "only the RM holding the store's lease writes it; a killed RM's lease is taken over after this long"),
    Setting("yarn.resourcemanager.store.class", None, None, "FileSystem/Leveldb stores map to SQLite there"),
    Setting("yarn.resourcemanager.fs.state-store.uri", "${hadoop.tmp.dir}/yarn/system/rmstore"),
    Setting("yarn.resourcemanager.leveldb-state-store.path", "${hadoop.tmp.dir}/yarn/system/rmstore"),
    Setting("yarn.nm.liveness-monitor.expiry-interval-ms", "600000", None, "a silent NodeManager is LOST"),
    Setting("yarn.am.liveness-monitor.expiry-interval-ms", "600000", None, "a silent AM fails its attempt"),
    Setting("yarn.resourcemanager.rm.container-allocation.expiry-interval-ms", "600000", None,
            "an allocated container never started is taken back"),
    Setting("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms", "1000"),
    Setting("yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs", "86400", None,
            "a new container-token key every this many seconds; it signs 1.5 × the NodeManager expiry later (at "
            "most a third of this), and NodeManagers accept the current key and the one before it"),
    Setting("yarn.resourcemanager.am.max-attempts", "2"),
    Setting("yarn.resourcemanager.ha.enabled", "false", "SHEPHERD_HA",
            "active/standby: while another RM holds the state store's lease, stand by (redirecting web requests "
            "to it) and take over when it stops renewing the lease"),
    Setting("shepherd.resourcemanager.ha.grpc-addresses", None, None,
            "with HA: every RM's gRPC address, comma-separated, handed to AMs so they follow a failover"),
    Setting("yarn.resourcemanager.work-preserving-recovery.enabled", "true", None,
            "a restarted RM keeps the running containers and AMs (false: every unfinished app starts a new "
            "attempt)"),
    Setting("yarn.scheduler.maximum-allocation-mb", None, None,
            "largest container (unset: the largest node; if only one of -mb/-vcores is set the other "
            "takes YARN's default 8192 MB / 4 vcores)"),
    Setting("yarn.scheduler.maximum-allocation-vcores", None),
    Setting("yarn.cluster.max-application-priority", "10", None, "YARN's default is 0"),
    Setting("shepherd.resourcemanager.scheduling-interval-ms", "50", None, "least time between two cycles"),
    Setting("shepherd.resourcemanager.scheduling-off-loop", "true", None,
            "a cycle's policies run on a thread of their own, so calls are answered meanwhile (false: on the "
            "event loop)"),
    Setting("shepherd.resourcemanager.admission", None, "SHEPHERD_ADMISSION",
            "the rule that admits submissions (unset: the scheduler's; admit-all admits every app)"),
    Setting("shepherd.resourcemanager.scheduler", "mrm", "SHEPHERD_SCHEDULER",
            "the scheduling pipeline: mrm (reservations, then bought deadlines EDF-first, then carbyne), "
            "carbyne (DRF + altruistic leftover), carbyne-pack, morpheus (reservations, then carbyne), drf, "
            "edf, fifo, tetris"),
    Setting("shepherd.resourcemanager.deadlines.kappa", "2", None,
            "mrm: scales deadline prices (MRM's eq. 13 κ); a job with no slack pays κ × its work"),
    Setting("shepherd.resourcemanager.deadlines.pi-z", "1.96", None,
            "mrm: a deadline claims the estimate's mean + z × its standard deviation"),
    Setting("shepherd.resourcemanager.deadlines.estimator", "auto", None,
            "mrm: bin (the same job's runs), ridge (a regression over similar jobs) or auto (bin, else ridge)"),
    Setting("shepherd.resourcemanager.deadlines.quote-ttl-ms", "30000", None, "mrm: how long a quote holds"),
    Setting("shepherd.resourcemanager.deadlines.step-ms", "1000", None, "mrm: the deadline books' time step"),
    Setting("shepherd.resourcemanager.deadlines.max-fraction", "0.8", None,
            "mrm: the share of a queue's capacity its deadline claims may hold"),
    Setting("shepherd.resourcemanager.deadlines.margin-ms", "10000", None,
            "mrm: a claim's work is laid to end this long before its deadline (AM start, launches)"),
    Setting("shepherd.resourcemanager.slearn.sampling-ratio", "adaptive", None,
            "slearn: pilots per task of a wide job of unknown size, in (0, 1] ('adaptive': the paper's rule "
            "over 1-5 %)"),
    Setting("shepherd.resourcemanager.slearn.gate-timeout-ms", "300000", None,
            "slearn: a job's other tasks wait at most this long for its pilots"),
    Setting("shepherd.resourcemanager.slearn.trust-history", "true", None,
            "slearn: a wide job whose run history estimated it at least as well as pilots did is not sampled"),
    Setting("shepherd.resourcemanager.carbyne.leftover-cap", f"{LEFTOVER_CAP:g}", "SHEPHERD_LEFTOVER_CAP",
            "carbyne/morpheus: an app takes leftover only up to this multiple (>= 1) of its fair share "
            "before the next app closest to completion; what still fits after that is handed out uncapped "
            "('none': no bound, Carbyne's plain shortest-remaining-time-first)"),
    Setting("shepherd.resourcemanager.fair-share-interval-ms", "1000", None,
            "how often the DRF fair shares sent to ApplicationMasters are recomputed"),
    Setting("shepherd.resourcemanager.node-secret", None, "SHEPHERD_NODE_SECRET",
            "NodeManagers must present it (unset: the credentials file's)", secret=True),
    Setting("shepherd.resourcemanager.client-secret", None, "SHEPHERD_CLIENT_SECRET",
            "clients that change anything must present it (unset: the credentials file's)", secret=True),
    Setting("shepherd.resourcemanager.credentials-file", None, "SHEPHERD_RM_CREDENTIALS_FILE",
            "secrets not set above come from this file, created 0600 with random ones if missing "
            "(unset: <data-dir>/credentials.json)"),
    Setting("yarn.acl.enable", "true", None,
            "check the ACLs: yarn.admin.acl, the queues' acl_* in capacity-scheduler.xml and apps' own (YARN's "
            "default is false; false lets every authenticated user kill every app)"),
    Setting("yarn.admin.acl", None, None,
            "who administers the cluster (Hadoop ACL: users, a space, groups; * everyone); unset: the RM's own "
            "user"),
    Setting("shepherd.resourcemanager.authenticate-reads", "false", None,
            "true: reads (REST /ws/*, gRPC and Hadoop IPC reports) need the client secret or a user token too, "
            "and so do /metrics (as a bearer token) and the web UI's pages (a sign-in page until then)"),
    Setting("shepherd.resourcemanager.insecure", "false", "SHEPHERD_INSECURE",
            "true: no secrets at all, anyone on the machine may submit and register nodes (loopback only; "
            "logged as a warning)"),
)



# ---------------------------------------------------------------------------------- ResourceManager


@dataclass(frozen=True, slots=True)
class RMFlags:
    """``shepherd rm`` flags; None means not given."""

    host: str | None = None
    grpc_port: int | None = None
    rest_port: int | None = None
    data_dir: Path | None = None
    store_url: str | None = None
    nm_expiry_s: float | None = None
    am_expiry_s: float | None = None
    max_app_attempts: int | None = None
    queues_file: Path | None = None
    node_secret: str | None = None
    client_secret: str | None = None
    credentials_file: Path | None = None
    insecure: bool | None = None


@dataclass(frozen=True, slots=True)
class RMSettings:
    config: RMConfig
    layers: Layered
    queues_source: str
    warnings: tuple[str, ...] = ()

    def rows(self) -> list[tuple[str, str, str]]:
        queues = ", ".join(self.config.queues) if self.config.queues else "default"
        known = self.config.resource_types
        types = ", ".join(sorted(known)) if known is not None else "memory-mb, vcores and those the nodes offer"
        return self.layers.rows([("queues (children of root)", queues, self.queues_source),
                                 ("resource types", types, self.layers.source(RESOURCE_TYPES))])


def _with_part(address: str, host: str | None, port: int | None) -> str:
    h, _, p = address.rpartition(":")
    return f"{host if host is not None else h}:{port if port is not None else p}"


def _rm_flags(flags: RMFlags, pre: Layered) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for key, port, flag in (("shepherd.resourcemanager.grpc.address", flags.grpc_port, "--grpc-port"),
                            ("yarn.resourcemanager.webapp.address", flags.rest_port, "--rest-port")):
        if flags.host is not None or port is not None:
            names = " ".join(n for n, given in (("--host", flags.host), (flag, port)) if given is not None)
            out[key] = (_with_part(pre.text(key) or "", flags.host, port), names)
    if flags.host is not None:
        out["yarn.resourcemanager.hostname"] = (flags.host, "--host")
    simple: list[tuple[str, Any, str, float]] = [
        ("shepherd.resourcemanager.data-dir", flags.data_dir, "--data-dir", 1),
        ("shepherd.resourcemanager.store.url", flags.store_url, "--store-url", 1),
        ("yarn.nm.liveness-monitor.expiry-interval-ms", flags.nm_expiry_s, "--nm-expiry", 1000),
        ("yarn.am.liveness-monitor.expiry-interval-ms", flags.am_expiry_s, "--am-expiry", 1000),
        ("yarn.resourcemanager.am.max-attempts", flags.max_app_attempts, "--max-app-attempts", 1),
        ("shepherd.resourcemanager.node-secret", flags.node_secret, "--node-secret", 1),
        ("shepherd.resourcemanager.client-secret", flags.client_secret, "--client-secret", 1),
        ("shepherd.resourcemanager.credentials-file", flags.credentials_file, "--credentials", 1),
        ("shepherd.resourcemanager.insecure", None if flags.insecure is None else str(flags.insecure).lower(),
         "--insecure", 1),
    ]
    for key, value, flag, scale in simple:
        if value is not None:
            out[key] = (str(value * scale) if scale != 1 else str(value), flag)
    return out


def _leftover_cap(layers: Layered) -> float | None:
    """The leftover cap: a number, or 'none' for no bound (math.inf, which the pipeline reads as uncapped)."""
    key = "shepherd.resourcemanager.carbyne.leftover-cap"
    text = layers.text(key)
    if text is not None and text.strip().lower() == "none":
        return math.inf
    return layers.number(key)


def _store_url(layers: Layered, warnings: list[str]) -> str | None:
    url = layers.text("shepherd.resourcemanager.store.url")
    if url:
        return url
    cls = layers.text("yarn.resourcemanager.store.class")
    if not cls:
        return None
    from rm.service.store import default_sqlite_url

    short = cls.rsplit(".", 1)[-1]
    key = {"FileSystemRMStateStore": "yarn.resourcemanager.fs.state-store.uri",
           "LeveldbRMStateStore": "yarn.resourcemanager.leveldb-state-store.path"}.get(short)
    if key is not None:
        where = layers.text(key) or ""
        path = where.removeprefix("file://") if where.startswith(("file:///", "/")) else None
        if path:
            return default_sqlite_url(Path(path))
        warnings.append(f"{key} = {where!r} is not a local path; using the SQLite store in the data dir")
        return None
    warnings.append(f"yarn.resourcemanager.store.class {short} is not supported; the state store is SQLite "
                    "in the data dir (set shepherd.resourcemanager.store.url for PostgreSQL)")
    return None


def _resource_types(layers: Layered, warnings: list[str]) -> ResourceTypes:
    try:
        types = read_resource_types(layers.conf)
    except HadoopConfError as exc:
        raise SettingsError(str(exc)) from exc
    warnings += types.ignored
    return types


def _max_allocation(layers: Layered, types: ResourceTypes, warnings: list[str]) -> Resources | None:
    """memory-mb and vcores (yarn.resource-types.<type>.maximum-allocation, else
    yarn.scheduler.maximum-allocation-*; if only one of the two is set the other takes YARN's default), and
    every extra type whose maximum is configured."""
    given: dict[str, int | None] = {}
    for name, key in ((MEMORY, "yarn.scheduler.maximum-allocation-mb"),
                      (VCORES, "yarn.scheduler.maximum-allocation-vcores")):
        given[name] = layers.integer(key)
        if name in types.mandatory_maximum:
            if given[name] is not None and given[name] != types.mandatory_maximum[name]:
                warnings.append(f"{key} (from {layers.source(key)}) is ignored: "
                                f"{RESOURCE_TYPES}.{name}.maximum-allocation wins")
            given[name] = types.mandatory_maximum[name]
    amounts = types.maximum()
    mb, vc = given[MEMORY], given[VCORES]
    if mb is not None or vc is not None:
        if (mb is not None and mb <= 0) or (vc is not None and vc <= 0):
            raise SettingsError(f"the maximum allocation must be positive, got memory-mb={mb}, vcores={vc}")
        amounts.update({MEMORY: mb if mb is not None else 8192, VCORES: vc if vc is not None else 4})
    return Resources(amounts) if amounts else None


def load_rm_settings(
    *,
    env: Mapping[str, str],
    flags: RMFlags | None = None,
    config_file: Path | None = None,
    conf_dir: Path | None = None,
) -> RMSettings:
    """Resolve the ResourceManager's configuration from every layer."""
    flags = flags or RMFlags()
    pre = load_layers(RM_SETTINGS, env=env, conf_dir=conf_dir, config_file=config_file)
    layers = load_layers(RM_SETTINGS, env=env, conf_dir=conf_dir, config_file=config_file,
                         flags=_rm_flags(flags, pre))
    warnings: list[str] = [f"{p.name} from {p.source} is ignored: an earlier file made it final"
                           for p in layers.conf.ignored]
    queues, queues_source = _queues(layers, flags)
    types = _resource_types(layers, warnings)
    grpc_host, grpc_port = layers.address("shepherd.resourcemanager.grpc.address")
    rest_host, rest_port = layers.address("yarn.resourcemanager.webapp.address")
    d = {f.name: f.default for f in fields(RMConfig)}

    def either(value: Any, name: str) -> Any:
        return d[name] if value is None else value

    try:
        cfg = RMConfig(
            host=grpc_host, grpc_port=grpc_port, rest_host=rest_host, rest_port=rest_port,
            data_dir=Path(layers.text("shepherd.resourcemanager.data-dir") or ".shepherd"),
            store_url=_store_url(layers, warnings), queues=queues,
            store_lease_s=either(layers.seconds("shepherd.resourcemanager.store.lease-ms"), "store_lease_s"),
            nm_expiry_s=either(layers.seconds("yarn.nm.liveness-monitor.expiry-interval-ms"), "nm_expiry_s"),
            am_expiry_s=either(layers.seconds("yarn.am.liveness-monitor.expiry-interval-ms"), "am_expiry_s"),
            container_alloc_expiry_s=either(
                layers.seconds("yarn.resourcemanager.rm.container-allocation.expiry-interval-ms"),
                "container_alloc_expiry_s"),
            heartbeat_interval_s=either(
                layers.seconds("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms"), "heartbeat_interval_s"),
            container_key_roll_s=either(
                layers.number("yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs"),
                "container_key_roll_s"),
            max_app_attempts=either(layers.integer("yarn.resourcemanager.am.max-attempts"), "max_app_attempts"),
            work_preserving=_flag(layers, "yarn.resourcemanager.work-preserving-recovery.enabled"),
            ha_enabled=_flag(layers, "yarn.resourcemanager.ha.enabled"),
            ha_addresses=tuple(a.strip() for a in (layers.text("shepherd.resourcemanager.ha.grpc-addresses") or "")
                               .split(",") if a.strip()),
            maximum_allocation=_max_allocation(layers, types, warnings),
            resource_types=types.names(),
            scheduling_interval_s=either(layers.seconds("shepherd.resourcemanager.scheduling-interval-ms"),
                                         "scheduling_interval_s"),
            cycle_off_loop=_flag(layers, "shepherd.resourcemanager.scheduling-off-loop", default=True),
            max_priority=either(layers.integer("yarn.cluster.max-application-priority"), "max_priority"),
            scheduler=either(layers.text("shepherd.resourcemanager.scheduler"), "scheduler"),
            admission=either(layers.text("shepherd.resourcemanager.admission"), "admission"),
            leftover_cap=either(_leftover_cap(layers), "leftover_cap"),
            share_interval_s=either(layers.seconds("shepherd.resourcemanager.fair-share-interval-ms"),
                                    "share_interval_s"),
            node_secret=layers.text("shepherd.resourcemanager.node-secret"),
            client_secret=layers.text("shepherd.resourcemanager.client-secret"),
            credentials_file=_path(layers.text("shepherd.resourcemanager.credentials-file")),
            insecure=_flag(layers, "shepherd.resourcemanager.insecure"),
            deadlines=_deadlines(layers),
            sampling=_sampling(layers),
            acls=_acls(layers, queues),
            authenticate_reads=_flag(layers, "shepherd.resourcemanager.authenticate-reads"),
        )
    except (TypeError, ValueError) as exc:
        raise SettingsError(str(exc)) from exc
    return RMSettings(cfg, layers, queues_source, tuple(warnings))


def _acls(layers: Layered, queues: Mapping[str, Any] | None) -> AclConfig:
    """``yarn.acl.enable``, ``yarn.admin.acl`` and every queue's ACLs: ``yarn.scheduler.capacity.<path>.acl_*``
    properties, or the same names inside a queue of the YAML tree (the property wins)."""
    texts: dict[str, dict[str, str]] = {}

    def walk(path: str, children: Mapping[str, Any] | None) -> None:
        for name, spec in (children or {}).items():
            child = f"{path}.{name}"
            texts.setdefault(child, {})
            if isinstance(spec, Mapping):
                for acl in QUEUE_ACL_NAMES:
                    if isinstance(spec.get(acl), str):
                        texts.setdefault(child, {})[acl] = spec[acl]
                walk(child, spec.get("queues"))

    texts["root"] = {}
    walk("root", queues if queues is not None else {"default": {}})
    for path, acls in texts.items():
        for acl in QUEUE_ACL_NAMES:
            value = layers.conf.get(f"yarn.scheduler.capacity.{path}.{acl}")
            if value is not None:
                acls[acl] = value
    admin = layers.conf.get("yarn.admin.acl")
    return AclConfig(enabled=_flag(layers, "yarn.acl.enable"),
                     admins=AccessList.parse(admin) if admin is not None else AccessList(frozenset({own_user()})),
                     queues=queue_acls({p: a for p, a in texts.items() if a}))


def _deadlines(layers: Layered) -> DeadlineConfig:
    base = DeadlineConfig()
    key = "shepherd.resourcemanager.deadlines."

    def num(name: str, default: float) -> float:
        got = layers.number(key + name)
        return default if got is None else got

    ttl, step, margin = (layers.seconds(key + "quote-ttl-ms"), layers.seconds(key + "step-ms"),
                         layers.seconds(key + "margin-ms"))
    cfg = DeadlineConfig(kappa=num("kappa", base.kappa), z=num("pi-z", base.z),
                         estimator=layers.text(key + "estimator") or base.estimator,
                         quote_ttl_s=base.quote_ttl_s if ttl is None else ttl,
                         step_s=base.step_s if step is None else step,
                         max_fraction=num("max-fraction", base.max_fraction),
                         margin_s=base.margin_s if margin is None else margin)
    cfg.validate()
    return cfg


def _sampling(layers: Layered) -> SamplingConfig:
    key = "shepherd.resourcemanager.slearn."
    text = (layers.text(key + "sampling-ratio") or "adaptive").strip().lower()
    ratio: float | None = None
    if text != "adaptive":
        try:
            ratio = float(text)
        except ValueError:
            ratio = math.nan
        if not 0.0 < ratio <= 1.0:
            raise SettingsError(f"{key}sampling-ratio = {text!r} ({layers.source(key + 'sampling-ratio')}): "
                                "expected 'adaptive' or a number in (0, 1]")
    timeout = layers.seconds(key + "gate-timeout-ms")
    cfg = SamplingConfig(ratio=ratio, trust_history=_flag(layers, key + "trust-history"))
    if timeout is not None:
        cfg = replace(cfg, gate_timeout_s=timeout)
    try:
        cfg.validate()
    except ValueError as exc:
        raise SettingsError(f"{key}: {exc}") from None
    return cfg


def _path(text: str | None) -> Path | None:
    return Path(text).expanduser() if text else None


def _flag(layers: Layered, key: str, *, default: bool = False) -> bool:
    value = (layers.text(key) or str(default)).strip().lower()
    if value not in ("true", "false"):
        raise SettingsError(f"{key} = {value!r} ({layers.source(key)}): expected true or false")
    return value == "true"


def _queues(layers: Layered, flags: RMFlags) -> tuple[dict[str, Any] | None, str]:
    if flags.queues_file is not None:
        try:
            tree = yaml.safe_load(flags.queues_file.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise SettingsError(f"{flags.queues_file}: cannot read the queue tree: {exc}") from exc
        return _tree(tree, str(flags.queues_file)), "flag --queues"
    if "queues" in layers.yaml_extra:
        return _tree(layers.yaml_extra["queues"], "queues"), layers.files[-1]
    try:
        tree = capacity_scheduler_queues(layers.conf)
    except HadoopConfError as exc:
        raise SettingsError(str(exc)) from exc
    if tree is None:
        return None, DEFAULT
    return tree, layers.source("yarn.scheduler.capacity.root.queues")


def _tree(tree: Any, where: str) -> dict[str, Any] | None:
    if tree is None:
        return None
    if not isinstance(tree, Mapping):
        raise SettingsError(f"{where}: the queue tree must be a mapping of queue names to settings")
    return dict(tree)
