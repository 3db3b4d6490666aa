"""Big requests' bounds checked in a helper process (rm/service/bounds_worker.py): the same answers as on the
event loop, the loop free meanwhile, and a helper that dies replaced."""

from __future__ import annotations

import asyncio
import fcntl
import os
import sys
from collections.abc import Awaitable, Callable

import pytest

from common.errors import BadRequest
from proto import shepherd_pb2 as pb
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.service import limits
from rm.service.bounds_worker import BoundsChecks

ASK = pb.ResourceAsk(priority=1, num_containers=1, capability=pb.Resource(values={"memory-mb": 128, "vcores": 1}))


def grpc_allocate(asks: int) -> bytes:
    return pb.AllocateRequest(asks=[ASK] * asks).SerializeToString()


def with_checks(body: Callable[[BoundsChecks], Awaitable[None]], command: list[str] | None = None) -> BoundsChecks:
    """Run ``body`` on a fresh BoundsChecks in its own event loop, closing it (and its helper) afterwards."""
    checks = BoundsChecks()
    if command is not None:
        checks.command = command

    async def run() -> None:
        try:
            await body(checks)
        finally:
            await checks.close()
    asyncio.run(run())
    return checks


def test_a_big_allocate_is_refused_by_the_helper_with_the_loops_answer() -> None:
    async def body(checks: BoundsChecks) -> None:
        raw = grpc_allocate(limits.MAX_ASKS_PER_ALLOCATE + 1)
        assert len(raw) >= checks.off_loop_bytes
        with pytest.raises(BadRequest) as on_loop:
            checks.checks["grpc-allocate"](raw)
        with pytest.raises(BadRequest) as off_loop:
            await checks.check("grpc-allocate", raw)
        assert off_loop.value.message == on_loop.value.message
        assert "at most 10000 asks, not 10001" in off_loop.value.message
        # within the bounds: passes (and the parse that follows is the caller's)
        await checks.check("grpc-allocate", grpc_allocate(limits.MAX_ASKS_PER_ALLOCATE))
        # Hadoop's allocate: its asks are ResourceRequests, in field "ask"
        ipc = yp.AllocateRequest(ask=[yr.ResourceRequest(priority=yr.Priority(priority=1),
                                                              resource_name="/default-rack/host-00001", num_containers=1)]
                                 * (limits.MAX_ASKS_PER_ALLOCATE + 1)).SerializeToString()
        assert len(ipc) >= checks.off_loop_bytes
        with pytest.raises(BadRequest, match="at most 10000 asks"):
            await checks.check("ipc-allocate", ipc)
        assert checks.off_loop == 3
        assert checks.fallbacks == 0
    with_checks(body)


def test_a_big_rest_submission_comes_back_reduced_to_what_the_rm_keeps() -> None:
    """100,000 tags and a 300,000-character name: the helper parses the body and hands back the first ten tags, each
    cut, and the name cut, as JSON; a body the loop would refuse is refused with the same answer."""
    import json

    async def body(checks: BoundsChecks) -> None:
        tags = [f"{i}-" + "t" * 200 for i in range(20)] + [f"x{i}" for i in range(100_000)]
        raw = json.dumps({"application-id": "application_1_0001", "application-name": "n" * 300_000,
                          "application-tags": {"tag": tags}, "resource": {"memory": 128, "vCores": 1}}).encode()
        assert len(raw) >= checks.off_loop_bytes
        reduced = await checks.check("rest-submission", raw)
        assert reduced is not None
        assert len(reduced) < 4096
        kept = json.loads(reduced)
        assert kept["application-tags"] == {"tag": [t[:limits.MAX_TAG] for t in tags[:limits.MAX_TAGS]]}
        assert kept["application-name"] == "n" * limits.MAX_NAME
        assert kept["resource"] == {"memory": 128, "vCores": 1}
        bad = json.dumps({"application-tags": {"tag": [*tags, 7]}}).encode()  # one tag is not a string
        with pytest.raises(BadRequest) as on_loop:
            checks.checks["rest-submission"](bad)
        with pytest.raises(BadRequest) as off_loop:
            await checks.check("rest-submission", bad)
        assert off_loop.value.message == on_loop.value.message
        with pytest.raises(BadRequest, match="not a JSON number"):
            await checks.check("rest-submission", b'{"x": NaN, "pad": "' + b"p" * 300_000 + b'"}')
        assert checks.off_loop == 3
    with_checks(body)


