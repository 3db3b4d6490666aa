"""Time is injected: the core and the policies read it from a Clock, never from the wall."""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (live) or since the start of a simulation."""
        ...


class ManualClock:
    """A clock that moves only when told to (tests and the simulator)."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, dt: float) -> None:
        if dt < 0:
            raise ValueError("time does not go backwards")
        self._now += dt

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError("time does not go backwards")
        self._now = t
