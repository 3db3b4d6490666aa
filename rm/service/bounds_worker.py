"""The bounds checks of big serialized requests, made in a helper process instead of on the RM's event loop (S19).

Two kinds: an allocate's asks and releases counted on its bytes (refused or passed), and a REST submission's
JSON body parsed, checked and reduced to what the RM keeps of it (its name cut, its first ten tags), which the
loop then parses instead: a body of 100,000 tags is a megabyte of JSON and 100,000 strings.

Counting the asks of a 4 MB allocate takes the event loop 5-15 ms (the protobuf parse holds the GIL, so a thread
would not help), and every other caller of the RM waits that long. A request of at least ``OFF_LOOP_BYTES`` is
therefore written to a helper process (``python -m rm.service.bounds_worker``), which runs the same check on it
and answers with the refusal, if any, or the reduced request; the loop only writes the bytes down a pipe and
waits for the few bytes of the answer. Smaller requests (the whole of normal traffic) are checked on the loop as
before: it costs less than the trip.

The helper is started on the first big request, one per RM, and checks one request at a time (callers beyond it
wait their turn, not the loop); one thread of the RM talks to it, with blocking writes and reads that release the
GIL. If it cannot be started or dies, that request is checked on the loop, and the
next big one starts a new helper. It holds nothing but what it is sent, and exits when the RM closes its input
(or dies).

Wire, both ways: frames of a 4-byte big-endian length and a payload. A request's payload is one byte with the
check's name length, the name, then the serialized request; the answer's is one byte, then: nothing (``PASS``: the
request stands as sent), the refusal in UTF-8 (``REFUSE``), or the request to use instead (``REPLACE``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

from common.errors import BadRequest
from rm.service import limits

log = logging.getLogger(__name__)

OFF_LOOP_BYTES = 256 * 1024  # a count of this many bytes costs the loop about 0.3 ms: less than the pipe's trip
PIPE_BYTES = 1024 * 1024  # the helper's input pipe (Linux's default most an unprivileged process may ask)
_LENGTH = struct.Struct(">I")
PASS, REFUSE, REPLACE = 0, 1, 2  # the first byte of an answer
Check = Callable[[bytes | memoryview], bytes | None]
"""Raises BadRequest to refuse; returns the request to use instead, or None when it stands as sent."""


def request_checks() -> dict[str, Check]:
    """The checks by name: an allocate's asks and releases counted on its bytes (gRPC's and Hadoop IPC's), and a
    REST submission's body reduced to what the RM keeps of it."""
    from proto import shepherd_pb2 as pb
    from proto.hadoop import yarn_protocols_pb2 as yp
    from rm.service.rest.submit import reduce_submission

    return {"grpc-allocate": limits.allocate_precheck(pb.AllocateRequest, "asks", "releases"),
            "ipc-allocate": limits.allocate_precheck(yp.AllocateRequest, "ask", "release"),
            "rest-submission": reduce_submission}


class BoundsChecks:
    """``check(name, raw)``: the named check of a serialized request, off the event loop when it is big."""

    def __init__(self, checks: Mapping[str, Check] | None = None, *, off_loop_bytes: int = OFF_LOOP_BYTES) -> None:
        self.checks = dict(checks if checks is not None else request_checks())
        self.off_loop_bytes = off_loop_bytes
        self.command = [sys.executable, "-m", "rm.service.bounds_worker"]
        self._proc: subprocess.Popen[bytes] | None = None
        # one thread talks to the helper: its blocking writes and reads release the GIL, and a request's bytes
        # go down the pipe from the caller's own buffer, with no copy on the loop
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bounds")
        self.off_loop = 0  # requests checked by the helper
        self.fallbacks = 0  # big requests checked on the loop because the helper failed

    async def check(self, name: str, raw: bytes | memoryview) -> bytes | None:
        """Raises BadRequest when the request is over its bounds; returns the request to use instead, if any."""
        check = self.checks[name]
        if len(raw) < self.off_loop_bytes:
            return check(raw)
        try:
            answer = await asyncio.get_running_loop().run_in_executor(self._thread, self._ask, name, raw)
        except (OSError, EOFError, ValueError) as exc:
            log.warning("the bounds helper failed (%s); checking this request on the event loop", exc)
            self.fallbacks += 1
            await asyncio.get_running_loop().run_in_executor(self._thread, self._stop_helper)
            return check(raw)
        self.off_loop += 1
        kind, rest = (answer[0], answer[1:]) if answer else (PASS, b"")
        if kind == REFUSE:
            raise BadRequest(rest.decode("utf-8", "replace"))
        return rest if kind == REPLACE else None

    def _ask(self, name: str, raw: bytes | memoryview) -> bytes:
        """In the helper's thread: one request sent, its answer read."""
        proc = self._helper()
        assert proc.stdin is not None
        assert proc.stdout is not None
        tag = name.encode()
        _write_all(proc.stdin.fileno(), _LENGTH.pack(1 + len(tag) + len(raw)) + bytes([len(tag)]) + tag)
        _write_all(proc.stdin.fileno(), raw)
        (size,) = _LENGTH.unpack(_read_exactly(proc.stdout, _LENGTH.size))
        return _read_exactly(proc.stdout, size)

    def _helper(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._stop_helper()
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
        self._proc = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, close_fds=True)
        if self._proc.stdin is not None:  # a 4 MB request in a few writes, not 64 of the default 64 KiB
            with contextlib.suppress(OSError, AttributeError):
                fcntl.fcntl(self._proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        return self._proc

    def _stop_helper(self) -> None:
        """Close the helper's input (it ends at once); one that does not end within 2 s is killed."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            proc.wait(2.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self._stop_helper)
        self._thread.shutdown(wait=False)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    parts, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def serve(stdin: IO[bytes], stdout: IO[bytes], checks: Mapping[str, Check]) -> None:
    """The helper's loop: a request in, its refusal (or nothing) out, until the input ends."""
    while True:
        try:
            (size,) = _LENGTH.unpack(_read_exactly(stdin, _LENGTH.size))
            payload = _read_exactly(stdin, size)
        except EOFError:
            return
        n = payload[0]
        name, raw = payload[1:1 + n].decode(), payload[1 + n:]
        try:
            replaced = checks[name](raw)
            answer = bytes([PASS]) if replaced is None else bytes([REPLACE]) + replaced
        except BadRequest as err:
            answer = bytes([REFUSE]) + err.message.encode()
        del payload, raw
        stdout.write(_LENGTH.pack(len(answer)) + answer)
        stdout.flush()


def _yield_to_everyone() -> None:
    """This process runs only on CPU time nothing else wants (SCHED_IDLE; where that is refused, the lowest
    niceness): a huge request's check is its sender's cost, and any other process that wakes, the RM's callers
    and the RM itself, takes the core from it at once. A niceness alone does not: under the kernel's EEVDF
    scheduler a nice-19 task keeps its core for a slice when a normal one wakes."""
    os.nice(19)
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


if __name__ == "__main__":
    _yield_to_everyone()
    serve(sys.stdin.buffer, sys.stdout.buffer, request_checks())
