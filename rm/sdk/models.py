"""What the SDK's calls answer, as frozen dataclasses: built from the RM's gRPC reports (``from_proto``) or its
REST objects (``from_dict``). Pure: no I/O.

Field names are Python's (``app_id``, ``final_status``); times are milliseconds since the epoch (``*_ms``) as on
the wire, durations seconds (``*_s``). A result built from a REST object keeps that object as ``raw``, the
exact JSON the RM sent (what ``-o json`` prints), for fields this module does not name yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from proto import shepherd_pb2 as pb

FINAL_STATES = frozenset({"FINISHED", "FAILED", "KILLED"})


def _amounts(r: pb.Resource) -> dict[str, int]:
    return {k: int(v) for k, v in r.values.items()}


def _ints(d: Any) -> dict[str, int]:
    """A resource object of the REST API (``{"memory-mb": 1024, "vcores": 1}``); {} for anything else."""
    if not isinstance(d, Mapping):
        return {}
    return {str(k): int(v) for k, v in d.items() if isinstance(v, int | float)}


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


def _opt_float(v: Any) -> float | None:
    return None if v is None else float(v)


def _obj(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


# ---------------------------------------------------------------------------------------- applications


@dataclass(frozen=True, slots=True)
class StageProgress:
    """One stage of a DAG job: its tasks done (exit 0), running, waiting for a container and failed, and its
    state: SUCCEEDED, RUNNING, WAITING, READY, BLOCKED, FAILED or KILLED."""

    name: str
    tasks: int
    done: int
    running: int
    waiting: int
    failed: int
    state: str

    @classmethod
    def from_proto(cls, s: pb.StageProgress) -> StageProgress:
        return cls(name=s.name, tasks=s.tasks, done=s.done, running=s.running, waiting=s.waiting, failed=s.failed,
                   state=s.state)

    @property
    def fraction(self) -> float:
        """Tasks done of the stage's tasks, 0.0 to 1.0."""
        return self.done / self.tasks if self.tasks > 0 else 0.0


@dataclass(frozen=True, slots=True)
class AppReport:
    """An application as the RM reports it (``GetApplicationReport``); ``progress`` runs from 0.0 to 1.0."""

    app_id: str
    name: str
    user: str
    queue: str
    state: str  # YARN's: NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED
    final_status: str  # UNDEFINED, SUCCEEDED, FAILED, KILLED
    progress: float
    diagnostics: str
    application_type: str
    tags: tuple[str, ...]
    priority: int
    submit_time_ms: int
    start_time_ms: int
    finish_time_ms: int
    tracking_url: str
    current_attempt_id: str
    am_container_id: str
    am_node_http_address: str
    running_containers: int
    used: dict[str, int]
    fair_share: dict[str, int]
    stages: tuple[StageProgress, ...]  # a DAG job's, in its job file's order; () for other apps

    @classmethod
    def from_proto(cls, r: pb.ApplicationReport) -> AppReport:
        return cls(app_id=r.application_id, name=r.name, user=r.user, queue=r.queue, state=r.state,
                   final_status=r.final_status, progress=float(r.progress), diagnostics=r.diagnostics,
                   application_type=r.application_type, tags=tuple(r.tags), priority=r.priority,
                   submit_time_ms=r.submit_time_ms, start_time_ms=r.start_time_ms, finish_time_ms=r.finish_time_ms,
                   tracking_url=r.tracking_url, current_attempt_id=r.current_attempt_id,
                   am_container_id=r.am_container_id, am_node_http_address=r.am_node_http_address,
                   running_containers=r.running_containers, used=_amounts(r.used),
                   fair_share=_amounts(r.fair_share),
                   stages=tuple(StageProgress.from_proto(s) for s in r.stages))

    @property
    def finished(self) -> bool:
        """It has ended: FINISHED, FAILED or KILLED."""
        return self.state in FINAL_STATES

    @property
    def succeeded(self) -> bool:
        return self.state == "FINISHED" and self.final_status == "SUCCEEDED"


@dataclass(frozen=True, slots=True)
class ContainerReport:
    """One of an application's containers, running or ended; ``node_http_address`` serves its logs."""

    container_id: str
    node_id: str
    node_http_address: str
    state: str
    exit_status: int
    diagnostics: str
    start_time_ms: int
    finish_time_ms: int
    log_url: str
    resource: dict[str, int]

    @classmethod
    def from_proto(cls, c: pb.ContainerReport) -> ContainerReport:
        return cls(container_id=c.container_id, node_id=c.node_id, node_http_address=c.node_http_address,
                   state=c.state, exit_status=c.exit_status, diagnostics=c.diagnostics,
                   start_time_ms=c.start_time_ms, finish_time_ms=c.finish_time_ms, log_url=c.log_url,
                   resource=_amounts(c.resource))


