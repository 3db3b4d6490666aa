"""Daemon logs: JSON lines for log shippers, or the familiar one-line text on a terminal.

Every JSON line carries the time (UTC, ISO 8601), level, logger, service and message, and the application,
attempt and container ids it is about where they are known: given with ``extra={"app_id": ...}``, or else
read from the message (YARN's id formats are unambiguous), an attempt or container id also naming its app.

``--log-format`` (or ``$SHEPHERD_LOG_FORMAT``) picks ``json``, ``text`` or ``auto`` (the default: text when
stderr is a terminal, JSON otherwise).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from typing import Any, TextIO

from common.ids import parse_attempt_id, parse_container_id

FORMATS = ("auto", "json", "text")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
ENV = "SHEPHERD_LOG_FORMAT"

_CONTAINER = re.compile(r"\bcontainer_(?:e\d+_)?\d+_\d{4,}_\d{2,}_\d{6,}\b")
_ATTEMPT = re.compile(r"\bappattempt_\d+_\d{4,}_\d{6,}\b")
_APP = re.compile(r"\bapplication_\d+_\d{4,}\b")
ID_FIELDS = ("app_id", "attempt_id", "container_id")
# LogRecord's own attributes: anything else on a record came in through ``extra=`` and goes into the line
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


def ids_of(message: str, given: dict[str, Any] | None = None) -> dict[str, str]:
    """The app, attempt and container ids a message is about: those ``given``, else those it names."""
    out = {k: str(v) for k, v in (given or {}).items() if k in ID_FIELDS and v}
    if "container_id" not in out and (m := _CONTAINER.search(message)):
        out["container_id"] = m.group(0)
    if "attempt_id" not in out and (m := _ATTEMPT.search(message)):
        out["attempt_id"] = m.group(0)
    if "container_id" in out and ("attempt_id" not in out or "app_id" not in out):
        try:
            parsed = parse_container_id(out["container_id"])
        except ValueError:
            pass
        else:
            out.setdefault("attempt_id", parsed.attempt_id)
            out.setdefault("app_id", parsed.app_id)
    if "attempt_id" in out and "app_id" not in out:
        try:
            ts, seq, _ = parse_attempt_id(out["attempt_id"])
        except ValueError:
            pass
        else:
            out["app_id"] = f"application_{ts}_{seq:04d}"
    if "app_id" not in out and (m := _APP.search(message)):
        out["app_id"] = m.group(0)
    return {k: out[k] for k in ID_FIELDS if k in out}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, service, message, ids, extras, exception."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        extra = {k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")}
        line: dict[str, Any] = {
            "time": _iso(record.created),
            "level": record.levelname,
            "logger": record.name,
            "service": self.service,
            "pid": record.process,
            "message": message,
        }
        line.update(ids_of(message, extra))
        for key, value in extra.items():
            if key not in ID_FIELDS:
                line.setdefault(key, value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def _iso(created: float) -> str:
    seconds = int(created)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int((created - seconds) * 1000):03d}Z"


def resolve_format(requested: str | None, stream: TextIO) -> str:
    """``json`` or ``text`` for the requested format (None: ``$SHEPHERD_LOG_FORMAT``, else auto)."""
    fmt = (requested or os.environ.get(ENV) or "auto").strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r} is not one of {', '.join(FORMATS)} (--log-format, ${ENV})")
    if fmt == "auto":
        isatty = getattr(stream, "isatty", None)
        return "text" if isatty is not None and isatty() else "json"
    return fmt


def configure(service: str, level: str = "INFO", fmt: str | None = None, stream: TextIO | None = None) -> str:
    """Send the root logger to ``stream`` (stderr) in the chosen format; returns ``json`` or ``text``."""
    stream = stream if stream is not None else sys.stderr
    chosen = resolve_format(fmt, stream)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter(service) if chosen == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return chosen
