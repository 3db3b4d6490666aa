"""The RM's Hadoop IPC facade: ApplicationClientProtocol, ApplicationMasterProtocol and
ResourceManagerAdministrationProtocol listeners over the RM's one Ledger, and the launcher that starts
Hadoop-submitted AM containers on NodeManagers over ContainerManagementProtocol (as YARN's RM does)."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from common.credentials import write_private
from common.hadoop import credentials, tokens
from common.hadoop.client import IpcClient, RemoteError
from common.hadoop.server import IpcServer, Limits, Protocol, TokenAuth
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.core.entities import Container
from rm.core.state_types import LaunchAM
from rm.service.authz import Authorizer
from rm.service.ipc import client_protocol, reports
from rm.service.ipc.admin_protocol import Administration
from rm.service.ipc.am_protocol import ApplicationMaster
from rm.service.ipc.client_protocol import ApplicationClient
from rm.service.ipc.config import IpcSettings, settings
from rm.service.limits import MAX_MESSAGE
from rm.service.operations import Operations

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

log = logging.getLogger("shepherd.ipc")

CONTAINER_MANAGEMENT = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"
LAUNCH_TIMEOUT_S = 30.0
Passwords = Callable[[bytes], Sequence[bytes]]


@dataclass(frozen=True, slots=True)
class _Listener:
    """One listener asked for: what it is called, what it serves, how its tokens are checked, where."""

    name: str  # client, scheduler or admin
    protocol: Protocol
    passwords: Passwords | None  # None: SIMPLE only
    port: int


def _any_of(checks: list[Passwords]) -> Passwords:
    """The passwords any of ``checks`` gives an identifier (a listener serving several protocols)."""
    def passwords(identifier: bytes) -> list[bytes]:
        return [pw for check in checks for pw in check(identifier)]
    return passwords


class IpcFacade:
    def __init__(self, rm: ResourceManager, cfg: IpcSettings) -> None:
        self.rm = rm
        self.ops = Operations(rm)
        self.authz = Authorizer(rm)
        self.settings = cfg
        self.client = ApplicationClient(self)
        self.master = ApplicationMaster(self)
        self.admin = Administration(self)
        self.servers: list[IpcServer] = []
        self.client_port = -1
        self.scheduler_port = -1
        self.admin_port = -1
        self._sequence = 0

    # ------------------------------------------------------------ addresses

    @property
    def host(self) -> str:
        return str(self.rm.advertised_host)

    @property
    def client_address(self) -> str:
        return f"{self.host}:{self.client_port}" if self.client_port >= 0 else ""

    @property
    def scheduler_address(self) -> str:
        return f"{self.host}:{self.scheduler_port}" if self.scheduler_port >= 0 else ""

    @property
    def admin_address(self) -> str:
        return f"{self.host}:{self.admin_port}" if self.admin_port >= 0 else ""

    @property
    def web_url(self) -> str:
        return str(getattr(self.rm, "rest_url", f"http://{self.host}:{self.rm.rest_port}"))

    @property
    def amrm_service(self) -> str:
        """The service of the AMRM tokens this RM hands out."""
        address = self.scheduler_address or self.client_address
        return self.token_service(address) if address else ""

    def token_service(self, address: str) -> str:
        """The service a token for this listener names: its address as Hadoop resolves it, or, for an HA pair,
        every RM's address of that kind joined by commas (Hadoop's selectors match a token whose service
        contains the address they are connecting to)."""
        pair = (self.settings.ha_scheduler_addresses if address and address == self.scheduler_address
                else self.settings.ha_client_addresses)
        own = tokens.service_of(address)
        services = [tokens.service_of(a) for a in pair]
        if not services:
            return own
        if own not in services:
            services.append(own)
        return ",".join(services)

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        cfg = self.settings
        # clients and admins prove themselves with an RM delegation token (none on an insecure RM: SIMPLE only)
        client_passwords = self.client.passwords_for if self.rm.cfg.client_secret else None
        wanted = [
            _Listener("client", self.client.protocol(), client_passwords, cfg.client_port),
            _Listener("scheduler", self.master.protocol(),
                      lambda ident: ApplicationMaster.passwords_for(self.rm.state, ident), cfg.scheduler_port),
            _Listener("admin", self.admin.protocol(), client_passwords, cfg.admin_port),
        ]
        # listeners asked for on the same fixed port are one listener serving each protocol (calls name theirs)
        groups: list[list[_Listener]] = []
        for one in (w for w in wanted if w.port >= 0):
            same = next((g for g in groups if one.port > 0 and g[0].port == one.port), None)
            if same is None:
                groups.append([one])
            else:
                same.append(one)
        bound: dict[str, int] = {}
        try:
            for group in groups:
                checks = [w.passwords for w in group if w.passwords is not None]
                auth = TokenAuth(_any_of(checks)) if checks else None
                port = await self._listen("ipc-" + "+".join(w.name for w in group), [w.protocol for w in group],
                                          auth, group[0].port)
                bound.update((w.name, port) for w in group)
        except OSError:
            await self.stop()
            raise
        self.client_port = bound.get("client", -1)
        self.scheduler_port = bound.get("scheduler", -1)
        self.admin_port = bound.get("admin", -1)

    async def _listen(self, name: str, protocols: list[Protocol], auth: TokenAuth | None, port: int) -> int:
        server = IpcServer(name, protocols, token_auth=auth, limits=Limits(max_packet=MAX_MESSAGE))
        try:
            bound = await server.start(self.settings.host, port)
        except OSError as exc:
            raise OSError(f"cannot bind Hadoop IPC ({name}) to {self.settings.host}:{port}: {exc}") from exc
        self.servers.append(server)
        log.info("Hadoop IPC %s listening on %s:%d", name, self.settings.host, bound)
        return bound

    async def stop(self) -> None:
        for server in self.servers:
            await server.stop()
        self.servers.clear()

    # ------------------------------------------------------------ tokens

    def delegation_token(self, owner: str, renewer: str = "") -> ipc.Token:
        """An RM delegation token for ``owner``, for the client listener (the caller checked who may have it)."""
        secret = self.rm.cfg.client_secret
        if not secret or not self.client_address:
            raise ValueError("RM delegation tokens need a client secret and a Hadoop IPC client listener")
        self._sequence += 1
        return tokens.issue_rm_delegation(secret, owner, self.token_service(self.client_address),
                                          now_ms=int(self.rm.now() * 1000), sequence=self._sequence,
                                          renewer=renewer)

    def token_file(self, owner: str) -> bytes:
        """A Hadoop token file's bytes (HADOOP_TOKEN_FILE_LOCATION) holding an RM delegation token for ``owner``."""
        creds = credentials.Credentials()
        token = self.delegation_token(owner)
        creds.add(token.service, token)
        return credentials.encode(creds)

    def write_token_file(self, path: Path, owner: str) -> None:
        """:meth:`token_file`, written readable only by this user."""
        write_private(path, self.token_file(owner))

    def container_token(self, c: Container, submitter: str) -> ipc.Token:
        st = self.rm.state
        node = st.nodes[c.node_id]
        grant = tokens.ContainerGrant(
            container_id=c.container_id, app_id=c.app_id, node_id=reports.hadoop_node_id(node),
            submitter=submitter, resource=c.resource,
            expiry_ms=int((c.allocate_time + st.config.container_token_lifetime_s) * 1000),
            priority=c.priority, is_am=c.is_am,
            allocation_request_id=-1 if c.is_am else c.allocation_request_id,
        )
        return tokens.container_token(st.container_key, grant, rm_identifier=st.meta.cluster_timestamp,
                                      created_ms=int(c.allocate_time * 1000), key_id=st.container_key_id)

    # ------------------------------------------------------------ AM launch

    @staticmethod
    def handles(launch: LaunchAM) -> bool:
        return client_protocol.HADOOP_CLC in launch.launch

    async def launch_am(self, launch: LaunchAM) -> None:
        """Start a Hadoop-submitted AM container on its NodeManager's ContainerManagement listener."""
        try:
            await self._start_am(launch)
        except (RemoteError, OSError, TimeoutError, ValueError, credentials.CredentialsError) as exc:
            log.warning("launching AM container %s failed: %s", launch.container_id, exc)
            await self.ops.am_launch_failed(launch.container_id, str(exc))
        else:
            log.info("launched AM container %s for %s on %s over Hadoop IPC", launch.container_id,
                     launch.app_id, launch.node_id)

    async def _start_am(self, launch: LaunchAM) -> None:
        st = self.rm.state
        node, app = st.nodes.get(launch.node_id), st.apps.get(launch.app_id)
        container = st.containers.get(launch.container_id)
        if node is None or app is None or container is None:
            return
        port = getattr(node, "ipc_port", 0)
        if not port:
            raise ValueError(f"NodeManager {node.node_id} has no Hadoop IPC ContainerManagement listener")
        blob = base64.b64decode(str(launch.launch[client_protocol.HADOOP_CLC]))
        clc = yr.ContainerLaunchContext.FromString(blob)
        env = {e.key: e.value for e in clc.environment}
        env.update({
            "APPLICATION_WEB_PROXY_BASE": f"/proxy/{app.app_id}",
            "APP_SUBMIT_TIME_ENV": str(int(app.submit_time * 1000)),
            "MAX_APP_ATTEMPTS": str(app.max_attempts),
        })
        del clc.environment[:]
        clc.environment.extend(yr.StringStringMap(key=k, value=v) for k, v in env.items())
        creds = credentials.decode(clc.tokens)
        creds.add(self.scheduler_address or self.client_address,
                  reports.amrm_token_for(st, launch.attempt_id, self.amrm_service))
        clc.tokens = credentials.encode(creds)
        hadoop_node = reports.hadoop_node_id(node)
        nm_token = tokens.nm_token(st.container_key, launch.attempt_id, hadoop_node, app.user,
                                   key_id=st.container_key_id)
        request = yp.StartContainersRequest(start_container_request=[yp.StartContainerRequest(
            container_launch_context=clc, container_token=self.container_token(container, app.user))])
        async with IpcClient(node.host, port, CONTAINER_MANAGEMENT, user=launch.attempt_id, token=nm_token,
                             timeout=LAUNCH_TIMEOUT_S) as c:
            resp = await c.call("startContainers", request, yp.StartContainersResponse)
        if resp.failed_requests:
            e = resp.failed_requests[0].exception
            raise RemoteError(e.class_name, e.message)


async def start_ipc(rm: ResourceManager) -> IpcFacade:
    facade = IpcFacade(rm, settings(rm.cfg))
    await facade.start()
    return facade
