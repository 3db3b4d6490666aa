"""What recent runs of a job name measured, with every name's as the fallback (the pilots' past errors, the
tasks' spread in space): the size tracker decides with the name's own figure once it has a few, else with
all names' once there are enough."""

from __future__ import annotations

import math
import statistics
from collections import deque


class RecentByName:
    """The last ``window`` values per job name, and of all names; at most ``names`` names, the least recently
    added forgotten first."""

    def __init__(self, window: int = 100, min_own: int = 3, min_all: int = 10, names: int = 10_000) -> None:
        if window < 1 or min_own < 1 or min_all < 1 or names < 1:
            raise ValueError("window, min_own, min_all and names must be >= 1")
        self.window, self.min_own, self.min_all, self.names = window, min_own, min_all, names
        self.by_name: dict[str, deque[float]] = {}
        self.all: deque[float] = deque(maxlen=window)

    def add(self, name: str, value: float) -> None:
        if not math.isfinite(value):
            return
        self.all.append(value)
        own = self.by_name.pop(name, None) or deque(maxlen=self.window)
        own.append(value)
        self.by_name[name] = own  # the most recently added names last
        while len(self.by_name) > self.names:
            del self.by_name[next(iter(self.by_name))]

    def values(self, name: str) -> deque[float] | None:
        """The name's own values from ``min_own`` of them, else all names' from ``min_all``, else None."""
        own = self.by_name.get(name)
        if own is not None and len(own) >= self.min_own:
            return own
        return self.all if len(self.all) >= self.min_all else None

    def mean(self, name: str) -> float | None:
        got = self.values(name)
        return None if got is None else math.fsum(got) / len(got)

    def median(self, name: str) -> float | None:
        got = self.values(name)
        return None if got is None else statistics.median(got)
