"""Decisions as data: what one scheduling cycle wants done."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from common.ids import AppId, NodeId
from common.resources import Resources
from rm.core.model import AskType


@dataclass(frozen=True, slots=True)
class Place:
    """Allocate one container for an ask on a node."""

    app_id: AppId
    allocation_request_id: int
    node_id: NodeId
    resource: Resources
    priority: int
    ask_type: AskType = "DEFAULT"
    from_leftover: bool = False
    is_am: bool = False
    stage: str = ""

    @classmethod
    def match(cls, **fields: Any) -> PlaceMatcher:
        return PlaceMatcher(fields)


@dataclass(frozen=True, slots=True)
class PlaceMatcher:
    fields: dict[str, Any]

    def __call__(self, p: Place) -> bool:
        return all(getattr(p, k) == v for k, v in self.fields.items())


# Constant reasons an ask waits (shown by explain endpoints and app diagnostics).
NO_NODE_FITS = "ASK_EXCEEDS_EVERY_NODE"
NO_CAPACITY_NOW = "CLUSTER_FULL"
QUEUE_AT_MAX = "QUEUE_AT_MAX_CAPACITY"
AM_LIMIT = "QUEUE_AM_LIMIT"
BELOW_SHARE_ORDER = "WAITING_FOR_FAIR_SHARE"
LOCALITY_WAIT = "LOCALITY_NOT_MET"


@dataclass(slots=True)
class Rejection:
    """Why an ask got nothing this cycle, with the numbers behind it. Not frozen: its detail is a dict
    anyway, and on a busy cluster a cycle makes thousands (a frozen dataclass takes three times as long)."""

    app_id: AppId
    allocation_request_id: int
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Preempt:
    """Take at least ``amount`` back from ``app_id``: its newest non-AM containers, YARN's exit -102."""

    app_id: AppId
    amount: Resources
    reason: str
    for_reservation: str = ""


@dataclass(frozen=True, slots=True)
class WakeAt:
    t: float
    reason: str


@dataclass(slots=True)
class Plan:
    based_on: int
    placements: list[Place] = field(default_factory=list)
    rejections: dict[tuple[AppId, int], Rejection] = field(default_factory=dict)
    shares: dict[AppId, Resources] = field(default_factory=dict)
    # the floor the ``guarantee`` stage serves each app asking for one (None: the pipeline has no such stage)
    guarantees: dict[AppId, Resources] | None = None
    # per app in ``guarantees``: the most its queue lets guarantees hold together (what its AM may usefully ask)
    ceilings: dict[AppId, Resources] = field(default_factory=dict)
    wake: list[WakeAt] = field(default_factory=list)
    preemptions: list[Preempt] = field(default_factory=list)
    counters: Counter[str] = field(default_factory=Counter)

    def count(self, pred: PlaceMatcher | None = None) -> int:
        if pred is None:
            return len(self.placements)
        return sum(1 for p in self.placements if pred(p))
