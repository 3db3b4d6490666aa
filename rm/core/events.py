"""What the ledger tells its listeners when the lifecycle moves, and the read-only face of the ledger that
diagnostics and reservations read.

The ledger (``rm.core.ledger``) is the one owner of nodes, apps, attempts, containers and asks. Modules that
react to its lifecycle — run history, reservations, waiting diagnostics — are listeners: the ledger hands
each event to every listener in the order they subscribed, once the transition is complete, together with
the journal the listener may add durable records to. None of them reaches into the ledger's own state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from common.ids import AppId, ContainerId, NodeId, QueuePath
from common.resources import Resources
from rm.core.entities import App, Attempt, Container, Node
from rm.core.model import ClusterSnapshot, QueueView
from rm.core.plan import Place, Plan
from rm.core.records import (
    AppRecord,
    AttemptRecord,
    ContainerRecord,
    DatasetAccessRecord,
    JobRunRecord,
    NodeRecord,
    Record,
    SloDecisionRecord,
    StageRunsRecord,
    WorkRunRecord,
)
from rm.core.reservation.records import ReservationRecord
from rm.core.reservation.system import ReservationSystem

if TYPE_CHECKING:
    from rm.core.deadlines.system import DeadlineSystem


@dataclass(frozen=True, slots=True)
class AppStarted:
    """The app's first AM container runs (or its AM registered): it reads its inputs now."""

    app: App
    now: float


@dataclass(frozen=True, slots=True)
class AppFinished:
    """The app reached a final state; every container it held is released."""

    app: App
    now: float


@dataclass(frozen=True, slots=True)
class AttemptEnded:
    app: App
    attempt: Attempt
    now: float


@dataclass(frozen=True, slots=True)
class ContainerCompleted:
    container: Container
    now: float


@dataclass(frozen=True, slots=True)
class PlanApplied:
    """A scheduling plan was applied: ``applied`` are its placements that became containers."""

    plan: Plan
    applied: tuple[Place, ...]
    now: float


Event = AppStarted | AppFinished | AttemptEnded | ContainerCompleted | PlanApplied


class Journal:
    """The durable records changed since the last drain, one (the newest) per record key. A journal that
    does not ``keep`` (a driver without a store, such as the simulator) forgets every record at once."""

    def __init__(self, *, keep: bool = True) -> None:
        self.keep = keep
        self._dirty: dict[tuple[str, str], Record] = {}

    def mark(self, rec: Record) -> None:
        if self.keep:
            self._dirty[(type(rec).__name__, rec_key(rec))] = rec

    def drain(self) -> list[Record]:
        out = list(self._dirty.values())
        self._dirty.clear()
        return out

    def __len__(self) -> int:
        return len(self._dirty)


def rec_key(rec: Record) -> str:
    """A record's identity within its type (its table's primary key)."""
    if isinstance(rec, ContainerRecord):
        return rec.container_id
    if isinstance(rec, AttemptRecord):
        return rec.attempt_id
    if isinstance(rec, AppRecord | JobRunRecord | WorkRunRecord | StageRunsRecord):
        return rec.app_id
    if isinstance(rec, NodeRecord):
        return rec.node_id
    if isinstance(rec, ReservationRecord):
        return rec.reservation_id
    if isinstance(rec, DatasetAccessRecord):
        return rec.access_id
    if isinstance(rec, SloDecisionRecord):
        return rec.job
    return "meta"


class Listener(Protocol):
    """Hears the events of the types in ``hears``, as they happen."""

    @property
    def hears(self) -> frozenset[type]: ...
    def on_event(self, event: Event, journal: Journal) -> None: ...


class LedgerView(Protocol):
    """What readers of the ledger (explain, reservations, reports) may see: its state, read-only."""

    @property
    def queues(self) -> Mapping[QueuePath, QueueView]: ...
    @property
    def nodes(self) -> Mapping[NodeId, Node]: ...
    @property
    def apps(self) -> Mapping[AppId, App]: ...
    @property
    def containers(self) -> Mapping[ContainerId, Container]: ...
    @property
    def slo_decisions(self) -> Mapping[str, SloDecisionRecord]: ...
    @property
    def reservations(self) -> ReservationSystem: ...
    @property
    def last_plan(self) -> Plan | None: ...

    def deadline_system(self) -> DeadlineSystem: ...

    def get_app(self, app_id: str) -> App: ...
    def cluster_capacity(self) -> Resources: ...
    def snapshot(self, now: float | None = None) -> ClusterSnapshot: ...
