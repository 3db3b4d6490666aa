"""The ``shepherd`` command: run daemons, a local cluster, and talk to a ResourceManager."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

import typer
from google.protobuf.json_format import MessageToDict
from rich.console import Console
from rich.table import Column, Table

from common.resources import Resources
from proto import shepherd_pb2 as pb
from rm.client import ClientError, RMClient
from rm.commands.apps import app_group
from rm.commands.cluster import node_group, queue_group
from rm.commands.config import config_group
from rm.commands.job import deadlines, job_group, parse_deadline
from rm.commands.slo import slo_group
from sim.cli import sim_app

app = typer.Typer(help="shepherd: a YARN-compatible cluster resource manager.", no_args_is_help=True,
                  add_completion=False)
console = Console(width=None if sys.stdout.isatty() else 200)  # pipes get whole lines to grep
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

RM_OPT = typer.Option(None, "--rm", envvar="SHEPHERD_RM", help="ResourceManager gRPC address host:port")
OUT_OPT = typer.Option("table", "-o", "--output", help="table or json")
FINAL = {"FINISHED", "FAILED", "KILLED"}


def _client(rm: str | None) -> RMClient:
    return RMClient(rm)


def _fail(exc: ClientError) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {exc.message}")
    return typer.Exit(2 if exc.code in ("INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION") else 1)


def _res(r: pb.Resource) -> str:
    v = dict(r.values)
    parts = [f"{v.get('memory-mb', 0)} MB", f"{v.get('vcores', 0)} vcores"]
    parts += [f"{k}={n}" for k, n in sorted(v.items()) if k not in ("memory-mb", "vcores")]
    return ", ".join(parts)


def _dump(msgs: list[Any] | Any) -> None:
    if isinstance(msgs, list):
        data: Any = [MessageToDict(m, preserving_proto_field_name=True) for m in msgs]
    else:
        data = MessageToDict(msgs, preserving_proto_field_name=True)
    print(json.dumps(data, indent=2, sort_keys=True))


# ---------------------------------------------------------------------------- daemons


@app.command("rm")
def run_rm(
    host: str | None = typer.Option(None, help="address to listen on [default: yarn.resourcemanager.hostname, "
                                    "127.0.0.1]"),
    grpc_port: int | None = typer.Option(None, help="gRPC port (0 = any free port) [default: 7030]"),
    rest_port: int | None = typer.Option(None, help="REST/web port (0 = any free port) [default: 8088]"),
    data_dir: Path | None = typer.Option(None, help="where the SQLite store lives [default: .shepherd]"),
    store_url: str | None = typer.Option(None, help="SQLAlchemy URL of the state store (default: "
                                         "$SHEPHERD_STORE_URL, else SQLite in data-dir)"),
    nm_expiry: float | None = typer.Option(None, help="seconds without a heartbeat before a node is LOST "
                                           "[default: 600]"),
    am_expiry: float | None = typer.Option(None, help="seconds without an AM heartbeat before an attempt "
                                           "fails [default: 600]"),
    max_app_attempts: int | None = typer.Option(None, help="yarn.resourcemanager.am.max-attempts [default: 2]"),
    queues: Path | None = typer.Option(None, help="YAML/JSON file with the queue tree (children of root)"),
    node_secret: str | None = typer.Option(None, help="default: $SHEPHERD_NODE_SECRET"),
    client_secret: str | None = typer.Option(None, help="default: $SHEPHERD_CLIENT_SECRET"),
    credentials: Path | None = typer.Option(None, "--credentials", help="secrets not given come from this file, "
                                            "created (0600) with random ones if missing [default: "
                                            "<data-dir>/credentials.json]"),
    insecure: bool | None = typer.Option(None, "--insecure", help="no secrets: anyone on this machine may "
                                         "submit, kill and register nodes (loopback only; logged)"),
    config: Path | None = typer.Option(None, "--config", "-c", help="shepherd YAML config file"),
    hadoop_conf_dir: Path | None = typer.Option(None, help="directory of yarn-site.xml and "
                                                "capacity-scheduler.xml [default: $YARN_CONF_DIR, $HADOOP_CONF_DIR]"),
    ipc_client_port: int | None = typer.Option(None, help="Hadoop IPC client port (default: yarn-site.xml or "
                                               "8032; 0 = any free port; -1 = off)"),
    ipc_scheduler_port: int | None = typer.Option(None, help="Hadoop IPC scheduler port (default: yarn-site.xml "
                                                  "or 8030; 0 = any free port; -1 = off)"),
    yarn_site: Path | None = typer.Option(None, help="yarn-site.xml with the Hadoop IPC addresses"),
    create_store: bool = typer.Option(False, "--create-store", help="create a new, empty state store if there is "
                                      "none at the store URL (without it, a missing store is an error)"),
    log_level: str = typer.Option("INFO"),
    log_format: str | None = typer.Option(None, "--log-format", help="json, text or auto (text on a terminal, "
                                          "else JSON lines) [default: $SHEPHERD_LOG_FORMAT, auto]"),
    check_config: bool = typer.Option(False, "--check-config", help="check the configuration as this command "
                                      "would start with it and exit: 0 if valid, else 2 naming each file and key"),
) -> None:
    """Run a ResourceManager. Settings: defaults < Hadoop site files < --config < environment < flags
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
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    flags = RMFlags(host=host, grpc_port=grpc_port, rest_port=rest_port, data_dir=data_dir, store_url=store_url,
                    nm_expiry_s=nm_expiry, am_expiry_s=am_expiry, max_app_attempts=max_app_attempts,
                    queues_file=queues, node_secret=node_secret, client_secret=client_secret,
                    credentials_file=credentials, insecure=insecure)
    try:
        settings = load_rm_settings(env=dict(os.environ), flags=flags, config_file=config,
                                    conf_dir=hadoop_conf_dir)
    except SettingsError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    for warning in settings.warnings:
        logging.getLogger("shepherd.rm").warning("%s", warning)
    problems = check_rm_settings(settings)  # fail fast, naming the file and key, before opening the store
    for problem in problems:
        err_console.print(f"[red]invalid:[/red] {problem}", highlight=False, soft_wrap=True)
    if problems:
        raise typer.Exit(2)
    if check_config:
        files = ", ".join(settings.layers.files) or "no files: defaults, environment and flags"
        console.print(f"configuration is valid ({files})", highlight=False, soft_wrap=True)
        raise typer.Exit(0)
    notifier = Notifier.from_environment()  # NOTIFY_SOCKET/WATCHDOG_USEC under systemd; AMs do not inherit it
    cfg = dataclasses.replace(settings.config, ipc_client_port=ipc_client_port,
                              ipc_scheduler_port=ipc_scheduler_port, yarn_site=yarn_site, create_store=create_store)

    async def main() -> bool:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        rm = ResourceManager(cfg)
        if not await rm.start_unless(stop):  # a standby (HA) stopped before it became active
            await rm.stop()
            return True
        ipc = f" ipc_client={rm.ipc.client_address or '-'} ipc_scheduler={rm.ipc.scheduler_address or '-'}"
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
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    if not clean:  # another ResourceManager took the state store over (logged)
        raise typer.Exit(3)


