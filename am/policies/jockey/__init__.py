"""Jockey (EuroSys 2012): per-job SLO control by adjusting a job's guaranteed allocation.

Pure, clock injected, so the ApplicationMaster and the simulator run the same code:

* ``utility`` — piecewise-linear utility of the completion time;
* ``profile`` — per-stage statistics of earlier runs, and the job's allocation unit;
* ``progress`` — progress indicators (totalworkWithQ and the paper's alternatives);
* ``simulate`` — the vectorised job simulator;
* ``model`` — the C(p, a) table built from simulations, and the Amdahl fallback;
* ``controller`` — the control loop with slack, hysteresis and dead zone.
"""

from am.policies.jockey.controller import ControlConfig, Decision, JockeyController, Status
from am.policies.jockey.model import Amdahl, CpaTable, Forecast, RemainingModel, allocation_grid, build_table
from am.policies.jockey.profile import (
    JobProfile,
    StageProfile,
    StageRun,
    allocation_unit,
    profile_from_job,
    profile_from_runs,
    stage_runs_from_dag,
    units_of,
)
from am.policies.jockey.progress import (
    JobState,
    ProgressIndicator,
    StageState,
    TotalWorkWithQ,
    job_state_from_dag,
)
from am.policies.jockey.utility import Utility, UtilityError, default_utility

__all__ = [
    "Amdahl",
    "ControlConfig",
    "CpaTable",
    "Decision",
    "Forecast",
    "JobProfile",
    "JobState",
    "JockeyController",
    "ProgressIndicator",
    "RemainingModel",
    "StageProfile",
    "StageRun",
    "StageState",
    "Status",
    "TotalWorkWithQ",
    "Utility",
    "UtilityError",
    "allocation_grid",
    "allocation_unit",
    "build_table",
    "default_utility",
    "job_state_from_dag",
    "profile_from_job",
    "profile_from_runs",
    "stage_runs_from_dag",
    "units_of",
]
