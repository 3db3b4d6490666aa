"""YARN-style submission: POST /apps/new-application, then POST /apps with an
application-submission-context. The am-container-spec's commands, environment and local resources
become the AM container the RM launches, exactly as for a gRPC submission."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from fastapi import FastAPI, Request
from fastapi.responses import Response

from common.acl import MODIFY_APP, VIEW_APP
from common.errors import BadRequest
from common.resources import Resources
from rm.core.state_types import SubmitSpec
from rm.service import limits
from rm.service.authz import Authorizer
from rm.service.rest import render
from rm.service.rest.apps import APPS
from rm.service.rest.errors import check_writer, json_object

if TYPE_CHECKING:
    from rm.service.operations import Operations
    from rm.service.server import ResourceManager

YARN_MAX_ALLOCATION = Resources.of(memory_mb=8192, vcores=4)  # YARN's defaults, before any node registers
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESOURCE_TYPES = ("FILE", "ARCHIVE")

SUBMIT_EXAMPLE = {
    "application-id": "application_1700000000000_0001",
    "application-name": "sleeper",
    "queue": "default",
    "am-container-spec": {
        "commands": {"command": "sleep 30"},
        "environment": {"entry": [{"key": "GREETING", "value": "hello"}]},
        "local-resources": {"entry": [{"key": "input.txt", "value": {
            "resource": "file:///data/input.txt", "type": "FILE", "visibility": "APPLICATION"}}]},
    },
    "resource": {"memory": 256, "vCores": 1},
    "application-type": "YARN",
    "max-app-attempts": 2,
    "application-tags": {"tag": ["nightly"]},
}


def _str(body: dict[str, Any], key: str, default: str = "") -> str:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise BadRequest(f"{key} must be a string, got {type(value).__name__}")
    return value


def _int(body: dict[str, Any], key: str, default: int) -> int:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{key} must be an integer, got {value!r}")
    return value


def _bool(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise BadRequest(f"{key} must be true or false, got {value!r}")
    return value


def _entries(container: Any, what: str) -> list[dict[str, Any]]:
    """JAXB's map shape ``{"entry": [{"key": K, "value": V}, ...]}`` (a single entry may be bare)."""
    if container is None:
        return []
    if not isinstance(container, dict):
        raise BadRequest(f"{what} must be an object {{\"entry\": [...]}}")
    entries = container.get("entry", [])
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "key" in e for e in entries):
        raise BadRequest(f"{what}.entry must be a list of {{\"key\": ..., \"value\": ...}} objects")
    return entries


def _commands(spec: dict[str, Any]) -> list[str]:
    raw = spec.get("commands")
    if isinstance(raw, dict):
        raw = raw.get("command")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw) \
            or not any(c.strip() for c in raw):
        raise BadRequest("am-container-spec.commands must hold a command: {\"command\": \"...\"} or a list")
    return raw


def _environment(spec: dict[str, Any]) -> dict[str, str]:
    env: dict[str, str] = {}
    for e in _entries(spec.get("environment"), "am-container-spec.environment"):
        key, value = e["key"], e.get("value", "")
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            raise BadRequest(f"invalid environment variable name {key!r}")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise BadRequest(f"environment variable {key} must have a string value")
        env[key] = str(value)
    return env


