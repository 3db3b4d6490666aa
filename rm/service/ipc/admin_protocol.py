"""ResourceManagerAdministrationProtocol over Hadoop IPC (``yarn rmadmin``), on its own listener
(``yarn.resourcemanager.admin.address``).

Callers authenticate as on the client listener: an RM delegation token's owner, or a SIMPLE user name that is
believed only where SIMPLE writes are allowed. Hadoop's own admin client never sends a token (YARN's
AdminSecurityInfo names no token kind for this protocol; a YARN RM expects Kerberos here), so the stock
``yarn rmadmin`` works only where SIMPLE writes are allowed or the RM is insecure. Each call then needs a
cluster admin (``yarn.admin.acl``), as on the REST and gRPC doors.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from common.hadoop.server import CallContext, Method, Protocol
from proto.hadoop import yarn_protocols_pb2 as yp
from rm.service import audit
from rm.service.authz import Caller

if TYPE_CHECKING:
    from rm.service.ipc.facade import IpcFacade

log = logging.getLogger("shepherd.ipc.admin")

NAME = "org.apache.hadoop.yarn.server.api.ResourceManagerAdministrationProtocolPB"
HINT = ("Hadoop's admin client sends none (the stock `yarn rmadmin` can only authenticate SIMPLE here): use "
        "`shepherd admin`, or set yarn.resourcemanager.ipc.allow-simple-writes where every user is trusted")


class Administration:
    def __init__(self, facade: IpcFacade) -> None:
        self.facade = facade
        self.rm = facade.rm

    def protocol(self) -> Protocol:
        return Protocol(NAME, {
            "refreshQueues": Method(yp.RefreshQueuesRequest, self.refresh_queues),
            "refreshNodes": Method(yp.RefreshNodesRequest, self.refresh_nodes),
            "refreshAdminAcls": Method(yp.RefreshAdminAclsRequest, self.refresh_admin_acls),
        })

    async def refresh_admin_acls(self, ctx: CallContext, req: yp.RefreshAdminAclsRequest
                                 ) -> yp.RefreshAdminAclsResponse:
        """Read ``yarn.admin.acl`` again from the configuration files and put it in force, as refreshQueues
        reads the queues: the caller must be an admin under the ACL in force before the call."""
        async def change(who: Caller) -> yp.RefreshAdminAclsResponse:
            self.facade.authz.admin(who, "refreshAdminAcls")
            await self.rm.refresh_admin_acls()
            return yp.RefreshAdminAclsResponse()
        return await self.facade.client.audited(ctx, audit.REFRESH_ADMIN_ACLS, "", change,
                                                target=audit.ADMIN_SERVICE, hint=HINT)

    async def refresh_queues(self, ctx: CallContext, req: yp.RefreshQueuesRequest) -> yp.RefreshQueuesResponse:
        """Read the queue tree (and the ACLs) again from the configuration files and apply it; refused, the
        old queues kept, when the new tree is invalid or strands unfinished apps."""
        async def change(who: Caller) -> yp.RefreshQueuesResponse:
            self.facade.authz.admin(who, "refreshQueues")
            await self.rm.refresh_queues()
            return yp.RefreshQueuesResponse()
        return await self.facade.client.audited(ctx, audit.REFRESH_QUEUES, "", change,
                                                target=audit.ADMIN_SERVICE, hint=HINT)

    async def refresh_nodes(self, ctx: CallContext, req: yp.RefreshNodesRequest) -> yp.RefreshNodesResponse:
        """YARN re-reads its include and exclude files here; shepherd has none (nodes are decommissioned one by
        one: ``shepherd admin decommission``), so an admin's call succeeds with nothing to do."""
        async def change(who: Caller) -> yp.RefreshNodesResponse:
            self.facade.authz.admin(who, "refreshNodes")
            log.info("refreshNodes from %s: no include or exclude files to read; decommission nodes with "
                     "`shepherd admin decommission`", who)
            return yp.RefreshNodesResponse()
        return await self.facade.client.audited(ctx, audit.REFRESH_NODES, "", change,
                                                target=audit.ADMIN_SERVICE, hint=HINT)
