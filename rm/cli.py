"""The ``shepherd`` command: run daemons, a local cluster, and talk to a ResourceManager."""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.resources
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import typer

from rm.client import ClientError, RMClient, interruptible
from rm.commands import app_slo as _app_slo  # noqa: F401  (registers app deadline and app slo)
from rm.commands import attach as _attach  # noqa: F401  (registers app attach)
from rm.commands import job_profile as _job_profile  # noqa: F401  (registers job profile)
from rm.commands.admin import admin_group
from rm.commands.apps import app_group, apps_table, apps_wide
from rm.commands.cluster import node_group, nodes_table, nodes_wide, queue_group, sampling
from rm.commands.common import RM_OPT, fail
from rm.commands.config import config_group
from rm.commands.db import db_group
from rm.commands.job import deadlines, job_group, parse_deadline
from rm.commands.local import down, remove_state, write_state
from rm.commands.logs import logs
from rm.commands.output import OUTPUT_OPTS, Output, console, error, read_command
from rm.commands.reservations import reservation_group
from rm.commands.shapes import app_rest, node_json
from rm.commands.slo import slo_group
from rm.commands.target import CLUSTER_KEY, config_failed
from rm.commands.waiting import wait_for
from sim.cli import sim_app

app = typer.Typer(help="shepherd: a YARN-compatible cluster resource manager.\n\nNew here? `shepherd demo` "
                  "runs a job on a throw-away local cluster; `shepherd up` keeps one running (web UI at its "
                  "REST address, `/`). Every command takes --help.", no_args_is_help=True,
                  context_settings={"help_option_names": ["-h", "--help"]}, rich_markup_mode="markdown")

RUN, JOBS, INSPECT, SETUP = "Run a cluster", "Jobs", "Look at the cluster", "Configure and plan"
FINAL = {"FINISHED", "FAILED", "KILLED"}
# how long a thread holds the interpreter while another waits for it (CPython: 5 ms): with the scheduling
# cycle on a thread of its own, what a call can wait behind a long cycle
SWITCH_INTERVAL_S = 0.001


def _client(rm: str | None) -> RMClient:
    return RMClient(rm)


def _version() -> str:
    try:
        return importlib.metadata.version("shepherd")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _show_version(value: bool) -> None:
    if value:
        print(f"shepherd {_version()} (Python {sys.version.split()[0]})")
        raise typer.Exit(0)


@app.callback()
def _main(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", "-V", callback=_show_version, is_eager=True,
                                 help="print shepherd's version and exit"),
    cluster: str | None = typer.Option(None, "--cluster", help="talk to this named cluster of the user config "
                                       "file (`shepherd config clusters`): its gRPC address and REST URL, "
                                       "over $SHEPHERD_RM, $SHEPHERD_REST and the current cluster"),
) -> None:
    del version  # handled by its callback
    if cluster is not None:
        from common.user_config import UserConfigError, config_path, load

        try:
            load(config_path()).named(cluster)
        except UserConfigError as exc:
            raise config_failed(exc) from None
        ctx.meta[CLUSTER_KEY] = cluster


def examples_dir() -> Path:
    """The example jobs: ``rm/examples`` in an installed wheel, else ``examples/`` in the source tree."""
    packaged = Path(str(importlib.resources.files("rm") / "examples"))
    if (packaged / "wordcount.yaml").is_file():
        return packaged
    return Path(__file__).resolve().parent.parent / "examples"


# ---------------------------------------------------------------------------- daemons


