"""The parts of waiting and log reading that the synchronous and the asynchronous client share: when to ride
through an RM that does not answer and for how long to back off, which reports a progress callback hears and
when a wait gives up, which log files are meant and their last lines. Pure: the clock and the randomness are
arguments; the clients do the I/O and the sleeping."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from random import Random

from rm.client import ClientError
from rm.sdk.models import AppReport, Outage, WaitProgress

RIDE_THROUGH = ("UNAVAILABLE", "DEADLINE_EXCEEDED")  # the RM is restarting or failing over: keep waiting
MAX_BACKOFF_S = 5.0

LOG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # what a NodeManager serves
ALL_FILES = ("stdout", "stderr")

ProgressCallback = Callable[[WaitProgress], None]
OutageCallback = Callable[[Outage], None]


class WaitTimeout(ClientError):
    """``wait`` gave up after its ``timeout``; the application keeps running. ``last`` is its last report."""

    def __init__(self, app_id: str, timeout_s: float, last: AppReport | None) -> None:
        state = f"it is {last.state}" if last is not None else "the RM did not answer"
        super().__init__("DEADLINE_EXCEEDED", f"{app_id} did not end within {timeout_s:g} s ({state})")
        self.app_id = app_id
        self.last = last


class RideThrough:
    """Rides through an RM that does not answer (a restart, a failover) with jittered exponential backoff,
    telling ``on_outage`` once when it stops answering and once when it is back; anything else is raised."""

    def __init__(self, address: Callable[[], str], on_outage: OutageCallback | None, *,
                 clock: Callable[[], float], rng: Random | None = None) -> None:
        self._address = address
        self._on_outage = on_outage
        self._clock = clock
        self._rng = rng or Random()
        self._delay = 0.25
        self._since: float | None = None
        self._code = ""

    def failed(self, exc: ClientError) -> float:
        """The seconds to back off before asking again; ``exc`` itself when it is not an outage."""
        if exc.code not in RIDE_THROUGH and exc.exception != "RetriableException":
            raise exc
        if self._since is None:
            self._since, self._code = self._clock(), exc.code
            if self._on_outage is not None:
                self._on_outage(Outage(address=self._address(), code=exc.code, down_s=0.0, over=False))
        delay = self._delay * self._rng.uniform(0.5, 1.5)
        self._delay = min(self._delay * 2, MAX_BACKOFF_S)
        return delay

    def answered(self) -> None:
        """The RM answered: the outage, if there was one, is over."""
        if self._since is not None and self._on_outage is not None:
            self._on_outage(Outage(address=self._address(), code=self._code, down_s=self._clock() - self._since,
                                   over=True))
        self._since, self._delay = None, 0.25


class Watch:
    """One wait for one app: hands ``progress`` the first report and each one whose state, progress or stages
    changed, and says how long to sleep before the next poll, raising ``WaitTimeout`` once ``timeout_s`` has
    passed."""

    def __init__(self, app_id: str, progress: ProgressCallback | None, timeout_s: float | None, *,
                 clock: Callable[[], float]) -> None:
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError(f"timeout must be positive, not {timeout_s}")
        self.app_id = app_id
        self._progress = progress
        self._timeout_s = timeout_s
        self._clock = clock
        self._started = clock()
        self._last: WaitProgress | None = None
        self.report: AppReport | None = None

    def seen(self, report: AppReport) -> bool:
        """Take a report in; True once the app has ended."""
        self.report = report
        snap = WaitProgress.of(report, self._clock() - self._started)
        if self._progress is not None and (self._last is None or (snap.state, snap.progress, snap.stages)
                                           != (self._last.state, self._last.progress, self._last.stages)):
            self._progress(snap)
        self._last = snap
        return report.finished

    def pause(self, wanted_s: float) -> float:
        """How long to sleep before asking again: ``wanted_s``, or less as the timeout nears."""
        if self._timeout_s is None:
            return wanted_s
        left = self._started + self._timeout_s - self._clock()
        if left <= 0:
            raise WaitTimeout(self.app_id, self._timeout_s, self.report)
        return min(wanted_s, left)


def last_lines(text: str, n: int | None) -> str:
    """The last ``n`` lines of ``text`` (all of it for None); a last line without its newline counts."""
    if n is None:
        return text
    if n <= 0:
        return ""
    return "".join(text.splitlines(keepends=True)[-n:])


def log_names(files: str | Sequence[str]) -> list[str]:
    """The log files meant: one name or several, comma lists too; ``ALL`` is stdout and stderr; stdout when
    none. ValueError for a name a NodeManager would not serve (``../x``)."""
    out: list[str] = []
    for item in [files] if isinstance(files, str) else files:
        for name in (part.strip() for part in item.split(",")):
            if not name:
                continue
            if name.upper() == "ALL":
                out += ALL_FILES
            elif not LOG_NAME.match(name):
                raise ValueError(f"{name!r} is not a log file name (stdout, stderr, ...)")
            else:
                out.append(name)
    return list(dict.fromkeys(out)) or ["stdout"]


def log_url(node_http_address: str, container_id: str, name: str) -> str:
    """Where a NodeManager serves one container's log file."""
    return f"http://{node_http_address}/ws/v1/node/containers/{container_id}/logs/{name}"
