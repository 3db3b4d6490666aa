"""What a container may ask for: the checks the ledger makes of an AM resource, an ask or a job file's task."""

from __future__ import annotations

from common.errors import InvalidResourceRequest
from common.resources import MEMORY, VCORES, Resources


def check_resource(r: Resources, what: str, *, known: frozenset[str] | None, maximum: Resources | None,
                   configured: Resources | None, bounded: bool) -> None:
    """Refuse an amount no container may have: negative, without memory and vcores, of a type the cluster does
    not define (``known``; None: not known yet), or above the maximum allocation of a type (``maximum``: the
    configured one, else the largest node's; ``bounded``: a node registered, so every type is bounded; else
    only the ``configured`` types are)."""
    if r.any_negative():
        raise InvalidResourceRequest(f"{what} has a negative amount: {r}")
    if r.get(MEMORY) <= 0 or r.get(VCORES) <= 0:
        raise InvalidResourceRequest(f"{what} must ask for memory-mb and vcores above zero: {r}")
    if known is not None:
        unknown = sorted(t for t in r.types() if t not in known)
        if unknown:
            raise InvalidResourceRequest(f"{what} {r} asks for unknown resource types {unknown}: the cluster "
                                         f"defines {', '.join(sorted(known))}")
    if maximum is None:
        return
    limited = (configured or Resources()).amounts
    if any(v > maximum.get(t) for t, v in r.amounts.items() if bounded or t in limited):
        raise InvalidResourceRequest(f"{what} {r} exceeds the maximum allocation {maximum} (no node is large enough)")
