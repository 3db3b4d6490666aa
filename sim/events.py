"""Simulation events and the event queue: a heap ordered by (time, phase, sequence).

Everything that happens at one virtual instant is handled as one batch: every event at time ``t`` runs
before the scheduling cycle of ``t`` (a ``CycleDue`` has the late phase), so a heartbeat batch of many
nodes and AMs is followed by a single cycle, as in the live RM whose loop coalesces wake-ups. Ties keep
insertion order, so a run replays exactly.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Final

EARLY: Final = 0
LATE: Final = 1


@dataclass(frozen=True, slots=True)
class JobArrived:
    job: int  # index into the workload


@dataclass(frozen=True, slots=True)
class AmRegistered:
    """The AM process in the app's AM container has started and registers (its first allocate)."""

    app: int


@dataclass(frozen=True, slots=True)
class AmHeartbeatDue:
    """The AM's allocate call: send what changed in its ask table, take containers and completions."""

    app: int
    token: int  # heartbeats that were rescheduled leave stale entries behind; only the latest token runs


@dataclass(frozen=True, slots=True)
class ContainerReported:
    """The container's process ended and its NodeManager's heartbeat told the RM."""

    container: str


@dataclass(frozen=True, slots=True)
class CycleDue:
    """Run one scheduling cycle (at most one per ``Timing.cycle_interval_s``)."""


@dataclass(frozen=True, slots=True)
class PlanTick:
    """A reservation plan step boundary (policies with reservations): roll the plan, DRA when due."""


@dataclass(frozen=True, slots=True)
class AppEnds:
    """An app the simulator runs no AM for ends now (a dry run's assumption for apps without a job spec)."""

    app_id: str


@dataclass(frozen=True, slots=True)
class DeadlineMoved:
    """The job's owner moves its deadline while it runs (``PUT /ws/v1/shepherd/apps/{id}/deadline``)."""

    app: int
    deadline: float  # the new one, simulated time


Event = JobArrived | AmRegistered | AmHeartbeatDue | ContainerReported | CycleDue | PlanTick | AppEnds | DeadlineMoved


class EventQueue:
    """A binary heap of events; ``pop_batch`` returns every event of the earliest time."""

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Event]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, t: float, event: Event, phase: int = EARLY) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, phase, self._seq, event))

    def peek_time(self) -> float:
        return self._heap[0][0]

    def pop(self) -> tuple[float, Event]:
        t, _, _, event = heapq.heappop(self._heap)
        return t, event

    def next_is(self, t: float) -> bool:
        return bool(self._heap) and self._heap[0][0] == t
