"""``shepherd logs``: an application's container logs, read from its NodeManagers. YARN's ``yarn logs`` spellings
(``-applicationId``, ``-containerId``, ``-log_files``) are accepted beside shepherd's own."""

from __future__ import annotations

import sys
import time

import typer

from rm.client import ClientError
from rm.commands.common import FINAL, RM_OPT, fail
from rm.commands.output import console
from rm.sdk import Client
from rm.sdk.follow import last_lines, log_names
from rm.sdk.sync import read_log

__all__ = ["last_lines", "log_files", "logs", "print_new"]


def log_files(names: list[str]) -> list[str]:
    """The files asked for: comma lists and repeats; ``ALL`` is stdout and stderr; stdout when none."""
    try:
        return log_names(names)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def logs(
    app_id: str | None = typer.Argument(None, metavar="[APP]", help="the application's id"),
    application_id: str | None = typer.Option(None, "--application-id", "-applicationId", metavar="APP",
                                              help="the application's id (YARN's spelling), instead of APP"),
    container: str | None = typer.Option(None, "--container", "-c", "-containerId", help="only this container"),
    files: list[str] = typer.Option([], "--file", "--stream", "-log_files", metavar="NAME",
                                    help="which log file: stdout (default), stderr, or ALL; repeat it or give a "
                                    "comma list for several"),
    tail: int | None = typer.Option(None, "--tail", "-n", min=0, metavar="N",
                                    help="only the last N lines of each file (with --follow: then what comes)"),
    follow: bool = typer.Option(False, "--follow", "-f", help="keep printing new output until the app ends"),
    rm: str | None = RM_OPT,
) -> None:
    """Print container logs of an application (from the NodeManagers).

    `shepherd logs APP --file stderr --tail 20`; YARN's `yarn logs -applicationId APP -log_files stderr` works
    too. Each file comes under a line naming its container, node and file."""
    if app_id and application_id and app_id != application_id:
        raise typer.BadParameter(f"two applications given: {app_id} and {application_id}; give one")
    target = app_id or application_id
    if not target:
        raise typer.BadParameter("which application? give APP or -applicationId APP")
    names = log_files(files)
    seen: dict[tuple[str, str], int] = {}
    with Client(rm) as client:
        while True:
            try:
                state = client.app(target).state  # first: once it has ended, the logs read next are whole
                found = client.logs(target, container=container, file=names)
            except ClientError as exc:
                raise fail(exc) from None
            for f in found:
                show_new(f.container_id, f.node_id, f.file, f.text, seen, tail=tail)
            if not follow or state in FINAL:
                break
            time.sleep(1.0)


def print_new(cid: str, node: str, http: str, name: str, seen: dict[tuple[str, str], int], *, tail: int | None,
          follow: bool) -> None:
    """Print what is new in one container's log file, read from its NodeManager at ``http``."""
    text = read_log(http, cid, name)
    if text is not None:  # else not (yet) written on that node
        show_new(cid, node, name, text, seen, tail=tail)


def show_new(cid: str, node: str, name: str, text: str, seen: dict[tuple[str, str], int], *,
             tail: int | None) -> None:
    """Print what is new in one container's log file: the first time, its tail (or all of it)."""
    key = (cid, name)
    if key not in seen:
        if not text:  # nothing yet: its heading comes with its first output
            return
        seen[key] = len(text)
        console.rule(f"{cid} on {node} ({name})")
        shown = last_lines(text, tail)
    else:
        start = seen[key]
        if len(text) <= start:
            return
        seen[key] = len(text)
        shown = text[start:]
    sys.stdout.write(shown)
    sys.stdout.flush()
