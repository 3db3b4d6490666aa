"""``shepherd logs``: an application's container logs, read from its NodeManagers. YARN's ``yarn logs`` spellings
(``-applicationId``, ``-containerId``, ``-log_files``) are accepted beside shepherd's own."""

from __future__ import annotations

import re
import sys
import time

import httpx
import typer

from rm.client import ClientError, RMClient
from rm.commands.common import FINAL, RM_OPT, fail
from rm.commands.output import console

LOG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # what a NodeManager serves
ALL_FILES = ("stdout", "stderr")


def last_lines(text: str, n: int | None) -> str:
    """The last ``n`` lines of ``text`` (all of it for None); a last line without its newline counts."""
    if n is None:
        return text
    if n <= 0:
        return ""
    return "".join(text.splitlines(keepends=True)[-n:])


def log_files(names: list[str]) -> list[str]:
    """The files asked for: comma lists and repeats; ``ALL`` is stdout and stderr; stdout when none."""
    out: list[str] = []
    for item in names:
        for name in (part.strip() for part in item.split(",")):
            if not name:
                continue
            if name.upper() == "ALL":
                out += ALL_FILES
            elif not LOG_NAME.match(name):
                raise typer.BadParameter(f"{name!r} is not a log file name (stdout, stderr, ...)")
            else:
                out.append(name)
    return list(dict.fromkeys(out)) or ["stdout"]


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
    with RMClient(rm) as client:
        while True:
            try:
                conts = client.containers(target)
                state = client.app(target).state
            except ClientError as exc:
                raise fail(exc) from None
            for c in conts:
                if container and c.container_id != container:
                    continue
                if not c.node_http_address:
                    continue
                for name in names:
                    print_new(c.container_id, c.node_id, c.node_http_address, name, seen, tail=tail, follow=follow)
            if not follow or state in FINAL:
                break
            time.sleep(1.0)


def print_new(cid: str, node: str, http: str, name: str, seen: dict[tuple[str, str], int], *, tail: int | None,
          follow: bool) -> None:
    """Print what is new in one container's log file: the first time, its tail (or all of it)."""
    url = f"http://{http}/ws/v1/node/containers/{cid}/logs/{name}"
    try:
        resp = httpx.get(url, timeout=10)
    except httpx.HTTPError:
        return
    if resp.status_code != 200:  # not (yet) written on that node
        return
    text = resp.text
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