def test_small_requests_are_checked_on_the_loop_without_a_helper() -> None:
    async def body(checks: BoundsChecks) -> None:
        tiny = pb.AllocateRequest(asks=[pb.ResourceAsk(priority=1)] * (limits.MAX_ASKS_PER_ALLOCATE + 1))
        raw = tiny.SerializeToString()
        assert len(raw) < checks.off_loop_bytes
        with pytest.raises(BadRequest, match="at most 10000 asks"):
            await checks.check("grpc-allocate", raw)
        assert checks.off_loop == 0
        assert checks._proc is None
    with_checks(body)


def test_the_loop_runs_while_the_helper_counts() -> None:
    """A slow check in the helper does not hold the loop: a ticker keeps ticking meanwhile."""
    async def body(checks: BoundsChecks) -> None:
        raw = grpc_allocate(limits.MAX_ASKS_PER_ALLOCATE * 10)
        await checks.check("grpc-allocate", grpc_allocate(limits.MAX_ASKS_PER_ALLOCATE))  # the helper is up
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0)
                ticks += 1

        task = asyncio.create_task(ticker())
        for _ in range(5):
            with pytest.raises(BadRequest):
                await checks.check("grpc-allocate", raw)
        task.cancel()
        assert ticks > 100  # on the loop, the five counts would have run back to back with no tick between
    with_checks(body)


def test_a_helper_that_died_is_replaced_and_the_request_still_checked() -> None:
    async def body(checks: BoundsChecks) -> None:
        raw = grpc_allocate(limits.MAX_ASKS_PER_ALLOCATE + 1)
        with pytest.raises(BadRequest):
            await checks.check("grpc-allocate", raw)
        first = checks._proc
        assert first is not None
        first.kill()
        first.wait()
        with pytest.raises(BadRequest, match="at most 10000 asks"):  # a dead helper is seen before the write
            await checks.check("grpc-allocate", raw)
        assert checks._proc is not None
        assert checks._proc.pid != first.pid
    assert with_checks(body)._proc is None  # closed with the helper it had started


def test_a_helper_that_cannot_work_leaves_the_check_to_the_loop() -> None:
    async def body(checks: BoundsChecks) -> None:
        with pytest.raises(BadRequest, match="at most 10000 asks"):
            await checks.check("grpc-allocate", grpc_allocate(limits.MAX_ASKS_PER_ALLOCATE + 1))
        assert checks.fallbacks == 1
        assert checks.off_loop == 0
    with_checks(body, command=[sys.executable, "-c", "pass"])  # exits at once: the write or the read fails


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SCHED_IDLE and pipe sizes are Linux's")
def test_the_helper_runs_on_idle_cpu_only_and_takes_a_request_in_few_writes() -> None:
    """Any process that wakes takes the core from the helper at once (SCHED_IDLE, not a niceness alone), and its
    input pipe holds a megabyte, so a 4 MB request is not 64 round trips between the RM's thread and it."""
    async def body(checks: BoundsChecks) -> None:
        with pytest.raises(BadRequest):
            await checks.check("grpc-allocate", grpc_allocate(limits.MAX_ASKS_PER_ALLOCATE + 1))
        proc = checks._proc
        assert proc is not None
        assert proc.stdin is not None
        assert os.sched_getscheduler(proc.pid) == os.SCHED_IDLE
        assert fcntl.fcntl(proc.stdin.fileno(), fcntl.F_GETPIPE_SZ) >= 1024 * 1024
    with_checks(body)
