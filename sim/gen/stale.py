"""Declared durations that have gone stale: what a job file says of its stages against what its tasks take.

A job file's ``duration_s`` per stage is written once, from some earlier run; code and data change, and the
job's tasks then take longer or shorter (SLearn's variation over time, §2, Table 4). ``declare`` sets each
stage's declared ``duration_s`` from the mean of what its tasks really take (``durations_s``, kept as they
are), times a log-normal factor per job (``sigma_job``: the whole job drifted, as with more input data) and one
per stage (``sigma_stage``: one step's code changed). Both zero: the declarations are exact stage means.

Run with ``SimConfig(declared_durations=True)`` (``shepherd sim --declared-durations``) the AMs and the RM see
only the declared figure until tasks finish; by default the simulated AM knows every task's own duration.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from random import Random

from am.jobspec import Job


def declare(jobs: Sequence[Job], sigma_job: float = 0.0, sigma_stage: float = 0.0, seed: int = 0) -> list[Job]:
    """The jobs with every stage's ``duration_s`` declared as above; stages without per-task durations keep
    their ``duration_s`` as what their tasks take and get it back in ``durations_s``."""
    if not (sigma_job >= 0 and sigma_stage >= 0 and math.isfinite(sigma_job + sigma_stage)):
        raise ValueError(f"log-normal sigmas must be finite and >= 0, got {sigma_job!r}, {sigma_stage!r}")
    rng = Random(seed)
    out = []
    for job in jobs:
        drift = rng.lognormvariate(0.0, sigma_job) if sigma_job else 1.0
        stages = []
        for s in job.stages:
            real = tuple(s.durations_s) if s.durations_s is not None else (s.estimated_task_s,) * s.tasks
            own = rng.lognormvariate(0.0, sigma_stage) if sigma_stage else 1.0
            declared = max(1e-3, statistics.fmean(real) * drift * own)
            stages.append(s.model_copy(update={"duration_s": round(declared, 3), "durations_s": real}))
        out.append(job.model_copy(update={"stages": tuple(stages)}))
    return out
