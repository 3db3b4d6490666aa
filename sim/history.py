"""The run history of the simulated RM: what the live RM keeps of each finished run's stages, and the profile it
builds from them for a recurring job's next ApplicationMaster (``rm/core/job_profiles``, Jockey §4.1).

When a job with a Jockey ask policy ends, its AM's stage report (``stage_runs_from_dag``: task counts, the
successful attempts' run times, attempts and failures) is checked and thinned as the RM's door does, and kept
under the job's name, queue and user. A later run of the same job with no profile of its own in
``SimConfig.profiles`` gets the profile pooled from the newest runs (``profile_of``), as the live RM hands one to
the AM at registration. So a recurring workload simulated from its job files alone learns its profiles as the
cluster would, the first run of each job modelling itself from its job file.
"""

from __future__ import annotations

from collections import defaultdict

from am.dag_state import DagState
from am.policies.jockey.profile import JobProfile, stage_runs_from_dag
from rm.core.job_profiles import RUNS_KEPT, check_report, profile_of, record_of
from rm.core.records import StageRunsRecord

Key = tuple[str, str, str]  # job name, queue, user


class RunHistory:
    def __init__(self) -> None:
        self._runs: dict[Key, list[StageRunsRecord]] = defaultdict(list)
        self._profiles: dict[Key, JobProfile | None] = {}  # built from the runs as they stand

    def record(self, app_id: str, key: Key, now: float, succeeded: bool, dag: DagState) -> None:
        """A run ended: its stage report joins the job's history (the newest ``RUNS_KEPT``)."""
        stages = check_report(stage_runs_from_dag(dag))
        runs = self._runs[key]
        runs.append(record_of(app_id, key[0], key[1], key[2], now, succeeded, stages))
        del runs[:-RUNS_KEPT]
        self._profiles.pop(key, None)

    def profile(self, key: Key) -> JobProfile | None:
        """The profile the RM would hand this job's next AM: None before any run of it succeeded."""
        if key not in self._profiles:
            runs = self._runs.get(key)
            stored = profile_of(*key, runs) if runs else None
            self._profiles[key] = None if stored is None else stored.profile
        return self._profiles[key]

    def runs(self, key: Key) -> int:
        return len(self._runs.get(key, ()))
