"""``shepherd rm --check-config``, also run at every start: the ResourceManager's configuration as it would
start with it, every problem named with its property and the file (or variable, or flag) it came from."""

from __future__ import annotations

import os
from pathlib import Path

from common.config_check import unknown_properties
from rm.core.queues import QueueConfigError, build_queues
from rm.service.settings import RMSettings

NAMESPACES = ("shepherd.resourcemanager.",)

# RMConfig.validate() speaks of values; these name the property each message is about
_MESSAGE_KEYS = (
    ("scheduler", "shepherd.resourcemanager.scheduler"),
    ("admission rule", "shepherd.resourcemanager.admission"),
    ("leftover", "shepherd.resourcemanager.carbyne.leftover-cap"),
    ("max-app-attempts", "yarn.resourcemanager.am.max-attempts"),
    ("priority", "yarn.cluster.max-application-priority"),
    ("store lease", "shepherd.resourcemanager.store.lease-ms"),
    ("expiry interval", "yarn.nm.liveness-monitor.expiry-interval-ms"),
    ("gRPC port", "shepherd.resourcemanager.grpc.address"),
    ("REST port", "yarn.resourcemanager.webapp.address"),
    ("secret", "shepherd.resourcemanager.node-secret"),
)


def check_rm_settings(settings: RMSettings) -> list[str]:
    """Every problem of a configuration that loaded (loading already names bad values), or none."""
    layers = settings.layers
    problems = unknown_properties(layers, NAMESPACES)
    try:
        build_queues(settings.config.queues)
    except QueueConfigError as exc:
        problems.append(f"{settings.queues_source}: queues: {exc}")
    try:
        settings.config.validate()
    except ValueError as exc:
        text = str(exc)
        for word, key in _MESSAGE_KEYS:
            if word in text:
                text = f"{text} ({key} from {layers.source(key)})"
                break
        problems.append(text)
    problems += _data_dir(settings.config.data_dir, settings.config.store_url, layers.source(
        "shepherd.resourcemanager.data-dir"))
    return problems


def _data_dir(path: Path, store_url: str | None, source: str) -> list[str]:
    if store_url and not store_url.startswith("sqlite"):
        return []  # the SQLite file is not used
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return [f"shepherd.resourcemanager.data-dir = {str(path)!r} (from {source}) is not a directory"]
    if not os.access(existing, os.W_OK | os.X_OK):
        return [f"shepherd.resourcemanager.data-dir = {str(path)!r} (from {source}): {existing} is not writable"]
    return []
