"""Durable records: what the state store keeps so that an RM restart loses nothing accepted.

The core produces these (plain frozen data); the service layer's store writes them in one
transaction per batch, before the caller that caused them is answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rm.core.reservation.records import ReservationRecord

# YARN's application states, in order of the normal path.
APP_STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED")
APP_FINAL_STATES = frozenset({"FINISHED", "FAILED", "KILLED"})
FINAL_STATUSES = ("UNDEFINED", "SUCCEEDED", "FAILED", "KILLED")

# YARN's RMAppAttemptState names that we use.
ATTEMPT_STATES = (
    "NEW", "SUBMITTED", "SCHEDULED", "ALLOCATED", "LAUNCHED", "RUNNING",
    "FINISHING", "FINISHED", "FAILED", "KILLED",
)
ATTEMPT_FINAL_STATES = frozenset({"FINISHED", "FAILED", "KILLED"})

# RMContainerState names.
CONTAINER_STATES = ("ALLOCATED", "ACQUIRED", "RUNNING", "COMPLETED", "RELEASED", "KILLED")

NODE_STATES = ("NEW", "RUNNING", "UNHEALTHY", "DECOMMISSIONING", "DECOMMISSIONED", "LOST", "SHUTDOWN")


@dataclass(frozen=True, slots=True)
class AppRecord:
    app_id: str
    name: str
    queue: str
    user: str
    app_type: str
    priority: int
    am_resource: dict[str, int]
    am_launch: dict[str, Any]  # {"commands": [...], "environment": {...}, "local_resources": {...}}
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
    attempts_started: int = 0
    failed_attempts: int = 0  # failures that count toward max_attempts
    lifetime_expiry: float = 0.0  # the LIFETIME timeout (seconds since the epoch); 0 = unlimited
    reservation_id: str = ""  # the reservation the app was submitted into; "" = none
    inputs: tuple[str, ...] = ()  # declared datasets it reads (run history, SLO inference)
    outputs: tuple[str, ...] = ()  # declared datasets it writes
    terms: dict[str, Any] = field(default_factory=dict)  # its AppTerms (common.terms), as JSON
    keep_containers: bool = False  # a failed attempt's running containers pass to the next one
    am_checkpoint: str = ""  # the last checkpoint its AM saved (opaque), handed to later attempts
    sizing: dict[str, Any] = field(default_factory=dict)  # its SLearn sampling gate: ratio, pilots, open
    # once it ended: its AM's control decisions (Jockey), oldest first (``common.terms.ControlStep.to_dict``)
    control: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    attempt_id: str
    app_id: str
    number: int
    state: str
    am_container_id: str = ""
    node_id: str = ""
    start_time: float = 0.0
    finish_time: float = 0.0
    diagnostics: str = ""
    counts_as_failure: bool = True
    host: str = ""
    rpc_port: int = 0
    tracking_url: str = ""
    # the finish time of the newest completed container handed to its AM: what a restarted RM still owes it
    delivered_until: float = 0.0


@dataclass(frozen=True, slots=True)
class ContainerRecord:
    container_id: str
    app_id: str
    attempt_id: str
    node_id: str
    resource: dict[str, int]
    priority: int
    allocation_request_id: int
    ask_type: str  # DEFAULT or ALTRUISTIC
    is_am: bool
    state: str
    allocate_time: float
    start_time: float = 0.0
    finish_time: float = 0.0
    exit_status: int = -1000
    diagnostics: str = ""
    from_leftover: bool = False


@dataclass(frozen=True, slots=True)
class NodeRecord:
    node_id: str
    http_address: str
    rack: str
    capability: dict[str, int]
    state: str
    registered_at: float
    last_heartbeat: float = 0.0
    health_report: str = ""
    decommission_deadline: float = 0.0  # a graceful decommission ends by then (seconds since the epoch); 0: none
    # SHA-256 (hex) of the session of its NodeManager's current registration: after an RM restart only that
    # NodeManager may register as the node until it is LOST; "" none
    session_hash: str = ""


@dataclass(frozen=True, slots=True)
class MetaRecord:
    """Cluster-wide facts: the cluster timestamp, id counters and token keys (hex)."""

    cluster_timestamp: int
    next_app_seq: int
    epoch: int
    amrm_key_hex: str
    container_key_hex: str  # the newest container-token key (the only one, in a store from before keys rolled)
    extra: dict[str, Any] = field(default_factory=dict)
    # the container-token keys NodeManagers accept, oldest first (``rm.core.ledger.keys.MasterKey.to_dict``)
    container_keys: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class JobRunRecord:
    """One ended application as a run of its recurring job (the app's name): what SLO inference needs.

    ``skyline`` holds the containers of ``unit`` the app had in use in each step of ``step_s`` seconds from
    ``start_time`` (the start of its first container), averaged over the step."""

    app_id: str
    job: str
    queue: str
    user: str
    submit_time: float
    start_time: float
    finish_time: float
    succeeded: bool
    skyline: tuple[float, ...]
    unit: dict[str, int]
    step_s: int
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DatasetAccessRecord:
    """A read or write of a declared dataset by an application, at ``time`` (seconds since the epoch)."""

    access_id: str  # "<app id> <kind> <path>": one read per input and one write per output of an app
    path: str
    kind: str  # "read" or "write"
    time: float
    app_id: str


@dataclass(frozen=True, slots=True)
class SloDecisionRecord:
    """What a user decided about the SLO proposal of a recurring job."""

    job: str
    status: str  # "accepted" or "rejected"
    reservation_id: str = ""  # accepted: the periodic reservation it became
    based_on: str = ""  # the newest successful run (app id) the decided proposal was inferred from
    runs: int = 0  # successful runs behind that proposal
    decided_at: float = 0.0
    user: str = ""
    overrides: dict[str, Any] = field(default_factory=dict)  # accepted: what the user changed


@dataclass(frozen=True, slots=True)
class WorkRunRecord:
    """One finished application's measured work per phase, with the features it was estimated from: what the
    deadline estimators (MRM) are fitted on."""

    app_id: str
    job: str
    finish_time: float
    features: dict[str, Any]  # ``rm.core.deadlines.estimate.JobFeatures.to_dict``
    work: tuple[float, ...]  # unit-seconds per phase
    longest: tuple[float, ...]  # seconds, the longest task per phase
    # what the size tracker measured (``rm.core.sizes_glue.run_summary``): the history predictor's features,
    # task runtimes per task group, the size, the estimate it had at the end, and its sampling gate
    sizes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StageRunsRecord:
    """One ended run's per-stage report from its ApplicationMaster: what a recurring job's profile (Jockey) is
    built from. ``stages`` holds one ``rm.core.job_profiles.stage_to_dict`` per stage."""

    app_id: str
    job: str  # the application's name
    queue: str
    user: str
    finish_time: float
    succeeded: bool
    stages: tuple[dict[str, Any], ...]


Record = (AppRecord | AttemptRecord | ContainerRecord | NodeRecord | MetaRecord | ReservationRecord | JobRunRecord
          | DatasetAccessRecord | SloDecisionRecord | WorkRunRecord | StageRunsRecord)


@dataclass(frozen=True, slots=True)
class StoredState:
    """Everything the store holds, as read back at RM start."""

    meta: MetaRecord | None
    apps: tuple[AppRecord, ...]
    attempts: tuple[AttemptRecord, ...]
    containers: tuple[ContainerRecord, ...]
    nodes: tuple[NodeRecord, ...]
    reservations: tuple[ReservationRecord, ...] = ()
    slo_decisions: tuple[SloDecisionRecord, ...] = ()  # run history and dataset accesses are read on demand
    work_runs: tuple[WorkRunRecord, ...] = ()  # the newest, oldest first (the deadline estimators' history)
