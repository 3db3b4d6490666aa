"""``python -m proto.probe [HOST:PORT] [SERVICE]``: ask a daemon's ``grpc.health.v1.Health`` whether it serves;
exit 0 if SERVING, 1 otherwise (a container's HEALTHCHECK, a load balancer's or an operator's probe).

Without an address it asks this container's daemon: ``$SHEPHERD_HEALTH_ADDRESS`` if set, else the gRPC port of
the ``shepherd rm`` (``--grpc-port``, default 7030) or ``shepherd nm`` (``--port``, default 7040) that runs as
process 1, on 127.0.0.1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

DEFAULT_PORTS = {"rm": ("--grpc-port", 7030), "nm": ("--port", 7040)}


def own_address(cmdline: Sequence[str]) -> str:
    """The gRPC address of the daemon that ``cmdline`` (process 1's arguments) starts."""
    role = next((a for a in cmdline if a in DEFAULT_PORTS), "rm")
    flag, port = DEFAULT_PORTS[role]
    for i, arg in enumerate(cmdline):
        if arg == flag and i + 1 < len(cmdline):
            port = int(cmdline[i + 1])
        elif arg.startswith(flag + "="):
            port = int(arg.split("=", 1)[1])
    return f"127.0.0.1:{port}"


def check(address: str, service: str = "", timeout: float = 5.0) -> str:
    """The serving status name (SERVING, NOT_SERVING, ...) or the gRPC error code's name."""
    try:
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                              timeout=timeout)
    except grpc.RpcError as exc:
        return exc.code().name if isinstance(exc, grpc.Call) else "UNAVAILABLE"
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    address = args[0] if args else os.environ.get("SHEPHERD_HEALTH_ADDRESS") or ""
    if not address:
        try:
            cmdline = Path("/proc/1/cmdline").read_bytes().decode().split("\0")
        except OSError:
            cmdline = []
        address = own_address(cmdline)
    status = check(address, args[1] if len(args) > 1 else "")
    print(f"{address}: {status}")
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
