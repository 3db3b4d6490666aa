"""One policy at each extension point (an admission rule, an app order, a stage: tests/extensions/newest_first.py,
registered with one call) runs live, in the simulator and in the harness, with the same decisions: the
newest of three waiting apps gets the freed room first, then the next newest, and mallory's app is refused at
submission in all three.

Each driver fills its one node with a blocker, submits a1, a2, a3 one after another (and mallory's app), then
lets the blocker end; the order in which a1..a3 get their AM containers is the decision compared.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from am.jobspec import parse_job
from common.errors import AdmissionRefused
from common.resources import Resources
from rm.core.events import Event, Journal, PlanApplied
from rm.core.harness import Harness
from rm.core.policies.registry import make_admission, named_pipeline
from rm.local import NM_READY, Daemon
from rm.service.config import RMConfig
from rm.service.server import ResourceManager
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.policies import make_policy
from tests.extensions.newest_first import REFUSED_USER, register, unregister

WAITING = ("a1", "a2", "a3")
NEWEST_FIRST = ["a3", "a2", "a1"]
NODE = Resources.of(memory_mb=8192, vcores=8)


@pytest.fixture(autouse=True)
def newest_first() -> Iterator[None]:
    register()
    yield
    unregister()


def test_in_the_harness() -> None:
    h = Harness(admission=make_admission("no-mallory"))
    h.node("n1", vcores=8, memory_mb=8192)
    pipeline, shares = named_pipeline("newest-first")
    blocker = h.submit("blocker", am=NODE, at=0.0)
    h.apply(h.cycle(pipeline, now=0.0, shares=shares))
    for i, name in enumerate(WAITING, start=1):
        h.submit(name, at=float(i))
    with pytest.raises(AdmissionRefused, match="mallory may not run here"):
        h.submit("m", user=REFUSED_USER, at=4.0)
    assert h.cycle(pipeline, now=4.0, shares=shares).count() == 0  # the node is full
    h.ledger.kill(blocker.id, "", 5.0)
    plan = h.cycle(pipeline, now=5.0, shares=shares)
    assert [h.ledger.apps[p.app_id].name for p in plan.placements] == NEWEST_FIRST


def test_in_the_simulator() -> None:
    def job(name: str, arrival: float, tasks: int, seconds: float, user: str = "sim") -> Any:
        return parse_job({"id": name, "user": user, "arrival_s": arrival, "stages": [
            {"name": "s", "tasks": tasks, "duration_s": seconds, "memory_mb": 1024, "vcores": 1}]})

    jobs = [job("blocker", 0.0, 7, 10.0), *(job(n, float(i), 1, 1.0) for i, n in enumerate(WAITING, start=1)),
            job("m", 4.0, 1, 1.0, REFUSED_USER)]
    sim = Simulator(jobs, uniform_nodes(1, 8192, 8), make_policy("newest-first"), SimConfig(record_decisions=True))
    result = sim.run()
    ams = [j for _, j, stage, _ in sim.decisions if stage == "am" and j in WAITING]
    assert ams == NEWEST_FIRST
    status = {r.job_id: r.status for r in result.jobs}
    assert status == {"blocker": "SUCCEEDED", "a1": "SUCCEEDED", "a2": "SUCCEEDED", "a3": "SUCCEEDED",
                      "m": "REFUSED"}


class Placements:
    """Listens to the live ledger: the app names of AM containers in the order plans placed them."""

    hears = frozenset({PlanApplied})

    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm
        self.names: list[str] = []

    def on_event(self, event: Event, journal: Journal) -> None:
        assert isinstance(event, PlanApplied)
        self.names += [self.rm.state.apps[p.app_id].name for p in event.applied if p.is_am]


@pytest_asyncio.fixture
async def live(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    rm = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                  ipc_client_port=-1, ipc_scheduler_port=-1, scheduler="newest-first"))
    await rm.start()
    nm = Daemon("nm", [sys.executable, "-m", "nodemanager", "--rm", f"127.0.0.1:{rm.grpc_port}", "--port", "0",
                       "--http-port", "0", "--memory-mb", "8192", "--vcores", "8", "--work-dir", str(tmp_path / "nm"),
                       "--allow-root-containers"],
                tmp_path / "nm.log", NM_READY)
    try:
        await asyncio.to_thread(nm.start)
        yield rm
    finally:
        await asyncio.to_thread(nm.stop)
        await rm.stop()


async def _submit(http: httpx.AsyncClient, name: str, command: str, resource: Resources,
                  user: str = "alice") -> httpx.Response:
    app_id = (await http.post("/ws/v1/cluster/apps/new-application")).json()["application-id"]
    body = {"application-id": app_id, "application-name": name, "application-type": "YARN",
            "resource": {"memory": resource.memory_mb, "vCores": resource.vcores},
            "am-container-spec": {"commands": {"command": command}}}
    return await http.post("/ws/v1/cluster/apps", params={"user.name": user}, json=body)


async def _until(predicate: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


@pytest.mark.asyncio
async def test_live_with_a_nodemanager_on_loopback(live: ResourceManager) -> None:
    placements = Placements(live)
    live.state.subscribe(placements)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{live.rest_port}", timeout=10,
                                 headers={"Authorization": f"Bearer {live.cfg.client_secret}"}) as http:
        assert (await _submit(http, "blocker", "sleep 3", NODE)).status_code == 202
        await _until(lambda: placements.names == ["blocker"], "the blocker's AM container")
        for name in WAITING:
            assert (await _submit(http, name, "sleep 0.5", Resources.of(memory_mb=1024, vcores=1))).status_code == 202
            await asyncio.sleep(0.02)  # distinct submit times
        refused = await _submit(http, "m", "sleep 0.5", Resources.of(memory_mb=1024, vcores=1), user=REFUSED_USER)
        assert refused.status_code == 400
        assert refused.json()["RemoteException"]["exception"] == "AdmissionRefusedException"
        assert placements.names == ["blocker"]  # nothing fits while the blocker runs
        await _until(lambda: len(placements.names) == 4, "the waiting apps' AM containers")
        assert placements.names[1:] == NEWEST_FIRST
        apps = (await http.get("/ws/v1/cluster/apps")).json()["apps"]["app"]
        assert sorted(a["name"] for a in apps) == ["a1", "a2", "a3", "blocker"]