@dataclass(frozen=True, slots=True)
class NodeReport:
    """A NodeManager: ``node_id`` is YARN's ``host:port``; ``capability`` and ``used`` by resource name."""

    node_id: str
    http_address: str
    rack: str
    state: str  # NEW, RUNNING, UNHEALTHY, DECOMMISSIONING, DECOMMISSIONED, LOST, SHUTDOWN
    capability: dict[str, int]
    used: dict[str, int]
    num_containers: int
    health_report: str
    last_health_update_ms: int

    @classmethod
    def from_proto(cls, n: pb.NodeReport) -> NodeReport:
        return cls(node_id=f"{n.node_id.host}:{n.node_id.port}", http_address=n.http_address, rack=n.rack,
                   state=n.state, capability=_amounts(n.capability), used=_amounts(n.used),
                   num_containers=n.num_containers, health_report=n.health_report,
                   last_health_update_ms=n.last_health_update_ms)


# ---------------------------------------------------------------------------------------- waiting


@dataclass(frozen=True, slots=True)
class WaitProgress:
    """What ``wait`` hands its progress callback: the app's state and progress (0.0 to 1.0), each stage of a DAG
    job, the seconds since the wait began, and the whole report."""

    app_id: str
    state: str
    progress: float
    stages: tuple[StageProgress, ...]
    elapsed_s: float
    report: AppReport = field(compare=False, repr=False)

    @classmethod
    def of(cls, report: AppReport, elapsed_s: float) -> WaitProgress:
        return cls(app_id=report.app_id, state=report.state, progress=report.progress, stages=report.stages,
                   elapsed_s=elapsed_s, report=report)


@dataclass(frozen=True, slots=True)
class Outage:
    """The RM stopped answering while ``wait`` polled it (``over`` False; a restart or a failover), or answers
    again after ``down_s`` seconds (``over`` True). The application goes on meanwhile."""

    address: str
    code: str
    down_s: float
    over: bool


# ---------------------------------------------------------------------------------------- logs


@dataclass(frozen=True, slots=True)
class LogFile:
    """One log file of one container, as its NodeManager serves it (its last ``tail`` lines when asked)."""

    container_id: str
    node_id: str
    file: str
    text: str


# ---------------------------------------------------------------------------------------- plan


@dataclass(frozen=True, slots=True)
class PlannedPlacement:
    node: str
    tasks: int


@dataclass(frozen=True, slots=True)
class PlannedAm:
    node: str
    time_ms: int


@dataclass(frozen=True, slots=True)
class PlannedStage:
    name: str
    placements: tuple[PlannedPlacement, ...]
    first_start_time_ms: int | None


@dataclass(frozen=True, slots=True)
class PlannedDelay:
    """A running app the job would delay: its predicted finish without the job and with it (None: not within
    the plan's horizon)."""

    app_id: str
    name: str
    finish_time_without_ms: int | None
    finish_time_with_ms: int | None
    delay_s: float | None


@dataclass(frozen=True, slots=True)
class JobPlan:
    """A dry run of a submission (``POST /ws/v1/shepherd/plan``): nothing was submitted. ``status`` is how the
    job would end in the simulation: SUCCEEDED, FAILED, REFUSED or UNFINISHED (not within ``horizon_s``)."""

    job: str
    queue: str
    user: str
    scheduler: str
    plan_time_ms: int
    status: str
    am_container: PlannedAm | None
    first_stage: PlannedStage
    predicted_start_time_ms: int | None
    predicted_finish_time_ms: int | None
    predicted_duration_s: float | None
    deadline_s: float | None  # the job file's deadline_s, seconds after submission
    deadline_feasible: bool | None  # None: the job sets no deadline_s
    delays: tuple[PlannedDelay, ...]
    notes: tuple[str, ...]
    horizon_s: float
    simulated_s: float
    token: str = ""  # hand to ``submit(plan_token=)``: accepted only while this plan holds
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, p: Mapping[str, Any]) -> JobPlan:
        am = p.get("amContainer")
        first = _obj(p.get("firstStage"))
        feasible = p.get("deadlineFeasible")
        return cls(
            job=str(p.get("job", "")), queue=str(p.get("queue", "")), user=str(p.get("user", "")),
            scheduler=str(p.get("scheduler", "")), plan_time_ms=int(p.get("planTime") or 0),
            status=str(p.get("status", "")),
            am_container=PlannedAm(node=str(am["node"]), time_ms=int(am["time"])) if isinstance(am, Mapping)
            else None,
            first_stage=PlannedStage(
                name=str(first.get("name", "")),
                placements=tuple(PlannedPlacement(node=str(x["node"]), tasks=int(x["tasks"]))
                                 for x in first.get("placements") or []),
                first_start_time_ms=_opt_int(first.get("firstStartTime"))),
            predicted_start_time_ms=_opt_int(p.get("predictedStartTime")),
            predicted_finish_time_ms=_opt_int(p.get("predictedFinishTime")),
            predicted_duration_s=_opt_float(p.get("predictedDurationSec")),
            deadline_s=_opt_float(p.get("deadlineSec")),
            deadline_feasible=None if feasible is None else bool(feasible),
            delays=tuple(PlannedDelay(app_id=str(d.get("id", "")), name=str(d.get("name", "")),
                                      finish_time_without_ms=_opt_int(d.get("finishTimeWithout")),
                                      finish_time_with_ms=_opt_int(d.get("finishTimeWith")),
                                      delay_s=_opt_float(d.get("delaySec")))
                         for d in p.get("delays") or []),
            notes=tuple(str(n) for n in p.get("notes") or []),
            horizon_s=float(p.get("horizonSec") or 0.0), simulated_s=float(p.get("simulatedSec") or 0.0),
            token=str(p.get("planToken") or ""), raw=dict(p),
        )


