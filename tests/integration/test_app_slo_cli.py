"""``shepherd app deadline`` and ``shepherd app slo`` against an in-process ResourceManager (the mrm
scheduler, nothing placed): a later deadline is taken, one too early is refused with exit 2 and the earliest
feasible finish, and the SLO prints as a table and as JSON."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
import typer
from click.testing import Result
from typer.testing import CliRunner

from common.credentials import ENV_CLIENT_SECRET
from common.ids import AppId
from rm.cli import app as cli
from rm.commands.app_slo import deadline_body
from rm.service.server import ResourceManager
from tests.integration.test_app_slo_rest import bought
from tests.integration.test_deadlines_rest import http, start


@pytest_asyncio.fixture
async def rm(tmp_path: Path) -> AsyncIterator[ResourceManager]:
    server = await start(tmp_path / "rm")
    try:
        yield server
    finally:
        await server.stop()


async def shepherd(rm: ResourceManager, *args: str) -> Result:
    runner = CliRunner(env={ENV_CLIENT_SECRET: rm.cfg.client_secret or ""})
    rest = ["--rest", f"http://127.0.0.1:{rm.rest_port}"]
    return await asyncio.to_thread(runner.invoke, cli, [*args, *rest])


@pytest.mark.asyncio
async def test_app_deadline_and_slo(rm: ResourceManager) -> None:
    async with http(rm) as client:
        app_id = await bought(client)
    app = rm.state.apps[AppId(app_id)]

    before = time.time()
    moved = await shepherd(rm, "app", "deadline", app_id, "3h")
    assert moved.exit_code == 0, moved.output
    assert app_id in moved.output
    assert "ON_TRACK" in moved.output
    assert app.terms.deadline == pytest.approx(before + 3 * 3600, abs=5)

    refused = await shepherd(rm, "app", "deadline", app_id, "+2s")
    assert refused.exit_code == 2, refused.output
    assert "earliest feasible finish" in refused.output
    assert app.terms.deadline == pytest.approx(before + 3 * 3600, abs=5)

    table = await shepherd(rm, "app", "slo", app_id)
    assert table.exit_code == 0, table.output
    assert "ON_TRACK" in table.output
    assert "oracle allocation" in table.output
    assert "no control decisions" in table.output  # a stock AM reports none

    raw = await shepherd(rm, "app", "slo", app_id, "-o", "json")
    assert raw.exit_code == 0, raw.output
    slo = json.loads(raw.output)
    assert slo["id"] == app_id
    assert slo["status"] == "ON_TRACK"
    assert slo["deadline"] == int(app.terms.deadline * 1000)

    missing = await shepherd(rm, "app", "slo", "application_1_9999")
    assert missing.exit_code == 2


def test_deadline_arguments() -> None:
    now = 1_800_000_000.0
    assert deadline_body("45m", now) == {"deadline": "+2700"}
    assert deadline_body("+90s", now) == {"deadline": "+90"}
    assert deadline_body("2h", now) == {"deadline": "+7200"}
    assert deadline_body("600", now) == {"deadline": "+600"}
    assert deadline_body("1800003600", now) == {"deadline": 1_800_003_600_000}
    at = deadline_body("12:30", now)["deadline"]
    assert isinstance(at, int)
    assert now * 1000 < at <= (now + 86_400) * 1000
    for bad in ("soon", "-5m", "0", "1:2:3:4"):
        with pytest.raises(typer.BadParameter):
            deadline_body(bad, now)


def test_the_slo_table_shows_the_control_decisions() -> None:
    from rich.console import Console

    from rm.commands.app_slo import slo_view

    steps = [{"time": 1_800_000_000_000 + 10_000 * i, "progress": i / 30, "rawUnits": 6 + i, "smoothedUnits": 6.5,
              "requestedUnits": 7, "predictedFinish": 1_800_000_600_000, "status": "AT_RISK", "held": i == 29,
              "pace": 1.0 + i / 100}
             for i in range(30)]
    console = Console(width=160, record=True)
    console.print(slo_view({"id": "application_1_0001", "status": "AT_RISK", "deadline": 1_800_000_500_000,
                            "controlTrace": steps}))
    text = console.export_text()
    assert "the last 20 of 30" in text
    assert "AT_RISK (held)" in text
    assert "35" in text  # A^r of the newest decision
    assert "1.29" in text  # and its pace


def test_the_slo_table_of_an_ended_app_shows_its_work_and_share_above_the_oracle() -> None:
    from rich.console import Console

    from rm.commands.app_slo import slo_view

    console = Console(width=160, record=True)
    console.print(slo_view({"id": "application_1_0001", "status": "MET", "modelBuildSec": 0.412, "workDone": 400.0,
                            "aboveOracle": 0.2174}))
    text = console.export_text()
    assert "0.412 s" in text
    assert "400 unit-s" in text
    assert "21.7%" in text
    running = Console(width=160, record=True)
    running.print(slo_view({"id": "application_1_0002", "status": "ON_TRACK", "workDone": None}))
    assert "work done" not in running.export_text()
