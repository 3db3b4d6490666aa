"""The ContainerManager gRPC service: AMs (and the RM) start, stop and query containers here.

Every call carries ``authorization: Bearer <NM token>``; each start also carries a container token.
Both are signed with a key the RM handed out (at registration and with heartbeats: the keys roll).
Problems with one container are reported per container (YARN's ``failed`` list); a missing or garbage
NM token fails the whole call.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from common import ids, tokens
from nodemanager.containers import KILLED_BY_APPMASTER, ContainerExists, ContainerTable
from nodemanager.launch import LaunchError, LaunchSpec, LocalResource
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg

log = logging.getLogger(__name__)

INVALID_TOKEN = "org.apache.hadoop.yarn.exceptions.InvalidToken"
YARN_EXCEPTION = "org.apache.hadoop.yarn.exceptions.YarnException"

Context = grpc.aio.ServicerContext[Any, Any]
T = TypeVar("T")


class TokenKeys:
    """The RM's container-token keys this node accepts, by id: those the RM last handed it (the key that signs
    and the one before it, or the one after it once made), so tokens signed just before the RM rolled its key
    stay valid, and a key two rolls old is refused. A token that names its key is checked with that key only;
    one that names none (from an RM whose keys did not roll) with any of them."""

    def __init__(self) -> None:
        self._keys: list[tuple[int, bytes]] = []  # (key id, key), newest first
        # handed over with the keys at registration: the digest of the credential that opens this node's web
        # pages and /metrics (common.credentials.reads_verifier); empty while the RM keeps reads open
        self.reads_verifier = b""

    def replace(self, keys: Iterable[tuple[int, bytes]]) -> None:
        """The keys the RM handed out: these, and no others, are accepted from now on."""
        given = sorted(((i, k) for i, k in keys if k), key=lambda pair: pair[0], reverse=True)
        if given:
            self._keys = given

    def update(self, key: bytes, key_id: int = 0) -> None:
        """One key from an RM that hands out only the key that signs: it and the one before it are accepted."""
        if key and (not self._keys or self._keys[0][1] != key):
            self._keys = [(key_id, key), *self._keys[:1]]

    def __bool__(self) -> bool:
        return bool(self._keys)

    def ids(self) -> tuple[int, ...]:
        return tuple(i for i, _ in self._keys)

    def all(self) -> tuple[bytes, ...]:
        """The keys tokens may be signed with, newest first."""
        return tuple(k for _, k in self._keys)

    def read_nm_token(self, token: str) -> tuple[str, str]:
        return self._first(token, lambda key: tokens.read_nm_token(key, token))

    def read_container_token(self, token: str, *, now: float) -> tokens.ContainerTokenFields:
        return self._first(token, lambda key: tokens.read_container_token(key, token, now=now))

    def _first(self, token: str, read: Callable[[bytes], T]) -> T:
        named = tokens.key_id_of(token)
        candidates = [k for i, k in self._keys if named is None or i == named]
        if named is not None and not candidates and self._keys:
            raise tokens.InvalidToken(f"token signed with key {named}, which this NodeManager does not accept "
                                      f"(it accepts keys {', '.join(str(i) for i in self.ids())})")
        error: tokens.InvalidToken | None = None
        for key in candidates:
            try:
                return read(key)
            except tokens.InvalidToken as exc:
                error = error or exc
        raise error or tokens.InvalidToken("the NodeManager has no token key yet")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who an NM token speaks for."""

    attempt_id: str
    app_id: str
    node_id: str


def _error(container_id: str, exception: str, message: str) -> pb.ContainerError:
    return pb.ContainerError(container_id=container_id, exception=exception, message=message)


def _claimed_container_id(token: str) -> str:
    """The container id a (not yet verified) container token claims, only to label an error."""
    try:
        body = token.split(".", 1)[0]
        fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        claimed = fields.get("container_id") if isinstance(fields, dict) else None
    except (ValueError, TypeError):
        return ""
    return claimed if isinstance(claimed, str) and len(claimed) < 128 else ""


def launch_spec(ctx: pb.ContainerLaunchContext) -> LaunchSpec:
    return LaunchSpec(
        commands=tuple(ctx.commands),
        environment=dict(ctx.environment),
        local_resources={
            name: LocalResource(url=res.url, type=(res.type or "FILE").upper())
            for name, res in ctx.local_resources.items()
        },
    )


