"""An allocate response bigger than gRPC's default 4 MB receive limit (thousands of containers at once) reaches
the ApplicationMaster client: the client reads what the RM's server may send (``proto.limits``)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import grpc.aio

from am.client import AMRMClient
from common import ids
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.limits import MAX_RESPONSE

APP = ids.app_id(1_700_000_000_000, 1)
ATTEMPT = ids.attempt_id(APP, 1)
CONTAINERS = 16_000
DEFAULT_LIMIT = 4 * 1024 * 1024


def big_response(response_id: int) -> pb.AllocateResponse:
    """What an RM answers when it hands over ``CONTAINERS`` containers, tokens and all."""
    allocated = [
        pb.Container(container_id=ids.container_id(ATTEMPT, i + 2),
                     node_id=pb.NodeId(host=f"host{i % 10_000:05d}.cluster.example", port=8041),
                     node_http_address=f"host{i % 10_000:05d}.cluster.example:8042",
                     resource=pb.Resource(values={"memory-mb": 1024, "vcores": 1}), priority=1,
                     allocation_request_id=1 + i % 1000, container_token="t" * 320)
        for i in range(CONTAINERS)]
    return pb.AllocateResponse(response_id=response_id + 1, allocated_containers=allocated)


class BigRM(pbg.ApplicationMasterServicer):
    async def RegisterApplicationMaster(self, request: Any, context: Any) -> pb.RegisterApplicationMasterResponse:
        return pb.RegisterApplicationMasterResponse(application_id=APP, attempt_id=ATTEMPT, queue="root.default")

    async def Allocate(self, request: pb.AllocateRequest, context: Any) -> pb.AllocateResponse:
        return big_response(request.response_id)


def test_an_allocate_response_over_4_mb_reaches_the_am_client() -> None:
    assert big_response(0).ByteSize() > DEFAULT_LIMIT

    async def scenario() -> int:
        # sends as the RM's server does (rm/service/server.py)
        server = grpc.aio.server(options=[("grpc.max_send_message_length", MAX_RESPONSE)])
        pbg.add_ApplicationMasterServicer_to_server(BigRM(), server)  # type: ignore[no-untyped-call]
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        client = AMRMClient(f"127.0.0.1:{port}", "token", retry_s=0.0)
        try:
            await client.register("h", 1, "")
            response = await client.allocate([pb.ResourceAsk(
                allocation_request_id=1, priority=1, num_containers=CONTAINERS,
                capability=pb.Resource(values={"memory-mb": 1024, "vcores": 1}))])
            return len(response.allocated_containers)
        finally:
            await client.close()
            await server.stop(0)

    assert asyncio.run(scenario()) == CONTAINERS
