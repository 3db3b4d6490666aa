"""What a container may ask for: the checks the ledger makes of an AM resource, an ask or a job file's task."""

from __future__ import annotations

from dataclasses import dataclass

from common.errors import InvalidResourceRequest
from common.resources import MEMORY, VCORES, Resources

ACCEPTED_KEPT = 4096  # distinct accepted amounts remembered (an AM may send any number of them)


@dataclass(frozen=True, slots=True)
class Limits:
    """``known``: the types the cluster defines (None: not known yet); ``maximum``: per type, the configured
    maximum allocation, else the largest node's; ``configured``: the configured one; ``bounded``: a node
    registered, so every type is bounded (else only the ``configured`` types are)."""

    known: frozenset[str] | None
    maximum: Resources | None
    configured: Resources | None
    bounded: bool


def check_resource(r: Resources, what: str, lim: Limits) -> None:
    """Refuse an amount no container may have: negative, without memory and vcores, of a type the cluster does
    not define, or above the maximum allocation of a type (``Limits``)."""
    if r.any_negative():
        raise InvalidResourceRequest(f"{what} has a negative amount: {r}")
    if r.get(MEMORY) <= 0 or r.get(VCORES) <= 0:
        raise InvalidResourceRequest(f"{what} must ask for memory-mb and vcores above zero: {r}")
    if lim.known is not None:
        unknown = sorted(t for t in r.types() if t not in lim.known)
        if unknown:
            raise InvalidResourceRequest(f"{what} {r} asks for unknown resource types {unknown}: the cluster "
                                         f"defines {', '.join(sorted(lim.known))}")
    maximum = lim.maximum
    if maximum is None:
        return
    limited = (lim.configured or Resources()).amounts
    if any(v > maximum.get(t) for t, v in r.amounts.items() if lim.bounded or t in limited):
        raise InvalidResourceRequest(f"{what} {r} exceeds the maximum allocation {maximum} (no node is large enough)")


class AcceptedAmounts:
    """The amounts ``check_resource`` accepted under the limits of the moment: an allocate call's asks mostly
    repeat a few container sizes, each checked once until the limits change (a node joins, leaves or changes)."""

    def __init__(self) -> None:
        self._under: Limits | None = None
        self._accepted: set[Resources] = set()

    def check(self, r: Resources, what: str, lim: Limits) -> None:
        if lim != self._under:
            self._under = lim
            self._accepted = set()
        if r in self._accepted:
            return
        check_resource(r, what, lim)
        if len(self._accepted) >= ACCEPTED_KEPT:
            self._accepted = set()
        self._accepted.add(r)
