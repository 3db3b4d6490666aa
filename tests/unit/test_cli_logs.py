"""`shepherd logs` option handling: which files, how many lines."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from rm.cli import app
from rm.commands.logs import last_lines, log_files


def test_last_lines() -> None:
    text = "a\nb\nc\nd"  # the last line has no newline yet
    assert last_lines(text, None) == text
    assert last_lines(text, 2) == "c\nd"
    assert last_lines(text, 10) == text
    assert last_lines(text, 0) == ""
    assert last_lines("", 3) == ""
    assert last_lines("x\n\ny\n", 2) == "\ny\n"


def test_log_files() -> None:
    assert log_files([]) == ["stdout"]
    assert log_files(["stderr"]) == ["stderr"]
    assert log_files(["stdout,stderr", "stderr", "syslog"]) == ["stdout", "stderr", "syslog"]
    assert log_files(["ALL"]) == ["stdout", "stderr"]
    for bad in ("../etc/passwd", "a/b", ".hidden"):
        with pytest.raises(typer.BadParameter):
            log_files([bad])


def test_bad_usage_exits_2_before_asking_the_rm() -> None:
    runner = CliRunner()
    unreachable = ["--rm", "127.0.0.1:1"]
    for args in (["logs", *unreachable], ["logs", "application_1_0001", "-applicationId", "application_1_0002",
                                          *unreachable],
                 ["logs", "application_1_0001", "--tail", "-1", *unreachable],
                 ["logs", "-applicationId", "application_1_0001", "-log_files", "../x", *unreachable]):
        done = runner.invoke(app, args)
        assert done.exit_code == 2, (args, done.output)
