"""Bounds on what a caller can make the RM hold or chew on, the same through every door (S19).

Strings are cut, not refused, before they are stored (as YARN cuts an application type to 20 characters);
an allocate call with more asks than ``MAX_ASKS_PER_ALLOCATE`` is refused whole, before any of it is applied.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from common.errors import BadRequest

MAX_NAME = 1024  # application and reservation names
MAX_TAGS = 10  # YARN's yarn.resourcemanager.application-tags max count (YarnConfiguration.APPLICATION_MAX_TAGS)
MAX_TAG = 100  # YARN's APPLICATION_MAX_TAG_LENGTH
MAX_DIAGNOSTICS = 64 * 1024  # kill reasons and an AM's final diagnostics
MAX_ASKS_PER_ALLOCATE = 10_000
MAX_RELEASES_PER_ALLOCATE = 100_000
MAX_JSON_DEPTH = 64
T = TypeVar("T")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


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


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in a parsed JSON value (iteratively: no recursion to exhaust)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_JSON_DEPTH:
            return depth
        stack.extend((c, depth + 1) for c in children)
    return deepest
