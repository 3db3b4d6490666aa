"""systemd's service notification protocol (sd_notify(3)), spoken directly: one datagram per message to the
unix socket named by ``$NOTIFY_SOCKET``, so a ``Type=notify`` unit knows when the daemon is ready, that it is
alive (``WatchdogSec=``) and that it is stopping.

Without ``$NOTIFY_SOCKET`` (not under systemd) every call is a no-op. The variables are taken out of the
process environment when read, so the containers and AMs a daemon starts cannot speak for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Mapping, MutableMapping

log = logging.getLogger("shepherd.sdnotify")

_VARIABLES = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


class Notifier:
    """The daemon's side of the protocol: ``ready``, ``status``, ``stopping`` and the watchdog keep-alive."""

    def __init__(self, env: Mapping[str, str] | None = None, *, pid: int | None = None) -> None:
        env = os.environ if env is None else env
        self.pid = os.getpid() if pid is None else pid
        self.address = _address(env.get("NOTIFY_SOCKET", ""))
        self.watchdog_s = _watchdog_seconds(env, self.pid)

    @classmethod
    def from_environment(cls, environ: MutableMapping[str, str] | None = None) -> Notifier:
        """Read the variables and remove them from ``environ`` (the process environment by default)."""
        environ = os.environ if environ is None else environ
        notifier = cls(dict(environ))
        for name in _VARIABLES:
            environ.pop(name, None)
        return notifier

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def notify(self, *assignments: str, wait_s: float = 1.0) -> bool:
        """Send ``KEY=VALUE`` lines as one datagram; False if there is no socket or it refused them.

        A reader that falls behind fills the socket's small queue and would block the sender: this waits at
        most ``wait_s`` (0: not at all), so the daemon's event loop never hangs on its service manager.
        """
        if self.address is None:
            return False
        payload = "\n".join(assignments).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.settimeout(wait_s)
                sock.sendto(payload, self.address)
        except (BlockingIOError, TimeoutError):
            log.debug("the service manager's notify socket is full; dropped %s", assignments)
            return False
        except OSError as exc:
            log.warning("cannot notify the service manager at %r: %s", self.address, exc)
            return False
        return True

    def ready(self, status: str = "") -> bool:
        """The daemon serves: every port it listens on accepts connections."""
        return self.notify("READY=1", f"MAINPID={self.pid}", *([f"STATUS={_one_line(status)}"] if status else []))

    def status(self, status: str) -> bool:
        return self.notify(f"STATUS={_one_line(status)}")

    def stopping(self, status: str = "") -> bool:
        return self.notify("STOPPING=1", *([f"STATUS={_one_line(status)}"] if status else []))

    async def watchdog(self, healthy: Callable[[], bool] = lambda: True) -> None:
        """Send ``WATCHDOG=1`` at half the watchdog interval for as long as ``healthy()`` says so; runs until
        cancelled (at once if the service manager asked for no watchdog). It runs in the daemon's event loop, so
        a loop that stops turning also stops the keep-alives and systemd restarts the daemon."""
        if self.watchdog_s is None or self.address is None:
            return
        period = self.watchdog_s / 2
        while True:
            if healthy():
                self.notify("WATCHDOG=1", wait_s=0)  # a late keep-alive is as good as none
            else:
                log.error("not healthy: withholding the watchdog keep-alive")
            await asyncio.sleep(period)


def _address(value: str) -> str | bytes | None:
    if not value:
        return None
    if value.startswith("@"):  # Linux abstract namespace
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    log.warning("NOTIFY_SOCKET=%r is neither a path nor an abstract socket name; not notifying", value)
    return None


def _watchdog_seconds(env: Mapping[str, str], pid: int) -> float | None:
    usec = env.get("WATCHDOG_USEC", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    owner = env.get("WATCHDOG_PID", "")
    if owner and (not owner.isdigit() or int(owner) != pid):  # meant for another process
        return None
    return int(usec) / 1_000_000


def _one_line(text: str) -> str:
    return " ".join(text.split())
