"""YARN's reservation JSON (REST ``/ws/v1/cluster/reservation/...``) to and from the core's types.

The REST handlers stay thin: parse the body with ``parse_submit`` / ``parse_update`` / ``parse_delete`` /
``parse_list_query``, call ``ReservationSystem``, render with ``render_new_reservation`` / ``render_list``.
Every parse error is a ``BadRequest`` (400 RemoteException) with a message saying what is wrong.

Input is read leniently, as clients written against the real RM send it: numbers may be JSON numbers or
numeric strings (the "mapped" notation the RM itself prints), a single ``reservation-request`` may be a bare
object instead of a list, the interpreter may be its number (0 ANY, 1 ALL, 2 ORDER, 3 ORDER_NO_GAP) or name.

The list body mirrors the real RM's quirks (yarn-rest.md §2.19): ``{"reservations": X}`` where X is one
object when exactly one reservation matches, an array when several do, and null when none; every number is
a JSON string; ``reservation-request`` inside a definition is always an array.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from common.errors import BadRequest
from common.resources import MEMORY, VCORES, Resources
from rm.core.reservation.listing import LONG_MAX, AllocationSegment, ReservationInfo
from rm.core.reservation.requests import (
    INTERPRETERS,
    Interpreter,
    ReservationDefinition,
    ReservationRequest,
    parse_reservation_id,
)

ALIGNMENT_KEY = "shepherd-alignment-penalty"  # extension: LowCost's alignment penalty weight


@dataclass(frozen=True, slots=True)
class SubmitBody:
    reservation_id: str
    queue: str
    definition: ReservationDefinition


@dataclass(frozen=True, slots=True)
class ListQuery:
    queue: str = "default"
    reservation_id: str | None = None
    start_ms: int = 0
    end_ms: int = LONG_MAX
    include_allocations: bool = False


# ----------------------------------------------------------------------------------------------- parsing


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise BadRequest(f"{what} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise BadRequest(f"{what} must be an integer, got {value!r}")


def _obj(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BadRequest(f"{what} must be a JSON object")
    return value


def _capability(raw: Any, what: str) -> Resources:
    cap = _obj(raw, what)
    amounts: dict[str, int] = {}
    for key, value in cap.items():
        name = {"memory": MEMORY, "memory-mb": MEMORY, "vCores": VCORES, "vcores": VCORES}.get(key, key)
        amounts[name] = _int(value, f"{what}.{key}")
    if MEMORY not in amounts and VCORES not in amounts:
        raise BadRequest(f"{what} needs memory and vCores")
    return Resources(amounts)


def _interpreter(raw: Any) -> Interpreter:
    if isinstance(raw, str) and not raw.strip().lstrip("-").isdigit():
        name = raw.strip().upper()
        name = name if name.startswith("R_") else "R_" + name
        for known in INTERPRETERS:
            if known == name:
                return known
        raise BadRequest(f"unknown reservation-request-interpreter {raw!r}")
    code = _int(raw, "reservation-request-interpreter")
    if not 0 <= code < len(INTERPRETERS):
        raise BadRequest(f"reservation-request-interpreter must be 0 (ANY), 1 (ALL), 2 (ORDER) or 3 (ORDER_NO_GAP), got {code}")
    return INTERPRETERS[code]


def definition_from_json(raw: Any) -> ReservationDefinition:
    if raw is None:
        raise BadRequest("Missing reservation definition. Please try again by specifying a reservation definition.")
    d = _obj(raw, "reservation-definition")
    for key in ("arrival", "deadline", "reservation-requests"):
        if key not in d:
            raise BadRequest(f"reservation-definition is missing {key}")
    reqs = _obj(d["reservation-requests"], "reservation-requests")
    items = reqs.get("reservation-request", [])
    if isinstance(items, Mapping):
        items = [items]
    if not isinstance(items, list):
        raise BadRequest("reservation-request must be an object or a list of objects")
    requests = []
    for i, item in enumerate(items):
        r = _obj(item, f"reservation-request[{i}]")
        for key in ("capability", "num-containers", "duration"):
            if key not in r:
                raise BadRequest(f"reservation-request[{i}] is missing {key}")
        requests.append(ReservationRequest(
            capability=_capability(r["capability"], f"reservation-request[{i}].capability"),
            num_containers=_int(r["num-containers"], f"reservation-request[{i}].num-containers"),
            duration_ms=_int(r["duration"], f"reservation-request[{i}].duration"),
            min_concurrency=_int(r.get("min-concurrency", 1), f"reservation-request[{i}].min-concurrency"),
        ))
    recurrence = d.get("recurrence-expression")
    alignment = d.get(ALIGNMENT_KEY, 0.0)
    try:
        alignment_f = float(alignment)
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"{ALIGNMENT_KEY} must be a number, got {alignment!r}") from exc
    return ReservationDefinition(
        arrival_ms=_int(d["arrival"], "arrival"),
        deadline_ms=_int(d["deadline"], "deadline"),
        requests=tuple(requests),
        interpreter=_interpreter(reqs.get("reservation-request-interpreter", 1)),
        name=str(d.get("reservation-name", "") or ""),
        priority=_int(d.get("priority", 0), "priority"),
        recurrence_ms=_int(recurrence, "recurrence-expression") if recurrence not in (None, "") else 0,
        alignment=alignment_f,
    )


def _body(raw: Any) -> Mapping[str, Any]:
    return _obj(raw if raw is not None else {}, "the request body")


def _rid(body: Mapping[str, Any]) -> str:
    rid = body.get("reservation-id")
    if not rid:
        raise BadRequest("Missing reservation id. Please try again by specifying a reservation id.")
    if not isinstance(rid, str):
        raise BadRequest(f"reservation-id must be a string, got {rid!r}")
    parse_reservation_id(rid)
    return rid


def parse_submit(raw: Any) -> SubmitBody:
    body = _body(raw)
    queue = body.get("queue")
    if not queue or not isinstance(queue, str):
        raise BadRequest("The queue is not specified. Please try again with a valid reservable queue.")
    return SubmitBody(_rid(body), queue, definition_from_json(body.get("reservation-definition")))


def parse_update(raw: Any) -> tuple[str, ReservationDefinition]:
    body = _body(raw)
    return _rid(body), definition_from_json(body.get("reservation-definition"))


def parse_delete(raw: Any) -> str:
    return _rid(_body(raw))


def parse_list_query(params: Mapping[str, str]) -> ListQuery:
    """Query parameters as the real RM reads them: invalid times fall back to 0 / Long.MAX."""

    def time(key: str, default: int) -> int:
        try:
            v = int(params.get(key, ""))
        except ValueError:
            return default
        return v if v >= 0 else default

    queue = params.get("queue")
    if queue is not None and not queue.strip():
        raise BadRequest("The queue is not specified. Please try again with a valid reservable queue.")
    include = params.get("include-resource-allocations", "false").strip().lower() == "true"
    return ListQuery(
        queue=queue or "default",
        reservation_id=params.get("reservation-id") or None,
        start_ms=time("start-time", 0),
        end_ms=time("end-time", LONG_MAX),
        include_allocations=include,
    )


# ---------------------------------------------------------------------------------------------- rendering


def resource_json(r: Resources) -> dict[str, Any]:
    out: dict[str, Any] = {"memory": r.memory_mb, "vCores": r.vcores}
    for k, v in sorted(r.amounts.items()):
        if k not in (MEMORY, VCORES):
            out[k] = v
    return out


def definition_to_json(defn: ReservationDefinition) -> dict[str, Any]:
    """The definition as submitted (JSON numbers); ``mapped`` turns it into the list notation."""
    out: dict[str, Any] = {
        "arrival": defn.arrival_ms,
        "deadline": defn.deadline_ms,
        "reservation-requests": {
            "reservation-request-interpreter": INTERPRETERS.index(defn.interpreter),
            "reservation-request": [
                {
                    "capability": resource_json(r.capability),
                    "min-concurrency": r.min_concurrency,
                    "num-containers": r.num_containers,
                    "duration": r.duration_ms,
                }
                for r in defn.requests
            ],
        },
        "reservation-name": defn.name,
        "priority": defn.priority,
    }
    if defn.recurrence_ms:
        out["recurrence-expression"] = str(defn.recurrence_ms)
    if defn.alignment:
        out[ALIGNMENT_KEY] = defn.alignment
    return out


def mapped(value: Any) -> Any:
    """Jettison's "mapped" notation: every number (and boolean) becomes a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, Mapping):
        return {k: mapped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mapped(v) for v in value]
    return value


def _segment_json(s: AllocationSegment) -> dict[str, Any]:
    return {"resource": resource_json(s.resource), "startTime": s.start_ms, "endTime": s.end_ms}


def reservation_json(info: ReservationInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"acceptance-time": info.acceptance_ms, "user": info.user}
    if info.allocations is not None:
        out["resource-allocations"] = [_segment_json(s) for s in info.allocations]
    out["reservation-id"] = info.reservation_id
    out["reservation-definition"] = definition_to_json(info.definition)
    return out


def render_list(infos: Sequence[ReservationInfo]) -> dict[str, Any]:
    """``{"reservations": one object | [objects] | null}``, numbers as strings (the real RM's shape)."""
    items = [mapped(reservation_json(i)) for i in infos]
    if not items:
        return {"reservations": None}
    return {"reservations": items[0] if len(items) == 1 else items}


def render_new_reservation(rid: str) -> dict[str, str]:
    return {"reservation-id": rid}
