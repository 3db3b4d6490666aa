"""Cluster descriptions: ``N:MEM_MB:VCORES`` specs and SLS node files (``nodes.json``)."""

from __future__ import annotations

from pathlib import Path

from am.jobspec import JobSpecError
from sim.engine import NodeSpec
from sim.traces.jsonstream import iter_objects

SLS_DEFAULT_MEMORY_MB = 8192  # SLS's default NodeManager size (yarn.sls.nm.memory.mb / vcores)
SLS_DEFAULT_VCORES = 8


def parse_node_spec(spec: str) -> list[NodeSpec]:
    """``N:MEM_MB:VCORES`` — N identical nodes (``node1`` … ``nodeN``)."""
    parts = spec.split(":")
    try:
        count, memory, vcores = (int(p) for p in parts)
    except ValueError:
        raise ValueError(f"--nodes wants N:MEM_MB:VCORES or a nodes file, got {spec!r}") from None
    if count < 1 or memory < 1 or vcores < 1:
        raise ValueError(f"--nodes {spec!r}: every number must be positive")
    return [NodeSpec(f"node{i + 1}", memory, vcores) for i in range(count)]


def load_sls_nodes(path: str | Path, *, memory_mb: int = SLS_DEFAULT_MEMORY_MB,
                   vcores: int = SLS_DEFAULT_VCORES) -> list[NodeSpec]:
    """Nodes of an SLS topology file: one object per rack; entries without a ``node`` name are skipped."""
    nodes: list[NodeSpec] = []
    seen: set[str] = set()
    for rack in iter_objects(path):
        rack_name = "/" + str(rack.get("rack", "default-rack")).lstrip("/")
        for entry in rack.get("nodes", []):
            name = entry.get("node") if isinstance(entry, dict) else None
            if not name:
                continue  # the upstream nodes.json ends rack5 with an empty object
            if name in seen:
                raise JobSpecError(f"{path}: node {name} listed twice")
            seen.add(name)
            nodes.append(NodeSpec(str(name), int(entry.get("memory-mb", memory_mb)), int(entry.get("vcores", vcores)),
                                  rack=rack_name))
    if not nodes:
        raise JobSpecError(f"{path}: no nodes")
    return nodes


def load_nodes(spec: str) -> list[NodeSpec]:
    """A ``N:MEM_MB:VCORES`` spec, or the path of an SLS nodes file."""
    if Path(spec).is_file():
        return load_sls_nodes(spec)
    return parse_node_spec(spec)
