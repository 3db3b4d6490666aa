"""Conversions between shepherd's identifiers and resource vectors and their Hadoop records.

Shared by the RM facade and the NodeManagers' ContainerManagement listener; no RM state here.
"""

from __future__ import annotations

from urllib.parse import quote

from common import ids
from common.resources import HADOOP_NAMES, MEMORY, SHEPHERD_NAMES, VCORES, Resources
from proto.hadoop import yarn_records_pb2 as yr

EPOCH_SHIFT = 40
SEQ_MASK = (1 << EPOCH_SHIFT) - 1
_MEMORY_UNITS = {"": 1, "k": 1 / 1024, "Ki": 1 / 1024, "M": 1, "Mi": 1, "G": 1024, "Gi": 1024,
                 "T": 1024 * 1024, "Ti": 1024 * 1024}


class RecordError(ValueError):
    """A Hadoop record that does not describe a valid shepherd object."""


# ---------------------------------------------------------------- identifiers


def app_id_pb(app_id: str) -> yr.ApplicationId:
    ts, seq = ids.parse_app_id(app_id)
    return yr.ApplicationId(id=seq, cluster_timestamp=ts)


def app_id_str(msg: yr.ApplicationId) -> ids.AppId:
    if not msg.HasField("cluster_timestamp") or msg.id <= 0:
        raise RecordError(f"invalid ApplicationId (id={msg.id}, cluster_timestamp={msg.cluster_timestamp})")
    return ids.app_id(msg.cluster_timestamp, msg.id)


def attempt_id_pb(attempt_id: str) -> yr.ApplicationAttemptId:
    ts, seq, n = ids.parse_attempt_id(attempt_id)
    return yr.ApplicationAttemptId(application_id=yr.ApplicationId(id=seq, cluster_timestamp=ts), attempt_id=n)


def attempt_id_str(msg: yr.ApplicationAttemptId) -> ids.AttemptId:
    if msg.attempt_id <= 0:
        raise RecordError(f"invalid ApplicationAttemptId number {msg.attempt_id}")
    return ids.attempt_id(app_id_str(msg.application_id), msg.attempt_id)


def container_id_pb(container_id: str) -> yr.ContainerId:
    p = ids.parse_container_id(container_id)
    app = yr.ApplicationId(id=p.app_seq, cluster_timestamp=p.cluster_ts)
    return yr.ContainerId(
        app_id=app, app_attempt_id=yr.ApplicationAttemptId(application_id=app, attempt_id=p.attempt),
        id=(p.epoch << EPOCH_SHIFT) | p.seq,
    )


def container_id_str(msg: yr.ContainerId) -> ids.ContainerId:
    attempt = attempt_id_str(msg.app_attempt_id)
    if msg.id <= 0:
        raise RecordError(f"invalid ContainerId number {msg.id}")
    return ids.container_id(attempt, msg.id & SEQ_MASK, msg.id >> EPOCH_SHIFT)


def node_id_pb(node_id: str) -> yr.NodeId:
    host, _, port = node_id.rpartition(":")
    return yr.NodeId(host=host, port=int(port or 0))


def node_id_str(msg: yr.NodeId) -> str:
    return f"{msg.host}:{msg.port}"


# ---------------------------------------------------------------- resources


def resource_pb(r: Resources) -> yr.Resource:
    msg = yr.Resource(memory=r.memory_mb, virtual_cores=r.vcores)
    msg.resource_value_map.add(key=MEMORY, value=r.memory_mb, units="Mi", type=yr.COUNTABLE)
    msg.resource_value_map.add(key=VCORES, value=r.vcores, units="", type=yr.COUNTABLE)
    for name in sorted(r.types()):
        if name not in (MEMORY, VCORES):
            msg.resource_value_map.add(key=HADOOP_NAMES.get(name, name), value=r.get(name), units="",
                                       type=yr.COUNTABLE)
    return msg


def resources_from_pb(msg: yr.Resource) -> Resources:
    """The map entries win over the legacy memory / virtual_cores fields (Hadoop sends both)."""
    out: dict[str, int] = {}
    if msg.HasField("memory"):
        out[MEMORY] = msg.memory
    if msg.HasField("virtual_cores"):
        out[VCORES] = msg.virtual_cores
    for info in msg.resource_value_map:
        name = SHEPHERD_NAMES.get(info.key, info.key)
        value = info.value
        if name == MEMORY:
            factor = _MEMORY_UNITS.get(info.units)
            if factor is None:
                raise RecordError(f"unknown memory unit {info.units!r}")
            value = int(value * factor)
        out[name] = value
    return Resources(out)


# ---------------------------------------------------------------- URLs


def url_str(u: yr.Url) -> str:
    """A LocalResource URL as ``scheme://host:port/path`` (``file:///path`` for local files)."""
    scheme = u.scheme or "file"
    host = u.host or ""
    if u.HasField("port") and u.port > 0:
        host = f"{host}:{u.port}"
    if u.user_info:
        host = f"{u.user_info}@{host}"
    return f"{scheme}://{host}{quote(u.file, safe='/:@!$&()*+,;=-._~')}"
