"""A small synchronous client for the ResourceManager's ApplicationClient service (CLI and tests)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable
from typing import Any, Self

import grpc

from common import credentials
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg

DEFAULT_RM = "127.0.0.1:7030"
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


class ClientError(Exception):
    """The RM refused a call; ``exception`` is YARN's Java exception class name when known."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.exception = message.split(":", 1)[0] if ":" in message else ""


def bearer(secret: str | None) -> tuple[tuple[str, str], ...]:
    """The call metadata that carries the client secret, if there is one."""
    return (("authorization", f"Bearer {secret}"),) if secret else ()


def refused(exc: grpc.RpcError, *, last: bool) -> ClientError | None:
    """What a failed call raises: the RM's refusal, or None when the RM did not answer (a standby, or down) and
    another RM of the pair is left to try. The synchronous and asynchronous clients fail over by this rule."""
    code = exc.code().name if hasattr(exc, "code") else "UNKNOWN"
    details = exc.details() if hasattr(exc, "details") else str(exc)
    if code == "UNAVAILABLE" and not last:
        return None
    return ClientError(code, details or code)


def next_address(addresses: list[str], current: str) -> str:
    """The RM after ``current`` in a pair (or list), round the end."""
    return addresses[(addresses.index(current) + 1) % len(addresses)]


_INTERRUPTED = threading.Event()


def interruptible() -> None:
    """Make Ctrl-C stop a command that waits on the RM, whenever it comes (the CLI calls this first).

    SIGINT raises KeyboardInterrupt as usual, and is also remembered: a KeyboardInterrupt raised while a gRPC
    call is in flight can be lost inside grpcio (a SIGINT during a call through a bare ``unary_unary``
    callable is, with grpcio 1.85), and a command in a ``--watch`` or ``--wait`` loop would then ignore the
    Ctrl-C for good. Every call made here re-raises it once the call returns. The handler is installed
    even where SIGINT came ignored from the parent, as a program started in the background gets it: a
    command's own Ctrl-C and a test's or a supervisor's SIGINT should stop it."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_sigint(signum: int, frame: Any) -> None:
        _INTERRUPTED.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)


class RMClient:
    def __init__(self, address: str | None = None, secret: str | None = None, timeout: float = 15.0) -> None:
        # one address, or every RM of an active/standby pair, comma-separated: calls go to the one that answers
        given = address or os.environ.get("SHEPHERD_RM", DEFAULT_RM)
        self.addresses = [a.strip() for a in given.split(",") if a.strip()] or [DEFAULT_RM]
        self.address = self.addresses[0]
        self.secret = credentials.client_secret(self.address, secret)  # as kubectl finds its kubeconfig
        self.timeout = timeout
        self._connect(self.address)

    def _connect(self, address: str) -> None:
        self.address = address
        self._channel = grpc.insecure_channel(address)
        self._stub = pbg.ApplicationClientStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, request: Any) -> Any:
        metadata = bearer(self.secret)
        for tried in range(len(self.addresses)):
            try:
                answer = getattr(self._stub, method)(request, metadata=metadata, timeout=self.timeout)
                if _INTERRUPTED.is_set():  # a Ctrl-C that came during the call: see ``interruptible``
                    raise KeyboardInterrupt
                return answer
            except grpc.RpcError as exc:
                if _INTERRUPTED.is_set():
                    raise KeyboardInterrupt from None
                refusal = refused(exc, last=tried + 1 == len(self.addresses))
                if refusal is not None:
                    raise refusal from None
            self._channel.close()
            self._connect(next_address(self.addresses, self.address))
        raise AssertionError("unreachable")

    def new_application(self) -> str:
        return str(self._call("GetNewApplication", pb.GetNewApplicationRequest()).application_id)

    def submit(self, context: pb.ApplicationSubmissionContext) -> None:
        self._call("SubmitApplication", pb.SubmitApplicationRequest(context=context))

    def app(self, app_id: str, *, rest_shape: bool = False) -> pb.ApplicationReport:
        """``rest_shape``: the report carries the app's REST object too (``rest_json``)."""
        req = pb.GetApplicationReportRequest(application_id=app_id, rest_shape=rest_shape)
        return self._call("GetApplicationReport", req).report

    def apps(self, states: Iterable[str] = (), queue: str = "", user: str = "", *,
             rest_shape: bool = False) -> list[pb.ApplicationReport]:
        req = pb.GetApplicationsRequest(states=list(states), queue=queue, user=user, rest_shape=rest_shape)
        return list(self._call("GetApplications", req).applications)

    def attempts(self, app_id: str) -> list[pb.ApplicationAttemptReport]:
        req = pb.GetApplicationAttemptsRequest(application_id=app_id)
        return list(self._call("GetApplicationAttempts", req).attempts)

    def containers(self, app_id: str) -> list[pb.ContainerReport]:
        return list(self._call("GetContainers", pb.GetContainersRequest(application_id=app_id)).containers)

    def kill(self, app_id: str, diagnostics: str = "") -> None:
        """Kill an application. The RM answers a kill of an app that has ended as done, as YARN's does; like
        YARN's ``application -kill``, this client refuses it instead, naming the state the app ended in."""
        state = self.app(app_id).state
        if state in FINAL_STATES:
            raise ClientError("FAILED_PRECONDITION", f"Application {app_id} has already finished: it is {state}")
        self._call("KillApplication", pb.KillApplicationRequest(application_id=app_id, diagnostics=diagnostics))

    def nodes(self, states: Iterable[str] = ()) -> list[pb.NodeReport]:
        return list(self._call("GetClusterNodes", pb.GetClusterNodesRequest(states=list(states))).nodes)

    def metrics(self) -> pb.ClusterMetrics:
        return self._call("GetClusterMetrics", pb.GetClusterMetricsRequest()).metrics

    def queue(self, name: str = "") -> pb.QueueInfo:
        return self._call("GetQueueInfo", pb.GetQueueInfoRequest(queue=name)).queue
