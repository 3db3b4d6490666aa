"""``shepherd app attach``'s loop over a scripted RM: a line per change of state or attempt, the AM's log
followed per attempt, the end's exit code, Ctrl-C detaching, and an RM that does not answer for a while."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from proto import shepherd_pb2 as pb
from rm.client import ClientError
from rm.commands import attach

APP = "application_1700000000000_0001"
AM1, AM2 = "container_1700000000000_0001_01_000001", "container_1700000000000_0001_02_000001"


def report(state: str, attempt: int = 0, am: str = "", final: str = "UNDEFINED", **kw: Any) -> pb.ApplicationReport:
    return pb.ApplicationReport(application_id=APP, state=state, final_status=final,
                                current_attempt_id=f"appattempt_1700000000000_0001_{attempt:06d}" if attempt else "",
                                am_container_id=am, am_node_http_address="n1:8042" if am else "", **kw)


class ScriptedRM:
    def __init__(self, steps: list[pb.ApplicationReport | BaseException]) -> None:
        self._steps: Iterator[pb.ApplicationReport | BaseException] = iter(steps)
        self.address = "127.0.0.1:7030"

    def app(self, app_id: str) -> pb.ApplicationReport:
        assert app_id == APP
        step = next(self._steps)
        if isinstance(step, BaseException):
            raise step
        return step


@pytest.fixture
def fetched(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(attach, "print_new", lambda cid, node, http, name, seen, **kw: calls.append((cid, name)))
    monkeypatch.setattr("rm.commands.waiting.time.sleep", lambda s: None)
    return calls


def test_follows_states_and_each_attempts_am_log(fetched: list[tuple[str, str]],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rm = ScriptedRM([report("ACCEPTED"), report("ACCEPTED"), report("RUNNING", 1, AM1, progress=0.5),
                     report("RUNNING", 1, AM1, progress=0.6),
                     ClientError("UNAVAILABLE", "restarting"),  # ridden through, said once
                     report("RUNNING", 2, AM2), report("FINISHED", 2, AM2, final="SUCCEEDED")])
    code = attach.follow(rm, APP, ["stdout", "stderr"], sleep=lambda s: None)  # type: ignore[arg-type]
    assert code == 0
    out = capsys.readouterr()
    lines = [line for line in out.out.splitlines() if APP in line]
    assert len(lines) == 4  # ACCEPTED, RUNNING (attempt 1), RUNNING (attempt 2), the verdict after the AM's log
    assert "ACCEPTED" in lines[0]
    assert f"RUNNING, 50%, attempt appattempt_1700000000000_0001_000001, AM {AM1} on n1:8042" in lines[1]
    assert "000002" in lines[2]
    assert lines[-1] == f"{APP} FINISHED/SUCCEEDED"
    assert "not answering" in out.err
    # the first AM's log while it ran, then the second's, to the end: stdout and stderr each time
    assert fetched[:4] == [(AM1, "stdout"), (AM1, "stderr"), (AM1, "stdout"), (AM1, "stderr")]
    # when the second attempt comes, the first AM's last output first
    assert fetched[4:] == [(AM1, "stdout"), (AM1, "stderr")] + [(AM2, "stdout"), (AM2, "stderr")] * 2


def test_a_failed_app_exits_1_with_its_diagnostics(fetched: list[tuple[str, str]],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rm = ScriptedRM([report("FAILED", 2, AM2, final="FAILED", diagnostics="AM exited with 3")])
    assert attach.follow(rm, APP, ["stderr"], sleep=lambda s: None) == 1  # type: ignore[arg-type]
    assert f"{APP} FAILED/FAILED: AM exited with 3" in capsys.readouterr().out
    assert fetched == [(AM2, "stderr")]  # what the AM wrote before it ended is still shown


def test_ctrl_c_detaches_and_the_app_keeps_running(fetched: list[tuple[str, str]],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rm = ScriptedRM([report("RUNNING", 1, AM1), KeyboardInterrupt()])
    assert attach.follow(rm, APP, ["stdout"], sleep=lambda s: None) == 130  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert f"detached; {APP} keeps running" in err


def test_an_unknown_app_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    import typer

    rm = ScriptedRM([ClientError("NOT_FOUND", f"Application with id '{APP}' doesn't exist in RM.")])
    with pytest.raises(typer.Exit) as exit_info:
        attach.follow(rm, APP, ["stdout"], sleep=lambda s: None)  # type: ignore[arg-type]
    assert exit_info.value.exit_code == 2
    assert capsys.readouterr().err.count("error: ") == 1
