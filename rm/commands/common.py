"""Options and helpers the command groups share."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import typer
from google.protobuf.json_format import MessageToDict
from rich.console import RenderableType

from proto import shepherd_pb2 as pb
from rm.client import ClientError
from rm.commands.output import error, show
from rm.commands.rest import RestClient
from rm.commands.target import resolve_rest_option, resolve_rm_option

RM_OPT = typer.Option(None, "--rm", envvar="SHEPHERD_RM", callback=resolve_rm_option,
                      help="ResourceManager gRPC address host:port (default: `shepherd --cluster NAME`, "
                           "$SHEPHERD_RM, the current cluster of `shepherd config clusters`, or 127.0.0.1:7030)")
REST_OPT = typer.Option(None, "--rest", callback=resolve_rest_option,
                        help="ResourceManager REST URL (default: `shepherd --cluster NAME`, $SHEPHERD_REST, the "
                             "current cluster of `shepherd config clusters`, yarn.resourcemanager.webapp.address "
                             "from $HADOOP_CONF_DIR, or http://127.0.0.1:8088)")
FINAL = frozenset({"FINISHED", "FAILED", "KILLED"})
USAGE_ERRORS = frozenset({"INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION"})


def next_clock_time(text: str, now: float) -> float:
    """``HH:MM[:SS]`` as the next such local time: today, or tomorrow if it has passed. ValueError otherwise."""
    parts = [int(p) for p in text.strip().split(":")]
    if len(parts) not in (2, 3) or not (0 <= parts[0] < 24 and 0 <= parts[1] < 60 and 0 <= parts[-1] < 60):
        raise ValueError(text)
    day = time.localtime(now)
    at = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, parts[0], parts[1],
                      parts[2] if len(parts) == 3 else 0, 0, 0, -1))
    return at if at > now else at + 86_400


def fail(exc: ClientError) -> typer.Exit:
    """Print the RM's refusal; exit 2 for a refused request, 1 for anything else (RM unreachable...)."""
    error(exc.message)
    return exit_for(exc)


def show_rest(rest: str | None, path: str, key: str, output: str, view: Callable[[Any], RenderableType], *,
              watch: bool = False, interval: float = 2.0) -> None:
    """GET one object of the RM's REST API (the ``key`` member of the answer at ``path``) and print it as
    ``output``, once or (``watch``) over and over; a refusal is printed once and exits non-zero."""
    with RestClient(rest) as client:
        def fetch() -> Any:
            try:
                return client.call("GET", path)[key]
            except ClientError as exc:
                raise fail(exc) from None

        show(fetch, output, view, watch=watch, interval=interval)


def exit_for(exc: ClientError) -> typer.Exit:
    return typer.Exit(2 if exc.code in USAGE_ERRORS else 1)


def res(r: pb.Resource) -> str:
    v = dict(r.values)
    parts = [f"{v.get('memory-mb', 0)} MB", f"{v.get('vcores', 0)} vcores"]
    parts += [f"{k}={n}" for k, n in sorted(v.items()) if k not in ("memory-mb", "vcores")]
    return ", ".join(parts)


def res_dict(d: dict[str, Any] | None) -> str:
    if not d:
        return "-"
    parts = [f"{d.get('memory-mb', 0)} MB", f"{d.get('vcores', 0)} vcores"]
    parts += [f"{k}={n}" for k, n in sorted(d.items()) if k not in ("memory-mb", "vcores")]
    return ", ".join(parts)


def as_dict(msg: Any) -> dict[str, Any]:
    return MessageToDict(msg, preserving_proto_field_name=True)
