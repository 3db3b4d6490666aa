"""``shepherd nm --check-config``, also run at every start: the NodeManager's configuration as it would start
with it, every problem named with its property and the file (or variable, or flag) it came from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from common.config_check import unknown_properties
from common.settings import load_layers
from nodemanager.config import NodeManagerConfig, nm_settings

NAMESPACES = ("shepherd.nodemanager.",)


def check_nm_config(cfg: NodeManagerConfig, *, env: Mapping[str, str], config_file: Path | None,
                    conf_dir: Path | None) -> list[str]:
    """Problems of a configuration that loaded (loading already names bad values), or none."""
    layers = load_layers(nm_settings(), env=env, conf_dir=conf_dir, config_file=config_file)
    problems = unknown_properties(layers, NAMESPACES)
    existing = cfg.work_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    where = f"yarn.nodemanager.local-dirs / --work-dir = {str(cfg.work_dir)!r}"
    if not existing.is_dir():
        problems.append(f"{where}: {existing} is not a directory")
    elif not os.access(existing, os.W_OK | os.X_OK):
        problems.append(f"{where}: {existing} is not writable")
    for address in cfg.rm_address.split(","):  # one RM, or every RM of an active/standby pair
        host, sep, port = address.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            problems.append(f"the ResourceManager address {address.strip()!r} is not host:port "
                            f"(shepherd.resourcemanager.grpc.address from "
                            f"{layers.source('shepherd.resourcemanager.grpc.address')} or --rm)")
    return problems
