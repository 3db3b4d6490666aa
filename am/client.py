"""Client library for ApplicationMasters: talk to the RM (like YARN's AMRMClientAsync) and to
NodeManagers (like NMClient) over grpc.aio.

    env = AMEnvironment.from_env()
    amrm = AMRMClient(env.rm_address, env.amrm_token)
    nm = NMClient(amrm.nm_tokens)
    await amrm.register(host, 0, "")
    resp = await amrm.allocate([ask], releases=[], progress=0.0)
    await nm.start_container(resp.allocated_containers[0], launch)
    await amrm.finish(pb.SUCCEEDED, "")

``AMRMClient`` keeps the ask table it has sent (each entry counted down as its containers
arrive, as the RM does), the response id and the releases not yet confirmed, so that on
``AM_RESYNC`` (or YARN's ApplicationMasterNotRegisteredException, which a restarted RM answers
with) it re-registers and resends the whole table by itself. Every RPC failure surfaces as
``AMClientError`` (``ContainerLaunchError`` for a refused container start).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from common import ids
from common.terms import NO_SIGNALS, AmSignals
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from proto.limits import CLIENT_OPTIONS

log = logging.getLogger("am.client")
LAUNCH_RETRY_S = 20.0  # how long a container start is retried while its NodeManager does not answer
ALREADY_THERE = "already exists on this node"  # the NodeManager's answer to a container id it launched before

RETRYABLE_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


class AMClientError(Exception):
    """A call to the RM or a NodeManager failed. ``code`` is the gRPC status name (or, for a
    refused container start, the NodeManager's exception class name)."""

    def __init__(self, operation: str, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(f"{operation} failed: {code}: {message}")
        self.operation = operation
        self.code = code
        self.message = message
        self.retryable = retryable


class ContainerLaunchError(AMClientError):
    """The NodeManager refused to start (or stop) a container."""


class AMEnvironmentError(ValueError):
    """The AM container's environment lacks something the AM needs."""


def node_address(node: pb.NodeId) -> str:
    """YARN's node id string, ``host:port`` (the ContainerManager endpoint)."""
    return f"{node.host}:{node.port}"


def _is_not_registered(exc: AMClientError) -> bool:
    """YARN's ApplicationMasterNotRegisteredException: the RM restarted after the AM registered."""
    return exc.code == "FAILED_PRECONDITION" and "ApplicationMasterNotRegistered" in exc.message


def _metadata(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def _as_error(operation: str, exc: grpc.aio.AioRpcError) -> AMClientError:
    code = exc.code()
    return AMClientError(
        operation, code.name if code else "UNKNOWN", exc.details() or "", retryable=code in RETRYABLE_CODES
    )


# ---------------------------------------------------------------------- environment


@dataclass(frozen=True, slots=True)
class AMEnvironment:
    """What the RM and NodeManager put in the AM container's environment."""

    rm_address: str  # SHEPHERD_RM_ADDRESS
    amrm_token: str  # SHEPHERD_AMRM_TOKEN
    job_json: str  # SHEPHERD_JOB_JSON, or SHEPHERD_JOB_JSON_B64 decoded
    application_id: str = ""  # APPLICATION_ID
    container_id: str = ""  # CONTAINER_ID
    attempt_id: str = ""  # SHEPHERD_APP_ATTEMPT_ID, else derived from CONTAINER_ID
    python: str = ""  # SHEPHERD_PYTHON
    job_dir: str = ""  # SHEPHERD_JOB_DIR
    log_dirs: tuple[str, ...] = ()  # LOG_DIRS (comma-separated)
    nm_host: str = ""  # NM_HOST
    nm_port: int = 0  # NM_PORT
    nm_http_port: int = 0  # NM_HTTP_PORT

    REQUIRED = ("SHEPHERD_RM_ADDRESS", "SHEPHERD_AMRM_TOKEN", "SHEPHERD_JOB_JSON")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AMEnvironment:
        """Read the environment. The job may come as ``SHEPHERD_JOB_JSON_B64`` (base64 of the JSON)
        instead of ``SHEPHERD_JOB_JSON``: a launcher that expands ``$VAR`` in environment values,
        as YARN's does, leaves base64 alone but would rewrite ``$`` in the job's commands."""
        env = os.environ if environ is None else environ
        job_json = env.get("SHEPHERD_JOB_JSON", "")
        if env.get("SHEPHERD_JOB_JSON_B64"):
            try:
                job_json = base64.b64decode(env["SHEPHERD_JOB_JSON_B64"], validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise AMEnvironmentError(f"SHEPHERD_JOB_JSON_B64 is not base64 of UTF-8 text: {exc}") from None
        missing = [name for name in cls.REQUIRED[:2] if not env.get(name)]
        if not job_json:
            missing.append("SHEPHERD_JOB_JSON")
        if missing:
            raise AMEnvironmentError("missing environment variable(s): " + ", ".join(missing))
        container = env.get("CONTAINER_ID", "")
        attempt = env.get("SHEPHERD_APP_ATTEMPT_ID", "")
        application = env.get("APPLICATION_ID", "")
        if container and not attempt:
            with contextlib.suppress(ValueError):  # informational only: a foreign id format is fine
                parsed = ids.parse_container_id(container)
                attempt = parsed.attempt_id
                application = application or parsed.app_id
        return cls(
            rm_address=env["SHEPHERD_RM_ADDRESS"],
            amrm_token=env["SHEPHERD_AMRM_TOKEN"],
            job_json=job_json,
            application_id=application,
            container_id=container,
            attempt_id=attempt,
            python=env.get("SHEPHERD_PYTHON", ""),
            job_dir=env.get("SHEPHERD_JOB_DIR", ""),
            log_dirs=tuple(d for d in env.get("LOG_DIRS", "").split(",") if d),
            nm_host=env.get("NM_HOST", ""),
            nm_port=_int(env.get("NM_PORT", "")),
            nm_http_port=_int(env.get("NM_HTTP_PORT", "")),
        )


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


# ---------------------------------------------------------------------- NM tokens


class NMTokenCache:
    """NM tokens by node (``host:port``), as handed out in allocate responses."""

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}

    def update(self, tokens: Iterable[pb.NMToken]) -> None:
        for t in tokens:
            self._tokens[node_address(t.node_id)] = t.token

    def get(self, node: str) -> str | None:
        return self._tokens.get(node)

    def __contains__(self, node: object) -> bool:
        return node in self._tokens

    def __len__(self) -> int:
        return len(self._tokens)


# ---------------------------------------------------------------------- RM


class AMRMClient:
    """The AM's side of the ApplicationMaster protocol."""

    def __init__(
        self,
        address: str,
        token: str,
        *,
        nm_tokens: NMTokenCache | None = None,
        call_timeout_s: float = 30.0,
        retry_s: float = 60.0,
    ) -> None:
        # the RM's gRPC address, or every RM of an active/standby pair, comma-separated (followed on failover)
        self.addresses = [a.strip() for a in address.split(",") if a.strip()]
        self.address = self.addresses[0]
        self._token = token
        self.nm_tokens = nm_tokens if nm_tokens is not None else NMTokenCache()
        self._call_timeout_s = call_timeout_s
        self._retry_s = retry_s
        self._channel: grpc.aio.Channel | None = None
        self._stub: Any = None
        self._response_id = 0
        self._table: dict[int, pb.ResourceAsk] = {}
        self._pending_releases: set[str] = set()
        self._registration: pb.RegisterApplicationMasterRequest | None = None
        self.resyncs = 0
        self.last_register_response: pb.RegisterApplicationMasterResponse | None = None

    def _get_stub(self) -> Any:
        if self._stub is None:
            # allocate responses may be large (thousands of containers): read up to what the RM sends
            self._channel = grpc.aio.insecure_channel(self.address, options=CLIENT_OPTIONS)
            self._stub = pbg.ApplicationMasterStub(self._channel)  # type: ignore[no-untyped-call]
        return self._stub

    async def _call(self, operation: str, request: Any) -> Any:
        """One RPC with the bearer token, retried on UNAVAILABLE/DEADLINE_EXCEEDED for ``retry_s``."""
        method = getattr(self._get_stub(), operation)
        give_up = time.monotonic() + self._retry_s
        delay = 0.1
        while True:
            try:
                return await method(request, metadata=_metadata(self._token), timeout=self._call_timeout_s)
            except grpc.aio.AioRpcError as exc:
                error = _as_error(operation, exc)
                if not error.retryable or time.monotonic() + delay > give_up:
                    raise error from None
                if error.code == "UNAVAILABLE" and len(self.addresses) > 1:
                    await self._fail_over()
                    method = getattr(self._get_stub(), operation)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def _fail_over(self) -> None:
        """The RM does not answer: talk to the next one of the pair from now on."""
        if self._channel is not None:
            await self._channel.close()
        self._channel, self._stub = None, None
        self.address = self.addresses[(self.addresses.index(self.address) + 1) % len(self.addresses)]
        log.warning("the ResourceManager does not answer; trying %s", self.address)

    async def register(self, host: str, port: int, tracking_url: str) -> pb.RegisterApplicationMasterResponse:
        self._registration = pb.RegisterApplicationMasterRequest(
            host=host, rpc_port=port, tracking_url=tracking_url
        )
        response: pb.RegisterApplicationMasterResponse = await self._call(
            "RegisterApplicationMaster", self._registration
        )
        self._response_id = 0
        self.last_register_response = response
        return response

    def outstanding_asks(self) -> list[pb.ResourceAsk]:
        """The ask table as the RM should have it now."""
        return [self._table[k] for k in sorted(self._table)]

    async def allocate(
        self,
        asks: Sequence[pb.ResourceAsk] = (),
        releases: Sequence[str] = (),
        progress: float = 0.0,
        *,
        blacklist_additions: Sequence[str] = (),
        blacklist_removals: Sequence[str] = (),
        signals: AmSignals = NO_SIGNALS,
        checkpoint: str | None = None,
    ) -> pb.AllocateResponse:
        """One heartbeat: send changed asks and releases (and the AM policy's signals, and the AM's progress
        checkpoint when it changed), get containers and completions back."""
        if self._registration is None:
            raise AMClientError("Allocate", "FAILED_PRECONDITION", "register before allocating")
        for ask in asks:
            if ask.num_containers > 0:
                self._table[ask.allocation_request_id] = ask
            else:
                self._table.pop(ask.allocation_request_id, None)
        self._pending_releases.update(releases)
        request = pb.AllocateRequest(
            response_id=self._response_id,
            asks=list(asks),
            releases=list(releases),
            progress=max(0.0, min(1.0, progress)),
            blacklist_additions=list(blacklist_additions),
            blacklist_removals=list(blacklist_removals),
        )
        if signals.size is not None:
            request.size.remaining_s = signals.size.remaining_s
            request.size.total_s = signals.size.total_s or 0.0
        if signals.guarantee is not None:
            request.guarantee.values.update(signals.guarantee.to_dict())
        request.control.extend(pb.ControlStep(
            age_s=c.age_s, progress=c.progress, raw_units=c.raw_units, smoothed_units=c.smoothed_units,
            requested_units=c.requested_units, finish_in_s=c.finish_in_s, status=c.status, held=c.held,
            pace=c.pace)
            for c in signals.control)
        if signals.model_build_s is not None:
            request.model_build_s = signals.model_build_s
        if checkpoint is not None:
            request.checkpoint = checkpoint
        try:
            response: pb.AllocateResponse = await self._call("Allocate", request)
        except AMClientError as exc:
            if not _is_not_registered(exc):
                raise
            log.warning("the RM does not know this attempt as registered; registering again")
            response = await self._resync(request)
        else:
            if response.am_command == pb.AM_RESYNC:
                log.warning("the RM asked for a resync; registering again and resending the ask table")
                response = await self._resync(request)
        self._absorb(response)
        return response

    async def _resync(self, request: pb.AllocateRequest) -> pb.AllocateResponse:
        """The RM lost this attempt's state: register again and resend everything outstanding."""
        assert self._registration is not None
        self.resyncs += 1
        self.last_register_response = await self._call("RegisterApplicationMaster", self._registration)
        self._response_id = 0
        full = pb.AllocateRequest(
            response_id=0,
            asks=self.outstanding_asks(),
            releases=sorted(self._pending_releases),
            progress=request.progress,
            blacklist_additions=list(request.blacklist_additions),
        )
        try:
            response: pb.AllocateResponse = await self._call("Allocate", full)
        except AMClientError as exc:
            if exc.code != "INVALID_ARGUMENT" or not self._pending_releases:
                raise
            # A restarted RM may no longer know containers released before; give up on those.
            log.warning("the RM refused the resent releases (%s); dropping them", exc.message)
            self._pending_releases.clear()
            del full.releases[:]
            response = await self._call("Allocate", full)
        return response

    def _absorb(self, response: pb.AllocateResponse) -> None:
        self._response_id = response.response_id
        self.nm_tokens.update(response.nm_tokens)
        for container in response.allocated_containers:
            ask = self._table.get(container.allocation_request_id)
            if ask is None:
                continue
            if ask.num_containers <= 1:
                del self._table[container.allocation_request_id]
            else:
                smaller = pb.ResourceAsk()
                smaller.CopyFrom(ask)
                smaller.num_containers = ask.num_containers - 1
                self._table[container.allocation_request_id] = smaller
        for status in response.completed_container_statuses:
            self._pending_releases.discard(status.container_id)

    async def finish(
        self, final_status: pb.FinalStatus, diagnostics: str = "", tracking_url: str = "", *, attempts: int = 20,
        stages: Sequence[pb.StageReport] = (),
    ) -> bool:
        """Unregister (with the run per stage, for the job's profile); the RM may answer ``is_unregistered =
        false`` while it persists, so ask again."""
        request = pb.FinishApplicationMasterRequest(
            final_status=final_status, diagnostics=diagnostics, tracking_url=tracking_url, stages=stages,
        )
        for _ in range(max(1, attempts)):
            response: pb.FinishApplicationMasterResponse = await self._call("FinishApplicationMaster", request)
            if response.is_unregistered:
                return True
            await asyncio.sleep(0.1)
        return False

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close(None)
            self._channel = None
            self._stub = None


# ---------------------------------------------------------------------- NodeManagers


class NMClient:
    """Starts and stops containers on NodeManagers, with the NM token of each node."""

    def __init__(self, nm_tokens: NMTokenCache, *, call_timeout_s: float = 30.0) -> None:
        self.nm_tokens = nm_tokens
        self._call_timeout_s = call_timeout_s
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[str, Any] = {}

    def _stub(self, node: str) -> Any:
        stub = self._stubs.get(node)
        if stub is None:
            channel = grpc.aio.insecure_channel(node)
            self._channels[node] = channel
            stub = self._stubs[node] = pbg.ContainerManagerStub(channel)  # type: ignore[no-untyped-call]
        return stub

    def _token(self, operation: str, node: str) -> str:
        token = self.nm_tokens.get(node)
        if token is None:
            raise ContainerLaunchError(operation, "InvalidToken", f"no NM token for node {node}")
        return token

    async def _call(self, operation: str, node: str, request: Any) -> Any:
        token = self._token(operation, node)
        try:
            return await getattr(self._stub(node), operation)(
                request, metadata=_metadata(token), timeout=self._call_timeout_s
            )
        except grpc.aio.AioRpcError as exc:
            error = _as_error(operation, exc)
            raise ContainerLaunchError(
                operation, error.code, f"{node}: {error.message}", retryable=error.retryable
            ) from None

    async def start_container(
        self, container: pb.Container, launch: pb.ContainerLaunchContext, *, retry_s: float = LAUNCH_RETRY_S
    ) -> None:
        """Start a container, retrying for ``retry_s`` while its NodeManager does not answer (it may be
        restarting). A call that timed out or lost its answer may still have started the container: when a retry
        hears that the container already exists on the node, it was started, and is not started again."""
        node = node_address(container.node_id)
        request = pb.StartContainersRequest(
            requests=[pb.StartContainerRequest(container_token=container.container_token, launch_context=launch)]
        )
        give_up = time.monotonic() + retry_s
        delay = 0.2
        tried = False
        while True:
            try:
                response: pb.StartContainersResponse = await self._call("StartContainers", node, request)
                break
            except ContainerLaunchError as exc:
                if not exc.retryable or time.monotonic() + delay > give_up:
                    raise
                log.warning("starting %s: %s; trying again", container.container_id, exc.message)
                tried = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)
        if tried and any(ALREADY_THERE in e.message for e in response.failed
                         if e.container_id in ("", container.container_id)):
            log.info("%s was started by an earlier try that lost its answer", container.container_id)
            return
        _raise_failed("StartContainers", container.container_id, response.failed)
        if container.container_id not in response.succeeded:
            raise ContainerLaunchError(
                "StartContainers", "UNKNOWN", f"{node} did not confirm {container.container_id}"
            )

    async def stop_container(self, container: pb.Container) -> None:
        node = node_address(container.node_id)
        request = pb.ContainerIdsRequest(container_ids=[container.container_id])
        response: pb.StopContainersResponse = await self._call("StopContainers", node, request)
        _raise_failed("StopContainers", container.container_id, response.failed)

    async def container_status(self, container: pb.Container) -> pb.ContainerStatus:
        node = node_address(container.node_id)
        request = pb.ContainerIdsRequest(container_ids=[container.container_id])
        response: pb.GetContainerStatusesResponse = await self._call("GetContainerStatuses", node, request)
        _raise_failed("GetContainerStatuses", container.container_id, response.failed)
        for status in response.statuses:
            if status.container_id == container.container_id:
                return status
        raise ContainerLaunchError("GetContainerStatuses", "UNKNOWN", f"no status for {container.container_id}")

    async def close(self) -> None:
        channels = list(self._channels.values())
        self._channels.clear()
        self._stubs.clear()
        for channel in channels:
            await channel.close(None)


def _raise_failed(operation: str, container_id: str, failed: Iterable[pb.ContainerError]) -> None:
    for error in failed:
        if error.container_id == container_id or not error.container_id:
            raise ContainerLaunchError(operation, error.exception or "UNKNOWN", error.message)
