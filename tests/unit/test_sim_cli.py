"""``shepherd sim`` through its typer app: a small workload in, summary.json, jobs.csv and plots out."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from am.jobspec import load_workload
from sim.cli import sim_app

runner = CliRunner()


def test_gen_tpcds_then_simulate_every_baseline(tmp_path: Path) -> None:
    workload = tmp_path / "w.jsonl"
    gen = runner.invoke(sim_app, ["gen-tpcds", "--out", str(workload), "--jobs", "6", "--seed", "2"])
    assert gen.exit_code == 0, gen.output
    jobs = load_workload(workload)
    assert len(jobs) == 6
    out = tmp_path / "out"
    run = runner.invoke(sim_app, ["--workload", str(workload), "--nodes", "4:16384:8", "--policies",
                                  "fifo,drf,tetris,sjf", "--baseline", "drf", "--seed", "1", "--out", str(out)])
    assert run.exit_code == 0, run.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["baseline"] == "drf"
    assert set(summary["policies"]) == {"fifo", "drf", "tetris", "sjf"}
    assert all(p["jobs"] == 6 for p in summary["policies"].values())
    assert summary["policies"]["drf"]["improvement_avg"] == 1.0
    rows = list(csv.DictReader((out / "jobs.csv").open()))
    assert len(rows) == 4 * 6
    assert {r["policy"] for r in rows} == {"fifo", "drf", "tetris", "sjf"}
    assert (out / "jct_cdf.png").stat().st_size > 0
    assert (out / "utilization.png").stat().st_size > 0


def test_unknown_policy_and_missing_options_are_refused(tmp_path: Path) -> None:
    workload = tmp_path / "w.jsonl"
    runner.invoke(sim_app, ["gen-tpcds", "--out", str(workload), "--jobs", "2"])
    bad = runner.invoke(sim_app, ["--workload", str(workload), "--policies", "lottery", "--out", str(tmp_path)])
    assert bad.exit_code == 2
    assert "unknown policy" in bad.output
    missing = runner.invoke(sim_app, ["--workload", str(workload)])
    assert missing.exit_code != 0
