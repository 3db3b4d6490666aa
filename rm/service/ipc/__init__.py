"""Hadoop IPC for stock YARN clients: the wire format, an asyncio server and client, Hadoop token
formats, and the RM's ApplicationClient / ApplicationMaster facade (``start_ipc``).

The facade is imported lazily so that NodeManagers can use the wire, server and token modules
without loading the RM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rm.service.ipc.facade import IpcFacade
    from rm.service.server import ResourceManager


async def start_ipc(rm: ResourceManager) -> IpcFacade:
    """Start the RM's Hadoop IPC listeners; the returned facade has ``async stop()``."""
    from rm.service.ipc.facade import start_ipc as start

    return await start(rm)


__all__ = ["start_ipc"]
