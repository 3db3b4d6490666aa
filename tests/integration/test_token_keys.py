"""S16 on a real ResourceManager (in this process) and a real NodeManager process: container tokens outlive a
key roll and an RM restart, a key two rolls old and a guessed key are refused, and after an RM restart a peer
holding the node secret cannot take a live node's id while the node's own NodeManager carries on."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import secrets
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio

from common import tokens
from common.resources import Resources
from proto import shepherd_pb2 as pb
from proto import shepherd_pb2_grpc as pbg
from rm.core.state_types import SubmitSpec
from rm.local import NM_READY, Daemon
from rm.service.config import RMConfig
from rm.service.operations import Operations
from rm.service.server import ResourceManager
from tests.integration.conftest import empty_pg_database

pytestmark = pytest.mark.asyncio

NODE_SECRET = "node-" + "n" * 32
CLIENT_SECRET = "client-" + "c" * 32
DEADLINE_S = 30.0


async def until(pred: Callable[[], Any], what: str, timeout: float = DEADLINE_S) -> Any:
    """Wait, with a deadline, until ``pred()`` is truthy; return it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := pred()):
        assert loop.time() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        await asyncio.sleep(0.05)
    return value


def address(node: pb.NodeId) -> str:
    return f"{node.host}:{node.port}"


class Am:
    """An unmanaged ApplicationMaster: this test, speaking the AM protocol."""

    def __init__(self, channel: grpc.aio.Channel, amrm: str) -> None:
        self.stub = pbg.ApplicationMasterStub(channel)  # type: ignore[no-untyped-call]
        self.md = (("authorization", f"Bearer {amrm}"),)
        self.response_id = 0
        self.nm_tokens: dict[str, str] = {}

    async def register(self) -> None:
        await self.stub.RegisterApplicationMaster(pb.RegisterApplicationMasterRequest(host="test"), metadata=self.md)
        self.response_id = 0

    async def allocate(self, asks: list[pb.ResourceAsk] | None = None) -> pb.AllocateResponse:
        resp: pb.AllocateResponse = await self.stub.Allocate(
            pb.AllocateRequest(response_id=self.response_id, asks=asks or []), metadata=self.md)
        self.response_id = resp.response_id
        self.nm_tokens.update({address(t.node_id): t.token for t in resp.nm_tokens})
        return resp

    async def containers(self, n: int, ask_id: int) -> list[pb.Container]:
        got = list((await self.allocate([pb.ResourceAsk(
            allocation_request_id=ask_id, priority=1, num_containers=n,
            capability=pb.Resource(values={"memory-mb": 128, "vcores": 1}))])).allocated_containers)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_S
        while len(got) < n:
            assert loop.time() < deadline, f"only {len(got)} of {n} containers allocated"
            await asyncio.sleep(0.1)
            got += (await self.allocate()).allocated_containers
        return got

    async def start(self, c: pb.Container, token: str | None = None) -> pb.StartContainersResponse:
        node = address(c.node_id)
        async with grpc.aio.insecure_channel(node) as channel:
            stub = pbg.ContainerManagerStub(channel)  # type: ignore[no-untyped-call]
            resp: pb.StartContainersResponse = await stub.StartContainers(pb.StartContainersRequest(requests=[
                pb.StartContainerRequest(container_token=token or c.container_token,
                                         launch_context=pb.ContainerLaunchContext(commands=["sleep 60"]))]),
                metadata=[("authorization", f"Bearer {self.nm_tokens[node]}")], timeout=10)
        return resp


@dataclasses.dataclass
class Cluster:
    rm: ResourceManager
    nm: Daemon
    channel: grpc.aio.Channel

    async def restart_rm(self) -> None:
        """Stop the RM and start another on the same store and gRPC port (the NodeManager keeps running)."""
        await self.rm.stop()
        self.rm = ResourceManager(dataclasses.replace(self.rm.cfg, grpc_port=self.rm.grpc_port, create_store=False))
        await self.rm.start()

    async def am(self) -> Am:
        ops = Operations(self.rm)
        app_id = (await ops.new_application()).app_id
        await ops.submit(SubmitSpec(app_id=app_id, unmanaged=True, am_launch={"commands": ["true"]},
                                    am_resource=Resources.of(memory_mb=128, vcores=1)))
        attempt = self.rm.state.apps[app_id].attempts[-1].attempt_id  # type: ignore[index]
        am = Am(self.channel, tokens.amrm_token(self.rm.state.amrm_key, attempt))
        await am.register()
        return am

    def nm_log(self) -> str:
        return self.nm.log_path.read_text() if self.nm.log_path.exists() else ""


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str | None]:
    if request.param == "sqlite":
        yield None
        return
    yield from empty_pg_database(request.getfixturevalue("pg_admin"))


async def _cluster(tmp_path: Path, **cfg: Any) -> Cluster:
    rm = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                  ipc_client_port=-1, ipc_scheduler_port=-1, node_secret=NODE_SECRET,
                                  client_secret=CLIENT_SECRET, heartbeat_interval_s=0.2, **cfg))
    await rm.start()
    args = [sys.executable, "-m", "nodemanager", "--rm", f"127.0.0.1:{rm.grpc_port}", "--port", "0",
            "--http-port", "0", "--work-dir", str(tmp_path / "nm"), "--memory-mb", "2048", "--vcores", "4",
            "--node-secret", NODE_SECRET, "--stop-grace", "1"]
    if os.geteuid() == 0:
        args.append("--allow-root-containers")
    nm = Daemon("nm", args, tmp_path / "nm.log", NM_READY)
    try:
        await asyncio.to_thread(nm.start)  # ready once registered with the RM serving on this loop
    except BaseException:
        await rm.stop()
        raise
    return Cluster(rm, nm, grpc.aio.insecure_channel(f"127.0.0.1:{rm.grpc_port}"))


