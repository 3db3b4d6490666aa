"""A DAG job (``am.jobspec``) as a submission to the RM: who runs it, the environment its tasks get and the
submission context that has shepherd's DAG ApplicationMaster run it. ``shepherd submit`` and both clients
submit through here."""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from am.jobspec import Job, load_job, parse_job
from common.resources import Resources
from proto import shepherd_pb2 as pb

JobInput = str | os.PathLike[str] | Job | Mapping[str, Any]
"""A job file (YAML or JSON), a parsed ``Job``, or a job as a mapping (the job file's fields)."""

AM_COMMAND = "$SHEPHERD_PYTHON -m am.dag"
AM_RESOURCE = Resources.of(memory_mb=256, vcores=1)
APPLICATION_TYPE = "SHEPHERD-DAG"
DEFAULT_DATA_DIR = Path(".shepherd")


def read_job(job: JobInput) -> tuple[Job, Path | None]:
    """The job, and the directory of its file (None for a job given as data). ``JobSpecError`` when invalid."""
    if isinstance(job, Job):
        return job, None
    if isinstance(job, Mapping):
        return parse_job(job), None
    path = Path(job)
    return load_job(path), path.resolve().parent


def job_user(job: Job) -> str:
    """Who the job runs as: its file's ``user``, else ``$USER``, else the user this process runs as (a service,
    a container or cron often has no ``$USER``), else YARN's ``dr.who``."""
    if job.user:
        return job.user
    if os.environ.get("USER"):
        return os.environ["USER"]
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except (KeyError, OSError):
        return "dr.who"


def task_env(job: Job, app_id: str, *, job_dir: Path, data_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    """What every task's environment gets: the job file's ``env``, ``SHEPHERD_JOB_DIR`` (the job file's
    directory) and ``OUTPUT_DIR`` (``<data_dir>/output/<app id>``) unless the job sets them, then ``env``."""
    out = dict(job.env or {})
    out.setdefault("SHEPHERD_JOB_DIR", str(job_dir))
    out.setdefault("OUTPUT_DIR", str((data_dir / "output" / app_id).resolve()))
    out.update(env)
    return out


def submission_context(job: Job, app_id: str, *, job_dir: Path, data_dir: Path = DEFAULT_DATA_DIR,
                       queue: str | None = None, env: Mapping[str, str] | None = None, reservation: str = "",
                       deadline: float = 0.0, max_price: float = 0.0, quote: str = "",
                       plan_token: str = "") -> pb.ApplicationSubmissionContext:
    """The submission of ``job`` as application ``app_id``, run by shepherd's DAG ApplicationMaster; a
    ``deadline`` (seconds since the epoch), ``max_price`` or ``quote`` buys a deadline; with ``plan_token`` (a
    dry run's) it is accepted only while that plan holds."""
    spec = json.loads(job.to_json())
    spec["env"] = task_env(job, app_id, job_dir=job_dir, data_dir=data_dir, env=env or {})
    if queue:
        spec["queue"] = queue
    return pb.ApplicationSubmissionContext(
        application_id=app_id, name=job.name or job.id, queue=queue or job.queue or "default", user=job_user(job),
        application_type=APPLICATION_TYPE, priority=int(job.priority or 0),
        am_resource=pb.Resource(values=AM_RESOURCE.to_dict()),
        am_container_spec=pb.ContainerLaunchContext(commands=[AM_COMMAND]),
        max_app_attempts=int(job.max_app_attempts or 0), job_spec_json=json.dumps(spec), inputs=list(job.inputs),
        outputs=list(job.outputs), reservation_id=reservation, deadline=deadline, max_price=max_price,
        quote_id=quote, plan_token=plan_token,
    )


def plan_body(job: Job, queue: str | None) -> dict[str, Any]:
    """What ``POST /ws/v1/shepherd/plan`` takes: the job, in the queue it would be submitted to."""
    out = job.to_dict()
    if queue:
        out["queue"] = queue
    return out
