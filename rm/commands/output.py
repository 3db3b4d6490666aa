"""Output for read commands: ``-o table|wide|json|yaml`` and ``--watch`` (redraw until Ctrl-C).

A read command takes one ``out: Output`` parameter and is decorated with :func:`read_command`, which gives it
the three options; ``out.show(fetch, table, wide)`` prints what ``fetch`` returns."""

from __future__ import annotations

import functools
import inspect
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

import typer
import yaml
from rich.console import Console, RenderableType
from rich.live import Live
from rich.measure import Measurement
from rich.table import Table

console = Console(width=None if sys.stdout.isatty() else 200)  # pipes get whole lines to grep
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

Format = Literal["table", "wide", "json", "yaml"]
FORMATS: tuple[Format, ...] = ("table", "wide", "json", "yaml")
TABLES = frozenset({"table", "wide"})
OUT_OPT = typer.Option("table", "-o", "--output", help="table, wide (a table with more columns), json or yaml "
                       "(the REST API's objects)")
WATCH_OPT = typer.Option(False, "--watch", "-w", help="print again every --interval seconds until Ctrl-C")
INTERVAL_OPT = typer.Option(2.0, "--interval", min=0.2, help="seconds between two --watch updates")
View = Callable[[Any], RenderableType]
WIDEST = 1000  # -o wide into a pipe: lines up to this long, so that no column is wrapped


@dataclass(frozen=True, slots=True)
class Output:
    """What a read command's ``-o``, ``--watch`` and ``--interval`` asked for."""

    format: Format = "table"
    watch: bool = False
    interval: float = 2.0

    @property
    def structured(self) -> bool:
        """JSON or YAML: the REST API's objects rather than a table."""
        return self.format not in TABLES

    def show(self, fetch: Callable[[], Any], table: View, wide: View | None = None) -> None:
        """Print what ``fetch`` returns: ``table`` draws it, ``wide`` (default: ``table``) for ``-o wide``."""
        show(fetch, self.format, table, wide=wide, watch=self.watch, interval=self.interval)


OUTPUT_OPTS = Output()
"""The default of a read command's ``out`` parameter, which :func:`read_command` replaces with the options."""
_OPTIONS = (("output", Format, OUT_OPT), ("watch", bool, WATCH_OPT), ("interval", float, INTERVAL_OPT))


def read_command(fn: Callable[..., None]) -> Callable[..., None]:
    """A read command: ``-o``, ``--watch`` and ``--interval`` in place of its ``out: Output`` parameter, which
    gets them as one :class:`Output`. Put it below ``@group.command(...)``."""
    sig = inspect.signature(fn, eval_str=True)
    names = set(sig.parameters)
    if "out" not in names or names & {name for name, _, _ in _OPTIONS}:
        raise TypeError(f"{fn.__qualname__}: a read command takes `out: Output` and no output, watch or interval")
    params: list[inspect.Parameter] = []
    for p in sig.parameters.values():
        if p.name != "out":
            params.append(p)
            continue
        params += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=option,
                                     annotation=kind) for name, kind, option in _OPTIONS]

    @functools.wraps(fn)
    def command(**kwargs: Any) -> None:
        out = Output(check_format(kwargs.pop("output")), kwargs.pop("watch"), kwargs.pop("interval"))
        fn(out=out, **kwargs)

    command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]  # what typer reads
    command.__annotations__ = {p.name: p.annotation for p in params if p.annotation is not p.empty}
    return command


_JAVA_CLASS = re.compile(r"^\s*(?:[a-z_][\w$]*\.)*[A-Z][\w$]*(?:Exception|Error)\s*:\s*")


def plain(message: str) -> str:
    """An RM message for a person: without the Java exception class name YARN's clients get on the wire
    (``ApplicationNotFoundException: Application with id ... doesn't exist.``)."""
    return _JAVA_CLASS.sub("", message, count=1)


def error(message: str, prefix: str = "error") -> None:
    """Print ``prefix: message`` on stderr once, taken literally: no rich markup, so ``[...]`` in a YAML
    parser's or the RM's message stays as it is."""
    err_console.print(f"{prefix}: {plain(str(message))}", markup=False, highlight=False, soft_wrap=True)


def check_format(output: str) -> Format:
    if output not in FORMATS:
        raise typer.BadParameter(f"-o must be one of {', '.join(FORMATS)}, not {output!r}")
    return cast(Format, output)


def dump(data: Any, output: str) -> str:
    if output == "yaml":
        return yaml.safe_dump(data, sort_keys=True, default_flow_style=False)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def kv_table(rows: list[tuple[str, Any]]) -> Table:
    table = Table(show_header=False)
    for k, v in rows:
        table.add_row(k, "" if v is None else str(v))
    return table


def show(fetch: Callable[[], Any], output: str, table: View, *, wide: View | None = None, watch: bool = False,
         interval: float = 2.0) -> None:
    """Fetch and print once, or (``watch``) over and over: a live table on a terminal, else one
    document per update (YAML documents separated by ``---``, tables by a rule with the time). ``-o wide``
    draws with ``wide``, or with ``table`` where a command has no more columns to show."""
    check_format(output)
    draw = (wide or table) if output == "wide" else table
    if not watch:
        _print(fetch(), output, draw)
        return
    try:
        if output in TABLES and console.is_terminal:
            with Live(draw(fetch()), console=console, auto_refresh=False) as live:
                while True:
                    time.sleep(interval)
                    live.update(draw(fetch()), refresh=True)
        first = True
        while True:
            if not first and output == "yaml":
                sys.stdout.write("---\n")
            if not first and output in TABLES:
                console.rule(time.strftime("%H:%M:%S"))
            _print(fetch(), output, draw)
            sys.stdout.flush()
            first = False
            time.sleep(interval)
    except KeyboardInterrupt:
        return


def _print(data: Any, output: str, draw: View) -> None:
    if output not in TABLES:
        sys.stdout.write(dump(data, output))
        return
    view = draw(data)
    if output == "table" or console.is_terminal:
        console.print(view)
        return
    # -o wide into a pipe: every column whole, however wide the lines get (as kubectl prints them)
    width = console.width
    console.width = max(width, Measurement.get(console, console.options.update_width(WIDEST), view).maximum)
    try:
        console.print(view)
    finally:
        console.width = width
