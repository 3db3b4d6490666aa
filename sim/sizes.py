"""What the simulated RM knows of job sizes: its size tracker set up as the live RM sets it for the pipeline
(``rm.core.policies.gs.size_setup``: sampling and the estimate it reports), and a history of earlier runs.

The simulator's ledger is not durable and keeps no run history of its own; ``SimConfig.size_history`` hands it
one: (features, total task-seconds) of earlier runs, learnt by a history predictor before the first job
arrives, as a live RM learns its stored runs at start. Jobs that finish during the run are learnt as they
end, as live. ``history_key`` gives a job's features as the RM's ``job_key`` reads them off a simulated app.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from am.jobspec import Job
from rm.core.policies.gs import size_setup
from rm.core.sizes.history import HistoryPredictor, JobKey
from rm.core.sizes_glue import SizeTracker
from sim.config import Timing
from sim.policies import SimPolicy

APP_TYPE = "SHEPHERD"  # what the simulator submits its jobs as


HistoryRun = tuple[JobKey, float] | tuple[JobKey, float, Mapping[int, float]]
"""An earlier run: its features, its size in task-seconds and, for a DAG, each stage's (by depth)."""


def setup(tracker: SizeTracker, policy: SimPolicy, history: Sequence[HistoryRun] = ()) -> None:
    """The tracker as the live RM sets it for the policy's pipeline, with ``history`` learnt."""
    tracker.sampling, tracker.mode = size_setup(policy.pipeline)
    if history:
        tracker.history = HistoryPredictor()
        for run in history:
            tracker.observe(run[0], run[1], run[2] if len(run) > 2 else {})


def stage_sizes(job: Job) -> dict[int, float]:
    """A DAG's size per depth (task-seconds), as the RM's stage histories learn it; {} for one stage."""
    if len(job.stages) < 2:
        return {}
    depth = job.depths()
    out: dict[int, float] = {}
    for s in job.stages:
        d = depth[s.name]
        out[d] = out.get(d, 0.0) + sum(s.durations_s or (s.duration_s or 0.0,) * s.tasks)
    return out


def history_key(job: Job, timing: Timing | None = None, queue: str = "root.default") -> JobKey:
    """The features the RM's history predictor reads of ``job`` submitted to the simulator (``job_key``): its
    name (its id when it has none), user, queue, application type, submit hour (UTC) and the AM container (the
    simulator hands the RM no job file)."""
    t = timing or Timing()
    return JobKey(name=job.name or job.id, user=job.user or "sim", queue=queue, app_type=APP_TYPE,
                  submit_hour=int(job.arrival_s // 3600) % 24, resources=f"{t.am_memory_mb}MB,{t.am_vcores}vc")