@app.command("nm", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run_nm(ctx: typer.Context) -> None:
    """Run a NodeManager (flags: see `shepherd nm --help-nm`)."""
    from nodemanager.daemon import main as nm_main

    args = ["--help" if a == "--help-nm" else a for a in ctx.args]
    raise typer.Exit(nm_main(args) or 0)


@app.command("up")
def up(
    nodes: int = typer.Option(2, "--nodes", "-n", min=1, max=32),
    data_dir: Path = typer.Option(Path(".shepherd"), help="data directory of the local cluster"),
    grpc_port: int = typer.Option(7030),
    rest_port: int = typer.Option(8088),
    node_memory_mb: int = typer.Option(4096, help="memory each NodeManager offers"),
    node_vcores: int = typer.Option(4, help="vcores each NodeManager offers"),
    nm_expiry: float = typer.Option(600.0),
    am_expiry: float = typer.Option(600.0),
    container_user: str | None = typer.Option(None, help="when run as root: the account containers run as "
                                              "(it must reach the data dir) [default: root, logged]"),
    insecure: bool = typer.Option(False, "--insecure", help="no secrets: anyone on this machine may submit and "
                                  "register nodes (logged)"),
) -> None:
    """Start a ResourceManager and N NodeManagers on loopback; Ctrl-C stops them all."""
    from rm.local import LocalCluster

    cluster = LocalCluster(data_dir=data_dir, nodes=nodes, grpc_port=grpc_port, rest_port=rest_port,
                           node_memory_mb=node_memory_mb, node_vcores=node_vcores, nm_expiry_s=nm_expiry,
                           am_expiry_s=am_expiry, container_user=container_user, insecure=insecure)
    stop = {"now": False}

    def _stop(signum: int, frame: Any) -> None:
        stop["now"] = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        cluster.start()
        console.print(f"ResourceManager  gRPC {cluster.rm_address}   REST/web {cluster.rest_url}")
        for nm in cluster.node_ids:
            console.print(f"NodeManager      {nm}")
        console.print(f"data             {data_dir.resolve()}")
        console.print(f"credentials      {cluster.credentials_path} (readable only by you; clients on this "
                      "machine find it on their own)")
        console.print("to use it from another shell or tool:")
        for line in _exports(cluster):
            print(f"  {line}", flush=True)
        console.print(f"try: SHEPHERD_RM={cluster.rm_address} shepherd submit examples/wordcount.yaml --wait")
        print(f"cluster ready rm={cluster.rm_address} rest={cluster.rest_url}", flush=True)
        while not stop["now"] and cluster.alive():
            time.sleep(0.2)
    finally:
        cluster.stop()


def _exports(cluster: Any) -> list[str]:
    """Shell lines that point shepherd's CLI and clients at a local cluster."""
    lines = [f"export SHEPHERD_RM={cluster.rm_address}", f"export SHEPHERD_REST={cluster.rest_url}"]
    if not cluster.insecure:
        lines.append(f"export SHEPHERD_CREDENTIALS={cluster.credentials_path}")
        if cluster.hadoop_token_path.exists():
            lines.append(f"export HADOOP_TOKEN_FILE_LOCATION={cluster.hadoop_token_path}")
    return lines


@app.command("demo")
def demo(
    data_dir: Path = typer.Option(Path(".shepherd/demo")),
    job: Path = typer.Option(Path(__file__).resolve().parent.parent / "examples" / "wordcount.yaml"),
) -> None:
    """Start a 2-node local cluster, run an example DAG job on it, check its output, stop."""
    from rm.local import LocalCluster

    cluster = LocalCluster(data_dir=data_dir, nodes=2, grpc_port=0, rest_port=0)
    try:
        cluster.start()
        console.print(f"local cluster up: gRPC {cluster.rm_address}, REST {cluster.rest_url}")
        code = _submit_and_wait(cluster.rm_address, job, data_dir, queue="default", env={}, wait=True)
    finally:
        cluster.stop()
    raise typer.Exit(code)


# ---------------------------------------------------------------------------- jobs


def _submit_and_wait(rm: str | None, job_path: Path, data_dir: Path, *, queue: str | None, env: dict[str, str],
                     wait: bool, reservation: str = "", deadline: float = 0.0, max_price: float = 0.0,
                     quote: str = "") -> int:
    from am.jobspec import load_job

    job = load_job(job_path)
    with _client(rm) as client:
        try:
            app_id = client.new_application()
            job_env = dict(job.env or {})
            job_env.setdefault("SHEPHERD_JOB_DIR", str(job_path.resolve().parent))
            job_env.setdefault("OUTPUT_DIR", str((data_dir / "output" / app_id).resolve()))
            job_env.update(env)
            spec = json.loads(job.to_json())
            spec["env"] = job_env
            if queue:
                spec["queue"] = queue
            ctx = pb.ApplicationSubmissionContext(
                application_id=app_id, name=job.name or job.id, queue=queue or job.queue or "default",
                user=job.user or os.environ.get("USER", "dr.who"), application_type="SHEPHERD-DAG",
                priority=int(job.priority or 0),
                am_resource=pb.Resource(values=Resources.of(memory_mb=256, vcores=1).to_dict()),
                am_container_spec=pb.ContainerLaunchContext(commands=["$SHEPHERD_PYTHON -m am.dag"]),
                max_app_attempts=int(job.max_app_attempts or 0), job_spec_json=json.dumps(spec),
                inputs=list(job.inputs), outputs=list(job.outputs), reservation_id=reservation,
                deadline=deadline, max_price=max_price, quote_id=quote,
            )
            client.submit(ctx)
        except ClientError as exc:
            raise _fail(exc) from None
        console.print(f"submitted {app_id} ({job.name or job.id}); output in {job_env['OUTPUT_DIR']}")
        if deadline or max_price or quote:
            console.print(f"deadline bought: see `shepherd deadlines` or `shepherd app status {app_id}`")
        if not wait:
            return 0
        return _wait(client, app_id)


RIDE_THROUGH = ("UNAVAILABLE", "DEADLINE_EXCEEDED")  # the RM is restarting or failing over: keep waiting


def _report(client: RMClient, app_id: str, progress: Any) -> pb.ApplicationReport:
    """The app's report; while the RM does not answer (a restart, a failover) wait for it with jittered
    backoff, saying so once, instead of failing: the job itself goes on."""
    delay, silent_since = 0.25, 0.0
    while True:
        try:
            rep = client.app(app_id)
        except ClientError as exc:
            if exc.code not in RIDE_THROUGH and exc.exception != "RetriableException":
                raise
            if not silent_since:
                silent_since = time.monotonic()
                progress.console.print(f"[yellow]the ResourceManager at {client.address} is not answering "
                                       f"({exc.code}); waiting for it, the job goes on[/yellow]")
            time.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, 5.0)
            continue
        if silent_since:
            progress.console.print(f"the ResourceManager is back after {time.monotonic() - silent_since:.0f} s")
        return rep


