"""The dry run over REST: ``POST /ws/v1/shepherd/plan`` with a job (the job file ``shepherd submit`` takes,
as JSON) answers what would happen if it were submitted now — its queue, where its AM and first stage
would be placed, its predicted start and finish, and the running apps it would delay — without changing
anything (``sim.dryrun``). Writers only, as for a submission (the client secret when one is set); the user
is ``?user.name=``, else the job's ``user``, else ``dr.who``.

The live ledger is forked on the RM's loop (a consistent copy); the simulation runs on the fork in a worker
thread, one plan at a time, so the RM keeps answering meanwhile.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request

from am.jobspec import JobSpecError, parse_job
from common.errors import BadRequest
from rm.core.plan_token import make_token
from rm.core.policies.api import SHARES, SIZES, pipeline_reads
from rm.core.policies.registry import named_pipeline
from rm.service.rest.errors import check_writer, json_object
from rm.service.rest.extras import SHEPHERD
from sim.config import SimConfig, Timing
from sim.dryrun import HORIZON_S, plan_job
from sim.policies import SimPolicy, make_policy

if TYPE_CHECKING:
    from rm.service.server import ResourceManager

PLAN = f"{SHEPHERD}/plan"
PLAN_EXAMPLE = {
    "id": "nightly-etl",
    "stages": [
        {"name": "extract", "tasks": 4, "duration_s": 30, "memory_mb": 512, "vcores": 1, "command": "..."},
        {"name": "load", "tasks": 1, "duration_s": 20, "memory_mb": 512, "vcores": 1, "parents": ["extract"],
         "command": "..."},
    ],
}


def dry_run_policy(rm: ResourceManager) -> SimPolicy:
    """The RM's configured scheduler as the simulator runs it: its pipeline and shares (fresh instances of
    the same configuration, so the dry run shares no state with the live loop) and its AM ask policy."""
    pipeline, shares = named_pipeline(rm.cfg.scheduler, rm.cfg.leftover_cap)
    reads = pipeline_reads(pipeline)
    return replace(make_policy(rm.cfg.scheduler), pipeline=pipeline, shares=shares, needs_sizes=SIZES in reads,
                   needs_shares=SHARES in reads, ask_policy=rm.ask_policy)


def add_plan_routes(api: FastAPI, rm: ResourceManager) -> None:
    secret = rm.cfg.client_secret
    one_at_a_time = asyncio.Lock()

    @api.post(PLAN, tags=["shepherd"],
              summary="Dry run: the queue, placements, predicted start and finish of a job if it were submitted "
                      "now, and the running apps it would delay (nothing changes)",
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                  "schema": {"type": "object"}, "example": PLAN_EXAMPLE}}}})
    async def plan(request: Request) -> dict[str, Any]:
        who = check_writer(request, secret)
        body = await json_object(request)
        try:
            job = parse_job(body, where="the job")
        except JobSpecError as exc:
            raise BadRequest(str(exc)) from None
        user = who.user if secret else request.query_params.get("user.name") or job.user or "dr.who"
        policy = dry_run_policy(rm)
        config = SimConfig(timing=Timing(cycle_interval_s=rm.cfg.scheduling_interval_s))
        async with one_at_a_time:
            now = rm.now()
            async with rm.cycle_lock:  # on the loop, between cycles: nothing changes the ledger while it is copied
                fork = rm.state.fork()
            token = make_token(job, rm.state.plan_basis())
            report = await asyncio.to_thread(plan_job, fork, job, policy, now=now, user=user, config=config,
                                             horizon_s=HORIZON_S)
        return {"plan": {**report.to_dict(), "planToken": token}}
