"""Daemon log lines: JSON with the ids they are about, or text on a terminal."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from common.logs import JsonFormatter, configure, ids_of, resolve_format

APP = "application_1700000000000_0007"
ATTEMPT = "appattempt_1700000000000_0007_000002"
CONTAINER = "container_e03_1700000000000_0007_02_000005"


def test_ids_from_the_message() -> None:
    assert ids_of(f"launched AM container {CONTAINER} on n1") == {
        "app_id": APP, "attempt_id": ATTEMPT, "container_id": CONTAINER}
    assert ids_of(f"attempt {ATTEMPT} failed") == {"app_id": APP, "attempt_id": ATTEMPT}
    assert ids_of(f"{APP} moved to queue b") == {"app_id": APP}
    assert ids_of("node n1 is LOST") == {}


def test_given_ids_win() -> None:
    other = "application_1700000000000_0008"
    assert ids_of(f"{APP} and {other}", {"app_id": other}) == {"app_id": other}


def _record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    logger = logging.getLogger("shepherd.test")
    return logger.makeRecord("shepherd.test", logging.WARNING, __file__, 1, msg, args, None, extra=extra)


def test_json_line() -> None:
    line = JsonFormatter("resourcemanager").format(_record("container %s killed", CONTAINER, node="n1:7040"))
    record = json.loads(line)
    assert record["level"] == "WARNING"
    assert record["logger"] == "shepherd.test"
    assert record["service"] == "resourcemanager"
    assert record["message"] == f"container {CONTAINER} killed"
    assert record["container_id"] == CONTAINER
    assert record["app_id"] == APP
    assert record["node"] == "n1:7040"  # extras go into the line
    assert record["time"].endswith("Z")
    assert "\n" not in line


def test_exceptions_stay_on_one_line() -> None:
    try:
        raise RuntimeError("boom\nsecond line")
    except RuntimeError:
        rec = logging.getLogger("x").makeRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = JsonFormatter("nodemanager").format(rec)
    assert "\n" not in line
    assert "RuntimeError: boom" in json.loads(line)["exception"]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_format_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHEPHERD_LOG_FORMAT", raising=False)
    assert resolve_format(None, io.StringIO()) == "json"
    assert resolve_format(None, _Tty()) == "text"
    assert resolve_format("json", _Tty()) == "json"
    monkeypatch.setenv("SHEPHERD_LOG_FORMAT", "text")
    assert resolve_format(None, io.StringIO()) == "text"
    with pytest.raises(ValueError, match="log format 'xml'"):
        resolve_format("xml", io.StringIO())


def test_configure_writes_json_lines() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        assert configure("nodemanager", "INFO", "json", stream) == "json"
        logging.getLogger("nodemanager").info("container %s started", CONTAINER)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    (line,) = stream.getvalue().splitlines()
    assert json.loads(line)["container_id"] == CONTAINER
