"""The NodeManager's small web server (asyncio streams, GET/HEAD only), YARN's NM paths:

GET /ws/v1/node/info                                  node information (JSON)
GET /ws/v1/node/containers                            containers on this node (JSON)
GET /ws/v1/node/containers/{id}                       one container (JSON)
GET /ws/v1/node/containers/{id}/logs/{file}           a log file (stdout, stderr, ...) as text
GET /metrics                                          Prometheus metrics (nodemanager/metrics.py)
GET / and /node                                       the node's web page (nodemanager/page.py)

When the RM requires a credential for reads (``shepherd.resourcemanager.authenticate-reads``), it hands its nodes
a digest of the client secret at registration, and every path here then needs that secret: as a bearer token
(``Authorization: Bearer``, what Prometheus and scripts send) or as the password of HTTP Basic authentication
(what a browser asks for after the 401, whatever the user name). Until the node has registered with such an RM,
or when it hands over none, the pages are open, as YARN's are.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST

from common import credentials, ids
from common.resources import MEMORY, VCORES
from nodemanager.containers import Container, ContainerTable
from nodemanager.launch import container_dirs
from nodemanager.metrics import NodeMetrics
from nodemanager.page import node_page

log = logging.getLogger(__name__)

_LOG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
}
_CHUNK = 64 * 1024
_CHALLENGE = 'WWW-Authenticate: Basic realm="shepherd node", charset="UTF-8"\r\nWWW-Authenticate: Bearer\r\n'


def presented_secret(authorization: str) -> str:
    """The secret an Authorization header presents: a bearer token, or the password of Basic credentials."""
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return ""
        return decoded.partition(":")[2]
    return ""


def _remote_exception(status: int, exception: str, message: str) -> tuple[int, str, bytes]:
    body = {
        "RemoteException": {
            "exception": exception,
            "message": message,
            "javaClassName": f"org.apache.hadoop.yarn.webapp.{exception}",
        }
    }
    return status, "application/json", json.dumps(body).encode()


class NodeWebServer:
    def __init__(self, work_dir: Path, node_info: Callable[[], dict[str, Any]], rm_web_url: str = "",
                 reads_verifier: Callable[[], bytes] = lambda: b"") -> None:
        self.table: ContainerTable | None = None  # attached once the ports are known
        self.reads_verifier = reads_verifier  # what opens reads now (from the RM); b"": they are open
        self.rm_web_url = rm_web_url  # the RM's web UI, linked from the node's page
        self._work_dir = work_dir
        self._node_info = node_info
        self._server: asyncio.Server | None = None
        self.port = 0
        self.metrics = NodeMetrics(lambda: self.table, node_info)

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._handle, host, port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), 10.0)
            authorization = ""
            for _ in range(100):  # only Authorization is used; read past the others (bounded)
                line = await asyncio.wait_for(reader.readline(), 10.0)
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "authorization":
                    authorization = value.strip()
            parts = request_line.decode("latin-1").split()
            if len(parts) != 3:
                await self._respond(
                    writer, *_remote_exception(400, "BadRequestException", "malformed request")
                )
                return
            method, target = parts[0], parts[1]
            if method not in ("GET", "HEAD"):
                await self._respond(writer, *_remote_exception(405, "WebApplicationException", "only GET"))
                return
            verifier = self.reads_verifier()
            if verifier and not credentials.opens_reads(verifier, presented_secret(authorization)):
                await self._respond(writer, *_remote_exception(
                    401, "AuthorizationException", "this node's pages need the cluster's client secret: send "
                    "Authorization: Bearer <secret>, or sign in with it as the password"), method == "HEAD",
                    extra=_CHALLENGE)
                return
            await self._route(writer, unquote(urlsplit(target).path), head=method == "HEAD")
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("web request failed")
            with contextlib.suppress(Exception):
                await self._respond(
                    writer, *_remote_exception(500, "WebApplicationException", "internal error")
                )
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _route(self, writer: asyncio.StreamWriter, path: str, *, head: bool) -> None:
        segments = [s for s in path.split("/") if s]
        if segments == ["metrics"]:
            await self._respond(writer, 200, CONTENT_TYPE_LATEST, self.metrics.render(), head)
            return
        if segments in ([], ["node"]):
            containers = [self._container_info(c) for c in (self.table.all() if self.table else [])]
            html = node_page(self._node_info(), containers, rm_web_url=self.rm_web_url,
                             now_ms=int(time.time() * 1000))
            await self._respond(writer, 200, "text/html; charset=utf-8", html.encode(), head)
            return
        if segments[:3] != ["ws", "v1", "node"]:
            await self._respond(
                writer, *_remote_exception(404, "NotFoundException", f"no resource {path}"), head
            )
            return
        rest = segments[3:]
        if rest in ([], ["info"]):
            await self._json(writer, {"nodeInfo": self._node_info()}, head)
        elif rest == ["containers"]:
            containers = [self._container_info(c) for c in (self.table.all() if self.table else [])]
            await self._json(writer, {"containers": {"container": containers}}, head)
        elif len(rest) == 2 and rest[0] == "containers":
            c = self.table.get(rest[1]) if self.table else None
            if c is None:
                msg = f"container {rest[1]} not found on this node"
                await self._respond(writer, *_remote_exception(404, "NotFoundException", msg), head)
            else:
                await self._json(writer, {"container": self._container_info(c)}, head)
        elif len(rest) == 4 and rest[0] == "containers" and rest[2] == "logs":
            await self._log_file(writer, rest[1], rest[3], head)
        else:
            await self._respond(
                writer, *_remote_exception(404, "NotFoundException", f"no resource {path}"), head
            )

    def _container_info(self, c: Container) -> dict[str, Any]:
        info = self._node_info()
        return {
            "id": c.container_id,
            "appId": c.app_id,
            "state": c.state,
            "exitCode": c.exit_status,
            "diagnostics": c.diagnostics,
            "user": c.user,
            "totalMemoryNeededMB": c.resource.get(MEMORY, 0),
            "totalVCoresNeeded": c.resource.get(VCORES, 0),
            "nodeId": info.get("id", ""),
            "containerLogsLink": f"http://{info.get('nodeHTTPAddress', '')}/ws/v1/node/containers/"
            f"{c.container_id}/logs/stdout",
            "containerLogFiles": ["stdout", "stderr"],
            "startTime": c.start_time_ms,
            "finishTime": c.finish_time_ms,
        }

    async def _log_file(self, writer: asyncio.StreamWriter, container_id: str, name: str, head: bool) -> None:
        try:
            app = ids.parse_container_id(container_id).app_id
        except ValueError:
            msg = f"Invalid ContainerId: {container_id}"
            await self._respond(writer, *_remote_exception(400, "BadRequestException", msg), head)
            return
        path = container_dirs(self._work_dir, app, container_id).logs / name
        if not _LOG_NAME.match(name) or not path.is_file():
            msg = f"log file {name} of {container_id} not found on this node"
            await self._respond(writer, *_remote_exception(404, "NotFoundException", msg), head)
            return
        size = path.stat().st_size
        await self._head(writer, 200, "text/plain; charset=utf-8", size)
        if not head:
            with path.open("rb") as f:
                remaining = size  # serve what existed when the request came, even if it grows
                while remaining > 0 and (chunk := f.read(min(_CHUNK, remaining))):
                    remaining -= len(chunk)
                    writer.write(chunk)
                    await writer.drain()

    async def _json(self, writer: asyncio.StreamWriter, body: dict[str, Any], head: bool) -> None:
        await self._respond(writer, 200, "application/json", json.dumps(body).encode(), head)

    async def _respond(
        self, writer: asyncio.StreamWriter, status: int, content_type: str, body: bytes, head: bool = False,
        extra: str = "",
    ) -> None:
        await self._head(writer, status, content_type, len(body), extra)
        if not head:
            writer.write(body)
            await writer.drain()

    @staticmethod
    async def _head(writer: asyncio.StreamWriter, status: int, content_type: str, length: int,
                    extra: str = "") -> None:
        writer.write(
            (
                f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\n{extra}"
                f"Content-Type: {content_type}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
            ).encode("latin-1")
        )
        await writer.drain()
