"""Registering gRPC servicers so that a request that does not parse gets INVALID_ARGUMENT with a clear
message (grpc's own decoding answers UNKNOWN with an internal exception text)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from proto import shepherd_pb2 as pb

MALFORMED = "org.apache.hadoop.ipc.RpcServerException: malformed request"


def _handler(method: Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]], request_cls: Any,
             name: str) -> grpc.RpcMethodHandler:
    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
        try:
            request = request_cls.FromString(raw)
        except (DecodeError, ValueError) as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{MALFORMED} for {name}: {exc}")
        return await method(request, context)

    return grpc.unary_unary_rpc_method_handler(
        handle, request_deserializer=None, response_serializer=lambda m: m.SerializeToString()
    )


def add_servicer(server: grpc.aio.Server, service_name: str, servicer: object) -> None:
    """Register ``servicer`` for the service ``shepherd.v1.<service_name>``."""
    service = pb.DESCRIPTOR.services_by_name[service_name]
    handlers = {
        m.name: _handler(getattr(servicer, m.name), getattr(pb, m.input_type.name), f"{service_name}.{m.name}")
        for m in service.methods
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