@app.command("rm", rich_help_panel=RUN)
def run_rm(
    host: str | None = typer.Option(None, help="address to listen on \\[default: yarn.resourcemanager.hostname, "
                                    "127.0.0.1]"),
    grpc_port: int | None = typer.Option(None, help="gRPC port (0 = any free port) \\[default: 7030]"),
    rest_port: int | None = typer.Option(None, help="REST/web port (0 = any free port) \\[default: 8088]"),
    data_dir: Path | None = typer.Option(None, help="where the SQLite store lives \\[default: .shepherd]"),
    store_url: str | None = typer.Option(None, help="SQLAlchemy URL of the state store (default: "
                                         "$SHEPHERD_STORE_URL, else SQLite in data-dir)"),
    nm_expiry: float | None = typer.Option(None, help="seconds without a heartbeat before a node is LOST "
                                           "\\[default: 600]"),
    am_expiry: float | None = typer.Option(None, help="seconds without an AM heartbeat before an attempt "
                                           "fails \\[default: 600]"),
    max_app_attempts: int | None = typer.Option(None, help="yarn.resourcemanager.am.max-attempts \\[default: 2]"),
    queues: Path | None = typer.Option(None, help="YAML/JSON file with the queue tree (children of root)"),
    node_secret: str | None = typer.Option(None, help="default: $SHEPHERD_NODE_SECRET"),
    client_secret: str | None = typer.Option(None, help="default: $SHEPHERD_CLIENT_SECRET"),
    credentials: Path | None = typer.Option(None, "--credentials", help="secrets not given come from this file, "
                                            "created (0600) with random ones if missing \\[default: "
                                            "<data-dir>/credentials.json]"),
    insecure: bool | None = typer.Option(None, "--insecure", help="no secrets: anyone on this machine may "
                                         "submit, kill and register nodes (loopback only; logged)"),
    config: Path | None = typer.Option(None, "--config", "-c", help="shepherd YAML config file"),
    hadoop_conf_dir: Path | None = typer.Option(None, help="directory of yarn-site.xml and "
                                                "capacity-scheduler.xml \\[default: $YARN_CONF_DIR, $HADOOP_CONF_DIR]"),
    ipc_client_port: int | None = typer.Option(None, help="Hadoop IPC client port (default: yarn-site.xml or "
                                               "8032; 0 = any free port; -1 = off)"),
    ipc_scheduler_port: int | None = typer.Option(None, help="Hadoop IPC scheduler port (default: yarn-site.xml "
                                                  "or 8030; 0 = any free port; -1 = off)"),
    ipc_admin_port: int | None = typer.Option(None, help="Hadoop IPC admin port, for `yarn rmadmin` (default: "
                                              "yarn-site.xml or 8033; with --ipc-client-port given: 0 if that is "
                                              "0, else off; 0 = any free port; -1 = off)"),
    yarn_site: Path | None = typer.Option(None, help="yarn-site.xml with the Hadoop IPC addresses"),
    create_store: bool = typer.Option(False, "--create-store", help="create a new, empty state store if there is "
                                      "none at the store URL (without it, a missing store is an error)"),
    log_level: str = typer.Option("INFO"),
    log_format: str | None = typer.Option(None, "--log-format", help="json, text or auto (text on a terminal, "
                                          "else JSON lines) \\[default: $SHEPHERD_LOG_FORMAT, auto]"),
    check_config: bool = typer.Option(False, "--check-config", help="check the configuration as this command "
                                      "would start with it and exit: 0 if valid, else 2 naming each file and key"),
) -> None:
    """Run a ResourceManager.

    Settings: defaults < Hadoop site files < --config < environment < flags
    (see `shepherd config show --sources`)."""
    import dataclasses

    from common.logs import configure as configure_logging
    from common.sdnotify import Notifier
    from common.settings import SettingsError
    from rm.service.check_config import check_rm_settings
    from rm.service.server import ResourceManager
    from rm.service.settings import RMFlags, load_rm_settings

    try:
        configure_logging("resourcemanager", log_level, log_format)
    except ValueError as exc:
        error(str(exc))
        raise typer.Exit(2) from None
    flags = RMFlags(host=host, grpc_port=grpc_port, rest_port=rest_port, data_dir=data_dir, store_url=store_url,
                    nm_expiry_s=nm_expiry, am_expiry_s=am_expiry, max_app_attempts=max_app_attempts,
                    queues_file=queues, node_secret=node_secret, client_secret=client_secret,
                    credentials_file=credentials, insecure=insecure)
    try:
        settings = load_rm_settings(env=dict(os.environ), flags=flags, config_file=config,
                                    conf_dir=hadoop_conf_dir)
    except SettingsError as exc:
        error(str(exc))
        raise typer.Exit(2) from None
    for warning in settings.warnings:
        logging.getLogger("shepherd.rm").warning("%s", warning)
    problems = check_rm_settings(settings)  # fail fast, naming the file and key, before opening the store
    for problem in problems:
        error(problem, prefix="invalid")
    if problems:
        raise typer.Exit(2)
    if check_config:
        files = ", ".join(settings.layers.files) or "no files: defaults, environment and flags"
        console.print(f"configuration is valid ({files})", highlight=False, soft_wrap=True)
        raise typer.Exit(0)
    notifier = Notifier.from_environment()  # NOTIFY_SOCKET/WATCHDOG_USEC under systemd; AMs do not inherit it
    cfg = dataclasses.replace(settings.config, ipc_client_port=ipc_client_port,
                              ipc_scheduler_port=ipc_scheduler_port, ipc_admin_port=ipc_admin_port,
                              yarn_site=yarn_site, create_store=create_store)
    listeners = [("gRPC", cfg.host, cfg.grpc_port, "--grpc-port"),
                 ("REST/web", cfg.http_host, cfg.rest_port, "--rest-port"), *_ipc_listeners(cfg)]
    taken = ports_in_use(listeners)
    if taken:
        error(taken[0])
        raise typer.Exit(2)

    async def main() -> bool:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        def reload() -> Any:  # the same layers again: files, environment, flags
            return load_rm_settings(env=dict(os.environ), flags=flags, config_file=config,
                                    conf_dir=hadoop_conf_dir).config

        rm = ResourceManager(cfg, reload=reload)

        refreshing: set[asyncio.Future[None]] = set()

        def on_hangup() -> None:  # SIGHUP: refresh the queues (`shepherd admin refresh-queues` does the same)
            async def refresh() -> None:
                from common.errors import YarnError

                try:
                    await rm.refresh_queues()
                except YarnError as exc:  # logged and refused: the old queues stay
                    logging.getLogger("shepherd.rm").error("queue refresh refused: %s", exc.message)
            task = asyncio.ensure_future(refresh())
            refreshing.add(task)
            task.add_done_callback(refreshing.discard)

        loop.add_signal_handler(signal.SIGHUP, on_hangup)
        if not await rm.start_unless(stop):  # a standby (HA) stopped before it became active
            await rm.stop()
            return True
        # started (ledger recovered, listeners up): freeze that heap out of the collector's way and collect less
        # often, so full collections do not stall the event loop (rm/service/gc_tuning.py)
        from rm.service.gc_tuning import tune_gc

        logging.getLogger("shepherd.rm").info("garbage collection: %d start-up objects frozen", tune_gc())
        if rm.cfg.cycle_off_loop:  # the cycle's thread hands the interpreter back to the loop sooner
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        ipc = (f" ipc_client={rm.ipc.client_address or '-'} ipc_scheduler={rm.ipc.scheduler_address or '-'}"
               f" ipc_admin={rm.ipc.admin_address or '-'}")
        ready = f"grpc={rm.grpc_address} rest={rm.rest_url}{ipc}"
        print(f"resourcemanager ready {ready}", flush=True)
        notifier.ready(f"serving {ready}")  # systemd Type=notify: every listener accepts connections by now
        watchdog = asyncio.create_task(notifier.watchdog(lambda: not rm.halted.is_set()), name="watchdog")
        try:
            await rm.wait(stop)
        finally:
            notifier.stopping("stopping")
            watchdog.cancel()
            await rm.stop()
        return not rm.halted.is_set()

    from rm.service.store import StoreError

    try:
        clean = asyncio.run(main())
    except (ValueError, OSError, StoreError) as exc:
        error(_start_error(exc, listeners))
        raise typer.Exit(2) from None
    except RuntimeError as exc:  # gRPC's "Failed to bind to address ..."
        if "bind" not in str(exc):
            raise
        error(_start_error(exc, listeners))
        raise typer.Exit(2) from None
    if not clean:  # another ResourceManager took the state store over (logged)
        raise typer.Exit(3)


