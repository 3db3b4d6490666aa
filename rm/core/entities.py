"""The RM's mutable bookkeeping objects. Owned by Ledger; policies never see these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.exits import EXIT_INVALID
from common.ids import AppId, AttemptId, ContainerId, NodeId, QueuePath
from common.resources import Resources
from common.terms import NO_TERMS, AppTerms, ControlStep
from rm.core.model import AskType
from rm.core.records import AppRecord, AttemptRecord, ContainerRecord, NodeRecord


@dataclass(slots=True)
class Ask:
    allocation_request_id: int
    priority: int
    capability: Resources
    num_containers: int
    nodes: tuple[str, ...] = ()
    racks: tuple[str, ...] = ()
    relax_locality: bool = True
    ask_type: AskType = "DEFAULT"
    remaining_work_s: float = 0.0
    stage: str = ""


@dataclass(slots=True)
class CompletedStatus:
    container_id: ContainerId
    exit_status: int
    diagnostics: str
    start_time: float
    finish_time: float


@dataclass(slots=True)
class Container:
    container_id: ContainerId
    app_id: AppId
    attempt_id: AttemptId
    node_id: NodeId
    resource: Resources
    priority: int
    allocation_request_id: int
    ask_type: AskType
    is_am: bool
    state: str  # ALLOCATED, ACQUIRED, RUNNING, COMPLETED
    allocate_time: float
    start_time: float = 0.0
    finish_time: float = 0.0
    exit_status: int = EXIT_INVALID
    diagnostics: str = ""
    from_leftover: bool = False
    token: str = ""
    on_node: bool = False  # its NodeManager has reported it (being launched or running)
    confirm_by: float = 0.0  # passed on unstarted from a failed attempt: its node must report it by then

    @property
    def live(self) -> bool:
        return self.state != "COMPLETED"

    def record(self) -> ContainerRecord:
        return ContainerRecord(
            container_id=self.container_id,
            app_id=self.app_id,
            attempt_id=self.attempt_id,
            node_id=self.node_id,
            resource=self.resource.to_dict(),
            priority=self.priority,
            allocation_request_id=self.allocation_request_id,
            ask_type=self.ask_type,
            is_am=self.is_am,
            state=self.state,
            allocate_time=self.allocate_time,
            start_time=self.start_time,
            finish_time=self.finish_time,
            exit_status=self.exit_status,
            diagnostics=self.diagnostics,
            from_leftover=self.from_leftover,
        )


# a node in these states is gone from the cluster: its capability counts nowhere, not even in the plans
GONE_NODE_STATES = frozenset({"LOST", "SHUTDOWN", "DECOMMISSIONED"})


@dataclass(slots=True)
class Node:
    node_id: NodeId
    host: str
    port: int
    http_address: str
    rack: str
    capability: Resources
    state: str  # NEW, RUNNING, UNHEALTHY, DECOMMISSIONING, DECOMMISSIONED, LOST, SHUTDOWN
    registered_at: float
    last_heartbeat: float
    health_report: str = ""
    last_health_update: float = 0.0
    response_id: int = 0
    allocated: Resources = field(default_factory=Resources)
    containers: set[ContainerId] = field(default_factory=set)
    to_cleanup: set[ContainerId] = field(default_factory=set)
    apps_to_cleanup: set[AppId] = field(default_factory=set)
    ipc_port: int = 0  # the NodeManager's Hadoop-IPC ContainerManagement port (0: none)
    decommission_deadline: float = 0.0  # DECOMMISSIONING until its containers end or this time; 0: not
    session_hash: str = ""  # SHA-256 (hex) of the session of its NodeManager's registration ("" none)

    @property
    def schedulable(self) -> bool:
        return self.state == "RUNNING"

    def record(self) -> NodeRecord:
        return NodeRecord(
            node_id=self.node_id,
            http_address=self.http_address,
            rack=self.rack,
            capability=self.capability.to_dict(),
            state=self.state,
            registered_at=self.registered_at,
            last_heartbeat=self.last_heartbeat,
            health_report=self.health_report,
            decommission_deadline=self.decommission_deadline,
            session_hash=self.session_hash,
        )


@dataclass(slots=True)
class Attempt:
    attempt_id: AttemptId
    app_id: AppId
    number: int
    state: str
    start_time: float
    am_container_id: ContainerId | None = None
    node_id: NodeId | None = None
    finish_time: float = 0.0
    diagnostics: str = ""
    counts_as_failure: bool = True
    host: str = ""
    rpc_port: int = 0
    tracking_url: str = ""
    last_contact: float = 0.0
    registered: bool = False
    am_ask_pending: bool = False
    response_id: int = 0
    last_response: Any = None  # the last AllocateResult, resent for a duplicate request
    asks: dict[int, Ask] = field(default_factory=dict)
    undelivered: list[ContainerId] = field(default_factory=list)
    completed: list[CompletedStatus] = field(default_factory=list)
    nm_token_nodes: set[NodeId] = field(default_factory=set)
    nm_key_id: int = 0  # the container-token key its NM tokens were signed with (0: none handed out yet)
    blacklist: set[NodeId] = field(default_factory=set)
    next_container_seq: int = 1
    delivered_until: float = 0.0  # finish time of the newest completion handed to the AM (kept in the store)
    inherited: list[ContainerId] = field(default_factory=list)  # running containers a failed attempt passed on

    @property
    def final(self) -> bool:
        return self.state in ("FINISHED", "FAILED", "KILLED")

    def record(self) -> AttemptRecord:
        return AttemptRecord(
            attempt_id=self.attempt_id,
            app_id=self.app_id,
            number=self.number,
            state=self.state,
            am_container_id=self.am_container_id or "",
            node_id=self.node_id or "",
            start_time=self.start_time,
            finish_time=self.finish_time,
            diagnostics=self.diagnostics,
            counts_as_failure=self.counts_as_failure,
            host=self.host,
            rpc_port=self.rpc_port,
            tracking_url=self.tracking_url,
            delivered_until=self.delivered_until,
        )


@dataclass(slots=True)
class App:
    app_id: AppId
    name: str
    queue: QueuePath
    user: str
    app_type: str
    priority: int
    am_resource: Resources
    am_launch: dict[str, Any]
    max_attempts: int
    tags: tuple[str, ...]
    unmanaged: bool
    job_spec_json: str
    submit_time: float
    state: str
    final_status: str = "UNDEFINED"
    diagnostics: str = ""
    tracking_url: str = ""
    progress: float = 0.0
    start_time: float = 0.0
    launch_time: float = 0.0
    finish_time: float = 0.0
    failed_attempts: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    used: Resources = field(default_factory=Resources)
    am_used: Resources = field(default_factory=Resources)
    containers: set[ContainerId] = field(default_factory=set)
    memory_seconds: float = 0.0
    vcore_seconds: float = 0.0
    leftover_containers: int = 0
    fair_share: Resources = field(default_factory=Resources)
    # the floor the ``guarantee`` stage served it in the last plan applied (None: none; not stored)
    granted: Resources | None = None
    model_build_s: float | None = None  # how long its AM took to build its model of the job (not stored)
    guarantee_ceiling: Resources | None = None  # the most its queue's guarantees may hold, as of that plan
    lifetime_expiry: float = 0.0  # when the RM kills it (YARN's LIFETIME timeout); 0 = unlimited
    reservation_id: str = ""  # the reservation it was submitted into (YARN's reservation-id), if any
    waiting: str = ""  # why its asks wait, from the last scheduling cycle (shown in diagnostics)
    inputs: tuple[str, ...] = ()  # declared datasets (run history: read when it starts)
    outputs: tuple[str, ...] = ()  # (written when it finishes successfully)
    inputs_read: bool = False  # its reads are recorded (once, at its first start)
    # (start, end, resource) of each of its containers that ran and ended: its run's skyline when it ends
    spans: list[tuple[float, float, Resources]] = field(default_factory=list)
    # YARN's RMAppMetrics: what preemption took from it over all attempts (rebuilt from its containers'
    # exit statuses after an RM restart)
    preempted: Resources = field(default_factory=Resources)
    preempted_containers: int = 0  # numNonAMContainerPreempted
    preempted_am_containers: int = 0  # numAMContainerPreempted
    # its deadline, requested guarantee and size estimate (policies read them as ``AppView.terms``)
    terms: AppTerms = NO_TERMS
    ran_on: set[NodeId] = field(default_factory=set)  # nodes its containers were placed on
    weight: float = 1.0  # its weight among the apps of its queue (DRF divides its dominant share by it)
    keep_containers: bool = False  # YARN's keepContainersAcrossApplicationAttempts
    am_checkpoint: str = ""  # what its AM last saved of its progress (opaque), handed to every later attempt
    sizing: dict[str, Any] = field(default_factory=dict)  # its sampling gate (``rm.core.sizes_glue.Gate``), stored
    # its AM's control decisions (Jockey), newest last, each with the time the RM heard it; stored once it ended
    control: list[tuple[float, ControlStep]] = field(default_factory=list)
    # the earlier runs of its job whose profile its AM was handed when it last registered (not stored: an AM
    # registers again after an RM restart and is handed the profile again)
    profile_runs: tuple[str, ...] = ()
    changes: int = 0  # how many changes of it the ledger has recorded (a report made at one count is still true)

    def note_preempted(self, resource: Resources, *, is_am: bool) -> None:
        """Count one of its containers that ended preempted (exit -102)."""
        self.preempted = self.preempted + resource
        if is_am:
            self.preempted_am_containers += 1
        else:
            self.preempted_containers += 1

    @property
    def current(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def final(self) -> bool:
        return self.state in ("FINISHED", "FAILED", "KILLED")

    def report_diagnostics(self) -> str:
        """The diagnostics clients see: why it ended, or while it runs, why its asks wait."""
        if self.final or not self.waiting:
            return self.diagnostics
        return f"{self.diagnostics}\n{self.waiting}" if self.diagnostics else self.waiting

    def record(self) -> AppRecord:
        return AppRecord(
            app_id=self.app_id,
            name=self.name,
            queue=self.queue,
            user=self.user,
            app_type=self.app_type,
            priority=self.priority,
            am_resource=self.am_resource.to_dict(),
            am_launch=self.am_launch,
            max_attempts=self.max_attempts,
            tags=self.tags,
            unmanaged=self.unmanaged,
            job_spec_json=self.job_spec_json,
            submit_time=self.submit_time,
            state=self.state,
            final_status=self.final_status,
            diagnostics=self.diagnostics,
            tracking_url=self.tracking_url,
            progress=self.progress,
            start_time=self.start_time,
            launch_time=self.launch_time,
            finish_time=self.finish_time,
            attempts_started=len(self.attempts),
            failed_attempts=self.failed_attempts,
            lifetime_expiry=self.lifetime_expiry,
            reservation_id=self.reservation_id,
            inputs=self.inputs,
            outputs=self.outputs,
            terms=self.terms.to_dict(),
            keep_containers=self.keep_containers,
            am_checkpoint=self.am_checkpoint,
            sizing=self.sizing,
            control=tuple(step.to_dict(heard) for heard, step in self.control) if self.final else (),
        )
