"""The RM's gRPC reports in the JSON shapes of its REST API (``/ws/v1/cluster/apps``, ``/nodes``), so
``-o json|yaml`` prints what ``curl``, YARN's web services and their clients show: ``id``, ``finalStatus``,
``allocatedMB``, ``nodeHTTPAddress``... Only the fields a report carries; shepherd's additions as in REST."""

from __future__ import annotations

import json
import time
from typing import Any

from common import durations
from proto import shepherd_pb2 as pb

MEMORY, VCORES = "memory-mb", "vcores"


def _values(r: pb.Resource) -> dict[str, int]:
    return {k: int(v) for k, v in r.values.items()}


def _yarn(values: dict[str, int]) -> dict[str, int]:
    return {"memory": values.get(MEMORY, 0), "vCores": values.get(VCORES, 0)}


def app_json(r: pb.ApplicationReport) -> dict[str, Any]:
    final = r.state in ("FINISHED", "FAILED", "KILLED")
    used = _values(r.used)
    share = _values(r.fair_share)
    end = r.finish_time_ms
    out: dict[str, Any] = {
        "id": r.application_id,
        "user": r.user,
        "name": r.name,
        "queue": r.queue,
        "state": r.state,
        "finalStatus": r.final_status,
        "progress": round(r.progress * 100, 2),
        "diagnostics": r.diagnostics,
        "applicationType": r.application_type,
        "applicationTags": ",".join(r.tags),
        "priority": r.priority,
        "startedTime": r.start_time_ms,
        "launchTime": r.launch_time_ms,
        "finishedTime": end,
        "elapsedTime": max(0, end - r.start_time_ms) if end and r.start_time_ms else 0,
        "allocatedMB": -1 if final else used.get(MEMORY, 0),
        "allocatedVCores": -1 if final else used.get(VCORES, 0),
        "runningContainers": -1 if final else r.running_containers,
        "memorySeconds": r.memory_seconds,
        "vcoreSeconds": r.vcore_seconds,
        "clusterUsagePercentage": round(r.dominant_share * 100, 3),
        "fairShareMB": share.get(MEMORY, 0),
        "fairShareVCores": share.get(VCORES, 0),
        "pendingDefaultAsks": r.pending_default_asks,
        "pendingAltruisticAsks": r.pending_altruistic_asks,
        "leftoverContainers": r.leftover_containers,
        "runAttempts": r.attempts,
    }
    if r.tracking_url:
        out["trackingUrl"] = r.tracking_url
    if r.am_node_http_address:
        out["amHostHttpAddress"] = r.am_node_http_address
    if r.am_container_id:
        out["amContainerId"] = r.am_container_id
    if r.HasField("deadline"):
        d = r.deadline
        out["deadline"] = {"deadline": int(d.deadline * 1000), "price": d.price, "mean": d.mean,
                           "stddev": d.stddev, "piUpper": d.pi_upper, "method": d.method, "runs": d.runs,
                           "remainingWork": d.remaining_work, "laxity": d.laxity, "status": d.status}
    return out


def app_rest(r: pb.ApplicationReport) -> dict[str, Any]:
    """The app's REST object as the RM rendered it (a report asked for with ``rest_shape``), else what the report
    carries in that shape (an RM that does not render it)."""
    if r.rest_json:
        out: dict[str, Any] = json.loads(r.rest_json)
        return out
    return app_json(r)


def attempt_json(a: pb.ApplicationAttemptReport) -> dict[str, Any]:
    return {
        "appAttemptId": a.attempt_id,
        "appAttemptState": a.state,
        "startTime": a.start_time_ms,
        "finishedTime": a.finish_time_ms,
        "containerId": a.am_container_id,
        "nodeId": a.node_id,
        "nodeHttpAddress": a.node_http_address,
        "diagnosticsInfo": a.diagnostics,
    }


def node_json(n: pb.NodeReport) -> dict[str, Any]:
    cap, used = _values(n.capability), _values(n.used)
    free = {k: max(0, v - used.get(k, 0)) for k, v in cap.items()}
    return {
        "id": f"{n.node_id.host}:{n.node_id.port}",
        "rack": n.rack,
        "state": n.state,
        "nodeHostName": n.node_id.host,
        "nodeHTTPAddress": n.http_address,
        "lastHealthUpdate": n.last_health_update_ms,
        "healthReport": n.health_report,
        "numContainers": n.num_containers,
        "usedMemoryMB": used.get(MEMORY, 0),
        "availMemoryMB": free.get(MEMORY, 0),
        "usedVirtualCores": used.get(VCORES, 0),
        "availableVirtualCores": free.get(VCORES, 0),
        "totalResource": _yarn(cap),
        "usedResource": _yarn(used),
        "availableResource": _yarn(free),
    }


def resources(d: dict[str, Any] | None) -> str:
    """``{"memory": 1024, "vCores": 2}`` as ``1024 MB, 2 vcores``."""
    if not d:
        return "-"
    return f"{d.get('memory', 0)} MB, {d.get('vCores', 0)} vcores"


def when(epoch_ms: float | None) -> str:
    """Milliseconds since the epoch as local time with how long ago (``-`` for none)."""
    if not epoch_ms or epoch_ms <= 0:
        return "-"
    ago = time.time() - epoch_ms / 1000
    rel = (f"{ago:.0f} s ago" if ago < 120 else f"{ago / 60:.0f} min ago" if ago < 7200
           else f"{ago / 3600:.1f} h ago") if ago >= 0 else "in the future"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(epoch_ms / 1000))} ({rel})"


def clock(epoch_ms: float | None, now: float) -> str:
    """Milliseconds since the epoch as a short local time for a table column: ``HH:MM:SS`` on the day of
    ``now`` (seconds since the epoch), else ``MM-DD HH:MM`` (``-`` for none)."""
    if not epoch_ms or epoch_ms <= 0:
        return "-"
    at = time.localtime(epoch_ms / 1000)
    today = time.localtime(now)
    same_day = (at.tm_year, at.tm_yday) == (today.tm_year, today.tm_yday)
    return time.strftime("%H:%M:%S" if same_day else "%m-%d %H:%M", at)


def age(seconds: float | None) -> str:
    """A duration as kubectl's AGE column writes it: ``42s``, ``3m05s``, ``2h07m``, ``3d04h`` (``-`` for none)."""
    if seconds is None or seconds < 0:
        return "-"
    return durations.compact(int(seconds))