"""Waiting for an application to end (``submit --wait``, ``app wait``), riding through RM restarts and failovers:
``rm.sdk.Client.wait`` does the waiting, this module draws it."""

from __future__ import annotations

import time
from typing import Any

from proto import shepherd_pb2 as pb
from rm.client import ClientError, RMClient
from rm.commands.common import fail
from rm.commands.output import console, err_console
from rm.sdk import Client, Outage, StageProgress, WaitProgress
from rm.sdk.follow import RideThrough


def outage_line(o: Outage) -> str:
    if o.over:
        return f"the ResourceManager is back after {o.down_s:.0f} s"
    return (f"[yellow]the ResourceManager at {o.address} is not answering ({o.code}); waiting for it, the job "
            f"goes on[/yellow]")


def _report(client: RMClient, app_id: str, progress: Any) -> pb.ApplicationReport:
    """The app's report; while the RM does not answer (a restart, a failover) wait for it with jittered
    backoff, saying so once, instead of failing: the job itself goes on."""
    ride = RideThrough(lambda: client.address, lambda o: progress.console.print(outage_line(o)),
                       clock=time.monotonic)
    while True:
        try:
            rep = client.app(app_id)
        except ClientError as exc:
            time.sleep(ride.failed(exc))
            continue
        ride.answered()
        return rep


STARTED = ("RUNNING", "WAITING", "READY", "SUCCEEDED", "FAILED", "KILLED")  # a stage whose clock runs or ran


def _stage_bar(progress: Any, bars: dict[str, Any], stage: StageProgress) -> None:
    """One bar per DAG stage: tasks done of its total, its state with what runs and waits, its own elapsed time
    (from when it could first start) and ETA (from the rate its tasks finish at)."""
    if stage.name not in bars:
        bars[stage.name] = progress.add_task(f"  {stage.name}", total=max(1, stage.tasks), state="", start=False)
    bar = bars[stage.name]
    live = f" {stage.running} running" if stage.running else ""
    live += f" {stage.waiting} waiting" if stage.waiting else ""
    progress.update(bar, completed=stage.done, state=f"{stage.state}{live}")
    task = next(t for t in progress.tasks if t.id == bar)
    if stage.state in STARTED and task.start_time is None:
        progress.start_task(bar)
    if stage.state in ("SUCCEEDED", "FAILED", "KILLED") and task.stop_time is None:
        progress.stop_task(bar)


def wait_for(client: Client, app_id: str) -> int:
    """Show the app's progress until it ends; 0 if it succeeded, 1 if not, 130 on Ctrl-C (it keeps running)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    try:
        # the ETA is rich's, from the rate the app's progress has been rising at
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                      TextColumn("{task.fields[state]}"), TimeElapsedColumn(), TextColumn("ETA"),
                      TimeRemainingColumn(), console=console, transient=not console.is_terminal) as progress:
            task = progress.add_task(app_id, total=100, state="")
            stages: dict[str, Any] = {}  # a DAG job's stage name -> its bar, below the app's

            def draw(p: WaitProgress) -> None:
                progress.update(task, completed=p.progress * 100, state=p.state)
                for stage in p.stages:
                    _stage_bar(progress, stages, stage)

            rep = client.wait(app_id, progress=draw, on_outage=lambda o: progress.console.print(outage_line(o)))
    except ClientError as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        err_console.print(f"stopped waiting; {app_id} keeps running (`shepherd app attach {app_id}` follows it "
                          f"again, `shepherd kill {app_id}` stops it)")
        return 130
    colour = "green" if rep.succeeded else "red"
    console.print(f"{app_id} [{colour}]{rep.state}/{rep.final_status}[/{colour}]"
                  + (f": {rep.diagnostics}" if rep.diagnostics and not rep.succeeded else ""))
    return 0 if rep.succeeded else 1
