"""The reservation system inside the RM state machine: its queues' capacities, its records and id counter,
the reservation an accepted recurring job's apps run in, the preemptions the reservation stage asks for,
dynamic reprovisioning, and the counters the service exports.

Pure like ``state.py`` (``now`` is an argument). ``ClusterState`` owns one ``ReservationSystem``; these
helpers keep that file about the state machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from common.exits import EXIT_PREEMPTED
from common.ids import AppId, ContainerId, NodeId, QueuePath
from common.resources import Resources
from rm.core.entities import Container
from rm.core.plan import Plan
from rm.core.preemption import choose_victims
from rm.core.queues import QueueConfigError, resolve_queue
from rm.core.records import MetaRecord, Record
from rm.core.reservation import dra
from rm.core.reservation.requests import ReservationId
from rm.core.reservation.system import Reservation, ReservationSystem

if TYPE_CHECKING:
    from rm.core.state import ClusterState

SEQ_KEY = "reservation_seq"  # MetaRecord.extra: the next reservation id's sequence number
GONE_STATES = frozenset({"LOST", "SHUTDOWN", "DECOMMISSIONED"})
PREEMPTED_DIAG = "Container preempted by the scheduler: its capacity is reserved ({reason}, {rid})"
DEFAULT_QUEUE_NAMES = frozenset({"", "default", "root.default"})  # what submissions name when they name none
PLAN_COUNTERS = ("reservation_reclaims", "placed_in_reservation")  # summed from every applied plan


def new_system(meta: MetaRecord) -> ReservationSystem:
    return ReservationSystem(cluster_ts=meta.cluster_timestamp, next_seq=int(meta.extra.get(SEQ_KEY, 1)))


def plan_capacity(state: ClusterState) -> Resources:
    """The capacity the plans are cut from: every known node's capability (nodes that must re-register
    after an RM restart count; lost, shut-down and decommissioned ones do not)."""
    out = Resources()
    for n in state.nodes.values():
        if n.state not in GONE_STATES:
            out = out + n.capability
    return out


def sync_capacities(state: ClusterState, system: ReservationSystem, last: Resources | None) -> Resources:
    """Give every leaf queue its plan with capacity = cluster × the queue's absolute capacity, when the
    cluster changed since ``last``. Returns the capacity used."""
    cluster = plan_capacity(state)
    if last is not None and cluster == last and all(q in system.plans for q in _leaves(state)):
        return cluster
    for path in _leaves(state):
        share = state.queues[path].abs_capacity
        system.set_capacity(path, Resources({r: int(v * share) for r, v in cluster.amounts.items()}))
    return cluster


def _leaves(state: ClusterState) -> list[QueuePath]:
    return sorted(p for p, q in state.queues.items() if q.is_leaf)


def drain(system: ReservationSystem, meta: MetaRecord) -> tuple[list[Record], MetaRecord | None]:
    """The system's changed reservations, and a new MetaRecord when the id counter moved."""
    records: list[Record] = list(system.drain_records())
    if int(meta.extra.get(SEQ_KEY, 1)) == system.next_seq:
        return records, None
    return records, MetaRecord(
        cluster_timestamp=meta.cluster_timestamp, next_app_seq=meta.next_app_seq, epoch=meta.epoch,
        amrm_key_hex=meta.amrm_key_hex, container_key_hex=meta.container_key_hex,
        extra={**meta.extra, SEQ_KEY: system.next_seq},
    )


def recurring_reservation(state: ClusterState, name: str, queue: str) -> Reservation | None:
    """The reservation a submission that names none runs in: the live periodic reservation of the accepted
    SLO of its job (the app's name), when the submission names the default queue or the reservation's own
    queue. A submission that names another queue runs outside it."""
    decision = state.slo_decisions.get(name)
    if decision is None or decision.status != "accepted" or not decision.reservation_id:
        return None
    res = state.reservations.reservations.get(ReservationId(decision.reservation_id))
    if res is None:  # deleted (or expired): the job's SLO is open again
        return None
    home = state.queues.get(res.queue)
    if home is None or not home.running:  # its queue is gone or stopped: run where the submission says
        return None
    if queue in DEFAULT_QUEUE_NAMES:
        return res
    try:
        same = resolve_queue(state.queues, queue).path == res.queue
    except QueueConfigError:
        same = False
    return res if same else None


def count_plan(state: ClusterState, plan: Plan) -> None:
    """Add an applied plan's reservation counters to the state's."""
    for key in PLAN_COUNTERS:
        n = plan.counters.get(key, 0)
        if n:
            state.counters[key] = state.counters.get(key, 0) + n


def reprovision(state: ClusterState, now: float) -> dra.DraRound:
    """One round of dynamic reprovisioning (Morpheus §7) over the apps' used + pending demand; counts its
    outcomes and the extra containers it booked."""
    system = state.reservation_plan()
    got = dra.evaluate(system, dra.demands_from_snapshot(state.snapshot(), system), now=now)
    for d in got.decisions:
        state.dra_outcomes[d.outcome] = state.dra_outcomes.get(d.outcome, 0) + 1
        if d.granted:
            state.counters["reservation_extension_containers"] = (
                state.counters.get("reservation_extension_containers", 0) + d.granted
            )
    return got


def apply_preemptions(state: ClusterState, plan: Plan, now: float) -> int:
    """Preempt each victim app's newest non-AM containers until the asked amount is covered (exit -102;
    the NodeManager is told to clean them up, the AM gets them as completed). Returns how many.

    Containers on one node are preferred when that node's free room plus them covers the amount, so the
    blocked ask fits there next cycle instead of the reclaim repeating over freed but scattered room."""
    count = 0
    for p in plan.preemptions:
        app = state.apps.get(AppId(p.app_id))
        if app is None or app.final:
            continue
        for c in _victims(state, app.containers, p.amount):
            state._complete_container(c, EXIT_PREEMPTED, PREEMPTED_DIAG.format(reason=p.reason,
                                                                              rid=p.for_reservation), now)
            node = state.nodes.get(c.node_id)
            if node is not None:
                node.to_cleanup.add(c.container_id)
            count += 1
            state.preempted_by_reason[p.reason] = state.preempted_by_reason.get(p.reason, 0) + 1
    state.counters["containers_preempted"] = state.counters.get("containers_preempted", 0) + count
    return count


def _victims(state: ClusterState, owned: Iterable[ContainerId], amount: Resources) -> list[Container]:
    live = [c for c in (state.containers.get(cid) for cid in owned) if c is not None and c.live and not c.is_am]
    newest = sorted(live, key=lambda c: (c.allocate_time, c.container_id), reverse=True)

    def free_room(node_id: NodeId) -> Resources | None:
        node = state.nodes.get(node_id)
        if node is None or not node.schedulable:
            return None
        return (node.capability - node.allocated).clamp_min_zero()

    return choose_victims(newest, amount, node_of=lambda c: c.node_id, resource_of=lambda c: c.resource,
                          free_room=free_room)
