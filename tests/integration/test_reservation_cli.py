"""``shepherd reservation`` against an in-process ResourceManager (the morpheus scheduler, one node that
takes nothing): create from flags and from a file, list and show as tables, JSON and charts, the SVG file,
update (a change that does not fit keeps the old definition), delete, and the errors."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
import yaml
from click.testing import Result
from typer.testing import CliRunner

from common.credentials import ENV_CLIENT_SECRET
from common.resources import Resources
from rm.cli import app as cli
from rm.service.config import RMConfig
from rm.service.server import ResourceManager
from tests.integration.conftest import unhealthy_node

NODE = Resources.of(memory_mb=8192, vcores=8)
HOUR_MS = 3_600_000


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = ResourceManager(RMConfig(data_dir=tmp_path / "rm", create_store=True, grpc_port=0, rest_port=0,
                                      ipc_client_port=-1, ipc_scheduler_port=-1, scheduler="morpheus"))
    await server.start()
    await unhealthy_node(server, NODE)  # a known node gives the plans their capacity; nothing is placed
    try:
        yield server
    finally:
        await server.stop()


async def shepherd(rm: ResourceManager, *args: str, secret: str | None = None) -> Result:
    runner = CliRunner(env={ENV_CLIENT_SECRET: rm.cfg.client_secret or "" if secret is None else secret,
                            "COLUMNS": "100"})
    rest = ["--rest", f"http://127.0.0.1:{rm.rest_port}"]
    return await asyncio.to_thread(runner.invoke, cli, [*args, *rest])


def created_id(result: Result) -> str:
    assert result.exit_code == 0, result.output
    words = result.output.split()
    assert words[0] == "created"
    return words[1]


@pytest.mark.asyncio
async def test_create_list_show_update_delete(rm: ResourceManager, tmp_path: Path) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rm.rest_port}") as http:
        plans = (await http.get("/ws/v1/shepherd/reservation-plans")).json()["reservationPlans"]["plan"]
    default = next(p for p in plans if p["queue"] == "root.default")
    assert default["capacity"]["memory"] > 0
    assert default["reservationIds"] == []

    made = await shepherd(rm, "reservation", "create", "--queue", "default", "--name", "nightly", "--arrival",
                          "+10m", "--deadline", "+2h", "--stage", "containers=2,duration=20m,memory=1024")
    rid = created_id(made)
    assert rid in rm.state.reservation_plan().reservations

    spec = tmp_path / "etl.yaml"
    spec.write_text(yaml.safe_dump({"queue": "default", "reservation-definition": {
        "arrival": 0, "deadline": 0, "reservation-name": "etl",
        "reservation-requests": {"reservation-request-interpreter": "R_ORDER", "reservation-request": [
            {"capability": {"memory": 2048, "vCores": 1}, "num-containers": 1, "duration": 600_000}]}}}))
    # the file's times are placeholders here, replaced by the flags
    rid2 = created_id(await shepherd(rm, "reservation", "create", str(spec), "--arrival", "+5m", "--deadline",
                                     "+1h"))

    sky = created_id(await shepherd(rm, "reservation", "create", "--deadline", "+90m", "--skyline", "1,3,2",
                                    "--step", "10m", "--memory", "512", "--name", "sky"))
    shown_sky = await shepherd(rm, "reservation", "show", sky, "-o", "json")
    allocs = json.loads(shown_sky.output)["resource-allocations"]
    # the skyline back to back: 1, 3, 2 containers of 512 MB for 10 minutes each, in that order
    assert [int(a["resource"]["memory"]) for a in allocs if int(a["resource"]["memory"])] == [512, 1536, 1024]
    assert (await shepherd(rm, "reservation", "delete", sky)).exit_code == 0

    table = await shepherd(rm, "reservation", "list", "--chart", "--svg", str(tmp_path / "all.svg"))
    assert table.exit_code == 0, table.output
    assert rid in table.output
    assert rid2 in table.output
    assert "2 reservation(s)" in table.output
    assert "█" in table.output
    assert "┈ marks the capacity" in table.output
    assert ET.parse(tmp_path / "all.svg").getroot().tag.endswith("svg")
    assert len(list(ET.parse(tmp_path / "all.svg").getroot().iter("{http://www.w3.org/2000/svg}polygon"))) == 2

    raw = await shepherd(rm, "reservation", "list", "-o", "json")
    assert raw.exit_code == 0, raw.output
    items = json.loads(raw.output)
    assert {i["reservation-id"] for i in items} == {rid, rid2}
    assert {i["queue"] for i in items} == {"root.default"}

    shown = await shepherd(rm, "reservation", "show", rid, "--svg", str(tmp_path / "one.svg"))
    assert shown.exit_code == 0, shown.output
    assert "nightly" in shown.output
    assert "all: 2x1024MB/1c for 20m" in shown.output
    assert "memory reserved by" in shown.output
    assert "GB of a 8 GB capacity" in shown.output  # the plan capacity: the whole 8 GB node (one queue)
    svg = (tmp_path / "one.svg").read_text()
    assert rid in svg
    as_yaml = yaml.safe_load((await shepherd(rm, "reservation", "show", rid, "-o", "yaml")).output)
    assert as_yaml["reservation-id"] == rid
    assert as_yaml["resource-allocations"]

    before = rm.state.reservation_plan().reservations[rid].definition  # type: ignore[index]
    moved = await shepherd(rm, "reservation", "update", rid, "--deadline", "+3h")
    assert moved.exit_code == 0, moved.output
    after = rm.state.reservation_plan().reservations[rid].definition  # type: ignore[index]
    assert after.deadline_ms - before.deadline_ms == pytest.approx(HOUR_MS, abs=10_000)
    assert after.requests == before.requests

    too_big = await shepherd(rm, "reservation", "update", rid, "--stage", "containers=1,duration=10m,memory=999999")
    assert too_big.exit_code == 2
    assert too_big.output.count("error: ") == 1
    assert rm.state.reservation_plan().reservations[rid].definition == after  # type: ignore[index]

    gone = await shepherd(rm, "reservation", "delete", rid)
    assert gone.exit_code == 0, gone.output
    assert rid not in rm.state.reservation_plan().reservations
    assert rid2 in rm.state.reservation_plan().reservations


@pytest.mark.asyncio
async def test_errors_say_why_once_and_change_nothing(rm: ResourceManager) -> None:
    unknown = await shepherd(rm, "reservation", "show", "reservation_1_9999")
    assert unknown.exit_code == 2
    assert unknown.output.strip() == ("error: reservation reservation_1_9999 is unknown (see `shepherd reservation "
                                      "list`)")
    bogus_queue = await shepherd(rm, "reservation", "list", "--queue", "nope")
    assert bogus_queue.exit_code == 2
    assert bogus_queue.output.count("error: ") == 1
    assert "not managed by reservation system" in bogus_queue.output

    refused = await shepherd(rm, "reservation", "create", "--deadline", "+1h", "--stage",
                             "containers=64,duration=50m,memory=4096")
    assert refused.exit_code == 2
    assert refused.output.count("error: ") == 1
    assert "cannot be placed" in refused.output or "does not fit" in refused.output
    assert not rm.state.reservation_plan().reservations

    bad_flag = await shepherd(rm, "reservation", "create", "--deadline", "+1h", "--stage", "lots")
    assert bad_flag.exit_code == 2
    assert not rm.state.reservation_plan().reservations

    not_allowed = await shepherd(rm, "reservation", "create", "--deadline", "+1h", "--stage",
                                 "containers=1,duration=1m", secret="wrong")
    assert not_allowed.exit_code != 0
    assert not_allowed.output.count("error: ") == 1
    assert not rm.state.reservation_plan().reservations

    missing = await shepherd(rm, "reservation", "delete", "reservation_1_9999")
    assert missing.exit_code == 2
    assert "unknown" in missing.output
