"""``shepherd sim``: replay a workload under several policies and write summary.json, jobs.csv and plots.

The lead mounts ``sim_app`` under the main CLI; ``python -m sim`` runs it standalone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from am.jobspec import JobSpecError, dump_workload
from sim.engine import Faults, SimConfig
from sim.gen.families import family
from sim.gen.tpcds import TpcdsOptions, generate, summary
from sim.plots import write_plots
from sim.policies import parse_policies
from sim.report import write_outputs
from sim.reservations import InferenceMode, MorpheusConfig
from sim.runner import run_policies, scale_load
from sim.slowdown import parse_contention
from sim.traces.loader import FORMATS, LoadOptions, load
from sim.traces.nodes import load_nodes

sim_app = typer.Typer(help="Trace-driven simulation: the real scheduler and AM policies on a virtual clock.",
                      no_args_is_help=True, add_completion=False)
console = Console(stderr=True)


@sim_app.callback(invoke_without_command=True)
def simulate(
    ctx: typer.Context,
    workload: Annotated[Path | None, typer.Option("--workload", "-w", help="workload file or folder")] = None,
    fmt: Annotated[str, typer.Option("--format", help="|".join(FORMATS))] = "auto",
    nodes: Annotated[str, typer.Option(help="N:MEM_MB:VCORES or an SLS nodes file")] = "100:16384:8",
    policies: Annotated[str, typer.Option(help="comma-separated policy names")] = "fifo,drf,tetris,sjf",
    baseline: Annotated[str, typer.Option(help="policy the improvement factors compare against")] = "drf",
    seed: Annotated[int, typer.Option(help="seed of every random choice")] = 0,
    load_scale: Annotated[float, typer.Option(help="compress arrivals by this factor")] = 1.0,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="output folder")] = None,
    noise: Annotated[float, typer.Option(help="log-normal sigma on task durations")] = 0.0,
    failure_rate: Annotated[float, typer.Option(help="probability a task attempt fails")] = 0.0,
    straggler_rate: Annotated[float, typer.Option(help="probability a task attempt straggles")] = 0.0,
    slowdown: Annotated[float, typer.Option(help="every task runs this many times its trace duration")] = 1.0,
    contention: Annotated[str | None, typer.Option(
        help="contention episodes slowing the tasks running on the nodes they hit: PER_HOUR,MEAN_S"
             "[,NODES_LO-NODES_HI[,FACTOR_LO-FACTOR_HI]] (default shares 0.25-1 of the nodes, factors 1.5-3)")] = None,
    ask_policy: Annotated[str | None, typer.Option(
        help="override: the AM ask policy (greedy, carbyne, jockey, jockey-static, jockey-amdahl) of jobs that "
             "name none, under every policy; default: each scheduler's own (carbyne for carbyne, carbyne-pack, "
             "morpheus, mrm, slearn; jockey for jockey; greedy otherwise)")] = None,
    infer_after: Annotated[int, typer.Option(help="morpheus: infer recurring jobs' SLOs after this many runs "
                                                  "and reserve for later runs (0: off)")] = 0,
    declared_durations: Annotated[bool, typer.Option(
        help="AMs and the RM know only each stage's declared duration_s, not each task's own durations_s "
             "(which the tasks still take), until tasks finish")] = False,
    plots: Annotated[bool, typer.Option(help="write PNG plots")] = True,
) -> None:
    """Simulate WORKLOAD under each policy; write OUT/summary.json, OUT/jobs.csv and PNG plots."""
    if ctx.invoked_subcommand is not None:
        return
    if workload is None or out is None:
        raise typer.BadParameter("--workload and --out are required")
    try:
        names = parse_policies(policies)
        if baseline not in names:
            names.append(baseline)
        cluster = load_nodes(nodes)
        jobs = scale_load(load(workload, fmt, LoadOptions(nodes=len(cluster), seed=seed)), load_scale)
    except (ValueError, OSError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    if not jobs:
        console.print("[red]error:[/red] the workload has no jobs")
        raise typer.Exit(2)
    if infer_after < 0:
        raise typer.BadParameter("--infer-after must be 0 (off) or a number of runs")
    if not slowdown > 0:
        raise typer.BadParameter("--slowdown must be above 0")
    try:
        episodes = parse_contention(contention) if contention else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    morpheus = MorpheusConfig(inference=InferenceMode(after_runs=infer_after)) if infer_after else None
    config = SimConfig(seed=seed, ask_policy=ask_policy, morpheus=morpheus, declared_durations=declared_durations,
                       faults=Faults(noise=noise, failure_rate=failure_rate, straggler_rate=straggler_rate,
                                     slowdown=slowdown, contention=episodes))
    console.print(f"{len(jobs)} jobs, {sum(j.total_tasks for j in jobs)} tasks on {len(cluster)} nodes; "
                  f"policies {', '.join(names)}")
    with Progress(TextColumn("{task.description:<12}"), BarColumn(), TextColumn("{task.completed}/{task.total} jobs"),
                  TextColumn("t={task.fields[now]:.0f}s"), TimeElapsedColumn(), console=console) as bar:
        tasks = {n: bar.add_task(n, total=len(jobs), now=0.0) for n in names}

        def progress(name: str, now: float, done: int, total: int) -> None:
            bar.update(tasks[name], completed=done, now=now)

        results = run_policies(jobs, cluster, names, config, progress)
    result = write_outputs(out, results, baseline)
    files = ["summary.json", "jobs.csv"] + ([p.name for p in write_plots(out, results)] if plots else [])
    for name, s in result["policies"].items():
        due = s.get("deadlines")
        met = f"  deadlines met {due['met']}/{due['jobs']}" if due else ""
        console.print(f"{name:<10} avg JCT {s['avg_jct_s']}s  p95 {s['p95_jct_s']}s  makespan {s['makespan_s']}s  "
                      f"Jain {s['jain_avg']}  x{s['improvement_avg']} vs {baseline}{met}")
    console.print(f"wrote {', '.join(files)} to {out}")


@sim_app.command("gen-tpcds")
def gen_tpcds(
    out: Annotated[Path, typer.Option("--out", "-o", help="workload file to write (JSON Lines)")],
    jobs: Annotated[int, typer.Option(help="number of jobs")] = 250,
    interarrival: Annotated[float, typer.Option(help="mean Poisson gap between arrivals (s)")] = 20.0,
    seed: Annotated[int, typer.Option(help="generator seed")] = 0,
    tasks_median: Annotated[float, typer.Option(help="median tasks per stage")] = 12.0,
    task_seconds: Annotated[float, typer.Option(help="median mean task time of a stage (s)")] = 8.0,
) -> None:
    """Write a TPC-DS-like DAG workload in the native format."""
    if jobs < 1 or interarrival < 0 or tasks_median < 1 or task_seconds <= 0:
        raise typer.BadParameter("need --jobs >= 1, --interarrival >= 0, --tasks-median >= 1, --task-seconds > 0")
    try:
        generated = generate(TpcdsOptions(jobs=jobs, interarrival_s=interarrival, seed=seed,
                                          tasks_median=tasks_median, task_s_median=task_seconds))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dump_workload(generated), encoding="utf-8")
    except (JobSpecError, OSError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    console.print(f"wrote {len(generated)} jobs to {out}: {json.dumps(summary(generated))}")


@sim_app.command("gen-family")
def gen_family(
    name: Annotated[str, typer.Argument(help="a workload family of sim/gen/families.py (tpcds, chains, ...)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="workload file to write (JSON Lines)")],
    jobs: Annotated[int, typer.Option(help="number of jobs")] = 250,
    seed: Annotated[int, typer.Option(help="generator seed")] = 0,
) -> None:
    """Write one workload family's jobs, loaded as the family says; prints the --nodes to simulate it on."""
    if jobs < 2:
        raise typer.BadParameter("need --jobs >= 2 (a family's load is set by its arrival rate)")
    try:
        chosen = family(name)
        generated = chosen.jobs(jobs, seed)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dump_workload(generated), encoding="utf-8")
    except (ValueError, JobSpecError, OSError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    console.print(f"wrote {len(generated)} jobs of {chosen.name} ({chosen.what}) to {out}; "
                  f"simulate with --nodes {chosen.nodes}")