def _wait(client: RMClient, app_id: str) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                      TextColumn("{task.fields[state]}"), TimeElapsedColumn(), console=console,
                      transient=not console.is_terminal) as progress:
            task = progress.add_task(app_id, total=100, state="")
            while True:
                rep = _report(client, app_id, progress)
                progress.update(task, completed=rep.progress * 100, state=rep.state)
                if rep.state in FINAL:
                    break
                time.sleep(0.5)
    except ClientError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        err_console.print(f"stopped waiting; {app_id} keeps running (`shepherd app status {app_id}`, "
                          f"`shepherd kill {app_id}`)")
        return 130
    ok = rep.state == "FINISHED" and rep.final_status == "SUCCEEDED"
    colour = "green" if ok else "red"
    console.print(f"{app_id} [{colour}]{rep.state}/{rep.final_status}[/{colour}]"
                  + (f": {rep.diagnostics}" if rep.diagnostics and not ok else ""))
    return 0 if ok else 1


@app.command("submit")
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
    rm: str | None = RM_OPT,
) -> None:
    """Submit a DAG job to run under the default DAG ApplicationMaster. The job file's inputs and outputs
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
        code = _submit_and_wait(rm, job, data_dir, queue=queue, env=extra, wait=wait,
                                reservation=reservation.strip(),
                                deadline=parse_deadline(deadline, time.time()) if deadline else 0.0,
                                max_price=max_price or 0.0, quote=quote.strip())
    except JobSpecError as exc:
        err_console.print(f"[red]invalid job file:[/red] {exc}")
        raise typer.Exit(2) from None
    raise typer.Exit(code)


app.command("deadlines")(deadlines)


@app.command("apps")
def apps(
    state: list[str] = typer.Option([], "--state", "-s", help="filter by state (repeatable)"),
    queue: str = typer.Option("", "--queue", "-q"),
    output: str = OUT_OPT,
    rm: str | None = RM_OPT,
) -> None:
    """List applications."""
    with _client(rm) as client:
        try:
            reps = client.apps(states=state, queue=queue)
        except ClientError as exc:
            raise _fail(exc) from None
    if output == "json":
        _dump(reps)
        return
    table = Table("NAME", "USER", "QUEUE", "STATE", "FINAL", "PROGRESS", "USED")
    table.columns.insert(0, Column("ID", no_wrap=True))
    for r in reps:
        table.add_row(r.application_id, r.name, r.user, r.queue, r.state, r.final_status,
                      f"{r.progress * 100:.0f}%", _res(r.used))
    console.print(table)


@app.command("nodes")
def nodes(output: str = OUT_OPT, state: list[str] = typer.Option([], "--state", "-s"),
          rm: str | None = RM_OPT) -> None:
    """List NodeManagers."""
    with _client(rm) as client:
        try:
            reps = client.nodes(states=state)
        except ClientError as exc:
            raise _fail(exc) from None
    if output == "json":
        _dump(reps)
        return
    table = Table("STATE", "HTTP", "CONTAINERS", "USED", "CAPABILITY")
    table.columns.insert(0, Column("NODE", no_wrap=True))
    for n in reps:
        table.add_row(f"{n.node_id.host}:{n.node_id.port}", n.state, n.http_address, str(n.num_containers),
                      _res(n.used), _res(n.capability))
    console.print(table)


@app.command("kill")
def kill(app_id: str, rm: str | None = RM_OPT) -> None:
    """Kill an application."""
    with _client(rm) as client:
        try:
            client.kill(app_id, "Application killed by user.")
        except ClientError as exc:
            raise _fail(exc) from None
    console.print(f"killed {app_id}")


@app.command("logs")
def logs(
    app_id: str,
    container: str | None = typer.Option(None, "--container", "-c", help="only this container"),
    stream: str = typer.Option("stdout", "--stream", "--file", help="which log file: stdout or stderr"),
    follow: bool = typer.Option(False, "--follow", "-f", help="keep printing new output until the app ends"),
    rm: str | None = RM_OPT,
) -> None:
    """Print container logs of an application (from the NodeManagers)."""
    import httpx

    seen: dict[str, int] = {}
    with _client(rm) as client:
        while True:
            try:
                conts = client.containers(app_id)
                state = client.app(app_id).state
            except ClientError as exc:
                raise _fail(exc) from None
            for c in conts:
                if container and c.container_id != container:
                    continue
                if not c.node_http_address:
                    continue
                url = f"http://{c.node_http_address}/ws/v1/node/containers/{c.container_id}/logs/{stream}"
                try:
                    text = httpx.get(url, timeout=10).text
                except httpx.HTTPError:
                    continue
                start = seen.get(c.container_id, 0)
                if len(text) > start:
                    if not follow or start == 0:
                        console.rule(f"{c.container_id} on {c.node_id} ({stream})")
                    sys.stdout.write(text[start:])
                    sys.stdout.flush()
                    seen[c.container_id] = len(text)
            if not follow or state in FINAL:
                break
            time.sleep(1.0)


app.add_typer(app_group, name="app")
app.add_typer(node_group, name="node")
app.add_typer(queue_group, name="queue")
app.add_typer(config_group, name="config")
app.add_typer(job_group, name="job")
app.add_typer(slo_group, name="slo")
app.add_typer(sim_app, name="sim")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