def ports_in_use(listeners: list[tuple[str, str, int, str]]) -> list[str]:
    """For each (what, host, port, flag) whose fixed port another process holds: one line naming it."""
    import errno
    import socket

    out: list[str] = []
    for what, host, port, flag in listeners:
        if port <= 0:
            continue
        bind_host = "" if host in ("0.0.0.0", "::") else host
        try:
            family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((bind_host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                out.append(f"port {port} ({what}) on {host or '0.0.0.0'} is already in use; stop what listens "
                           f"there (`ss -ltnp 'sport = :{port}'`) or choose another with {flag}")
            elif exc.errno == errno.EACCES:
                out.append(f"port {port} ({what}) on {host}: permission denied; choose another with {flag}")
    return out


def _ipc_listeners(cfg: Any) -> list[tuple[str, str, int, str]]:
    """The Hadoop IPC listeners an RM with this configuration opens (flags, else yarn-site.xml, else 8032/8030)."""
    from rm.service.ipc.config import settings as ipc_settings

    try:
        ipc = ipc_settings(cfg)
    except ValueError:  # an unreadable yarn-site.xml: the RM reports it itself
        return []
    return [("Hadoop IPC client", ipc.host, ipc.client_port, "--ipc-client-port"),
            ("Hadoop IPC scheduler", ipc.host, ipc.scheduler_port, "--ipc-scheduler-port"),
            ("Hadoop IPC admin", ipc.host, ipc.admin_port, "--ipc-admin-port")]


def _start_error(exc: BaseException, listeners: list[tuple[str, str, int, str]]) -> str:
    """One line for a daemon that could not start; for a port taken meanwhile, which ones it may be."""
    import errno

    text = str(exc)
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.EADDRINUSE:
        ports = ", ".join(f"{what} {host}:{port}" for what, host, port, _ in listeners if port > 0)
        return f"cannot listen ({text.split(';')[0]}); the ports asked for: {ports or 'any free ones'}"
    return text


@app.command("nm", context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                                     "help_option_names": []}, add_help_option=False, rich_help_panel=RUN)
def run_nm(ctx: typer.Context) -> None:
    """Run a NodeManager (`shepherd nm --help` lists its flags)."""
    from nodemanager.daemon import main as nm_main

    args = ["--help" if a in ("--help-nm", "-h") else a for a in ctx.args]
    raise typer.Exit(nm_main(args) or 0)


@app.command("up", rich_help_panel=RUN)
def up(
    nodes: int = typer.Option(2, "--nodes", "-n", min=1, max=32),
    data_dir: Path = typer.Option(Path(".shepherd"), help="data directory of the local cluster"),
    grpc_port: int = typer.Option(7030, help="the ResourceManager's gRPC port (0 = any free port)"),
    rest_port: int = typer.Option(8088, help="the ResourceManager's REST and web UI port (0 = any free port)"),
    node_memory_mb: int | None = typer.Option(None, min=1, help="memory each NodeManager offers \\[default: the "
                                              "host's memory less 1 GB, split among the nodes, at most 4096]"),
    node_vcores: int | None = typer.Option(None, min=1, help="vcores each NodeManager offers \\[default: this "
                                           "host's cores split among the nodes, at least 1]"),
    nm_expiry: float = typer.Option(600.0),
    am_expiry: float = typer.Option(600.0),
    ipc_client_port: int | None = typer.Option(None, help="the RM's Hadoop IPC client port (0 = any free port; "
                                               "-1 = off) \\[default: yarn-site.xml's, else 8032]"),
    ipc_scheduler_port: int | None = typer.Option(None, help="the RM's Hadoop IPC scheduler port (0 = any free "
                                                  "port; -1 = off) \\[default: yarn-site.xml's, else 8030]"),
    ipc_admin_port: int | None = typer.Option(None, help="the RM's Hadoop IPC admin port, for `yarn rmadmin` (0 = "
                                              "any free port; -1 = off) \\[default: yarn-site.xml's, else 8033; "
                                              "with --ipc-client-port given: 0 if that is 0, else off]"),
    container_user: str | None = typer.Option(None, help="when run as root: the account containers run as "
                                              "(it must reach the data dir and shepherd's code) \\[default: "
                                              "nobody]"),
    allow_root_containers: bool = typer.Option(False, "--allow-root-containers", help="when run as root and "
                                               "no --container-user is given: containers run as root (logged)"),
    limit_users: bool = typer.Option(True, "--limit-users/--no-limit-users", help="when run as root: every "
                                     "container runs as --container-user; --no-limit-users runs each as the local "
                                     "account of its app's user (users with credentials of their own, from "
                                     "`shepherd admin token`; never root, never a uid below 1000)"),
    insecure: bool = typer.Option(False, "--insecure", help="no secrets: anyone on this machine may submit and "
                                  "register nodes (logged)"),
) -> None:
    """Start a local cluster: a ResourceManager and N NodeManagers on loopback; Ctrl-C (or `shepherd down`
    from another shell, when it runs in the background) stops them all.

    Each NodeManager offers --node-memory-mb and --node-vcores; by default the nodes split this host between
    them (its memory less a NodeManager's 1 GB reserve, at most 4096 MB a node, and its cores), so together they
    never claim more than the machine."""
    from types import SimpleNamespace

    from rm.local import LocalCluster, local_share

    ipc = SimpleNamespace(host="127.0.0.1", ipc_client_port=ipc_client_port, ipc_scheduler_port=ipc_scheduler_port,
                          ipc_admin_port=ipc_admin_port)
    taken = ports_in_use([("gRPC", "127.0.0.1", grpc_port, "--grpc-port"),
                          ("REST/web", "127.0.0.1", rest_port, "--rest-port"), *_ipc_listeners(ipc)])
    if taken:
        error(taken[0])
        raise typer.Exit(2)
    share = local_share(nodes)
    cluster = LocalCluster(data_dir=data_dir, nodes=nodes, grpc_port=grpc_port, rest_port=rest_port,
                           node_memory_mb=node_memory_mb or share[0], node_vcores=node_vcores or share[1],
                           nm_expiry_s=nm_expiry, am_expiry_s=am_expiry, container_user=container_user,
                           allow_root_containers=allow_root_containers, insecure=insecure,
                           ipc_client_port=ipc_client_port, ipc_scheduler_port=ipc_scheduler_port,
                           ipc_admin_port=ipc_admin_port, limit_users=limit_users)
    stop = {"now": False}

    def _stop(signum: int, frame: Any) -> None:
        stop["now"] = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        if not _start(cluster):
            raise typer.Exit(1)
        for line in cluster.unreachable:
            console.print(f"[yellow]warning:[/] {line} (--container-user)", highlight=False, soft_wrap=True)
        console.print(f"ResourceManager  gRPC {cluster.rm_address}   REST/web {cluster.rest_url}   "
                      f"web UI {cluster.rest_url}/")
        console.print(f"metrics          {cluster.rest_url}/metrics (Prometheus)", highlight=False)
        hadoop = [f"{what} {address}" for what, address in (("client", cluster.ipc_client_address),
                                                             ("scheduler", cluster.ipc_scheduler_address),
                                                             ("admin", cluster.ipc_admin_address)) if address]
        if hadoop:
            console.print(f"Hadoop IPC       {'   '.join(hadoop)} (yarn, spark-submit, yarn rmadmin)",
                          highlight=False)
        for nm in cluster.node_ids:
            console.print(f"NodeManager      {nm}   {cluster.node_memory_mb} MB, {cluster.node_vcores} vcores")
        console.print(f"data             {data_dir.resolve()}")
        console.print(f"credentials      {cluster.credentials_path} (readable only by you; clients on this "
                      "machine find it on their own)")
        console.print("to use it from another shell or tool:")
        for line in _exports(cluster):
            print(f"  {line}", flush=True)
        console.print(f"or name it (`shepherd config clusters`): {_add_cluster_line(cluster)}", highlight=False,
                      soft_wrap=True)
        console.print(f"try: SHEPHERD_RM={cluster.rm_address} shepherd submit "
                      f"{_shown(examples_dir() / 'wordcount.yaml')} --wait", highlight=False, soft_wrap=True)
        write_state(cluster.data_dir, cluster)  # for `shepherd down`
        print(f"cluster ready rm={cluster.rm_address} rest={cluster.rest_url}", flush=True)
        while not stop["now"] and cluster.alive():
            time.sleep(0.2)
        if not stop["now"]:
            error(f"the ResourceManager stopped on its own; its log: {_shown(data_dir / 'logs')}")
    finally:
        cluster.stop()
        remove_state(cluster.data_dir)
    console.print(f"stopped the cluster; its state stays in {_shown(data_dir)} for the next `shepherd up`",
                  highlight=False, soft_wrap=True)
    if not stop["now"]:
        raise typer.Exit(1)


def _exports(cluster: Any) -> list[str]:
    """Shell lines that point shepherd's CLI and clients at a local cluster."""
    lines = [f"export SHEPHERD_RM={cluster.rm_address}", f"export SHEPHERD_REST={cluster.rest_url}"]
    if not cluster.insecure:
        lines.append(f"export SHEPHERD_CREDENTIALS={cluster.credentials_path}")
        if cluster.hadoop_token_path.exists():
            lines.append(f"export HADOOP_TOKEN_FILE_LOCATION={cluster.hadoop_token_path}")
    return lines


def _add_cluster_line(cluster: Any) -> str:
    """The command that records a local cluster in the user config file as ``local`` and makes it current."""
    creds = "" if cluster.insecure else f" --credentials {cluster.credentials_path}"
    return f"shepherd config add-cluster local --rm {cluster.rm_address} --rest {cluster.rest_url}{creds} --use"


def _start(cluster: Any) -> bool:
    """Start a local cluster; if a daemon does not come up, say which and why in one line."""
    try:
        cluster.start()
    except ValueError as exc:  # the container account cannot reach what its containers need
        error(f"{exc} (--data-dir, --container-user, --allow-root-containers)")
        return False
    except RuntimeError as exc:
        first, _, tail = str(exc).partition("\n")
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        said = [line for line in lines if line.startswith(("error:", "invalid:", "nodemanager:"))]
        why = (said or lines or ["no output"])[-1]
        error(f"{first.replace(' (exit', ' (exit code', 1).split('; log tail:')[0]}: {why}")
        return False
    return True


def _shown(path: Path) -> str:
    """A path as short as it can be said from here."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _verify_wordcount(output_dir: Path) -> tuple[bool, str]:
    """Check a word-count run with the example's own checker (its own process: the example has a module
    named ``common`` too), which counts the words independently of the job."""
    import subprocess

    checker = examples_dir() / "verify_wordcount.py"
    try:
        run = subprocess.run([sys.executable, str(checker), str(output_dir)], capture_output=True, text=True,
                             timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"could not run {checker}: {exc}"
    said = (run.stdout.strip() or run.stderr.strip() or f"exit {run.returncode}").splitlines()[-1]
    return run.returncode == 0, said


def _demo_blocked(cluster: Any) -> str:
    """Why the demo's containers cannot run as the unprivileged account ("" if they can, or need not)."""
    try:
        if cluster.container_account() is None:
            return ""
        blocked = cluster.prepare_for_containers()
    except ValueError as exc:
        return str(exc)
    return blocked[0] if blocked else ""


