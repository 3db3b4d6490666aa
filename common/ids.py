"""YARN's identifier formats for applications, attempts and containers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NewType

AppId = NewType("AppId", str)
AttemptId = NewType("AttemptId", str)
ContainerId = NewType("ContainerId", str)
NodeId = NewType("NodeId", str)  # "host:port"
QueuePath = NewType("QueuePath", str)  # "root.default"

_APP = re.compile(r"^application_(\d+)_(\d{4,})$")
_ATTEMPT = re.compile(r"^appattempt_(\d+)_(\d{4,})_(\d{6,})$")
_CONTAINER = re.compile(r"^container_(?:e(\d+)_)?(\d+)_(\d{4,})_(\d{2,})_(\d{6,})$")


def app_id(cluster_ts: int, seq: int) -> AppId:
    return AppId(f"application_{cluster_ts}_{seq:04d}")


def attempt_id(app: AppId, attempt: int) -> AttemptId:
    ts, seq = parse_app_id(app)
    return AttemptId(f"appattempt_{ts}_{seq:04d}_{attempt:06d}")


def container_id(attempt: AttemptId, n: int, epoch: int = 0) -> ContainerId:
    return ContainerId(f"{_container_prefix(attempt, epoch)}{n:06d}")


@lru_cache(maxsize=4096)
def _container_prefix(attempt: AttemptId, epoch: int) -> str:
    ts, seq, att = parse_attempt_id(attempt)
    prefix = f"container_e{epoch:02d}_" if epoch else "container_"
    return f"{prefix}{ts}_{seq:04d}_{att:02d}_"


def parse_app_id(value: str) -> tuple[int, int]:
    m = _APP.match(value)
    if not m:
        raise ValueError(f"Invalid ApplicationId: {value}")
    return int(m.group(1)), int(m.group(2))


def parse_attempt_id(value: str) -> tuple[int, int, int]:
    m = _ATTEMPT.match(value)
    if not m:
        raise ValueError(f"Invalid AppAttemptId: {value}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


@dataclass(frozen=True, slots=True)
class ParsedContainerId:
    epoch: int
    cluster_ts: int
    app_seq: int
    attempt: int
    seq: int

    @property
    def app_id(self) -> AppId:
        return app_id(self.cluster_ts, self.app_seq)

    @property
    def attempt_id(self) -> AttemptId:
        return attempt_id(self.app_id, self.attempt)


def parse_container_id(value: str) -> ParsedContainerId:
    m = _CONTAINER.match(value)
    if not m:
        raise ValueError(f"Invalid ContainerId: {value}")
    return ParsedContainerId(
        epoch=int(m.group(1) or 0),
        cluster_ts=int(m.group(2)),
        app_seq=int(m.group(3)),
        attempt=int(m.group(4)),
        seq=int(m.group(5)),
    )


def app_of_attempt(attempt: str) -> AppId:
    ts, seq, _ = parse_attempt_id(attempt)
    return app_id(ts, seq)