# ---------------------------------------------------------------------------------------- explain


@dataclass(frozen=True, slots=True)
class WaitingAsk:
    """One ask the app waits on and why; ``allocation_request_id`` is 0 for its AM container's."""

    allocation_request_id: int
    am: bool
    capability: dict[str, int]
    num_containers: int
    reason: str
    detail: dict[str, Any]


@dataclass(frozen=True, slots=True)
class QueueLimit:
    path: str
    guaranteed: dict[str, int]
    max: dict[str, int]
    used: dict[str, int]
    state: str


@dataclass(frozen=True, slots=True)
class AmLimit:
    limit: dict[str, int]
    used: dict[str, int]
    max_am_resource_percent: float


@dataclass(frozen=True, slots=True)
class DeadlineOwed:
    """A bought deadline: when (ms since the epoch), its status (ON_TRACK, AT_RISK, MET, MISSED), what the claim
    is owed now and has left, and the seconds to spare (None when unknown)."""

    deadline_ms: int
    status: str
    price: float
    owed_units_now: float
    remaining_work: float
    laxity_s: float | None


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why an application waits (``GET /ws/v1/shepherd/apps/{id}/explain``): a stable reason code
    (``QUEUE_AT_MAX_CAPACITY``, ``NOT_WAITING``, ...), its message and the numbers behind it, the app's place
    among those waiting in its queue, its use against its fair share, the limits that apply, its waiting asks."""

    app_id: str
    state: str
    queue: str
    user: str
    reason: str
    message: str
    numbers: dict[str, Any]
    position_in_queue: int | None
    waiting_in_queue: int
    used: dict[str, int]
    fair_share: dict[str, int]
    dominant_share: float
    fair_dominant_share: float
    queue_limit: QueueLimit | None
    am_limit: AmLimit | None
    asks: tuple[WaitingAsk, ...]
    plan_version: int | None
    deadline: DeadlineOwed | None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, e: Mapping[str, Any]) -> Explanation:
        limits = _obj(e.get("limits"))
        q, am, dl = _obj(limits.get("queue")), _obj(limits.get("am")), e.get("deadline")
        return cls(
            app_id=str(e.get("appId", "")), state=str(e.get("state", "")), queue=str(e.get("queue", "")),
            user=str(e.get("user", "")), reason=str(e.get("reason", "")), message=str(e.get("message", "")),
            numbers=dict(_obj(e.get("numbers"))), position_in_queue=_opt_int(e.get("positionInQueue")),
            waiting_in_queue=int(e.get("waitingInQueue") or 0), used=_ints(e.get("used")),
            fair_share=_ints(e.get("fairShare")), dominant_share=float(e.get("dominantShare") or 0.0),
            fair_dominant_share=float(e.get("fairDominantShare") or 0.0),
            queue_limit=QueueLimit(path=str(q.get("path", "")), guaranteed=_ints(q.get("guaranteed")),
                                   max=_ints(q.get("max")), used=_ints(q.get("used")),
                                   state=str(q.get("state", ""))) if q else None,
            am_limit=AmLimit(limit=_ints(am.get("limit")), used=_ints(am.get("used")),
                             max_am_resource_percent=float(am.get("maxAmResourcePercent") or 0.0)) if am else None,
            asks=tuple(WaitingAsk(allocation_request_id=int(a.get("allocationRequestId") or 0), am=bool(a.get("am")),
                                  capability=_ints(a.get("capability")), num_containers=int(a.get("numContainers") or 0),
                                  reason=str(a.get("reason", "")), detail=dict(_obj(a.get("detail"))))
                       for a in e.get("asks") or []),
            plan_version=_opt_int(e.get("planVersion")),
            deadline=DeadlineOwed(deadline_ms=int(dl["deadline"]), status=str(dl.get("status", "")),
                                  price=float(dl.get("price") or 0.0),
                                  owed_units_now=float(dl.get("owedUnitsNow") or 0.0),
                                  remaining_work=float(dl.get("remainingWork") or 0.0),
                                  laxity_s=_opt_float(dl.get("laxity"))) if isinstance(dl, Mapping) else None,
            raw=dict(e),
        )
