"""Output for read commands: ``-o table|json|yaml`` and ``--watch`` (redraw until Ctrl-C)."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from typing import Any

import typer
import yaml
from rich.console import Console, RenderableType
from rich.live import Live
from rich.table import Table

console = Console(width=None if sys.stdout.isatty() else 200)  # pipes get whole lines to grep
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

FORMATS = ("table", "json", "yaml")
OUT_OPT = typer.Option("table", "-o", "--output", help="table, json or yaml")
WATCH_OPT = typer.Option(False, "--watch", "-w", help="print again every --interval seconds until Ctrl-C")
INTERVAL_OPT = typer.Option(2.0, "--interval", min=0.2, help="seconds between two --watch updates")


_JAVA_CLASS = re.compile(r"^\s*(?:[a-z_][\w$]*\.)*[A-Z][\w$]*(?:Exception|Error)\s*:\s*")


def plain(message: str) -> str:
    """An RM message for a person: without the Java exception class name YARN's clients get on the wire
    (``ApplicationNotFoundException: Application with id ... doesn't exist.``)."""
    return _JAVA_CLASS.sub("", message, count=1)


def error(message: str, prefix: str = "error") -> None:
    """Print ``prefix: message`` on stderr once, taken literally: no rich markup, so ``[...]`` in a YAML
    parser's or the RM's message stays as it is."""
    err_console.print(f"{prefix}: {plain(str(message))}", markup=False, highlight=False, soft_wrap=True)


def check_format(output: str) -> str:
    if output not in FORMATS:
        raise typer.BadParameter(f"-o must be one of {', '.join(FORMATS)}, not {output!r}")
    return output


def dump(data: Any, output: str) -> str:
    if output == "yaml":
        return yaml.safe_dump(data, sort_keys=True, default_flow_style=False)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def kv_table(rows: list[tuple[str, Any]]) -> Table:
    table = Table(show_header=False)
    for k, v in rows:
        table.add_row(k, "" if v is None else str(v))
    return table


def show(fetch: Callable[[], Any], output: str, table: Callable[[Any], RenderableType], *,
         watch: bool = False, interval: float = 2.0) -> None:
    """Fetch and print once, or (``watch``) over and over: a live table on a terminal, else one
    document per update (YAML documents separated by ``---``)."""
    check_format(output)
    if not watch:
        _print(fetch(), output, table)
        return
    try:
        if output == "table" and console.is_terminal:
            with Live(table(fetch()), console=console, auto_refresh=False) as live:
                while True:
                    time.sleep(interval)
                    live.update(table(fetch()), refresh=True)
        first = True
        while True:
            if not first and output == "yaml":
                sys.stdout.write("---\n")
            if not first and output == "table":
                console.rule(time.strftime("%H:%M:%S"))
            _print(fetch(), output, table)
            sys.stdout.flush()
            first = False
            time.sleep(interval)
    except KeyboardInterrupt:
        return


def _print(data: Any, output: str, table: Callable[[Any], RenderableType]) -> None:
    if output == "table":
        console.print(table(data))
    else:
        sys.stdout.write(dump(data, output))
