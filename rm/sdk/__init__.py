"""shepherd's Python SDK: a typed client for a ResourceManager, synchronous (``Client``) and asynchronous
(``AsyncClient``) with the same methods: ``submit``, ``plan``, ``explain``, ``wait`` (with a progress
callback), ``logs``, ``app``, ``apps``, ``containers``, ``nodes``, ``kill``. The ``shepherd`` command runs on
it. See docs/sdk.md.

    from rm.sdk import Client

    with Client() as rm:
        app_id = rm.submit("examples/wordcount.yaml")
        final = rm.wait(app_id, progress=lambda p: print(f"{p.progress:.0%} {p.state}"))
        print(final.final_status, rm.logs(app_id, tail=5))
"""

from am.jobspec import Job, JobSpecError
from rm.client import ClientError
from rm.sdk.aio import AsyncClient
from rm.sdk.follow import WaitTimeout
from rm.sdk.models import (
    AmLimit,
    AppReport,
    ContainerReport,
    DeadlineOwed,
    Explanation,
    JobPlan,
    LogFile,
    NodeReport,
    Outage,
    PlannedAm,
    PlannedDelay,
    PlannedPlacement,
    PlannedStage,
    QueueLimit,
    StageProgress,
    WaitingAsk,
    WaitProgress,
)
from rm.sdk.sync import Client

__all__ = [
    "AmLimit",
    "AppReport",
    "AsyncClient",
    "Client",
    "ClientError",
    "ContainerReport",
    "DeadlineOwed",
    "Explanation",
    "Job",
    "JobPlan",
    "JobSpecError",
    "LogFile",
    "NodeReport",
    "Outage",
    "PlannedAm",
    "PlannedDelay",
    "PlannedPlacement",
    "PlannedStage",
    "QueueLimit",
    "StageProgress",
    "WaitProgress",
    "WaitTimeout",
    "WaitingAsk",
]
