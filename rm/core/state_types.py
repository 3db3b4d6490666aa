"""Configuration, requests and results of the RM state machine (plain data)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.ids import AppId, AttemptId, ContainerId, NodeId
from common.resources import Resources
from common.terms import NO_TERMS, AppTerms
from rm.core.deadlines.system import DeadlineConfig
from rm.core.entities import CompletedStatus

AM_ASK_ID = -1  # the allocation-request id under which an attempt's AM container is asked for
MAX_ASK_CONTAINERS = 1_000_000


@dataclass(frozen=True, slots=True)
class SamplingConfig:
    """SLearn's sampling: a fixed ratio of pilots per task (None: the adaptive rule of its Fig. 4 over 1-5 %),
    how long a gated app waits for its pilots before its other tasks are let through, and whether a job whose
    run history has estimated it at least as well as pilots did skips sampling (SLearn §7; False: every wide
    job of unknown size is sampled, as in the paper's experiments)."""

    ratio: float | None = None
    gate_timeout_s: float = 300.0
    trust_history: bool = True

    def validate(self) -> None:
        if self.ratio is not None and not 0.0 < self.ratio <= 1.0:
            raise ValueError(f"the sampling ratio must be in (0, 1], got {self.ratio}")
        if not self.gate_timeout_s > 0:
            raise ValueError(f"the gate timeout must be > 0 s, got {self.gate_timeout_s}")


@dataclass(frozen=True, slots=True)
class CoreConfig:
    nm_expiry_s: float = 600.0
    am_expiry_s: float = 600.0
    container_alloc_expiry_s: float = 600.0
    heartbeat_interval_s: float = 1.0
    max_app_attempts: int = 2
    container_token_lifetime_s: float = 600.0
    # a new container-token key every this long (yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs)
    container_key_roll_s: float = 86_400.0
    # per type it names, the largest ask; the types it does not name: the largest node's amount
    maximum_allocation: Resources | None = None
    # the types asks may name and nodes offer (yarn.resource-types with memory-mb and vcores); None: those
    # the nodes offer
    resource_types: frozenset[str] | None = None
    completed_apps_kept: int = 10_000
    max_priority: int = 10  # yarn.cluster.max-application-priority: priorities above it are capped
    # False for drivers with no store and no NodeManagers to check tokens (the simulator): no durable records
    # are collected and containers carry no tokens
    durable: bool = True
    # an RM restart keeps running containers and AMs (YARN's yarn.resourcemanager.work-preserving-recovery.enabled)
    work_preserving: bool = True
    deadlines: DeadlineConfig = field(default_factory=DeadlineConfig)  # MRM: quotes, estimates, books
    sampling: SamplingConfig = field(default_factory=SamplingConfig)  # SLearn: pilots per task, the gate's timeout


@dataclass(frozen=True, slots=True)
class SubmitSpec:
    app_id: str
    name: str = ""
    queue: str = "default"
    user: str = "dr.who"
    app_type: str = "SHEPHERD"
    priority: int = 0
    am_resource: Resources = field(default_factory=lambda: Resources.of(memory_mb=1024, vcores=1))
    am_launch: Mapping[str, Any] = field(default_factory=dict)
    max_attempts: int = 0
    tags: tuple[str, ...] = ()
    unmanaged: bool = False
    job_spec_json: str = ""
    lifetime_s: float = 0.0  # YARN's LIFETIME application timeout, in seconds from submission; 0 = none
    reservation_id: str = ""  # run inside this reservation (YARN's reservation-id); "" = none
    inputs: tuple[str, ...] = ()  # declared datasets it reads and writes (run history, SLO inference)
    outputs: tuple[str, ...] = ()
    terms: AppTerms = NO_TERMS  # a deadline asked for, and what the submitter knows of the job's size
    keep_containers: bool = False  # YARN's keepContainersAcrossApplicationAttempts
    plan_token: str = ""  # from a dry run: accepted only while that plan holds (``rm.core.plan_token``)


@dataclass(frozen=True, slots=True)
class LaunchAM:
    """The service must start this AM container on its NodeManager."""

    app_id: AppId
    attempt_id: AttemptId
    container_id: ContainerId
    node_id: NodeId
    container_token: str
    nm_token: str
    amrm_token: str
    launch: Mapping[str, Any]
    job_spec_json: str
    user: str


@dataclass(frozen=True, slots=True)
class NodeStatus:
    container_id: str
    state: str  # NEW, RUNNING, COMPLETE
    exit_status: int = 0
    diagnostics: str = ""
    start_time: float = 0.0
    finish_time: float = 0.0


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    response_id: int
    action: str  # NORMAL, RESYNC, SHUTDOWN
    containers_to_cleanup: tuple[str, ...] = ()
    apps_to_cleanup: tuple[str, ...] = ()
    diagnostics: str = ""


@dataclass(frozen=True, slots=True)
class AllocatedContainer:
    container_id: ContainerId
    node_id: NodeId
    node_http_address: str
    resource: Resources
    priority: int
    allocation_request_id: int
    token: str
    ask_type: str
    from_leftover: bool


@dataclass(frozen=True, slots=True)
class AllocateResult:
    response_id: int
    command: str = "NONE"  # NONE, RESYNC, SHUTDOWN
    allocated: tuple[AllocatedContainer, ...] = ()
    completed: tuple[CompletedStatus, ...] = ()
    fair_share: Resources = field(default_factory=Resources)
    headroom: Resources = field(default_factory=Resources)
    nm_tokens: tuple[tuple[NodeId, str], ...] = ()
    num_nodes: int = 0
    deadline: float | None = None  # the app's deadline now (seconds since the epoch; it may change at run time)
    # the floor the ``guarantee`` stage serves the app as of the last plan applied (None: it grants it none)
    granted_guarantee: Resources | None = None
    # the most the app's queue lets guarantees hold together, as of the same plan (None: not granted any)
    guarantee_ceiling: Resources | None = None