class ContainerManagerService(pbg.ContainerManagerServicer):
    def __init__(self, table: ContainerTable, keys: TokenKeys, node_id: str) -> None:
        self._table = table
        self._keys = keys
        self._node_id = node_id

    async def _caller(self, context: Context) -> Caller:
        auth = ""
        for key, value in context.invocation_metadata() or ():
            if key.lower() == "authorization" and isinstance(value, str):
                auth = value
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED, "an NMToken is required: 'authorization: Bearer <token>'"
            )
        if not self._keys:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE, "the NodeManager is not registered with the ResourceManager yet"
            )
        try:
            attempt, node = self._keys.read_nm_token(token.strip())
            app = ids.app_of_attempt(attempt)
        except (tokens.InvalidToken, ValueError) as exc:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, f"invalid NMToken: {exc}")
        return Caller(attempt_id=attempt, app_id=app, node_id=node)

    def _node_error(self, caller: Caller, container_id: str) -> pb.ContainerError | None:
        if caller.node_id != self._node_id:
            return _error(
                container_id,
                INVALID_TOKEN,
                f"NMToken for node {caller.node_id} was presented to node {self._node_id}",
            )
        return None

    def _owned(self, caller: Caller, container_id: str) -> pb.ContainerError | None:
        """An error unless ``caller`` may act on ``container_id`` (a known container of its app)."""
        denied = self._node_error(caller, container_id)
        if denied is not None:
            return denied
        try:
            app = ids.parse_container_id(container_id).app_id
        except ValueError:
            return _error(container_id, YARN_EXCEPTION, f"Invalid ContainerId: {container_id!r}")
        if app != caller.app_id:
            return _error(
                container_id,
                INVALID_TOKEN,
                f"Unauthorized request: the NMToken of {caller.attempt_id} cannot act on {container_id}",
            )
        if self._table.get(container_id) is None:
            return _error(
                container_id, YARN_EXCEPTION, f"Container {container_id} is not handled by this NodeManager"
            )
        return None

    async def StartContainers(
        self, request: pb.StartContainersRequest, context: Context
    ) -> pb.StartContainersResponse:
        caller = await self._caller(context)
        response = pb.StartContainersResponse()
        for item in request.requests:
            error, started = self._start_one(caller, item)
            if error is not None:
                log.warning("refused container %s: %s", error.container_id or "?", error.message)
                response.failed.append(error)
            else:
                response.succeeded.append(started)
        return response

    def _start_one(
        self, caller: Caller, item: pb.StartContainerRequest
    ) -> tuple[pb.ContainerError | None, str]:
        claimed = _claimed_container_id(item.container_token)
        try:
            token = self._keys.read_container_token(item.container_token, now=time.time())
        except tokens.InvalidToken as exc:
            return _error(claimed, INVALID_TOKEN, f"Invalid container token: {exc}"), ""
        cid = token.container_id
        denied = self._node_error(caller, cid)
        if denied is not None:
            return denied, ""
        if token.node_id != self._node_id:
            msg = f"Container token for {cid} is for node {token.node_id}, this is node {self._node_id}"
            return _error(cid, INVALID_TOKEN, msg), ""
        if token.app_id != caller.app_id:
            msg = f"Unauthorized request: the NMToken of {caller.attempt_id} cannot start {cid} of {token.app_id}"
            return _error(cid, INVALID_TOKEN, msg), ""
        try:
            if ids.parse_container_id(cid).app_id != token.app_id:
                return _error(cid, INVALID_TOKEN, f"Container {cid} does not belong to {token.app_id}"), ""
            self._table.start(token, launch_spec(item.launch_context))
        except (ValueError, ContainerExists, LaunchError) as exc:
            return _error(cid, YARN_EXCEPTION, str(exc)), ""
        log.info("started container %s for %s (user %s)", cid, caller.attempt_id, token.user)
        return None, cid

    async def StopContainers(
        self, request: pb.ContainerIdsRequest, context: Context
    ) -> pb.StopContainersResponse:
        caller = await self._caller(context)
        response = pb.StopContainersResponse()
        for cid in request.container_ids:
            error = self._owned(caller, cid)
            if error is not None:
                response.failed.append(error)
                continue
            self._table.request_stop(cid, KILLED_BY_APPMASTER, "Container killed by the ApplicationMaster.")
            response.succeeded.append(cid)
        return response

    async def GetContainerStatuses(
        self, request: pb.ContainerIdsRequest, context: Context
    ) -> pb.GetContainerStatusesResponse:
        caller = await self._caller(context)
        response = pb.GetContainerStatusesResponse()
        for cid in request.container_ids:
            error = self._owned(caller, cid)
            container = self._table.get(cid)
            if error is not None or container is None:
                response.failed.append(error or _error(cid, YARN_EXCEPTION, f"Unknown container {cid}"))
            else:
                response.statuses.append(container.status())
        return response
