"""The daemons under systemd: the sd_notify protocol against a notify socket the test owns, and the units in
deploy/systemd checked by ``systemd-analyze verify``."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from common.sdnotify import Notifier
from tests.e2e.conftest import ROOT, kill_strays

UNITS = ROOT / "deploy" / "systemd"


@dataclass
class Message:
    at: float
    fields: dict[str, str]
    ports_open: bool | None = None  # for READY=1: did every port the STATUS names accept a connection then?


class NotifySocket:
    """A service manager's end: a unix datagram socket read by a thread as systemd reads its own, promptly (a
    full queue would hold the daemon's messages back)."""

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="sdn", dir="/tmp")  # short: sun_path has 108 bytes
        self.path = os.path.join(self.directory, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages: list[Message] = []
        self._seen = threading.Condition()
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._closed:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            msg = Message(time.monotonic(), fields)
            if fields.get("READY") == "1":  # at once, before anything else is read
                msg.ports_open = all(_accepts(a) for a in _addresses(fields.get("STATUS", "")))
            with self._seen:
                self.messages.append(msg)
                self._seen.notify_all()

    def receive(self, key: str, timeout: float, proc: subprocess.Popen[str] | None = None,
                after: int = 0) -> Message:
        """The first message from index ``after`` on that carries ``key`` (e.g. ``READY``)."""
        deadline = time.monotonic() + timeout
        with self._seen:
            while True:
                for msg in self.messages[after:]:
                    if key in msg.fields:
                        return msg
                if proc is not None and proc.poll() is not None:
                    log = getattr(proc, "log_path", None)
                    tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
                    raise AssertionError(f"the daemon exited ({proc.returncode}) before sending {key}=; its log:\n"
                                         f"{tail}")
                left = deadline - time.monotonic()
                if left <= 0:
                    got = [m.fields for m in self.messages][-5:]
                    raise AssertionError(f"no {key}= within {timeout:.0f}s; last messages {got}")
                self._seen.wait(min(left, 0.2))

    def count(self, key: str, seconds: float) -> int:
        """How many messages carrying ``key`` arrive within the next ``seconds``."""
        first = len(self.messages)
        time.sleep(seconds)
        return sum(key in m.fields for m in self.messages[first:])

    def close(self) -> None:
        self._closed = True
        self._reader.join(2)
        self.sock.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def notify_socket() -> Iterator[NotifySocket]:
    sock = NotifySocket()
    try:
        yield sock
    finally:
        sock.close()


def _addresses(status: str) -> list[tuple[str, int]]:
    """host:port pairs in a STATUS line (grpc=, rest=, ipc=..., node_id=, http=)."""
    out = []
    for m in re.finditer(r"(?:grpc|rest|ipc_client|ipc_scheduler|node_id|http|ipc)=(?:http://)?([\w.\-]+):(\d+)",
                         status):
        out.append((m.group(1), int(m.group(2))))
    return out


def _accepts(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=2.0):
            return True
    except OSError:
        return False


SECRETS = {"SHEPHERD_NODE_SECRET": uuid.uuid4().hex, "SHEPHERD_CLIENT_SECRET": uuid.uuid4().hex}


def _daemon(args: list[str], sock: NotifySocket, log: Path, watchdog_usec: int = 400_000) -> subprocess.Popen[str]:
    """A daemon as its unit starts it: the notify socket and watchdog in its environment, and the secrets (the
    unit's EnvironmentFile)."""
    env = {**os.environ, **SECRETS, "NOTIFY_SOCKET": sock.path, "WATCHDOG_USEC": str(watchdog_usec)}
    env.pop("WATCHDOG_PID", None)
    proc = subprocess.Popen([sys.executable, "-m", "rm.cli", *args], env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    proc.log_path = log  # type: ignore[attr-defined]
    return proc


def _stop(proc: subprocess.Popen[str]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(5)


def test_ready_only_once_listening_then_watchdog_then_stopping(tmp_path: Path) -> None:
    rm_sock, nm_sock = NotifySocket(), NotifySocket()
    rm = _daemon(["rm", "--grpc-port", "0", "--rest-port", "0", "--ipc-client-port", "0",
                  "--ipc-scheduler-port", "0", "--data-dir", str(tmp_path / "rm"), "--create-store"],
                 rm_sock, tmp_path / "rm.log")
    nm: subprocess.Popen[str] | None = None
    try:
        ready = rm_sock.receive("READY", 60, rm)
        status = ready.fields.get("STATUS", "")
        assert ready.fields.get("MAINPID") == str(rm.pid)
        assert len(_addresses(status)) == 4, status  # gRPC, REST and both Hadoop IPC listeners
        assert ready.ports_open, f"READY=1 before every port accepted connections: {status}"
        grpc_address = re.search(r"grpc=(\S+)", status).group(1)  # type: ignore[union-attr]

        nm = _daemon(["nm", "--rm", grpc_address, "--port", "0", "--http-port", "0", "--memory-mb", "1024",
                      "--vcores", "2", "--work-dir", str(tmp_path / "nm"), "--no-cgroups",
                      "--allow-root-containers"],  # as root: the work dir is in pytest's private tmp dir
                     nm_sock, tmp_path / "nm.log")
        nm_ready = nm_sock.receive("READY", 60, nm)
        assert nm_ready.fields.get("MAINPID") == str(nm.pid)
        assert len(_addresses(nm_ready.fields["STATUS"])) == 3, nm_ready.fields  # ContainerManager, web, IPC
        assert nm_ready.ports_open, f"READY=1 before every port accepted connections: {nm_ready.fields}"
        registered = nm_sock.receive("STATUS", 30, nm, after=nm_sock.messages.index(nm_ready) + 1)
        assert "registered with" in registered.fields["STATUS"], (tmp_path / "nm.log").read_text()[-3000:]

        for name, sock in (("rm", rm_sock), ("nm", nm_sock)):
            beats = sock.count("WATCHDOG", 2.0)
            assert 5 <= beats <= 14, f"{name}: {beats} keep-alives in 2 s, want one per 0.2 s (WATCHDOG_USEC/2)"
            assert sum("READY" in m.fields for m in sock.messages) == 1, f"{name} said READY more than once"

        assert _stop(nm) == 0
        nm_sock.receive("STOPPING", 10)
        assert _stop(rm) == 0
        rm_sock.receive("STOPPING", 10)
    finally:
        for proc in (nm, rm):
            if proc is not None:
                _stop(proc)
        rm_sock.close()
        nm_sock.close()
        kill_strays(tmp_path)


def test_no_ready_when_the_daemon_cannot_listen(tmp_path: Path, notify_socket: NotifySocket) -> None:
    """A port already taken: the RM exits with an error and never says READY=1."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        rm = _daemon(["rm", "--grpc-port", "0", "--rest-port", str(port), "--ipc-client-port", "-1",
                      "--ipc-scheduler-port", "-1", "--data-dir", str(tmp_path / "rm"), "--create-store"],
                     notify_socket, tmp_path / "rm.log")
        try:
            code = rm.wait(60)
        finally:
            _stop(rm)
    assert code != 0, (tmp_path / "rm.log").read_text()
    time.sleep(0.5)
    assert not [m for m in notify_socket.messages if "READY" in m.fields], notify_socket.messages


def test_notifier_speaks_the_protocol(notify_socket: NotifySocket) -> None:
    env = {"NOTIFY_SOCKET": notify_socket.path, "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "4242"}
    n = Notifier(env, pid=4242)
    assert n.enabled
    assert n.watchdog_s == 2.0
    assert n.ready("serving\nnow")
    msg = notify_socket.receive("READY", 2)
    assert msg.fields == {"READY": "1", "MAINPID": "4242", "STATUS": "serving now"}
    assert Notifier(env, pid=1).watchdog_s is None  # WATCHDOG_PID names another process
    assert not Notifier({}).notify("READY=1")  # not under systemd: nothing to do
    environ = dict(env)
    Notifier.from_environment(environ)
    assert environ == {}  # children (containers, AMs) do not inherit the socket


def test_abstract_notify_socket() -> None:
    name = f"shepherd-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(2)
        assert Notifier({"NOTIFY_SOCKET": f"@{name}"}).stopping()
        assert sock.recv(4096) == b"STOPPING=1"


# ---------------------------------------------------------------------------------------------- unit files


def _systemd_analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (Debian package systemd; .ci/run installs it)")
    return tool


@pytest.mark.parametrize("unit", ["shepherd-rm.service", "shepherd-nm.service"])
def test_unit_verifies(unit: str, tmp_path: Path) -> None:
    """``systemd-analyze verify`` on the unit as shipped, with its ExecStart pointed at this install."""
    tool = _systemd_analyze()
    text = (UNITS / unit).read_text()
    shepherd = shutil.which("shepherd") or str(Path(sys.executable).parent / "shepherd")
    assert Path(shepherd).exists(), shepherd
    assert "/opt/shepherd/bin/shepherd" in text
    (tmp_path / unit).write_text(text.replace("/opt/shepherd/bin/shepherd", shepherd))
    run = subprocess.run([tool, "verify", "--man=no", str(tmp_path / unit)], capture_output=True, text=True,
                         timeout=60, check=False)
    output = (run.stdout + run.stderr).strip()
    if "Failed to " in output and "bus" in output.lower() and run.returncode != 0:
        pytest.skip(f"systemd-analyze cannot run here: {output}")
    assert run.returncode == 0, output
    assert unit.split(".")[0] not in output, output  # no warning about the unit itself


@pytest.mark.parametrize("unit", ["shepherd-rm.service", "shepherd-nm.service"])
def test_unit_asks_for_what_the_daemon_does(unit: str) -> None:
    lines = [line.strip() for line in (UNITS / unit).read_text().splitlines()]
    settings = {}
    for line in lines:
        if "=" in line and not line.startswith(("#", ";")):
            key, value = line.split("=", 1)
            settings.setdefault(key, value)
    assert settings["Type"] == "notify"
    assert settings["NotifyAccess"] == "main"
    assert settings["Restart"] == "on-failure"
    assert settings["WatchdogSec"]
    assert settings["EnvironmentFile"].lstrip("-").startswith("/etc/shepherd/")
    for key in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "ProtectKernelTunables"):
        assert key in settings, key
    if unit == "shepherd-rm.service":
        assert settings["User"] == "shepherd"
        assert settings["NoNewPrivileges"] == "yes"
