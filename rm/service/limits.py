"""Bounds on what a caller can make the RM hold or chew on, the same through every door (S19).

Strings are cut, not refused, before they are stored (as YARN cuts an application type to 20 characters);
an allocate call with more asks than ``MAX_ASKS_PER_ALLOCATE`` is refused whole, before any of it is applied,
and before any of its asks is even built: the doors count them on the serialized request (``allocate_precheck``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from common.errors import BadRequest

MAX_NAME = 1024  # application and reservation names
MAX_TAGS = 10  # YARN's yarn.resourcemanager.application-tags max count (YarnConfiguration.APPLICATION_MAX_TAGS)
MAX_TAG = 100  # YARN's APPLICATION_MAX_TAG_LENGTH
MAX_DIAGNOSTICS = 64 * 1024  # kill reasons and an AM's final diagnostics
MAX_ASKS_PER_ALLOCATE = 10_000
MAX_RELEASES_PER_ALLOCATE = 100_000
MAX_JSON_DEPTH = 64
# the largest gRPC message, Hadoop IPC packet and REST body the RM reads: a bigger one is refused from its announced
# length, before any of it is held (a chunked REST body once that much has come). 4 MB is gRPC's own default; it
# holds the largest call the other bounds allow (an allocate releasing 100,000 containers is about 3.9 MB; Hadoop
# allows IPC packets of 128 MB, ipc.maximum.data.length, but the calls of YARN clients are far smaller), and every
# byte under it is received on the RM's one event loop (an allocate's count, for a big one, is made in a helper
# process: rm/service/bounds_worker.py) (S19)
MAX_MESSAGE = 4 * 1024 * 1024
T = TypeVar("T")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


# the longest message a gRPC refusal carries, in UTF-8 bytes: the details travel percent-encoded (up to 3 bytes
# each) in the grpc-message trailer, and a client drops the whole answer when its metadata is over 8 KB
MAX_ERROR_DETAIL = 2048


def error_detail(message: str) -> str:
    """``message`` cut to ``MAX_ERROR_DETAIL`` bytes (a refusal may quote what the caller sent, however big)."""
    data = message.encode("utf-8", "replace")
    if len(data) <= MAX_ERROR_DETAIL:
        return message
    return data[:MAX_ERROR_DETAIL].decode("utf-8", "ignore") + f"... ({len(message)} characters in all)"


def first_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """The tags a submission keeps (``bounded_submission`` cuts the rest), taken from a parsed message's repeated
    field without building the others: 100,000 tags cost the loop 10 objects, not 100,000."""
    return tuple(tags[:MAX_TAGS])


def bounded_submission(spec: T) -> T:
    """A SubmitSpec with its free-text fields cut to size (name, tags, inputs/outputs as tags)."""
    changes: dict[str, Any] = {}
    name = getattr(spec, "name", "")
    if isinstance(name, str) and len(name) > MAX_NAME:
        changes["name"] = cut(name, MAX_NAME)
    tags = tuple(getattr(spec, "tags", ()))
    if len(tags) > MAX_TAGS or any(len(t) > MAX_TAG for t in tags):
        changes["tags"] = tuple(cut(t, MAX_TAG) for t in tags[:MAX_TAGS])
    return dataclasses.replace(spec, **changes) if changes else spec  # type: ignore[type-var]


def check_allocate(asks: int, releases: int) -> None:
    if asks > MAX_ASKS_PER_ALLOCATE:
        raise BadRequest(f"an allocate call may carry at most {MAX_ASKS_PER_ALLOCATE} asks, not {asks}: send the "
                         "changes in several calls")
    if releases > MAX_RELEASES_PER_ALLOCATE:
        raise BadRequest(f"an allocate call may release at most {MAX_RELEASES_PER_ALLOCATE} containers, "
                         f"not {releases}")


def repeated_counter(message: type[Message], *fields: str) -> Callable[[bytes | memoryview], tuple[int, ...]]:
    """How many elements the repeated fields ``fields`` (of messages or strings) of a serialized ``message`` hold,
    read without building any of them: the bytes are parsed as a message that has only these fields, each element
    kept as its raw bytes (for 100,000 asks, a fifth of the time of a full parse and none of its objects)."""
    desc = message.DESCRIPTOR
    proto = descriptor_pb2.FileDescriptorProto(name=f"shepherd/counting/{desc.full_name}.proto",
                                               package="shepherd.counting", syntax="proto3")
    shadow = proto.message_type.add(name=desc.name)
    for name in fields:
        field = desc.fields_by_name[name]
        if not field.is_repeated or field.type not in (
                FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
            raise ValueError(f"{desc.full_name}.{name} is not a repeated field of messages or strings")
        shadow.field.add(name=name, number=field.number, type=FieldDescriptor.TYPE_BYTES,
                         label=FieldDescriptor.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    counting = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"shepherd.counting.{desc.name}"))

    def count(raw: bytes | memoryview) -> tuple[int, ...]:
        parsed = counting.FromString(raw)  # type: ignore[arg-type]  # upb parses any buffer
        return tuple(len(getattr(parsed, name)) for name in fields)
    return count


def allocate_precheck(message: type[Message], asks: str, releases: str) -> Callable[[bytes | memoryview], None]:
    """``check_allocate`` on a serialized allocate request (``message``, with its ask and release fields), before
    it is parsed: raises BadRequest. Bytes that do not parse are left to the parse that follows."""
    count = repeated_counter(message, asks, releases)

    def check(raw: bytes | memoryview) -> None:
        try:
            n_asks, n_releases = count(raw)
        except DecodeError:
            return
        check_allocate(n_asks, n_releases)
    return check


def parse_json_object(body: bytes | memoryview) -> dict[str, Any]:
    """A request body as a JSON object, or BadRequest: not JSON (NaN and Infinity are not), not an object, or
    nested deeper than ``MAX_JSON_DEPTH``."""
    try:
        data = json.loads(bytes(body), parse_constant=_not_json)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"the request body is not valid JSON: {exc}") from None
    except RecursionError:  # nested deeper than the parser goes
        raise BadRequest(f"the request body nests deeper than {MAX_JSON_DEPTH} levels") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the request body must be a JSON object, not {type(data).__name__}")
    if json_depth(data) > MAX_JSON_DEPTH:
        raise BadRequest(f"the request body nests deeper than {MAX_JSON_DEPTH} levels")
    return data


def _not_json(name: str) -> Any:
    """NaN and Infinity, which Python's parser takes but JSON has not."""
    raise BadRequest(f"the request body is not valid JSON: {name} is not a JSON number")


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in a parsed JSON value (iteratively: no recursion to exhaust). Only
    lists and objects are ever put on the stack, so a body of 100,000 strings costs a pass over them, not 100,000
    stack entries (2 ms, not 21)."""
    if type(value) is not dict and type(value) is not list:
        return 0
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if depth > MAX_JSON_DEPTH:
                return depth
        for child in v.values() if type(v) is dict else v:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return deepest
