"""Checks shared by the daemons' ``--check-config``: properties in a daemon's own namespace that it does not
know (a misspelt key would otherwise be ignored silently), each named with the file it came from."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from common.settings import DEFAULT, Layered


def unknown_properties(layers: Layered, namespaces: Sequence[str]) -> list[str]:
    """``FILE: unknown property KEY (did you mean ...?)`` for every property under ``namespaces`` that a file
    or the environment sets and no setting of this daemon declares."""
    known = [s.key for s in layers.settings]
    problems = []
    for name in sorted(layers.conf.names()):
        if name in known or not name.startswith(tuple(namespaces)):
            continue
        source = layers.conf.source(name) or DEFAULT
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(f"{source}: unknown property {name}{hint}")
    return problems