@pytest_asyncio.fixture
async def cluster_of(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    made: list[Cluster] = []

    async def make(**cfg: Any) -> Cluster:
        made.append(await _cluster(tmp_path, **cfg))
        return made[-1]

    yield make
    for c in made:
        await asyncio.to_thread(c.nm.stop)
        await c.channel.close()
        await c.rm.stop()


def _resigned(token: str, key: bytes, key_id: int | None) -> str:
    """The same container token's fields, signed with another key (naming ``key_id``)."""
    fields = json.loads(tokens._unb64(token.split(".", 1)[0]))
    fields.pop("kind")
    fields.pop("key_id", None)
    if key_id is not None:
        fields["key_id"] = key_id
    return tokens.sign(key, "container", fields)


async def test_a_container_token_outlives_one_key_roll_but_not_two(cluster_of: Callable[..., Any]) -> None:
    c: Cluster = await cluster_of(container_key_roll_s=6.0)  # a new key every 6 s, signing 2 s after it is made
    am = await c.am()
    early, late = await am.containers(2, ask_id=1)
    k = tokens.key_id_of(early.container_token)
    assert k is not None
    assert tokens.key_id_of(late.container_token) == k
    await until(lambda: c.rm.state.container_key_id > k, f"key {k + 1} to sign")
    await am.allocate()  # the NM token comes again, under the new key
    assert tokens.key_id_of(am.nm_tokens[address(early.node_id)]) == k + 1
    started = await am.start(early)  # issued before the roll, started after it
    assert list(started.succeeded) == [early.container_id], started.failed
    await until(lambda: c.rm.state.containers[early.container_id].state == "RUNNING", "the container to run")
    (fresh,) = await am.containers(1, ask_id=2)
    assert tokens.key_id_of(fresh.container_token) == k + 1
    # the next roll: key k is no longer handed out, and the NodeManager refuses what it signed
    await until(lambda: f"container-token keys accepted: {k + 2}, {k + 1}" in c.nm_log(), f"the NM to drop key {k}")
    refused = await am.start(late)
    assert not refused.succeeded
    assert f"signed with key {k}, which this NodeManager does not accept" in refused.failed[0].message
    assert c.rm.state.containers[late.container_id].state == "ACQUIRED"  # never ran
    started = await am.start(fresh)
    assert list(started.succeeded) == [fresh.container_id], started.failed


async def test_tokens_and_node_sessions_survive_an_rm_restart(cluster_of: Callable[..., Any],
                                                               store_url: str | None) -> None:
    c: Cluster = await cluster_of(store_url=store_url)
    am = await c.am()
    running, later = await am.containers(2, ask_id=1)
    node = address(running.node_id)
    assert list((await am.start(running)).succeeded) == [running.container_id]
    await until(lambda: c.rm.state.containers[running.container_id].state == "RUNNING", "the container to run")
    key_id = c.rm.state.container_key_id

    # a container token signed with a guessed key is refused, whatever key it names, and nothing starts
    for forged, words in [(_resigned(later.container_token, secrets.token_bytes(32), key_id), "signature"),
                          (_resigned(later.container_token, secrets.token_bytes(32), None), "signature"),
                          (_resigned(later.container_token, secrets.token_bytes(32), key_id + 7), "does not accept")]:
        refused = await am.start(later, forged)
        assert not refused.succeeded
        assert words in refused.failed[0].message, refused.failed
    assert c.rm.state.containers[later.container_id].state == "ACQUIRED"

    await c.restart_rm()
    rogue = pbg.ResourceTrackerStub(c.channel)  # type: ignore[no-untyped-call]
    host, port = node.rsplit(":", 1)
    claim = pb.RegisterNodeRequest(node_id=pb.NodeId(host=host, port=int(port)), http_address="127.0.0.1:2",
                                   capability=pb.Resource(values={"memory-mb": 99_999, "vcores": 99}))
    secret = [("authorization", f"Bearer {NODE_SECRET}")]
    with pytest.raises(grpc.aio.AioRpcError) as err:  # before and after its NodeManager registers again
        await rogue.RegisterNodeManager(claim, metadata=secret)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "registered and alive" in (err.value.details() or "")
    await until(lambda: c.rm.state.nodes[node].state == "RUNNING", "the node's NodeManager to register again")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await rogue.RegisterNodeManager(claim, metadata=secret)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    reply = await rogue.NodeHeartbeat(pb.NodeHeartbeatRequest(node_id=claim.node_id), metadata=secret)
    assert reply.action == pb.NODE_ACTION_RESYNC
    assert not reply.container_token_keys
    # the NodeManager kept its containers, and the RM its idea of the node
    await until(lambda: c.rm.state.containers[running.container_id].state == "RUNNING"
                and c.rm.state.nodes[node].capability == Resources.of(memory_mb=2048, vcores=4), "the node as it was")
    assert c.rm.state.container_key_id == key_id

    with pytest.raises(grpc.aio.AioRpcError) as err:  # the AM re-registers (YARN's resync)
        await am.allocate()
    assert "ApplicationMasterNotRegistered" in (err.value.details() or "")
    await am.register()
    started = await am.start(later)  # its token was issued before the restart
    assert list(started.succeeded) == [later.container_id], started.failed