@app.command("demo", rich_help_panel=RUN)
def demo(
    data_dir: Path = typer.Option(Path(".shepherd/demo"), help="where the throw-away cluster keeps its files"),
    job: Path | None = typer.Option(None, help="job file to run \\[default: the bundled wordcount example]"),
) -> None:
    """Try shepherd: a throw-away 2-node cluster runs an example job, checks its output and stops.

    At the end it says what ran, what was checked, and what to try next."""
    from am.jobspec import JobSpecError, load_job
    from rm.local import LocalCluster

    job_path = job or examples_dir() / "wordcount.yaml"
    try:
        spec = load_job(job_path)
    except JobSpecError as exc:
        error(f"invalid job file: {exc}")
        raise typer.Exit(2) from None
    tasks = sum(int(stage.tasks) for stage in spec.stages)
    out = (data_dir / "output" / time.strftime("%Y%m%d-%H%M%S")).resolve()
    console.print("starting a local cluster: a ResourceManager and 2 NodeManagers on loopback, any free ports")
    cluster = LocalCluster(data_dir=data_dir, nodes=2, grpc_port=0, rest_port=0)
    blocked = _demo_blocked(cluster)
    if blocked:
        # a throw-away cluster on this machine only: say so, and run the demo rather than fail it
        console.print(f"note: {blocked}. This throw-away demo runs its containers as root instead (logged by "
                      "each NodeManager); `shepherd up` does not", highlight=False, soft_wrap=True)
        cluster = LocalCluster(data_dir=data_dir, nodes=2, grpc_port=0, rest_port=0, allow_root_containers=True)
    checked: tuple[bool, str] | None = None
    try:
        if not _start(cluster):
            raise typer.Exit(1)
        console.print(f"cluster up: gRPC {cluster.rm_address}, REST and web UI {cluster.rest_url}/ (until the "
                      "demo ends)", highlight=False)
        code, app_id = _submit_and_wait(cluster.rm_address, job_path, data_dir, queue="default",
                                        env={"OUTPUT_DIR": str(out)}, wait=True)
        if code == 0 and job is None:
            checked = _verify_wordcount(out)
    finally:
        cluster.stop()
    stages = " -> ".join(stage.name for stage in spec.stages)
    console.print(f"\nran:     {spec.name or spec.id} ({stages}: {tasks} tasks) as {app_id or 'no application'} "
                  f"on a 2-node local cluster", highlight=False, soft_wrap=True)
    if checked is not None:
        console.print(f"checked: {_shown(out / 'wordcount.json')} against words counted independently: "
                      f"{checked[1]}", highlight=False, soft_wrap=True)
    elif code == 0:
        console.print(f"output:  {_shown(out)} (not checked: only the bundled example has a checker)",
                      highlight=False, soft_wrap=True)
    console.print(f"stopped: the cluster and its daemons (the addresses above no longer answer); its files "
                  f"stay in {_shown(data_dir)}", highlight=False, soft_wrap=True)
    console.print("next:\n"
                  "  shepherd up                 a local cluster that keeps running; its web UI at "
                  "http://127.0.0.1:8088/\n"
                  f"  shepherd submit {_shown(examples_dir() / 'wordcount.yaml')} --wait   from another shell\n"
                  "  shepherd apps, shepherd app explain ID, shepherd logs ID\n"
                  "  docs/getting-started.md     install, first job, the UI, logs, explain, the simulator",
                  highlight=False, soft_wrap=True)
    if checked is not None and not checked[0]:
        raise typer.Exit(1)
    raise typer.Exit(code)


