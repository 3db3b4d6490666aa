"""Read-only views of cluster state handed to scheduling policies (built once per cycle)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from common.ids import AppId, NodeId, QueuePath
from common.resources import Resources
from common.terms import NO_TERMS, AppTerms
from rm.core.deadlines.view import NO_DEADLINES, DeadlineView
from rm.core.reservation.view import EMPTY_VIEW, ReservationView

AskType = Literal["DEFAULT", "ALTRUISTIC"]
AskKey = tuple[AppId, int]  # (app, allocation_request_id)


@dataclass(frozen=True, slots=True)
class AskView:
    app_id: AppId
    allocation_request_id: int
    priority: int  # lower = more important (YARN)
    capability: Resources
    num_containers: int  # still wanted
    nodes: tuple[str, ...] = ()  # preferred node ids or hostnames
    racks: tuple[str, ...] = ()
    relax_locality: bool = True
    ask_type: AskType = "DEFAULT"
    remaining_work_s: float = 0.0  # the job's remaining work estimate (container-seconds)
    is_am: bool = False
    stage: str = ""

    @property
    def key(self) -> AskKey:
        return (self.app_id, self.allocation_request_id)


@dataclass(frozen=True, slots=True)
class NodeView:
    node_id: NodeId
    host: str
    rack: str
    capability: Resources
    allocated: Resources
    schedulable: bool = True  # RUNNING and healthy
    free: Resources = field(init=False, repr=False, compare=False, default=Resources())

    def __post_init__(self) -> None:  # policies read it per node scan: computed once
        object.__setattr__(self, "free", (self.capability - self.allocated).clamp_min_zero())

    @property
    def available(self) -> Resources:
        return self.free


@dataclass(frozen=True, slots=True)
class AppView:
    app_id: AppId
    queue: QueuePath
    user: str
    priority: int  # higher = more important (YARN application priority)
    submit_time: float
    used: Resources
    asks: tuple[AskView, ...] = ()
    weight: float = 1.0
    am_used: Resources = field(default_factory=Resources)
    blacklist: frozenset[NodeId] = frozenset()
    # The job's remaining size in seconds (its remaining critical-path length) when the driver knows it
    # (the simulator knows it exactly); size-based orders such as SJF read it, None means unknown.
    size_hint_s: float | None = None
    # its deadline, requested guarantee and size estimate with its source (``common.terms``)
    terms: AppTerms = NO_TERMS
    reservation_id: str | None = None  # the reservation the app runs in (YARN's reservation-id), if any
    # The DRF fair share last computed for the app (what its AM was told), None before the first; a cycle
    # that does not recompute the shares reads this one (``CycleContext.fair_share``).
    fair_share: Resources | None = None
    # an app held to its pilots (SLearn's sampling gate): its task asks in full; ``asks`` shows only as many
    # containers as pilots remain, and the pipeline's ``sampling`` stage places the rest on idle capacity only
    held: tuple[AskView, ...] = ()
    thin: bool = False  # its job file names fewer tasks than sampling is worth (SLearn's thin bypass)

    @property
    def yielding(self) -> bool:
        """The app asks ALTRUISTIC now (Carbyne): by its AM's own plan it is on time and gives away what it
        can wait for, so its DEFAULT asks beyond its fair share wait for the leftover order."""
        return any(a.ask_type == "ALTRUISTIC" for a in self.asks)

    @property
    def pending(self) -> Resources:
        """The sum over asks of capability × num_containers."""
        out: dict[str, int] = {}
        for a in self.asks:
            n = a.num_containers
            if n <= 0:
                if n < 0:
                    return self._pending_stepwise()
                continue
            for r, v in a.capability.amounts.items():
                if v < 0:
                    return self._pending_stepwise()
                out[r] = out.get(r, 0) + v * n
        return Resources(out)

    def _pending_stepwise(self) -> Resources:
        # with negative terms a running total can cancel to zero and drop a type, which moves it to the
        # end of the vector's order when it comes back: add step by step, as the plain sum would
        out = Resources()
        for a in self.asks:
            out = out + a.capability * a.num_containers
        return out


@dataclass(frozen=True, slots=True)
class QueueView:
    path: QueuePath
    parent: QueuePath | None
    children: tuple[QueuePath, ...]
    capacity: float  # fraction of the parent's guaranteed capacity (0..1)
    max_capacity: float  # fraction of the parent's capacity it may grow to (0..1)
    abs_capacity: float  # fraction of the cluster
    abs_max_capacity: float
    weight: float = 1.0
    max_am_share: float = 0.5  # of the queue's max capacity that AM containers may hold
    running: bool = True
    user_limit_factor: float = 1.0  # one user may hold this multiple of the queue's capacity (YARN's)

    @property
    def is_leaf(self) -> bool:
        return not self.children


MAX_LOGGED_CHANGES = 100_000  # node changes a memo logs without a cycle reading them before it drops its copy


class LayoutMemo:
    """A slot where a cycle's node index keeps what it derives from the nodes alone (their ids, hosts, racks,
    capabilities and health), for the next cycles to reuse. The ledger hands the same memo to every snapshot
    until a node registers, changes state or goes away; then it starts a new one.

    A builder that tracks changes (the ledger) also logs, at each snapshot, the nodes whose view it rebuilt since
    the last one (only their allocations can differ while the memo lives), with the newest snapshot's node mapping. A
    cycle on that snapshot keeps the nodes' allocations here too and brings them up to date from the log rather
    than reading every node; any other snapshot (an older one, or one made from it with other nodes) is read
    afresh. A snapshot must not be taken while a cycle reads the memo: the simulator does both on one thread,
    and the RM, whose cycles run on a thread of their own, takes every snapshot under the lock its cycle holds
    (``ResourceManager.cycle_lock``)."""

    __slots__ = ("allocation", "changed", "first", "layout", "nodes")

    def __init__(self) -> None:
        self.layout: object = None
        self.allocation: object = None
        self.nodes: Mapping[NodeId, NodeView] | None = None  # the newest logged snapshot's nodes (None: no log)
        self.changed: list[NodeId] = []  # node ids rebuilt, in the order of the snapshots that rebuilt them
        self.first = 0  # the log position of changed[0] (the log's head is dropped once read)

    @property
    def mark(self) -> int:
        """The log's length so far: the newest snapshot has seen every change before it."""
        return self.first + len(self.changed)

    def note(self, node_ids: Iterable[NodeId], nodes: Mapping[NodeId, NodeView]) -> None:
        """A snapshot showing ``nodes`` is made, whose views of ``node_ids`` were rebuilt since the last one. A log
        no index has read for long is dropped, with the allocation kept (the next index reads every node)."""
        self.nodes = nodes
        self.changed.extend(node_ids)
        if len(self.changed) > MAX_LOGGED_CHANGES:
            self.allocation = None
            self.first = self.mark
            self.changed.clear()

    def changes(self, since: int) -> list[NodeId]:
        """The nodes logged since a mark (at least the position of the oldest one kept)."""
        return self.changed[since - self.first:]

    def drop(self) -> None:
        """Forget the log so far: the allocation kept has read it."""
        self.first = self.mark
        self.changed.clear()


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    version: int
    nodes: Mapping[NodeId, NodeView]
    apps: Mapping[AppId, AppView]
    queues: Mapping[QueuePath, QueueView]
    reservations: ReservationView = EMPTY_VIEW  # the reservations active at this cycle's step
    deadlines: DeadlineView = NO_DEADLINES  # the admitted deadlines, EDF order, with what each is owed now
    # the total capability of the schedulable nodes, when the builder keeps it (else summed here, once)
    total: Resources | None = field(default=None, repr=False, compare=False)
    layout: LayoutMemo | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.total is not None:
            return
        total: dict[str, int] = {}
        for n in self.nodes.values():
            if n.schedulable:
                for r, v in n.capability.amounts.items():
                    total[r] = total.get(r, 0) + v
        object.__setattr__(self, "total", Resources(total))

    @property
    def capacity(self) -> Resources:
        """The total capability of the schedulable nodes."""
        assert self.total is not None
        return self.total
