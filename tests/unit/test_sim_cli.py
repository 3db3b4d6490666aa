"""``shepherd sim`` through its typer app: a small workload in, summary.json, jobs.csv and plots out."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
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


def test_morpheus_with_inference_reserves_for_a_recurring_job(tmp_path: Path) -> None:
    lines = []
    for h in range(5):  # an hourly job writing "out", read by a report 40 minutes into each hour
        lines.append({"id": f"etl-{h}", "name": "etl", "arrival_s": h * 3600 + 60, "outputs": ["out"],
                      "stages": [{"name": "s", "tasks": 6, "duration_s": 50, "memory_mb": 1024}]})
        lines.append({"id": f"report-{h}", "arrival_s": h * 3600 + 2400, "inputs": ["out"],
                      "stages": [{"name": "s", "tasks": 1, "duration_s": 5, "memory_mb": 1024}]})
    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "out"
    run = runner.invoke(sim_app, ["--workload", str(workload), "--nodes", "2:16384:8", "--policies", "morpheus",
                                  "--baseline", "morpheus", "--infer-after", "3", "--no-plots", "--out", str(out)])
    assert run.exit_code == 0, run.output
    stats = json.loads((out / "summary.json").read_text())["policies"]["morpheus"]["reservations"]
    assert stats["inferred"]["etl"]["period_s"] == 3600
    assert stats["attached"] == 2  # the fourth and fifth runs


def test_a_generated_family_simulates_as_its_evaluation_runs_it(tmp_path: Path) -> None:
    # what eval_carbyne_families.py measures for a family is what a plain ``shepherd sim`` of the written
    # workload gives: the same jobs, the same nodes, each scheduler's own AM policy
    from sim.engine import SimConfig, Simulator, uniform_nodes
    from sim.gen.families import family
    from sim.policies import make_policy

    workload = tmp_path / "small.jsonl"
    gen = runner.invoke(sim_app, ["gen-family", "small-dags", "--jobs", "12", "--out", str(workload)])
    assert gen.exit_code == 0, gen.output
    assert "--nodes 20:20480:8" in gen.output.replace("\n", " ")
    jobs = family("small-dags").jobs(12, 0)
    assert load_workload(workload) == jobs
    out = tmp_path / "out"
    run = runner.invoke(sim_app, ["--workload", str(workload), "--nodes", "20:20480:8", "--policies",
                                  "drf,carbyne", "--no-plots", "--out", str(out)])
    assert run.exit_code == 0, run.output
    summary = json.loads((out / "summary.json").read_text())
    carbyne_jobs = [j.model_copy(update={"am_policy": "carbyne", "altruism": None}) for j in jobs]
    direct = Simulator(carbyne_jobs, uniform_nodes(20, 20480, 8), make_policy("carbyne"), SimConfig(seed=0)).run()
    assert summary["policies"]["carbyne"]["avg_jct_s"] == pytest.approx(sum(direct.jcts().values()) / 12, abs=1e-5)
    bad = runner.invoke(sim_app, ["gen-family", "nope", "--out", str(tmp_path / "x.jsonl")])
    assert bad.exit_code == 2
    assert "unknown family" in bad.output


def test_contention_episodes_slow_the_run_and_a_bad_spec_is_refused(tmp_path: Path) -> None:
    workload = tmp_path / "w.jsonl"
    runner.invoke(sim_app, ["gen-tpcds", "--out", str(workload), "--jobs", "4", "--seed", "3"])
    total = {}
    for name, extra in (("plain", []), ("slowed", ["--contention", "30,600,1-1,3-3"])):
        out = tmp_path / name
        run = runner.invoke(sim_app, ["--workload", str(workload), "--nodes", "4:16384:8", "--policies", "drf",
                                      "--seed", "1", "--no-plots", "--out", str(out), *extra])
        assert run.exit_code == 0, run.output
        total[name] = sum(float(r["jct_s"]) for r in csv.DictReader((out / "jobs.csv").open()))
    assert total["slowed"] > 1.5 * total["plain"]  # every node slowed 3x for most of the run
    bad = runner.invoke(sim_app, ["--workload", str(workload), "--contention", "1,600,0.5", "--out", str(tmp_path)])
    assert bad.exit_code == 2
    assert "LO-HI" in bad.output