# ---------------------------------------------------------------------------- jobs


def _submit_and_wait(rm: str | None, job_path: Path, data_dir: Path, *, queue: str | None, env: dict[str, str],
                     wait: bool, reservation: str = "", deadline: float = 0.0, max_price: float = 0.0,
                     quote: str = "", plan_token: str = "") -> tuple[int, str]:
    """Submit a job file; with ``wait``, wait for its end. The exit code and the application's id."""
    from am.jobspec import load_job
    from rm.sdk import Client
    from rm.sdk.jobs import task_env

    job = load_job(job_path)
    job_dir = job_path.resolve().parent
    with Client(rm) as client:
        try:
            app_id = client.submit(job, job_dir=job_dir, data_dir=data_dir, queue=queue, env=env,
                                   reservation=reservation, deadline=deadline, max_price=max_price, quote=quote,
                                   plan_token=plan_token)
        except ClientError as exc:
            raise fail(exc) from None
        output = task_env(job, app_id, job_dir=job_dir, data_dir=data_dir, env=env)["OUTPUT_DIR"]
        console.print(f"submitted {app_id} ({job.name or job.id}); output in {output}")
        if deadline or max_price or quote:
            console.print(f"deadline bought: see `shepherd deadlines` or `shepherd app status {app_id}`")
        if not wait:
            return 0, app_id
        return wait_for(client, app_id), app_id


