"""The reservation system inside the ledger: its queues' capacities, its records and id counter, the
reservation an accepted recurring job's apps run in, and the listener that takes a finished app out of its
reservation. Pure (``now`` is an argument); the ledger owns one ``ReservationSystem``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from common.ids import QueuePath
from common.resources import Resources
from rm.core.events import AppFinished, Event, Journal
from rm.core.model import QueueView
from rm.core.queues import QueueConfigError, resolve_queue
from rm.core.records import MetaRecord, Record, SloDecisionRecord
from rm.core.reservation.requests import Reservation, ReservationId
from rm.core.reservation.system import ReservationSystem

SEQ_KEY = "reservation_seq"  # MetaRecord.extra: the next reservation id's sequence number
DEFAULT_QUEUE_NAMES = frozenset({"", "default", "root.default"})  # what submissions name when they name none


def new_system(meta: MetaRecord) -> ReservationSystem:
    return ReservationSystem(cluster_ts=meta.cluster_timestamp, next_seq=int(meta.extra.get(SEQ_KEY, 1)))


def sync_capacities(cluster: Resources, queues: Mapping[QueuePath, QueueView], system: ReservationSystem,
                    last: Resources | None) -> Resources:
    """Give every leaf queue its plan with capacity = cluster × the queue's absolute capacity, when the
    cluster (what the plans are cut from: ``NodeFacts.planned``) changed since ``last``. Returns ``cluster``."""
    leaves = sorted(p for p, q in queues.items() if q.is_leaf)
    if last is not None and cluster == last and all(q in system.plans for q in leaves):
        return cluster
    for path in leaves:
        share = queues[path].abs_capacity
        system.set_capacity(path, Resources({r: int(v * share) for r, v in cluster.amounts.items()}))
    return cluster


def drain(system: ReservationSystem, meta: MetaRecord) -> tuple[list[Record], MetaRecord | None]:
    """The system's changed reservations, and a new MetaRecord when the id counter moved."""
    records: list[Record] = list(system.drain_records())
    if int(meta.extra.get(SEQ_KEY, 1)) == system.next_seq:
        return records, None
    return records, replace(meta, extra={**meta.extra, SEQ_KEY: system.next_seq})


def recurring_reservation(
    slo_decisions: Mapping[str, SloDecisionRecord],
    system: ReservationSystem,
    queues: Mapping[QueuePath, QueueView],
    name: str,
    queue: str,
) -> Reservation | None:
    """The reservation a submission that names none runs in: the live periodic reservation of the accepted
    SLO of its job (the app's name), when the submission names the default queue or the reservation's own
    queue. A submission that names another queue runs outside it."""
    decision = slo_decisions.get(name)
    if decision is None or decision.status != "accepted" or not decision.reservation_id:
        return None
    res = system.reservations.get(ReservationId(decision.reservation_id))
    if res is None:  # deleted (or expired): the job's SLO is open again
        return None
    home = queues.get(res.queue)
    if home is None or not home.running:  # its queue is gone or stopped: run where the submission says
        return None
    if queue in DEFAULT_QUEUE_NAMES:
        return res
    try:
        same = resolve_queue(queues, queue).path == res.queue
    except QueueConfigError:
        same = False
    return res if same else None


class ReservationRelease:
    """Listens to the ledger: an app that finished leaves its reservation."""

    hears: frozenset[type] = frozenset({AppFinished})

    def __init__(self, system: ReservationSystem) -> None:
        self.system = system

    def on_event(self, event: Event, journal: Journal) -> None:
        if isinstance(event, AppFinished):
            self.system.detach(event.app.app_id)
