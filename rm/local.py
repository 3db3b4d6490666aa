"""A local cluster of real daemon processes on loopback: one ResourceManager and N NodeManagers.

Used by ``shepherd up``, ``shepherd demo`` and the integration tests. Each daemon is its own
process; their output goes to ``<data_dir>/logs/*.log``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Self

from rm.commands.arenas import rm_environment

if TYPE_CHECKING:
    from nodemanager.launch import Account

RM_READY = re.compile(r"resourcemanager ready grpc=(\S+) rest=(\S+)(?: ipc_client=(\S+) ipc_scheduler=(\S+))?"
                      r"(?: ipc_admin=(\S+))?")
NM_READY = re.compile(r"nodemanager ready node_id=(\S+) http=(\S+)")

LOCAL_NODE_MEMORY_MB = 4096  # the most memory a NodeManager of a local cluster offers by default


def host_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def local_share(nodes: int) -> tuple[int, int]:
    """What each of ``nodes`` NodeManagers on this one host offers by default: (memory MB, vcores). The host's
    memory less a NodeManager's reserve and its cores are split evenly, so the nodes together never claim more
    than the machine (at most 4096 MB a node, and at least 512 MB and one vcore)."""
    from nodemanager.config import NodeManagerConfig

    memory = NodeManagerConfig().resolved_memory_mb() // max(1, nodes)
    return max(512, min(LOCAL_NODE_MEMORY_MB, memory)), max(1, host_cores() // max(1, nodes))


@dataclass
class Daemon:
    name: str
    args: list[str]
    log_path: Path
    ready_pattern: re.Pattern[str]
    env: dict[str, str] | None = None
    proc: subprocess.Popen[str] | None = None
    match: re.Match[str] | None = None
    _ready: threading.Event = field(default_factory=threading.Event)

    def start(self, timeout: float = 60.0) -> re.Match[str]:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._ready.clear()
        self.match = None
        self.proc = subprocess.Popen(
            self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
            env=self.env, start_new_session=True,
        )
        threading.Thread(target=self._pump, args=(self.proc,), daemon=True, name=f"log-{self.name}").start()
        if not self._ready.wait(timeout) or self.match is None:
            code = self.proc.poll()
            self.stop()
            tail = self.log_path.read_text()[-3000:] if self.log_path.exists() else ""
            raise RuntimeError(f"{self.name} did not become ready (exit {code}); log tail:\n{tail}")
        return self.match

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        with self.log_path.open("a") as log:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                if self.match is None:
                    m = self.ready_pattern.search(line)
                    if m:
                        self.match = m
                        self._ready.set()
        self._ready.set()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None


class LocalCluster:
    def __init__(
        self,
        data_dir: Path,
        nodes: int = 2,
        *,
        grpc_port: int = 7030,
        rest_port: int = 8088,
        node_memory_mb: int | None = 4096,  # None: each NodeManager detects its host's memory less its reserve
        node_vcores: int | None = 4,  # None: each NodeManager detects its host's cores
        nm_expiry_s: float = 600.0,
        am_expiry_s: float = 600.0,
        store_url: str | None = None,
        rm_args: Sequence[str] = (),
        nm_args: Sequence[str] = (),
        ipc_client_port: int | None = None,  # None: the RM's default (yarn-site.xml or 8032); 0 = any free port
        ipc_scheduler_port: int | None = None,  # None: the RM's default (yarn-site.xml or 8030)
        # None: the RM's default (yarn-site.xml or 8033; with ipc_client_port given: 0 if that is 0, else off)
        ipc_admin_port: int | None = None,
        create_store: bool = True,  # the cluster's own data directory: create its store on the first start
        insecure: bool = False,  # no secrets at all (the RM logs it loudly)
        container_user: str | None = None,  # as root: the account containers run as (None: nobody)
        allow_root_containers: bool = False,  # as root, with no container_user: containers run as root (logged)
        limit_users: bool = True,  # False: as root, each container runs as its app's user's account
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.insecure = insecure
        self.container_user = container_user
        self.allow_root_containers = allow_root_containers
        self.limit_users = limit_users
        self.unreachable: list[str] = []  # on start: what the container account cannot run (see below)
        # the secrets: created (0600) by the RM on its first start, read by the NodeManagers and local clients
        self.credentials_path = self.data_dir / "credentials.json"
        # an RM delegation token for stock Hadoop clients (HADOOP_TOKEN_FILE_LOCATION), written by the RM
        self.hadoop_token_path = self.data_dir / "hadoop.token"
        self.num_nodes = nodes
        self.grpc_port = grpc_port
        self.rest_port = rest_port
        self.node_memory_mb = node_memory_mb
        self.node_vcores = node_vcores
        self.nm_expiry_s = nm_expiry_s
        self.am_expiry_s = am_expiry_s
        self.store_url = store_url
        self.rm_args = list(rm_args)
        self.ipc_client_port = ipc_client_port
        self.ipc_scheduler_port = ipc_scheduler_port
        self.ipc_admin_port = ipc_admin_port
        self.create_store = create_store
        self.ipc_client_address = ""  # host:port of the Hadoop IPC listeners, once started ("" if off)
        self.ipc_scheduler_address = ""
        self.ipc_admin_address = ""
        self.nm_args = list(nm_args)
        self.rm: Daemon | None = None
        self.nms: list[Daemon] = []
        self.rm_address = ""
        self.rest_url = ""
        self.node_ids: list[str] = []
        self.node_http: list[str] = []

    def _rm_daemon(self) -> Daemon:
        args = [sys.executable, "-m", "rm.cli", "rm", "--grpc-port", str(self.grpc_port),
                "--rest-port", str(self.rest_port), "--data-dir", str(self.data_dir / "rm"),
                "--nm-expiry", str(self.nm_expiry_s), "--am-expiry", str(self.am_expiry_s),
                "--credentials", str(self.credentials_path), *self.rm_args]
        if self.insecure:
            args.append("--insecure")
        if self.store_url:
            args += ["--store-url", self.store_url]
        if self.create_store:
            args.append("--create-store")
        if self.ipc_client_port is not None:
            args += ["--ipc-client-port", str(self.ipc_client_port)]
        if self.ipc_scheduler_port is not None:
            args += ["--ipc-scheduler-port", str(self.ipc_scheduler_port)]
        if self.ipc_admin_port is not None:
            args += ["--ipc-admin-port", str(self.ipc_admin_port)]
        # glibc reads MALLOC_ARENA_MAX at start: the RM gets it in its environment (a value set already is kept)
        return Daemon("rm", args, self.data_dir / "logs" / "rm.log", RM_READY, env=rm_environment())

    def start_rm(self) -> None:
        self.rm = self._rm_daemon()
        m = self.rm.start()
        self.rm_address, self.rest_url = m.group(1), m.group(2)
        # later restarts reuse the same ports so NodeManagers and AMs find the RM again
        self.grpc_port = int(self.rm_address.rsplit(":", 1)[1])
        self.rest_port = int(self.rest_url.rsplit(":", 1)[1])
        ipc_client, ipc_scheduler = m.group(3) or "-", m.group(4) or "-"
        self.ipc_client_address = "" if ipc_client == "-" else ipc_client
        self.ipc_scheduler_address = "" if ipc_scheduler == "-" else ipc_scheduler
        ipc_admin = m.group(5) or "-"
        self.ipc_admin_address = "" if ipc_admin == "-" else ipc_admin
        for name, address in (("ipc_client_port", self.ipc_client_address),
                              ("ipc_scheduler_port", self.ipc_scheduler_address)):
            if address and getattr(self, name) == 0:  # keep the ports across RM restarts
                setattr(self, name, int(address.rsplit(":", 1)[1]))
        # the admin port too (once the client port is pinned, None would mean no admin listener)
        if self.ipc_admin_address and self.ipc_admin_port in (0, None):
            self.ipc_admin_port = int(self.ipc_admin_address.rsplit(":", 1)[1])

    def start_nm(self, index: int) -> Daemon:
        args = [sys.executable, "-m", "nodemanager", "--rm", self.rm_address, "--rm-web", self.rest_url,
                "--port", "0", "--http-port", "0", "--work-dir", str(self.data_dir / f"nm{index}"), *self.nm_args]
        if self.node_memory_mb is not None:
            args += ["--memory-mb", str(self.node_memory_mb)]
        if self.node_vcores is not None:
            args += ["--vcores", str(self.node_vcores)]
        if not self.insecure:
            args += ["--credentials", str(self.credentials_path)]
        if self.container_user:
            args += ["--container-user", self.container_user]
        elif self.allow_root_containers and os.geteuid() == 0:
            args.append("--allow-root-containers")  # asked for; each NodeManager logs it loudly
        if not self.limit_users:
            args.append("--no-limit-users")
        d = Daemon(f"nm{index}", args, self.data_dir / "logs" / f"nm{index}.log", NM_READY)
        m = d.start()
        node_id, http = m.group(1), m.group(2)
        if index < len(self.nms):
            self.nms[index] = d
            self.node_ids[index] = node_id
            self.node_http[index] = http
        else:
            self.nms.append(d)
            self.node_ids.append(node_id)
            self.node_http.append(http)
        return d

    @property
    def client_secret(self) -> str:
        """The secret clients present to change anything ("" on an insecure cluster)."""
        from common.credentials import load

        return "" if self.insecure else load(self.credentials_path).client_secret

    @property
    def node_secret(self) -> str:
        from common.credentials import load

        return "" if self.insecure else load(self.credentials_path).node_secret

    def container_account(self) -> Account | None:
        """The account this cluster's containers run as; None: as the invoking user, who is not root (or, being
        root, asked for root containers)."""
        from nodemanager.launch import container_account

        return container_account(self.container_user, self.allow_root_containers and not self.container_user)

    def prepare_for_containers(self) -> list[str]:
        """As root, containers run as an unprivileged account (``nobody`` unless ``container_user`` names
        another). It must reach the data dir, where the NodeManagers' work dirs are (``ValueError`` if not), and
        it owns ``<data dir>/output``, where jobs submitted with this data dir write by default. Returns a line
        naming the first part of what shepherd's own jobs run (this Python, its library, shepherd's code) that it
        cannot reach, if any: their AMs would fail, while other containers run."""
        from nodemanager.launch import LOCAL_USER, closed_to, give

        account = self.container_account()
        if account is None:
            return []
        self.data_dir.mkdir(parents=True, exist_ok=True)
        closed = closed_to(account, self.data_dir)
        if closed is not None:
            raise ValueError(f"containers run as {account.name}, who cannot enter {closed}: choose a data dir "
                             f"{account.name} can reach, another container user, or (being root) allow root "
                             "containers")
        output = self.data_dir / "output"
        output.mkdir(exist_ok=True)
        if output.stat().st_uid == os.geteuid():
            give(account, output)
        import am

        needed = {"this Python": Path(sys.executable).resolve(), "the Python library": Path(sys.base_prefix),
                  "the installed packages": Path(sys.prefix), "shepherd's code": Path(am.__file__).resolve().parent}
        return [f"containers run as {account.name} ({LOCAL_USER}), who cannot run {what} ({path}: {closed}"
                f" is closed to it), so shepherd's DAG jobs fail; install shepherd where {account.name} can reach"
                f" it, or name another container user" for what, path in needed.items()
                if (closed := closed_to(account, path)) is not None][:1]

    def start(self) -> None:
        self.unreachable = self.prepare_for_containers()
        try:
            self.start_rm()
            for i in range(self.num_nodes):
                self.start_nm(i)
        except BaseException:
            self.stop()
            raise

    def restart_rm(self, *, kill: bool = False) -> None:
        """Stop the RM (SIGTERM; with ``kill``, SIGKILL as a crash would) and start it again on its store."""
        if self.rm is not None:
            if kill:
                self.rm.signal(signal.SIGKILL)
            self.rm.stop()
        self.start_rm()

    def alive(self) -> bool:
        return self.rm is not None and self.rm.alive()

    def stop(self) -> None:
        for nm in self.nms:
            nm.stop()
        if self.rm is not None:
            self.rm.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
