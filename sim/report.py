"""Run outputs: ``summary.json`` (per-policy statistics and improvements over a baseline) and ``jobs.csv``."""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sim.metrics import RunResult, compare, percentile


def _num(x: float) -> float | None:
    """JSON has no NaN or infinity: those become null."""
    return None if math.isnan(x) or math.isinf(x) else round(x, 6)


def policy_summary(result: RunResult, baseline: RunResult) -> dict[str, Any]:
    jcts = list(result.jcts().values())
    delays = [j.queueing_delay for j in result.jobs if j.queueing_delay is not None]
    jain = [v for _, v in result.jain]
    running = [v for _, v in result.jain_running]
    declared = [v for _, v in result.jain_declared]
    cmp = compare(result, baseline)
    return {
        "jobs": len(jcts),
        "failed": sum(1 for j in result.jobs if j.status == "FAILED"),
        "unfinished": sum(1 for j in result.jobs if j.finish is None),
        "avg_jct_s": _num(statistics.fmean(jcts)) if jcts else None,
        "p50_jct_s": _num(percentile(jcts, 50)),
        "p95_jct_s": _num(percentile(jcts, 95)),
        "makespan_s": _num(result.makespan),
        "jain_avg": _num(statistics.fmean(jain)) if jain else None,
        "jain_min": _num(min(jain)) if jain else None,
        "jain_running_avg": _num(statistics.fmean(running)) if running else None,
        "jain_declared_avg": _num(statistics.fmean(declared)) if declared else None,
        "util_avg": {r: _num(v) for r, v in sorted(result.util_avg().items())},
        "improvement_avg": _num(cmp.improvement_avg),
        "improvement_p95": _num(cmp.improvement_p95),
        "improvement_job_mean": _num(statistics.fmean(cmp.factors.values())) if cmp.factors else None,
        "slowed_below_0_8": _num(cmp.slowed_below_0_8),
        "queueing_delay_avg_s": _num(statistics.fmean(delays)) if delays else None,
        "cycles": result.cycles,
        "task_completions": result.task_completions,
        **({"reservations": result.reservations} if result.reservations is not None else {}),
        **({"deadlines": deadlines} if (deadlines := deadline_summary(result)) is not None else {}),
    }


def deadline_summary(result: RunResult) -> dict[str, Any] | None:
    """Jobs with a deadline (``deadline_s``, or a utility's): how many met it, how many missed it (late,
    failed or unfinished; refused ones are counted apart), and finish − arrival over deadline − arrival."""
    due = [j for j in result.jobs if j.deadline is not None]
    if not due:
        return None
    refused = [j for j in due if j.status == "REFUSED"]
    met = [j for j in due if j.met_deadline]
    ratios = [r for j in due if (r := j.deadline_ratio) is not None]
    return {
        "jobs": len(due),
        "met": len(met),
        "missed": len(due) - len(met) - len(refused),
        "refused": len(refused),
        "met_fraction": _num(len(met) / (len(due) - len(refused))) if len(due) > len(refused) else None,
        "completion_ratio_avg": _num(statistics.fmean(ratios)) if ratios else None,
        "completion_ratio_p95": _num(percentile(ratios, 95)),
    }


def summarize(results: Mapping[str, RunResult], baseline: str) -> dict[str, Any]:
    if baseline not in results:
        raise ValueError(f"baseline {baseline!r} was not run (ran: {', '.join(results)})")
    base = results[baseline]
    return {"baseline": baseline, "policies": {name: policy_summary(r, base) for name, r in results.items()}}


JOB_COLUMNS = ("policy", "job_id", "status", "arrival_s", "finish_s", "jct_s", "queueing_delay_s", "tasks",
               "task_seconds", "improvement")


def write_jobs_csv(path: Path, results: Mapping[str, RunResult], baseline: str) -> None:
    base = results[baseline].jcts()
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(JOB_COLUMNS)
        for name, result in results.items():
            for j in result.jobs:
                jct = j.jct
                factor = base[j.job_id] / jct if jct and j.job_id in base else math.nan
                w.writerow([name, j.job_id, j.status, _fmt(j.arrival), _fmt(j.finish), _fmt(jct),
                            _fmt(j.queueing_delay), j.tasks, _fmt(j.task_seconds), _fmt(factor)])


def _fmt(x: float | None) -> str:
    if x is None or math.isnan(x) or math.isinf(x):
        return ""
    return f"{x:.3f}"


def write_outputs(out: Path, results: Mapping[str, RunResult], baseline: str) -> dict[str, Any]:
    """summary.json and jobs.csv in ``out``; returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(results, baseline)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    write_jobs_csv(out / "jobs.csv", results, baseline)
    return summary