@app.command("submit", rich_help_panel=JOBS)
def submit(
    job: Path = typer.Argument(..., exists=True, dir_okay=False, help="job file (YAML or JSON)"),
    wait: bool = typer.Option(False, "--wait", help="wait for the end; exit 0 only if it succeeded"),
    queue: str | None = typer.Option(None, "--queue", "-q"),
    env: list[str] = typer.Option([], "--env", "-e", help="KEY=VALUE given to every task"),
    data_dir: Path = typer.Option(Path(".shepherd"), help="the default OUTPUT_DIR goes under it"),
    reservation: str = typer.Option("", "--reservation", "-r", help="run inside this reservation "
                                    "(reservation_<cluster>_<n>, e.g. from `shepherd slo accept`)"),
    deadline: str | None = typer.Option(None, "--deadline", help="buy this deadline (+90s, +30m, +2h, "
                                        "HH:MM[:SS] today, or seconds since the epoch); refused with the "
                                        "earliest feasible finish if it is too early"),
    max_price: float | None = typer.Option(None, "--max-price", help="buy the earliest deadline priced at "
                                           "most this (tokens; see `shepherd job quote`)"),
    quote: str = typer.Option("", "--quote", help="buy this quote (at its earliest finish, or --deadline)"),
    plan_token: str = typer.Option("", "--plan-token", help="the token `shepherd job plan` printed: submit only "
                                   "while that plan holds (the same job, apps, nodes and queues), else exit 2"),
    rm: str | None = RM_OPT,
) -> None:
    """Submit a DAG job (YAML or JSON) to run under shepherd's DAG ApplicationMaster.

    The job file's inputs and outputs
    are declared to the RM (run history for `shepherd slo`). With --deadline, --max-price or --quote the job
    buys a deadline (the mrm scheduler): admitted only if it is feasible, then kept by EDF."""
    extra: dict[str, str] = {}
    for item in env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--env wants KEY=VALUE, got {item!r}")
        extra[key] = value
    from am.jobspec import JobSpecError

    try:
        code, _ = _submit_and_wait(rm, job, data_dir, queue=queue, env=extra, wait=wait,
                                reservation=reservation.strip(),
                                deadline=parse_deadline(deadline, time.time()) if deadline else 0.0,
                                max_price=max_price or 0.0, quote=quote.strip(), plan_token=plan_token.strip())
    except JobSpecError as exc:
        error(f"invalid job file: {exc}")
        raise typer.Exit(2) from None
    raise typer.Exit(code)


