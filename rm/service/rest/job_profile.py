"""A recurring job's profile under ``/ws/v1/shepherd/jobs/{name}/profile`` (Jockey §4.1).

``GET`` answers the profile the RM hands the job's next ApplicationMaster: per stage the task count, the mean,
90th-percentile and longest task time, the mean initialisation and queue time (null when the runs measured
none), attempts, failed attempts and the failure probability per attempt, the parents and the container
size; and the runs it was built from. ``?queue=`` and ``?user=`` pick whose runs (by default the queue and
user of the job's newest successful run). A job with no successful run that reported its stages is a 404
(RemoteException ``NotFoundException``). Times are milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request

from rm.core import job_profiles
from rm.service.rest.extras import SHEPHERD

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

JOBS = f"{SHEPHERD}/jobs"


def add_job_profile_routes(api: FastAPI, rm: ResourceManager) -> None:
    @api.get(f"{JOBS}/{{name}}/profile", tags=["shepherd"],
             summary="A recurring job's profile from its earlier runs: per stage tasks, task times, init and queue "
                     "times, failures (?queue=, ?user=); what its next ApplicationMaster is handed")
    async def get_profile(name: str, request: Request) -> dict[str, Any]:
        q = request.query_params
        found = await rm.profiles.shown(name, q.get("queue") or None, q.get("user") or None)
        return {"jobProfile": job_profiles.render(found)}
