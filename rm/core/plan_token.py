"""A dry run's plan token (Nomad's ``job plan`` check index, Slurm's ``--test-only`` followed by the real thing).

``shepherd job plan`` (``POST /ws/v1/shepherd/plan``) answers with a token; a submission that carries it
(``shepherd submit --plan-token``) is accepted only while the plan still holds:

* the same job as far as the plan could tell: its queue, priority and stages (names, task counts, durations,
  container sizes, parents); the task environment a submission adds does not count;
* on the same cluster: the same unfinished applications, the same schedulable nodes with the same capability,
  the same queues.

Otherwise the submission is refused and nothing changes: ``BadRequest`` (400) for another job, ``Conflict``
(409) when the cluster moved on since the plan, with what changed. The token is a check, not a credential: it
says nothing a client could not read from the cluster, and only narrows what a submission may do.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from am.jobspec import Job
from common.errors import BadRequest, Conflict
from common.ids import QueuePath
from common.resources import Resources

DIGEST_CHARS = 16


@dataclass(frozen=True, slots=True)
class ClusterBasis:
    """What a plan was made on: the unfinished apps, the schedulable nodes and the queues."""

    apps: frozenset[str]
    nodes: str  # digest of the schedulable nodes and their capability
    queues: str  # digest of the queue configuration

    def digest(self) -> str:
        return _digest({"apps": sorted(self.apps), "nodes": self.nodes, "queues": self.queues})


def cluster_basis(apps: Iterable[str], nodes: Iterable[tuple[str, Resources]],
                  queues: Mapping[QueuePath, object]) -> ClusterBasis:
    return ClusterBasis(frozenset(apps),
                        _digest(sorted((n, r.to_dict()) for n, r in nodes)),
                        _digest({str(k): repr(v) for k, v in sorted(queues.items(), key=lambda kv: str(kv[0]))}))


def job_digest(job: Job) -> str:
    """The job as a plan sees it."""
    return _digest({
        "queue": job.queue, "priority": job.priority,
        "stages": [{"name": s.name, "tasks": s.tasks, "durations": [s.task_duration_s(i) for i in range(s.tasks)],
                    "resource": s.capability.to_dict(), "parents": sorted(s.parents)} for s in job.stages],
    })


def make_token(job: Job, basis: ClusterBasis) -> str:
    """``<job digest>.<cluster digest>.<apps>``: the unfinished apps are listed (sorted, comma-separated) so
    that a refusal can say which ones came or went."""
    return f"{job_digest(job)}.{basis.digest()}.{','.join(sorted(basis.apps))}"


def check_token(token: str, job: Job | None, basis: ClusterBasis) -> None:
    """Refuse a submission whose plan no longer holds (see the module docstring)."""
    parts = token.split(".", 2)
    if len(parts) != 3 or len(parts[0]) != DIGEST_CHARS or len(parts[1]) != DIGEST_CHARS:
        raise BadRequest("the plan token is malformed: pass the planToken `shepherd job plan` printed")
    if job is None:
        raise BadRequest("a plan token goes with a DAG job file: this submission has none")
    if parts[0] != job_digest(job):
        raise BadRequest("the job differs from the one planned (its queue, priority or stages changed): "
                         "plan it again")
    if parts[1] == basis.digest():
        return
    planned = {a for a in parts[2].split(",") if a}
    came, went = sorted(basis.apps - planned), sorted(planned - basis.apps)
    why = []
    if came:
        why.append(f"submitted since: {', '.join(came[:5])}{' ...' if len(came) > 5 else ''}")
    if went:
        why.append(f"finished since: {', '.join(went[:5])}{' ...' if len(went) > 5 else ''}")
    if not why:
        why.append("the nodes or queues changed")
    raise Conflict(f"the cluster changed since the plan ({'; '.join(why)}): plan again, or submit without "
                   "the plan token")


def _digest(value: object) -> str:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(data).hexdigest()[:DIGEST_CHARS]
