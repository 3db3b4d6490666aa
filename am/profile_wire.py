"""A job's profile and a run's stage report on the wire (shepherd extensions of the ApplicationMaster protocol).

* ``FinishApplicationMasterRequest.stages``: the run per stage (``StageRun``), sent by the DAG ApplicationMaster
  when it unregisters; the RM keeps it as the job's history.
* ``RegisterApplicationMasterResponse.profile``: the profile the RM built from the job's earlier runs, which
  the AM's policy models the job from instead of its job file. An empty ``init_s`` means the runs measured no
  initialisation time; the AM then puts its own estimate there (``unmeasured_init_s``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from am.policies.jockey.profile import JobProfile, StageProfile, StageRun
from common.resources import Resources
from proto import shepherd_pb2 as pb

MAX_SAMPLES = 256  # samples per stage and kind the AM sends (the RM keeps no more)


def _thin(samples: Sequence[float], k: int = MAX_SAMPLES) -> list[float]:
    if len(samples) <= k:
        return list(samples)
    ordered = sorted(samples)
    n = len(ordered)
    return [ordered[min(n - 1, int((i + 0.5) * n / k))] for i in range(k)]


def _res(r: Resources | None) -> pb.Resource | None:
    return None if r is None else pb.Resource(values=r.to_dict())


def report_to_pb(stages: Iterable[StageRun]) -> list[pb.StageReport]:
    return [pb.StageReport(name=s.name, tasks=s.tasks, run_s=_thin(s.run_s), queue_s=_thin(s.queue_s),
                           init_s=_thin(s.init_s), attempts=s.attempts, failed_attempts=s.failed_attempts,
                           parents=list(s.parents), container=_res(s.container)) for s in stages]


def report_from_pb(msgs: Iterable[pb.StageReport]) -> list[StageRun]:
    return [StageRun(name=m.name, tasks=m.tasks, run_s=tuple(m.run_s), queue_s=tuple(m.queue_s),
                     init_s=tuple(m.init_s), attempts=m.attempts, failed_attempts=m.failed_attempts,
                     parents=tuple(m.parents),
                     container=Resources(dict(m.container.values)) if m.HasField("container") else None)
            for m in msgs]


def profile_to_pb(profile: JobProfile, runs: Sequence[str], init_measured: Iterable[str]) -> pb.JobProfile:
    measured = set(init_measured)
    return pb.JobProfile(job=profile.name, runs=list(runs), stages=[
        pb.StageProfile(name=s.name, tasks=s.tasks, run_s=list(s.run_s),
                        init_s=list(s.init_s) if s.name in measured else [], queue_s=s.queue_s,
                        failure_p=s.failure_p, parents=list(s.parents), container=_res(s.container))
        for s in profile.stages])


def profile_from_pb(msg: pb.JobProfile, *, unmeasured_init_s: float = 0.0) -> JobProfile:
    """The profile the RM sent (``ProfileError`` when it is malformed)."""
    return JobProfile(msg.job, tuple(
        StageProfile(name=s.name, tasks=s.tasks, run_s=tuple(s.run_s), init_s=tuple(s.init_s) or (unmeasured_init_s,),
                     queue_s=s.queue_s if s.HasField("queue_s") else None, failure_p=s.failure_p,
                     parents=tuple(s.parents),
                     container=Resources(dict(s.container.values)) if s.HasField("container") else None)
        for s in msg.stages))
