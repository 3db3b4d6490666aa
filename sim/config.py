"""The simulator's settings and the small records it keeps: latencies (``Timing``), task perturbations
(``Faults``), a run's configuration (``SimConfig``), node sizes (``NodeSpec``), and what the simulated
NodeManager knows of each container (``TaskRun``). ``sim.engine`` re-exports them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from am.policies.jockey.controller import ControlConfig
from am.policies.jockey.profile import JobProfile
from common.ids import NodeId
from common.resources import Resources
from rm.core.sizes.history import JobKey
from rm.core.state_types import CoreConfig, SamplingConfig
from sim.reservations import MorpheusConfig
from sim.slowdown import Contention, Slowdown


@dataclass(frozen=True, slots=True)
class Timing:
    """Latencies of the live system the simulation models (calibrated against ``shepherd up`` runs)."""

    am_interval_s: float = 0.5  # the DAG AM's allocate interval
    nm_heartbeat_s: float = 1.0  # NodeManager heartbeat interval
    am_startup_s: float = 0.3  # AM container placed -> AM registered and sending its first asks
    launch_s: float = 0.02  # container handed to the AM -> task process running
    cycle_interval_s: float = 0.05  # smallest gap between two scheduling cycles
    am_memory_mb: int = 256
    am_vcores: int = 1


@dataclass(frozen=True, slots=True)
class Faults:
    """Seeded perturbations of task attempts."""

    noise: float = 0.0  # sigma of a log-normal factor on every attempt's duration (0: exact)
    failure_rate: float = 0.0  # probability that an attempt fails (exit 1) part-way through
    straggler_rate: float = 0.0  # probability that an attempt is a straggler
    straggler_factor: float = 4.0  # a straggler runs this many times longer
    slowdown: float = 1.0  # every attempt runs this many times its trace duration (work inflation; 1: as given)
    # contention episodes that slow every attempt running on their nodes while they last (``sim.slowdown``):
    # given ones, and ones drawn from the run's seed over the day after the last arrival
    episodes: tuple[Slowdown, ...] = ()
    contention: Contention | None = None


@dataclass(frozen=True, slots=True)
class SimConfig:
    seed: int = 0
    timing: Timing = field(default_factory=Timing)
    faults: Faults = field(default_factory=Faults)
    ask_policy: str | None = None  # AM ask policy of jobs that name none; None: the scheduler's (SimPolicy)
    fair_sample_s: float = 5.0  # how often fairness is sampled (Jain's index uses 60 s windows of these)
    record_decisions: bool = False  # keep every placement as (time, job, stage, node) in ``decisions``
    morpheus: MorpheusConfig | None = None  # reservations, DRA, inference (pipelines with a reservation stage)
    # Jockey: a recurring job's profile from its earlier runs, by job id (else its AM profiles its job file),
    # the controller's settings, and deadlines moved while jobs run: job id -> (the fraction of the time to its
    # deadline after which it moves, the factor on the time to its deadline), e.g. (0.1, 0.5) halves it 10 %
    # of the way in
    profiles: Mapping[str, JobProfile] = field(default_factory=dict)
    # a Jockey job with no profile above gets the one its job's earlier runs in this simulation make, as the live
    # RM builds it from their stage reports (``sim.history``); False: its AM profiles its job file
    learn_profiles: bool = True
    control: ControlConfig | None = None
    deadline_moves: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # SLearn: earlier runs the RM's history predictor has learnt when the run starts, as (features, total
    # task-seconds) (``sim.sizes``); empty: no history, as before
    size_history: Sequence[tuple[JobKey, float] | tuple[JobKey, float, Mapping[int, float]]] = ()
    # SLearn's sampling: a fixed ratio of pilots per task and the gate's timeout (the default: the adaptive ratio)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    # what the AMs (and the RM, reading job files) are told of task durations: False, each task's own
    # (``durations_s``, the simulator's long-standing default: the AM knows them before they run); True, only
    # each stage's declared ``duration_s`` (``sim.am.declared_only``), refined by the tasks that finish
    declared_durations: bool = False
    # False: the job file the RM reads (to count tasks under GS, to price a deadline) declares no durations, so
    # it learns every size (SLearn's setting); its AM still knows what ``declared_durations`` says
    job_file_durations: bool = True


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    memory_mb: int
    vcores: int
    rack: str = "/default-rack"
    others: tuple[tuple[str, int], ...] = ()

    @property
    def capability(self) -> Resources:
        return Resources.of(memory_mb=self.memory_mb, vcores=self.vcores, **dict(self.others))


def uniform_nodes(count: int, memory_mb: int, vcores: int) -> list[NodeSpec]:
    return [NodeSpec(f"node{i + 1}", memory_mb, vcores) for i in range(count)]


@dataclass(slots=True)
class TaskRun:
    """What the simulated NodeManager and task process know of one container: its job, node, and the task
    the AM started in it, with when it runs and how it ends."""

    index: int  # the job's index in the workload
    node: NodeId
    stage: str = ""
    task: int = -1
    start: float = 0.0
    end: float = 0.0
    exit_status: int = 0


NEVER = float("inf")
SIM_CORE = CoreConfig(durable=False, nm_expiry_s=NEVER, am_expiry_s=NEVER, container_alloc_expiry_s=NEVER)
"""The ledger as the simulator drives it: no store, no tokens to check, nothing expires on its own."""
