"""`submit --wait` / `app wait`: the progress line has the app's percent, state, elapsed time and an ETA, and a
DAG job gets a line per stage below it; the exit code follows the final status."""

from __future__ import annotations

import io
import re
import time
from typing import Any

import pytest
from rich.console import Console
from rich.progress import Progress, TextColumn

from proto import shepherd_pb2 as pb
from rm.commands import waiting
from rm.sdk import AppReport, Client


class Reports(Client):
    """An RM whose app rises 0 %, 20 %, ... 100 % and then ends with ``final`` (the SDK's wait polls it)."""

    address = "rm:1"  # type: ignore[assignment]

    def __init__(self, final: str, stages: bool = False) -> None:  # no RM: the reports are scripted
        self.steps = [pb.ApplicationReport(application_id="application_1_0001", state="RUNNING", progress=p / 10,
                                           stages=_stages(p) if stages else [])
                      for p in range(0, 11, 2)]
        self.steps.append(pb.ApplicationReport(application_id="application_1_0001", state="FINISHED",
                                               final_status=final, progress=1.0))

    def app(self, app_id: str) -> AppReport:
        return AppReport.from_proto(self.steps.pop(0) if len(self.steps) > 1 else self.steps[0])


def _stages(p: int) -> list[pb.StageProgress]:
    """A two-stage DAG at app progress ``p``/10: 'load' (4 tasks) finishes by 40 %, then 'join' (2 tasks) runs."""
    load_done = min(4, p)
    join_done = max(0, (p - 6) // 2)
    return [pb.StageProgress(name="load", tasks=4, done=load_done, running=4 - load_done,
                             state="SUCCEEDED" if load_done == 4 else "RUNNING"),
            pb.StageProgress(name="join", tasks=2, done=join_done, running=0 if p < 6 else 2 - join_done,
                             state="BLOCKED" if p < 6 else "SUCCEEDED" if join_done == 2 else "RUNNING")]


def _wait(monkeypatch: pytest.MonkeyPatch, final: str, stages: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    monkeypatch.setattr(waiting, "console", Console(file=out, force_terminal=True, width=120))
    real_sleep = time.sleep
    monkeypatch.setattr(waiting.time, "sleep", lambda s: real_sleep(0.02))
    client: Any = Reports(final, stages)
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


def test_a_dag_job_gets_a_line_per_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    code, text = _wait(monkeypatch, "SUCCEEDED", stages=True)
    assert code == 0
    lines = text.splitlines()
    load = max(i for i, line in enumerate(lines) if line.startswith("  load"))  # the last frame's lines
    assert re.search(r"  load +\S+ +100% SUCCEEDED +\d:\d\d:\d\d", lines[load]), text
    assert re.search(r"  join +\S+ +100% SUCCEEDED +\d:\d\d:\d\d", lines[load + 1]), text
    assert "application_1_0001" in lines[load - 1]


def test_a_stage_line_counts_tasks_and_has_its_own_clock() -> None:
    progress = Progress(TextColumn("{task.fields[state]}"))
    bars: dict[str, Any] = {}
    for p in (0, 2):
        for stage in _stages(p):
            waiting._stage_bar(progress, bars, stage)
    load, join = (next(t for t in progress.tasks if t.id == bars[name]) for name in ("load", "join"))
    assert (load.completed, load.total, load.fields["state"]) == (2, 4, "RUNNING 2 running")
    assert load.started
    assert load.stop_time is None
    assert (join.completed, join.fields["state"]) == (0, "BLOCKED")
    assert not join.started  # no clock before the stage can start
    for stage in _stages(10):
        waiting._stage_bar(progress, bars, stage)
    assert load.fields["state"] == join.fields["state"] == "SUCCEEDED"
    assert load.stop_time is not None  # its clock stops with it
    assert join.started
    assert join.stop_time is not None
