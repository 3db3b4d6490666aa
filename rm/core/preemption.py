"""Which containers to preempt to take an amount back from an app: one rule for the RM and the simulator.

The app's newest containers go first. When one node's free room plus some of the app's containers there
covers the amount, only containers on that node are taken (the node needing the fewest), so the blocked ask
fits there on the next cycle instead of the reclaim repeating over scattered room; otherwise the newest
containers anywhere until the amount is covered.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from common.resources import Resources

C = TypeVar("C")
N = TypeVar("N", bound=Hashable)


def covered(need: Resources, room: Resources) -> bool:
    return all(room.get(r) >= v for r, v in need.amounts.items() if v > 0)


def choose_victims(
    newest: Sequence[C],
    amount: Resources,
    *,
    node_of: Callable[[C], N],
    resource_of: Callable[[C], Resources],
    free_room: Callable[[N], Resources | None],
) -> list[C]:
    """``newest``: the app's preemptable containers, newest first; ``free_room(node)`` is the node's free
    capacity, or None when the node cannot take the ask (it is then not preferred)."""
    best: list[C] | None = None
    for node in dict.fromkeys(node_of(c) for c in newest):
        room = free_room(node)
        if room is None:
            continue
        chosen: list[C] = []
        for c in (c for c in newest if node_of(c) == node):
            if covered(amount, room):
                break
            chosen.append(c)
            room = room + resource_of(c)
        if covered(amount, room) and (best is None or len(chosen) < len(best)):
            best = chosen
    if best is not None:
        return best
    out: list[C] = []
    taken = Resources()
    for c in newest:
        if covered(amount, taken):
            break
        out.append(c)
        taken = taken + resource_of(c)
    return out
