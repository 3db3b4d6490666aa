"""The recent finished runs the deadline estimators learn from, with the running sums eq. 13 normalises by.

A run may be given as a builder (``add_later``): a driver that never quotes a deadline (the simulator running
a baseline scheduler) then never pays for measuring its runs."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from rm.core.deadlines.estimate import RunRecord


class RecentRuns:
    def __init__(self, limit: int) -> None:
        self._runs: deque[RunRecord] = deque(maxlen=limit)
        self._unbuilt: deque[Callable[[], RunRecord | None]] = deque(maxlen=limit)
        self.seen = 0  # runs recorded, ever (a fit knows which it saw)
        self._work_sum = 0.0
        self._duration_sum = 0.0

    def add(self, run: RunRecord) -> None:
        self._build()
        self._add(run)
        self.seen += 1

    def add_later(self, build: Callable[[], RunRecord | None]) -> None:
        self._unbuilt.append(build)
        self.seen += 1

    @property
    def runs(self) -> deque[RunRecord]:
        """Oldest first."""
        self._build()
        return self._runs

    def avg_work(self) -> float | None:
        """The average run's work (unit-seconds); None without runs."""
        runs = self.runs
        return self._work_sum / len(runs) if runs else None

    def avg_duration(self) -> float | None:
        """The average run's duration at its width (each phase's work over its width, summed); None without runs."""
        runs = self.runs
        return self._duration_sum / len(runs) if runs else None

    def _build(self) -> None:
        while self._unbuilt:
            run = self._unbuilt.popleft()()
            if run is not None:
                self._add(run)

    def _add(self, run: RunRecord) -> None:
        if len(self._runs) == self._runs.maxlen:  # the oldest run leaves the averages
            old = self._runs[0]
            self._work_sum -= sum(old.work)
            self._duration_sum -= duration(old)
        self._runs.append(run)
        self._work_sum += sum(run.work)
        self._duration_sum += duration(run)


def duration(run: RunRecord) -> float:
    return sum(w / max(shape.tasks * shape.units, 1e-9)
               for w, shape in zip(run.work, run.features.phases, strict=False))
