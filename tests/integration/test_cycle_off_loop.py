"""The scheduling cycle runs on a thread of its own: the RM goes on answering while a cycle decides, whoever
else reads what the cycle reads (the explain call) waits for it, and the plan that comes back is applied to the
ledger as it is by then (an app killed meanwhile gets nothing)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import ClassVar

import grpc
import pytest

from common.ids import AppId
from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.core.context import CycleContext
from rm.core.model import ClusterSnapshot
from rm.core.policies.api import NOTHING, Input
from rm.service.config import RMConfig
from rm.service.server import ResourceManager
from tests.integration.conftest import grpc_node, unmanaged_am
from tests.integration.test_deadlines_rest import http

pytestmark = pytest.mark.asyncio

HOLD_S = 30.0  # far longer than any call below takes: a hold that runs out means the loop was stuck


class Hold:
    """A first pipeline stage that stops the first cycle seeing asks of every app in ``apps`` until released."""

    name: ClassVar[str] = "hold"

    def __init__(self) -> None:
        self.apps: set[AppId] = set()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.ran_out = False

    @property
    def reads(self) -> frozenset[Input]:
        return NOTHING

    def run(self, snap: ClusterSnapshot, ctx: CycleContext) -> None:
        if self.entered.is_set() or not self.apps:
            return
        if all(a in snap.apps and snap.apps[a].asks for a in self.apps):
            self.entered.set()
            self.ran_out = not self.release.wait(HOLD_S)


async def test_the_rm_answers_during_a_cycle_and_applies_its_plan_to_the_ledger_as_it_then_is(
        tmp_path: Path) -> None:
    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      ipc_client_port=-1, ipc_scheduler_port=-1, scheduler="drf"))
    assert server.cfg.cycle_off_loop  # the default
    await server.start()
    hold = Hold()
    server.pipeline = (hold, *server.pipeline)
    try:
        await grpc_node(server, Resources.of(memory_mb=8192, vcores=8), healthy=True)
        unit = pb.Resource(values={"memory-mb": 1024, "vcores": 1})
        asks = [pb.ResourceAsk(allocation_request_id=1, priority=1, capability=unit, num_containers=2)]
        secret = [("authorization", f"Bearer {server.cfg.client_secret or ''}")]
        async with http(server) as client, grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            kept, kept_am, kept_amrm = await unmanaged_am(server, channel, "kept")
            killed, killed_am, killed_amrm = await unmanaged_am(server, channel, "killed")
            hold.apps = {AppId(kept), AppId(killed)}
            await kept_am.Allocate(pb.AllocateRequest(response_id=0, asks=asks), metadata=kept_amrm)
            await killed_am.Allocate(pb.AllocateRequest(response_id=0, asks=asks), metadata=killed_amrm)
            server.kick()
            assert await asyncio.to_thread(hold.entered.wait, HOLD_S), "no cycle saw both apps' asks"

            # the cycle is held on its thread: the loop answers, and the explanation waits for the cycle
            r = await client.get("/ws/v1/cluster/apps")
            assert r.status_code == 200
            explained = asyncio.create_task(client.get(f"/ws/v1/shepherd/apps/{kept}/explain"))
            await pbg.ApplicationClientStub(channel).KillApplication(
                pb.KillApplicationRequest(application_id=killed), metadata=secret)
            assert server.state.apps[AppId(killed)].final
            await asyncio.sleep(0.2)  # the explanation's request is in and waits for the cycle's lock
            assert not explained.done()
            hold.release.set()
            assert (await explained).status_code == 200

            def placed(app: str) -> int:
                return sum(1 for cid in server.state.apps[AppId(app)].containers
                           if not server.state.containers[cid].is_am)

            for _ in range(100):
                if placed(kept) == 2:
                    break
                await asyncio.sleep(0.1)
        assert not hold.ran_out, "the loop did not answer while the cycle was held"
        assert placed(kept) == 2
        assert placed(killed) == 0  # the held cycle's plan placed it; applying it skipped the ended app
    finally:
        hold.release.set()
        await server.stop()
