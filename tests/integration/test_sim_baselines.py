"""Acceptance sanity checks: the baselines behave as the literature says on a TPC-DS-like workload, and the
FB-2009 trace runs through ``shepherd sim`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sim.cli import sim_app

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"
runner = CliRunner()
OUTPUTS = ("summary.json", "jobs.csv", "jct_cdf.png", "utilization.png")


def test_tpcds_like_workload_sjf_is_fastest_drf_is_fairest(tmp_path: Path) -> None:
    # 100 jobs, 20 s apart on average, on a cluster they keep about 80% busy (cores bind); the same orderings
    # hold for the generator's seeds 1 and 2 and at 200 jobs
    workload = tmp_path / "tpcds.jsonl"
    gen = runner.invoke(sim_app, ["gen-tpcds", "--out", str(workload), "--jobs", "100", "--seed", "0",
                                  "--tasks-median", "3"])
    assert gen.exit_code == 0, gen.output
    out = tmp_path / "out"
    run = runner.invoke(sim_app, ["--workload", str(workload), "--nodes", "7:16384:8", "--out", str(out),
                                  "--policies", "fifo,drf,tetris,sjf", "--baseline", "drf", "--seed", "0"])
    assert run.exit_code == 0, run.output
    assert all((out / name).stat().st_size > 0 for name in OUTPUTS)
    policies = json.loads((out / "summary.json").read_text())["policies"]
    assert all(p["jobs"] == 100 and p["failed"] == 0 for p in policies.values())
    assert policies["sjf"]["avg_jct_s"] < policies["drf"]["avg_jct_s"]
    assert policies["sjf"]["improvement_avg"] > 1.0
    fairest = max(policies, key=lambda name: policies[name]["jain_avg"])
    assert fairest == "drf", {name: p["jain_avg"] for name, p in policies.items()}


@pytest.mark.skipif(not TRACES.is_dir(), reason="the shared traces are not beside the repository")
def test_swim_trace_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "fb"
    run = runner.invoke(sim_app, ["--workload", str(TRACES / "swim" / "FB-2009_samples_24_times_1hr_0_first50jobs.tsv"),
                                  "--format", "swim", "--nodes", "20:16384:8", "--out", str(out)])
    assert run.exit_code == 0, run.output
    assert all((out / name).stat().st_size > 0 for name in OUTPUTS)
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["policies"]) == {"fifo", "drf", "tetris", "sjf"}
    assert all(p["jobs"] == 50 for p in summary["policies"].values())