app.command("down", rich_help_panel=RUN)(down)
app.command("deadlines", rich_help_panel=JOBS)(deadlines)
app.command("sampling", rich_help_panel=INSPECT)(sampling)


@app.command("apps", rich_help_panel=INSPECT)
@read_command
def apps(
    state: list[str] = typer.Option([], "--state", "-s", help="filter by state (repeatable) \\[default: all]"),
    queue: str = typer.Option("", "--queue", "-q"),
    out: Output = OUTPUT_OPTS,
    rm: str | None = RM_OPT,
) -> None:
    """List applications, finished ones too.

    `shepherd app list` shows the unfinished ones, as YARN. -o json|yaml prints the REST API's app objects."""
    states = [s.strip().upper() for item in state for s in item.split(",") if s.strip()]
    with _client(rm) as client:
        def fetch() -> list[dict[str, Any]]:
            try:
                return [app_rest(r) for r in client.apps(states=states, queue=queue, rest_shape=True)]
            except ClientError as exc:
                raise fail(exc) from None

        out.show(fetch, apps_table, apps_wide)


@app.command("nodes", rich_help_panel=INSPECT)
@read_command
def nodes(
    state: list[str] = typer.Option([], "--state", "-s", help="filter by state (repeatable) \\[default: all]"),
    out: Output = OUTPUT_OPTS,
    rm: str | None = RM_OPT,
) -> None:
    """List NodeManagers in every state.

    `shepherd node list` shows the RUNNING ones, as YARN. -o json|yaml prints the REST API's node objects."""
    states = [s.strip().upper() for item in state for s in item.split(",") if s.strip()]
    with _client(rm) as client:
        def fetch() -> list[dict[str, Any]]:
            try:
                return [node_json(n) for n in client.nodes(states=states)]
            except ClientError as exc:
                raise fail(exc) from None

        out.show(fetch, nodes_table, nodes_wide)


