"""The NodeManager's Hadoop-IPC ContainerManagementProtocol listener, for stock NMClients (Spark's
ApplicationMaster) and the RM's launcher of Hadoop-submitted AMs.

Connections authenticate with an NMToken (DIGEST-MD5, password = HMAC under the RM's container
key, which this node got at registration); every start also carries a container token, which holds
the container id, resources and node. Its address ``host:port`` is the NodeId the RM hands out.
Containers go into the same ContainerTable as gRPC-started ones, so heartbeats report them alike.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from common import ids
from common.hadoop import records, tokens
from common.hadoop.server import CallContext, IpcServer, Method, Protocol, RpcError, TokenAuth
from common.resources import Resources
from common.tokens import ContainerTokenFields
from nodemanager.containers import KILLED_BY_APPMASTER, ContainerExists, ContainerTable
from nodemanager.ipc_launch import launch_spec
from nodemanager.launch import LaunchError
from nodemanager.service import TokenKeys
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr

log = logging.getLogger("nodemanager.ipc")

NAME = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"
YARN_EXCEPTION = "org.apache.hadoop.yarn.exceptions.YarnException"
INVALID_TOKEN = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
_STATES = {"NEW": yr.C_NEW, "RUNNING": yr.C_RUNNING, "COMPLETE": yr.C_COMPLETE}


@dataclass(frozen=True, slots=True)
class NodeAddress:
    host: str
    ipc_port: int
    http_port: int

    @property
    def node_id(self) -> str:
        return f"{self.host}:{self.ipc_port}"


def _failure(container: yr.ContainerId | None, java_class: str, message: str) -> yp.ContainerExceptionMap:
    out = yp.ContainerExceptionMap(exception=yr.SerializedException(message=message, class_name=java_class))
    if container is not None:
        out.container_id.CopyFrom(container)
    return out


class ContainerManagement:
    def __init__(self, table: ContainerTable, keys: TokenKeys, address: NodeAddress, work_root: Path) -> None:
        self.table = table
        self.keys = keys
        self.address = address
        self.work_root = work_root

    def protocol(self) -> Protocol:
        return Protocol(NAME, {
            "startContainers": Method(yp.StartContainersRequest, self.start_containers),
            "stopContainers": Method(yp.StopContainersRequest, self.stop_containers),
            "getContainerStatuses": Method(yp.GetContainerStatusesRequest, self.get_container_statuses),
        }, requires_token=True)

    def passwords_for(self, identifier: bytes) -> list[bytes]:
        try:
            tokens.read_nm(identifier)
        except tokens.TokenError:
            return []
        return [tokens.password(k, tokens.KIND_NM, identifier) for k in self.keys.all()]

    def _caller(self, ctx: CallContext) -> tokens.NMIdentity:
        if ctx.token is None:
            raise RpcError(INVALID_TOKEN, "an NMToken is required")
        ident = tokens.read_nm(ctx.token)
        if ident.node_id != self.address.node_id:
            raise RpcError(INVALID_TOKEN, f"Given NMToken for application : {ident.app_id} is not valid for "
                           f"current node manager. expected : {self.address.node_id} found : {ident.node_id}")
        return ident

    async def start_containers(self, ctx: CallContext, req: yp.StartContainersRequest
                               ) -> yp.StartContainersResponse:
        caller = self._caller(ctx)
        out = yp.StartContainersResponse()
        for item in req.start_container_request:
            cid_pb = yr.ContainerId()
            try:
                now_ms = int(time.time() * 1000)
                grant = tokens.verify_container(self.keys.all(), item.container_token, now_ms=now_ms)
                cid_pb = records.container_id_pb(grant.container_id)
                self._check_grant(caller, grant)
                self._start(grant, item.container_launch_context)
            except tokens.TokenError as exc:
                out.failed_requests.append(_failure(cid_pb if cid_pb.id else None, INVALID_TOKEN, str(exc)))
                continue
            except RpcError as exc:
                out.failed_requests.append(_failure(cid_pb, exc.java_class, exc.message))
                continue
            except (LaunchError, ContainerExists, OSError, ValueError) as exc:
                out.failed_requests.append(_failure(cid_pb, YARN_EXCEPTION, str(exc)))
                continue
            out.succeeded_requests.append(cid_pb)
            log.info("started container %s for %s over Hadoop IPC", grant.container_id, caller.attempt_id)
        return out

    def _check_grant(self, caller: tokens.NMIdentity, grant: tokens.ContainerGrant) -> None:
        if grant.node_id != self.address.node_id:
            raise RpcError(INVALID_TOKEN, f"Container {grant.container_id} is for node {grant.node_id}, "
                           f"this is {self.address.node_id}")
        if grant.app_id != caller.app_id:
            raise RpcError(INVALID_TOKEN, f"Unauthorized request to start container {grant.container_id}: the "
                           f"NMToken is for {caller.app_id}")
        if ids.parse_container_id(grant.container_id).app_id != grant.app_id:
            raise RpcError(INVALID_TOKEN, f"Container {grant.container_id} does not belong to {grant.app_id}")

    def _start(self, grant: tokens.ContainerGrant, clc: yr.ContainerLaunchContext) -> None:
        self.table.check_new(grant.container_id)  # before anything is staged for it
        spec = launch_spec(clc, work_root=self.work_root, app_id=grant.app_id,
                           container_id=grant.container_id, nm_host=self.address.host,
                           ipc_port=self.address.ipc_port, http_port=self.address.http_port)
        fields = ContainerTokenFields(
            container_id=grant.container_id, node_id=self.address.node_id, app_id=grant.app_id,
            user=grant.submitter or "dr.who", resource=grant.resource.to_dict(), expires=grant.expiry_ms / 1000,
        )
        self.table.start(fields, spec)

    def _owned(self, caller: tokens.NMIdentity, cid_pb: yr.ContainerId) -> str:
        cid = records.container_id_str(cid_pb)
        if ids.parse_container_id(cid).app_id != caller.app_id:
            raise RpcError(INVALID_TOKEN, f"Unauthorized request: the NMToken of {caller.attempt_id} cannot "
                           f"act on {cid}")
        if self.table.get(cid) is None:
            raise RpcError(YARN_EXCEPTION, f"Container {cid} is not handled by this NodeManager")
        return cid

    async def stop_containers(self, ctx: CallContext, req: yp.StopContainersRequest
                              ) -> yp.StopContainersResponse:
        caller = self._caller(ctx)
        out = yp.StopContainersResponse()
        for cid_pb in req.container_id:
            try:
                cid = self._owned(caller, cid_pb)
            except (RpcError, ValueError) as exc:
                err = exc if isinstance(exc, RpcError) else RpcError(YARN_EXCEPTION, str(exc))
                out.failed_requests.append(_failure(cid_pb, err.java_class, err.message))
                continue
            self.table.request_stop(cid, KILLED_BY_APPMASTER, "Container killed by the ApplicationMaster.")
            out.succeeded_requests.append(cid_pb)
        return out

    async def get_container_statuses(self, ctx: CallContext, req: yp.GetContainerStatusesRequest
                                     ) -> yp.GetContainerStatusesResponse:
        caller = self._caller(ctx)
        out = yp.GetContainerStatusesResponse()
        for cid_pb in req.container_id:
            try:
                cid = self._owned(caller, cid_pb)
            except (RpcError, ValueError) as exc:
                err = exc if isinstance(exc, RpcError) else RpcError(YARN_EXCEPTION, str(exc))
                out.failed_requests.append(_failure(cid_pb, err.java_class, err.message))
                continue
            c = self.table.get(cid)
            assert c is not None
            out.status.append(yr.ContainerStatus(
                container_id=cid_pb, state=_STATES[c.state], exit_status=c.exit_status,
                diagnostics=c.diagnostics or "", capability=records.resource_pb(Resources(c.resource)),
            ))
        return out


async def start_container_management(table: ContainerTable, keys: TokenKeys, *, bind_host: str, port: int,
                                     advertised_host: str, http_port: int, work_root: Path
                                     ) -> tuple[IpcServer, ContainerManagement]:
    """Bind the listener (``port`` 0: any free port); the NodeId is ``advertised_host:<bound port>``."""
    service = ContainerManagement(table, keys, NodeAddress(advertised_host, 0, http_port), work_root)
    server = IpcServer("nm-ipc", [service.protocol()], token_auth=TokenAuth(service.passwords_for))
    bound = await server.start(bind_host, port)
    service.address = NodeAddress(advertised_host, bound, http_port)
    return server, service
