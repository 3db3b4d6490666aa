"""ApplicationMasterProtocol over Hadoop IPC (register, allocate, finish) for stock AMRMClients.

The connection authenticated with an AMRMToken (DIGEST-MD5), so the caller's attempt is known;
calls go to the same operations (``rm.service.operations``) the gRPC ApplicationMaster service uses.

YARN's allocate speaks in an *ask table*: entries keyed by (priority, capability, allocation
request id) and location ("*", a rack or a host), each an absolute outstanding count that replaces
the previous one, sent only when it changed. :class:`AskTable` keeps the table per attempt and turns
each changed key into one shepherd Ask (the "*" count, with the named hosts and racks as locality).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from common import ids
from common import tokens as core_tokens
from common.errors import BadRequest
from common.hadoop import records, tokens
from common.hadoop.server import CallContext, Method, Protocol
from common.resources import Resources
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.state_types import AllocateResult
from rm.service import limits
from rm.service.ipc import reports
from rm.service.ipc.errors import as_rpc_errors

if TYPE_CHECKING:
    from rm.service.ipc.facade import IpcFacade

log = logging.getLogger("shepherd.ipc.am")

NAME = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
ANY = "*"
_COMMANDS = {"RESYNC": yp.AM_RESYNC, "SHUTDOWN": yp.AM_SHUTDOWN}
MAX_ASK_KEYS = 10_000


AskKey = tuple[int, tuple[tuple[str, int], ...], int]  # (priority, capability, allocation request id)

@dataclass
class _Entry:
    core_id: int
    priority: int
    capability: Resources
    hadoop_request_id: int
    any_count: int = 0
    relax_locality: bool = True
    hosts: dict[str, int] = field(default_factory=dict)
    racks: dict[str, int] = field(default_factory=dict)

    def ask(self) -> Ask:
        return Ask(
            allocation_request_id=self.core_id, priority=self.priority, capability=self.capability,
            num_containers=max(0, self.any_count),
            nodes=tuple(sorted(h for h, n in self.hosts.items() if n > 0)),
            racks=tuple(sorted(r for r, n in self.racks.items() if n > 0)),
            relax_locality=self.relax_locality,
        )


@dataclass
class AskTable:
    """One attempt's view of the AM's ask table."""

    entries: dict[AskKey, _Entry] = field(default_factory=dict)
    by_core_id: dict[int, _Entry] = field(default_factory=dict)

    def update(self, asks: list[yr.ResourceRequest]) -> list[Ask]:
        """Merge changed entries; the shepherd asks for every key that changed."""
        changed: dict[AskKey, _Entry] = {}
        for r in asks:
            capability = records.resources_from_pb(r.capability)
            cap_key = tuple(sorted(capability.to_dict().items()))
            key: AskKey = (r.priority.priority, cap_key, r.allocation_request_id)
            entry = self.entries.get(key)
            if entry is None:
                if len(self.entries) >= MAX_ASK_KEYS:
                    raise BadRequest(f"too many distinct resource requests (more than {MAX_ASK_KEYS})")
                entry = _Entry(core_id=len(self.entries), priority=r.priority.priority, capability=capability,
                               hadoop_request_id=r.allocation_request_id)
                self.entries[key] = entry
                self.by_core_id[entry.core_id] = entry
            name = r.resource_name or ANY
            if r.num_containers < 0:
                raise BadRequest(f"negative num_containers for {name}")
            if name == ANY:
                entry.any_count = r.num_containers
                entry.relax_locality = r.relax_locality
            elif name.startswith("/"):
                entry.racks[name] = r.num_containers
            else:
                entry.hosts[name] = r.num_containers
            changed[key] = entry
        return [e.ask() for e in changed.values()]


class ApplicationMaster:
    def __init__(self, facade: IpcFacade) -> None:
        self.facade = facade
        self.rm = facade.rm
        self.ops = facade.ops
        self.tables: dict[str, AskTable] = {}

    def protocol(self) -> Protocol:
        return Protocol(NAME, {
            "registerApplicationMaster": Method(yp.RegisterApplicationMasterRequest, self.register),
            "allocate": Method(yp.AllocateRequest, self.allocate, precheck=self._count_allocate),
            "finishApplicationMaster": Method(yp.FinishApplicationMasterRequest, self.finish),
        }, requires_token=True)

    async def _count_allocate(self, raw: bytes | memoryview) -> None:
        """Too many asks or releases refused on the request's bytes, before one ResourceRequest is built."""
        with as_rpc_errors():
            await self.rm.bounds.check("ipc-allocate", raw)

    @staticmethod
    def passwords_for(st: Ledger, identifier: bytes) -> list[bytes]:
        try:
            tokens.read_amrm(identifier)
        except tokens.TokenError:
            return []
        return [tokens.password(st.amrm_key, tokens.KIND_AMRM, identifier)]

    def _core_token(self, ctx: CallContext) -> tuple[str, str]:
        """(attempt id, the core's AMRM token for it) of the authenticated caller."""
        if ctx.token is None:
            raise tokens.TokenError("an AMRMToken is required")
        attempt = tokens.read_amrm(ctx.token)
        return attempt, core_tokens.amrm_token(self.rm.state.amrm_key, attempt)

    async def register(self, ctx: CallContext, req: yp.RegisterApplicationMasterRequest
                       ) -> yp.RegisterApplicationMasterResponse:
        with as_rpc_errors():
            attempt, token = self._core_token(ctx)
            reg = await self.ops.am_register(token, req.host, req.rpc_port, req.tracking_url)
            log.info("AM of %s registered over Hadoop IPC from %s", attempt, ctx.peer)
            response = yp.RegisterApplicationMasterResponse(
                maximum_capability=records.resource_pb(reports.max_allocation(self.rm.state)),
                queue=reports.queue_leaf(reg.app.queue), scheduler_resource_types=[yp.MEMORY, yp.CPU],
            )
            st = self.rm.state
            for c in reg.inherited:  # keepContainersAcrossApplicationAttempts
                node, container = st.nodes.get(c.node_id), st.containers.get(c.container_id)
                if node is None or container is None:
                    continue
                response.containers_from_previous_attempts.append(yr.Container(
                    id=records.container_id_pb(c.container_id),
                    node_id=records.node_id_pb(reports.hadoop_node_id(node)), node_http_address=node.http_address,
                    resource=records.resource_pb(c.resource), priority=yr.Priority(priority=c.priority),
                    container_token=self.facade.container_token(container, reg.app.user),
                    execution_type=yr.GUARANTEED, allocation_request_id=-1,
                ))
            return response

    async def allocate(self, ctx: CallContext, req: yp.AllocateRequest) -> yp.AllocateResponse:
        with as_rpc_errors():
            attempt, token = self._core_token(ctx)
            limits.check_allocate(len(req.ask), len(req.release))
            st = self.rm.state
            table = self.tables.get(attempt)
            if table is None:
                self._forget_finished()
                table = self.tables[attempt] = AskTable()
            asks = table.update(list(req.ask))
            hosts = {n.host: [] for n in st.nodes.values()}  # type: dict[str, list[str]]
            for n in st.nodes.values():
                hosts[n.host].append(n.node_id)
            bl = req.blacklist_request
            res = await self.ops.am_allocate(
                token, req.response_id, asks, [records.container_id_str(c) for c in req.release],
                req.progress, [nid for h in bl.blacklist_additions for nid in hosts.get(h, [h])],
                [nid for h in bl.blacklist_removals for nid in hosts.get(h, [h])],
            )
            return self._response(st, attempt, table, res)

    def _response(self, st: Ledger, attempt: str, table: AskTable, res: AllocateResult
                  ) -> yp.AllocateResponse:
        out = yp.AllocateResponse(response_id=res.response_id, limit=records.resource_pb(res.headroom),
                                  num_cluster_nodes=res.num_nodes)
        if res.command in _COMMANDS:
            out.am_command = _COMMANDS[res.command]
        app = st.apps.get(ids.app_of_attempt(attempt))
        user = app.user if app is not None else ""
        for c in res.allocated:
            node = st.nodes.get(c.node_id)
            container = st.containers.get(c.container_id)
            if node is None or container is None:
                continue
            entry = table.by_core_id.get(c.allocation_request_id)
            out.allocated_containers.append(yr.Container(
                id=records.container_id_pb(c.container_id),
                node_id=records.node_id_pb(reports.hadoop_node_id(node)), node_http_address=node.http_address,
                resource=records.resource_pb(c.resource), priority=yr.Priority(priority=c.priority),
                container_token=self.facade.container_token(container, user),
                execution_type=yr.GUARANTEED,
                allocation_request_id=entry.hadoop_request_id if entry is not None else -1,
            ))
        for s in res.completed:
            out.completed_container_statuses.append(yr.ContainerStatus(
                container_id=records.container_id_pb(s.container_id), state=yr.C_COMPLETE,
                diagnostics=s.diagnostics, exit_status=s.exit_status,
            ))
        for node_id, _ in res.nm_tokens:
            node = st.nodes.get(node_id)
            if node is not None:
                hid = reports.hadoop_node_id(node)
                out.nm_tokens.append(yp.NMToken(node_id=records.node_id_pb(hid), token=tokens.nm_token(
                    st.container_key, attempt, hid, user, key_id=st.container_key_id)))
        return out

    def _forget_finished(self) -> None:
        st = self.rm.state
        for attempt in list(self.tables):
            app = st.apps.get(ids.app_of_attempt(attempt))
            if app is None or app.final or app.current is None or app.current.attempt_id != attempt:
                del self.tables[attempt]

    async def finish(self, ctx: CallContext, req: yp.FinishApplicationMasterRequest
                     ) -> yp.FinishApplicationMasterResponse:
        with as_rpc_errors():
            _, token = self._core_token(ctx)
            status = reports.FINAL_STATUS_NAMES.get(req.final_application_status, "UNDEFINED")
            done = await self.ops.am_finish(token, status, limits.cut(req.diagnostics, limits.MAX_DIAGNOSTICS),
                                            limits.cut(req.tracking_url, limits.MAX_NAME))
            return yp.FinishApplicationMasterResponse(is_unregistered=done)
