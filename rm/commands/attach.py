"""``shepherd app attach ID``: follow an application's state and its ApplicationMaster's log until it ends, riding
through RM restarts as ``app wait`` does; Ctrl-C detaches and the application keeps running."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import typer

from rm.client import ClientError, RMClient
from rm.commands.apps import app_group
from rm.commands.common import FINAL, RM_OPT, fail
from rm.commands.logs import log_files, print_new
from rm.commands.output import console, err_console
from rm.commands.waiting import _report


def state_line(rep: Any, now: float) -> str:
    """One line for a change of state or attempt: time, state, progress, where the AM runs."""
    at = time.strftime("%H:%M:%S", time.localtime(now))
    parts = [f"{at} {rep.application_id} {rep.state}"]
    if rep.state == "RUNNING":
        parts.append(f"{rep.progress * 100:.0f}%")
    if rep.current_attempt_id:
        parts.append(f"attempt {rep.current_attempt_id}")
    if rep.am_container_id:
        parts.append(f"AM {rep.am_container_id}" + (f" on {rep.am_node_http_address}" if rep.am_node_http_address
                                                    else ""))
    return ", ".join(parts)


def follow(client: RMClient, app_id: str, files: list[str], *, tail: int | None = None, interval: float = 1.0,
           sleep: Callable[[float], None] = time.sleep) -> int:
    """Print the app's state changes and its AM's new log output until it ends: 0 if it succeeded, 1 if not,
    130 when interrupted (the app keeps running)."""
    seen: dict[tuple[str, str], int] = {}
    last: tuple[str, str, str] | None = None
    am: tuple[str, str] | None = None  # the AM container followed, and its NodeManager's web address
    waiting = SimpleNamespace(console=err_console)  # where "the RM is not answering" goes

    def show_log(container: str, http: str) -> None:
        for name in files:
            print_new(container, http, http, name, seen, tail=tail, follow=True)

    try:
        while True:
            rep = _report(client, app_id, waiting)
            now_am = (rep.am_container_id, rep.am_node_http_address) if rep.am_node_http_address else None
            if am is not None and now_am != am:  # a new attempt: what the old AM wrote last, first
                show_log(*am)
            key = (rep.state, rep.current_attempt_id, rep.am_container_id)
            if key != last and rep.state not in FINAL:  # the end is said once, after the AM's last output
                console.print(state_line(rep, time.time()), highlight=False, markup=False)
            last = key
            am = now_am or am
            if now_am is not None:
                show_log(*now_am)
            if rep.state in FINAL:
                break
            sleep(interval)
    except ClientError as exc:
        raise fail(exc) from None
    except KeyboardInterrupt:
        err_console.print(f"detached; {app_id} keeps running (`shepherd app attach {app_id}` again, "
                          f"`shepherd kill {app_id}` to stop it)", highlight=False, markup=False)
        return 130
    ok = rep.state == "FINISHED" and rep.final_status == "SUCCEEDED"
    colour = "green" if ok else "red"
    console.print(f"{app_id} [{colour}]{rep.state}/{rep.final_status}[/{colour}]"
                  + (f": {rep.diagnostics}" if rep.diagnostics and not ok else ""), highlight=False)
    return 0 if ok else 1


@app_group.command("attach")
def app_attach(
    app_id: str,
    files: list[str] = typer.Option([], "--file", metavar="NAME", help="which AM log files: stdout, stderr "
                                    "(default: both), or ALL; repeat or give a comma list"),
    tail: int | None = typer.Option(None, "--tail", "-n", min=0, metavar="N",
                                    help="start with the last N lines of what the AM wrote so far"),
    rm: str | None = RM_OPT,
) -> None:
    """Follow an application until it ends: its state changes and its ApplicationMaster's log (a new attempt's AM
    too). Exit 0 only if it succeeded. Ctrl-C detaches; the application keeps running."""
    names = log_files(files or ["ALL"])
    with RMClient(rm) as client:
        raise typer.Exit(follow(client, app_id, names, tail=tail))
