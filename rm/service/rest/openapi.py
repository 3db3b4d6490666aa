"""The OpenAPI document (``/openapi.json``) as the RM answers, not as FastAPI guesses.

FastAPI documents a 422 ``HTTPValidationError`` for every operation with parameters and nothing else; the RM
never answers 422 (a request it cannot take is a 400 ``RemoteException``, rest/errors.py) and answers every
refusal with YARN's ``RemoteException`` body. This completes the generated document once, when it is first
asked for: the error statuses each operation can answer with that body, and the query parameters the
handlers read from the raw query string (YARN's filters), so that clients generated from the document, and
the fuzzer that checks the RM against it (bench/fuzz_rest.py), see the API that is served.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI

REMOTE_EXCEPTION: dict[str, Any] = {
    "type": "object",
    "title": "RemoteException",
    "description": "YARN's error body; `exception` is the simple name of `javaClassName`.",
    "required": ["RemoteException"],
    "properties": {"RemoteException": {
        "type": "object",
        "required": ["exception", "message", "javaClassName"],
        "properties": {"exception": {"type": "string"}, "message": {"type": "string"},
                       "javaClassName": {"type": "string"}},
    }},
}
REF = {"$ref": "#/components/schemas/RemoteException"}

# what each error status means, for the document's descriptions
ERRORS = {
    400: "Bad input (BadRequestException and kin): malformed JSON, wrong types, unknown values; nothing changed",
    401: "A write without credentials (AuthorizationException); nothing changed",
    403: ("A request with wrong credentials, a write the caller may not make, or the details of an app it may not "
          "view (ForbiddenException, AccessControlException); nothing changed"),
    404: "The app, attempt, node or other object the path names is not known (NotFoundException)",
    409: "Valid, but not in the object's current state (ConflictException); nothing changed",
    413: "The request body is larger than the RM takes; refused before it is read",
    503: "The change could not be written to the state store yet (RetriableException): retry the same request",
}
WRITE_ERRORS = (400, 401, 403, 409, 413, 503)


def _query(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": schema or {"type": "string"}}


_STATES = "a comma list, case-insensitive; an unknown one is a 400"
_MS = {"type": "integer", "minimum": 0}
# the query parameters of handlers that read the raw query string (YARN's filters), by (method, path)
QUERY_PARAMETERS: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("get", "/ws/v1/cluster/apps"): [
        _query("states", f"application states, {_STATES}"),
        _query("state", "an application state (legacy spelling of states)"),
        _query("finalStatus", f"final statuses, {_STATES}"),
        _query("user", "the submitting user"),
        _query("queue", "a queue by path or leaf name: its unfinished apps and its descendants'; unknown → 400"),
        _query("limit", "at most this many apps (> 0)", {"type": "integer", "minimum": 1}),
        _query("startedTimeBegin", "started at or after (ms since the epoch)", _MS),
        _query("startedTimeEnd", "started at or before (ms since the epoch)", _MS),
        _query("finishedTimeBegin", "finished at or after (ms since the epoch)", _MS),
        _query("finishedTimeEnd", "finished at or before (ms since the epoch)", _MS),
        _query("applicationTypes", "a comma list of application types, case-insensitive"),
        _query("applicationTags", "a comma list of tags (any matches), case-insensitive"),
        _query("name", "the application name"),
        _query("deSelects", "fields to leave out: resourceRequests"),
    ],
    ("get", "/ws/v1/cluster/reservation/list"): [
        _query("queue", "a reservable queue (default `default`; empty or unknown → 400)"),
        _query("reservation-id", "one reservation"),
        _query("start-time", "overlapping from (ms; invalid → 0)"),
        _query("end-time", "overlapping until (ms; invalid → Long.MAX)"),
        _query("include-resource-allocations", "true: with the bookings"),
    ],
    ("get", "/ws/v1/shepherd/slo-proposals"): [
        _query("status", f"proposal statuses, {_STATES}"),
    ],
}
# every write takes the user it acts for (Hadoop's pseudo authentication and proxy-user spellings)
WRITE_PARAMETERS = [
    _query("user.name", "the user the write is made as (with the client secret: the user it acts for)"),
    _query("doAs", "the user the write acts for (proxy user)"),
]


def complete(doc: dict[str, Any]) -> dict[str, Any]:
    """Document the RemoteException answers and the raw query parameters of every operation (in place)."""
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas["RemoteException"] = REMOTE_EXCEPTION
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            params = op.setdefault("parameters", [])
            known = {(p.get("in"), p.get("name")) for p in params}
            extra = list(QUERY_PARAMETERS.get((method, path), []))
            if method != "get":
                extra += WRITE_PARAMETERS
            params += [p for p in extra if ("query", p["name"]) not in known]
            if not params:
                del op["parameters"]
            responses = op["responses"]
            responses.pop("422", None)
            codes: list[int] = list(WRITE_ERRORS) if method != "get" else ([400] if params else [])
            if any(p.get("in") == "path" for p in params):
                codes.append(404)
            if method == "get" and "/apps" in path:  # reads of apps know their caller (VIEW_APP, docs/security.md)
                codes.append(403)
            for code in sorted(set(codes)):
                responses.setdefault(str(code), {
                    "description": ERRORS[code], "content": {"application/json": {"schema": REF}}})
    for name in ("HTTPValidationError", "ValidationError"):  # FastAPI's 422 body, gone with the 422s
        if f"#/components/schemas/{name}" not in json.dumps(doc):
            schemas.pop(name, None)
    return doc


def install_openapi(api: FastAPI) -> None:
    """Serve the completed document at ``/openapi.json`` (built once, on the first request)."""
    generate = api.openapi

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is None:
            api.openapi_schema = complete(generate())
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]
