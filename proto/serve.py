"""Registering gRPC servicers so that a request that does not parse gets INVALID_ARGUMENT with a clear
message (grpc's own decoding answers UNKNOWN with an internal exception text), and a servicer may check a
request on its bytes before it is parsed (its ``prechecks``: method name -> an async function of the serialized
request that returns the details of a refusal, or None)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from proto import shepherd_pb2 as pb

MALFORMED = "org.apache.hadoop.ipc.RpcServerException: malformed request"


Precheck = Callable[[bytes], Awaitable[str | None]]


def _handler(method: Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]], request_cls: Any,
             name: str, precheck: Precheck | None = None) -> grpc.RpcMethodHandler:
    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
        # a refusal is the call's status, set rather than raised with context.abort(): the exception would keep
        # this frame, and so the request, in a reference cycle through the context until a full collection
        refusal = await precheck(raw) if precheck is not None else None
        if refusal is None:
            try:
                request = request_cls.FromString(raw)
            except (DecodeError, ValueError) as exc:
                refusal = f"{MALFORMED} for {name}: {exc}"
        if refusal is not None:
            context.set_code(grpc.StatusCode.INVALID_ARGUMENT)
            context.set_details(refusal)
            return None
        return await method(request, context)

    return grpc.unary_unary_rpc_method_handler(
        handle, request_deserializer=None, response_serializer=lambda m: m.SerializeToString()
    )


def add_servicer(server: grpc.aio.Server, service_name: str, servicer: object) -> None:
    """Register ``servicer`` for the service ``shepherd.v1.<service_name>``."""
    service = pb.DESCRIPTOR.services_by_name[service_name]
    prechecks: dict[str, Precheck] = getattr(servicer, "prechecks", {})
    handlers = {
        m.name: _handler(getattr(servicer, m.name), getattr(pb, m.input_type.name), f"{service_name}.{m.name}",
                         prechecks.get(m.name))
        for m in service.methods
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))



class Health:
    """``grpc.health.v1.Health`` for a server and each of its shepherd services."""

    def __init__(self, services: Sequence[str]) -> None:
        self.servicer = health.aio.HealthServicer()
        self.services = list(services)

    async def set_serving(self, serving: bool = True) -> None:
        """The server as a whole ("") and each service: SERVING, or NOT_SERVING on the way down."""
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", *self.services):
            await self.servicer.set(name, status)


def add_health_and_reflection(server: grpc.aio.Server, service_names: Sequence[str]) -> Health:
    """The operations services every daemon serves beside its own: ``grpc.health.v1.Health`` (what
    grpc_health_probe, Kubernetes and load balancers ask) and server reflection (grpcurl, grpc_cli), for
    ``shepherd.v1.<name>`` for each of ``service_names``. Mark them SERVING with ``set_serving()`` once the
    server has started."""
    full_names = [pb.DESCRIPTOR.services_by_name[name].full_name for name in service_names]
    checks = Health(full_names)
    health_pb2_grpc.add_HealthServicer_to_server(checks.servicer, server)
    reflection.enable_server_reflection([*full_names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    return checks
