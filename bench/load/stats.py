"""What the load generators record: latency samples and event counts, kept only inside a measurement window
so that registration and warm-up do not count."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile by the nearest-rank method (NaN for no values)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class Window:
    """The measurement window, in event-loop time; nothing is recorded outside it."""

    start: float = math.inf
    end: float = math.inf

    def open(self, now: float, duration: float) -> None:
        self.start, self.end = now, now + duration

    def holds(self, t: float) -> bool:
        return self.start <= t < self.end

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class Recorder:
    """Samples taken in the window. Heartbeat and allocate latencies are in seconds; ``*_late`` measures from the
    time the call was due (open-loop schedule), so a caller held up by a slow answer does not hide the wait."""

    window: Window = field(default_factory=Window)
    heartbeat_rtt: list[float] = field(default_factory=list)
    heartbeat_late: list[float] = field(default_factory=list)
    heartbeat_errors: int = 0
    allocate_rtt: list[float] = field(default_factory=list)
    allocate_late: list[float] = field(default_factory=list)
    allocate_errors: int = 0
    delivered: int = 0  # containers handed to AMs in allocate answers
    completed: int = 0  # completions handed to AMs
    released: int = 0
    started: int = 0  # containers the AMs started on the NodeManagers
    start_errors: int = 0
    start_rtt: list[float] = field(default_factory=list)  # StartContainers calls (one per node and answer)
    loop_lag: list[float] = field(default_factory=list)  # the harness's own event-loop lag

    def heartbeat(self, sent: float, due: float, done: float, ok: bool) -> None:
        if not self.window.holds(due):
            return
        if ok:
            self.heartbeat_rtt.append(done - sent)
            self.heartbeat_late.append(done - due)
        else:
            self.heartbeat_errors += 1

    def allocate(self, sent: float, due: float, done: float, ok: bool, delivered: int, completed: int,
                 released: int) -> None:
        if not self.window.holds(done):
            return
        if ok:
            self.allocate_rtt.append(done - sent)
            self.allocate_late.append(done - due)
        else:
            self.allocate_errors += 1
        self.delivered += delivered
        self.completed += completed
        self.released += released

    def summary(self) -> dict[str, float]:
        seconds = self.window.seconds if math.isfinite(self.window.seconds) else math.nan
        ms = 1000.0
        return {
            "window_s": seconds,
            "heartbeats": len(self.heartbeat_rtt),
            "heartbeat_errors": self.heartbeat_errors,
            "heartbeat_rtt_p50_ms": quantile(self.heartbeat_rtt, 0.50) * ms,
            "heartbeat_rtt_p99_ms": quantile(self.heartbeat_rtt, 0.99) * ms,
            "heartbeat_rtt_p999_ms": quantile(self.heartbeat_rtt, 0.999) * ms,
            "heartbeat_rtt_max_ms": max(self.heartbeat_rtt, default=math.nan) * ms,
            "heartbeat_late_p99_ms": quantile(self.heartbeat_late, 0.99) * ms,
            "allocates": len(self.allocate_rtt),
            "allocate_errors": self.allocate_errors,
            "allocate_rtt_p50_ms": quantile(self.allocate_rtt, 0.50) * ms,
            "allocate_rtt_p99_ms": quantile(self.allocate_rtt, 0.99) * ms,
            "allocate_rtt_max_ms": max(self.allocate_rtt, default=math.nan) * ms,
            "allocate_late_p99_ms": quantile(self.allocate_late, 0.99) * ms,
            "delivered": self.delivered,
            "delivered_per_s": self.delivered / seconds if seconds else math.nan,
            "completed_per_s": self.completed / seconds if seconds else math.nan,
            "released": self.released,
            "started": self.started,
            "start_errors": self.start_errors,
            "start_rtt_p50_ms": quantile(self.start_rtt, 0.50) * ms,
            "start_rtt_p99_ms": quantile(self.start_rtt, 0.99) * ms,
            "harness_loop_lag_p99_ms": quantile(self.loop_lag, 0.99) * ms,
        }