def _local_resources(spec: dict[str, Any]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for e in _entries(spec.get("local-resources"), "am-container-spec.local-resources"):
        name, value = e["key"], e.get("value")
        if not isinstance(name, str) or not name or name.startswith("/") or ".." in name.split("/"):
            raise BadRequest(f"invalid local resource name {name!r}")
        if not isinstance(value, dict) or not isinstance(value.get("resource"), str):
            raise BadRequest(f"local resource {name}: value.resource must be a URL string")
        url = value["resource"]
        kind = str(value.get("type", "FILE")).upper()
        if kind not in RESOURCE_TYPES:
            raise BadRequest(f"local resource {name}: type {kind} is not supported (use FILE or ARCHIVE)")
        parsed = urlparse(url)
        if parsed.scheme not in ("", "file") or not parsed.path.startswith("/"):
            raise BadRequest(f"local resource {name}: only absolute file:// URLs can be localized, got {url!r}")
        out[name] = {"url": url, "type": kind}
    return out


def _app_acls(spec: dict[str, Any]) -> dict[str, str]:
    """The app's own ACLs, Hadoop's ``application-acls`` map of the am-container-spec (VIEW_APP, MODIFY_APP)."""
    out: dict[str, str] = {}
    for e in _entries(spec.get("application-acls"), "am-container-spec.application-acls"):
        kind, value = e["key"], e.get("value", "")
        if not isinstance(kind, str) or kind.upper() not in (VIEW_APP, MODIFY_APP):
            raise BadRequest(f"unknown application ACL {kind!r}; it should be one of [{VIEW_APP}, {MODIFY_APP}]")
        if not isinstance(value, str):
            raise BadRequest(f"the {kind.upper()} ACL must be a string such as \"alice,bob group\"")
        out[kind.upper()] = value
    return out


def _raw_tags(body: dict[str, Any]) -> list[str]:
    raw = body.get("application-tags")
    if raw is None:
        return []
    if isinstance(raw, dict):
        raw = raw.get("tag", [])
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise BadRequest("application-tags must be {\"tag\": [\"t1\", ...]}")
    return raw


def reduce_submission(raw: bytes | memoryview) -> bytes:
    """What the RM keeps of a submission's JSON body, as JSON: the body parsed and checked as any (BadRequest),
    its tags checked as ``submit_spec`` checks them, then its name cut and its tags cut to the first ten
    (``limits.bounded_submission`` would cut them after the same parse). Run by the bounds helper on big bodies,
    so a megabyte of tags is never parsed on the event loop."""
    body = limits.parse_json_object(raw)
    tags = _raw_tags(body)
    if tags:
        body["application-tags"] = {"tag": [limits.cut(t, limits.MAX_TAG) for t in tags[:limits.MAX_TAGS]]}
    name = body.get("application-name")
    if isinstance(name, str):
        body["application-name"] = limits.cut(name, limits.MAX_NAME)
    return json.dumps(body, separators=(",", ":")).encode()


def _resource(body: dict[str, Any]) -> Resources | None:
    raw = body.get("resource")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise BadRequest("resource must be {\"memory\": MB, \"vCores\": n}")
    memory = _int(raw, "memory", 1024)
    vcores = _int(raw, "vCores", 1)
    return Resources.of(memory_mb=memory, vcores=vcores)


def submit_spec(body: dict[str, Any], user: str) -> SubmitSpec:
    """A submission context as the core's SubmitSpec, as sent (every field's type checked; nothing is
    applied here; YARN's defaults and normalization are the submit operation's)."""
    app_id = body.get("application-id")
    if not isinstance(app_id, str) or not app_id:
        raise BadRequest("application-id is required (POST /ws/v1/cluster/apps/new-application gives one)")
    unmanaged = _bool(body, "unmanaged-AM")
    spec = body.get("am-container-spec")
    if unmanaged and spec is None:
        launch: dict[str, Any] = {"commands": [], "environment": {}, "local_resources": {}}
    elif not isinstance(spec, dict):
        raise BadRequest("am-container-spec is required: {\"commands\": {\"command\": \"...\"}}")
    else:
        launch = {"commands": _commands(spec), "environment": _environment(spec),
                  "local_resources": _local_resources(spec)}
    if isinstance(spec, dict) and (acls := _app_acls(spec)):
        launch["acls"] = acls
    resource = _resource(body)
    timeouts = body.get("application-timeouts")
    lifetime = 0.0
    if isinstance(timeouts, dict):
        items = timeouts.get("application-timeout", timeouts.get("timeout", []))
        for t in [items] if isinstance(items, dict) else items if isinstance(items, list) else []:
            if isinstance(t, dict) and str(t.get("type", "")).upper() == "LIFETIME":
                lifetime = float(_int(t, "value", 0))
    kwargs: dict[str, Any] = {"am_resource": resource} if resource is not None else {}
    return SubmitSpec(
        app_id=app_id, name=_str(body, "application-name", "N/A") or "N/A", queue=_str(body, "queue", "default"),
        user=user, app_type=_str(body, "application-type"), priority=_int(body, "priority", 0),
        am_launch=launch, max_attempts=_int(body, "max-app-attempts", 0), tags=tuple(_raw_tags(body)),
        unmanaged=unmanaged, lifetime_s=lifetime, reservation_id=_str(body, "reservation-id").strip(),
        keep_containers=_bool(body, "keep-containers-across-application-attempts"), **kwargs,
    )


def add_submit_routes(api: FastAPI, rm: ResourceManager, ops: Operations) -> None:
    secret = rm.cfg.client_secret

    @api.post(f"{APPS}/new-application", tags=["apps"], summary="A new application id (no body)")
    async def new_application(request: Request) -> dict[str, Any]:
        check_writer(request, secret)
        new = await ops.new_application()
        request.state.audit_app = new.app_id
        mx = new.max_allocation or YARN_MAX_ALLOCATION
        return {"application-id": new.app_id, "maximum-resource-capability": render.yarn_resource(mx)}

    @api.post(APPS, status_code=202, tags=["apps"], summary="Submit an application (202, Location)",
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                  "schema": {"type": "object"}, "example": SUBMIT_EXAMPLE}}}})
    async def submit(request: Request) -> Response:
        who = check_writer(request, secret)
        body = await json_object(request, reduce=(rm.bounds, "rest-submission"))
        spec = limits.bounded_submission(submit_spec(body, who.user))
        request.state.audit_app = spec.app_id
        Authorizer(rm).submit(who, spec.queue, spec.app_id)
        await ops.submit(spec)  # a known id is answered as accepted, as by every door
        location = f"{str(request.base_url).rstrip('/')}{APPS}/{spec.app_id}"
        return Response(status_code=202, headers={"Location": location})
