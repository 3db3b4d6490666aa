"""`submit --wait` / `app wait`: the progress line has the app's percent, state, elapsed time and an ETA; the exit
code follows the final status."""

from __future__ import annotations

import io
import re
import time
from typing import Any

import pytest
from rich.console import Console

from proto import shepherd_pb2 as pb
from rm.commands import waiting


class Reports:
    """An RM whose app rises 0 %, 20 %, ... 100 % and then ends with ``final``."""

    address = "rm:1"

    def __init__(self, final: str) -> None:
        self.steps = [pb.ApplicationReport(application_id="application_1_0001", state="RUNNING", progress=p / 10)
                      for p in range(0, 11, 2)]
        self.steps.append(pb.ApplicationReport(application_id="application_1_0001", state="FINISHED",
                                               final_status=final, progress=1.0))

    def app(self, app_id: str) -> pb.ApplicationReport:
        return self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]


def _wait(monkeypatch: pytest.MonkeyPatch, final: str) -> tuple[int, str]:
    out = io.StringIO()
    monkeypatch.setattr(waiting, "console", Console(file=out, force_terminal=True, width=120))
    real_sleep = time.sleep
    monkeypatch.setattr(waiting.time, "sleep", lambda s: real_sleep(0.02))
    client: Any = Reports(final)
    code = waiting.wait_for(client, "application_1_0001")
    return code, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())


def test_the_progress_line_has_an_eta_and_success_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    code, text = _wait(monkeypatch, "SUCCEEDED")
    assert code == 0
    # while it runs the ETA is a time, from the rate its progress rose at (unknown, -:--:--, at first)
    assert re.search(r"application_1_0001 \S+ +[1-9]\d% RUNNING \d:\d\d:\d\d ETA \d:\d\d:\d\d", text), text
    assert text.rstrip().endswith("application_1_0001 FINISHED/SUCCEEDED")


def test_a_failed_app_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    code, text = _wait(monkeypatch, "FAILED")
    assert code == 1
    assert "FINISHED/FAILED" in text