@app.command("kill", rich_help_panel=JOBS)
def kill(app_id: str, rm: str | None = RM_OPT) -> None:
    """Kill an application (`shepherd app kill` takes several)."""
    with _client(rm) as client:
        try:
            client.kill(app_id, "Application killed by user.")
        except ClientError as exc:
            raise fail(exc) from None
    console.print(f"killed {app_id}")


app.command("logs", rich_help_panel=JOBS)(logs)


app.add_typer(app_group, name="app", rich_help_panel=INSPECT)
app.add_typer(node_group, name="node", rich_help_panel=INSPECT)
app.add_typer(queue_group, name="queue", rich_help_panel=INSPECT)
app.add_typer(job_group, name="job", rich_help_panel=SETUP)
app.add_typer(slo_group, name="slo", rich_help_panel=SETUP)
app.add_typer(reservation_group, name="reservation", rich_help_panel=SETUP)
app.add_typer(config_group, name="config", rich_help_panel=SETUP)
app.add_typer(sim_app, name="sim", rich_help_panel=SETUP)
app.add_typer(admin_group, name="admin", rich_help_panel=RUN)
app.add_typer(db_group, name="db", rich_help_panel=RUN)


def main() -> None:
    from common.credentials import CredentialsError
    from common.user_config import UserConfigError
    from rm.commands.arenas import restart_rm_with_arenas

    restart_rm_with_arenas()  # a bare `shepherd rm` without MALLOC_ARENA_MAX starts again, once, with it
    interruptible()  # Ctrl-C stops a command that waits on the RM, even if it lands during a call
    try:
        app()
    except (UserConfigError, CredentialsError) as exc:  # found while a command ran: one line, not a traceback
        raise SystemExit(config_failed(exc).exit_code) from None


if __name__ == "__main__":
    main()
