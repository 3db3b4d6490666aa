"""The CLI's read commands: every one takes ``-o table|wide|json|yaml``, ``--watch`` and ``--interval`` (the
commands that are not reads are named below, so a new command is either one or the other); ``show`` draws
``-o wide`` with the wider view and prints one document per ``--watch`` update."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
import yaml
from rich.console import Console
from rich.table import Table

from rm import cli
from rm.commands import output
from rm.commands.apps import apps_table, apps_wide
from rm.commands.cluster import nodes_table, nodes_wide
from rm.commands.output import FORMATS, Output, read_command, show

# Commands that are not reads of the cluster's state, so take no --watch: daemons and local clusters, writes,
# commands that follow an app with output of their own, questions sent with a job file, and local files.
NOT_WATCHED = frozenset({
    "rm", "nm", "up", "down", "demo",
    "submit", "kill", "app kill", "app move", "app priority", "app lifetime", "app deadline",
    "slo accept", "slo reject", "reservation create", "reservation update", "reservation delete",
    "admin refresh-queues", "admin token", "admin decommission", "admin recommission",
    "logs", "app wait", "app attach",
    "job plan", "job quote",
    "admin check-health",  # one line and an exit status, for scripts and monitoring
    "config validate", "config show", "config convert", "config hadoop-client", "config clusters",
    "config add-cluster", "config use-cluster", "config remove-cluster", "config which",
    "db status", "db upgrade", "sim gen-tpcds", "sim gen-family",
})
READ_COMMANDS = frozenset({
    "apps", "nodes", "deadlines", "app list", "app status", "app attempts", "app containers", "app explain",
    "app slo", "node list", "node status", "queue status", "slo list", "slo show", "reservation list",
    "reservation show", "admin service-state", "job profile", "sampling",
})


def commands(group: Any = None, prefix: str = "") -> dict[str, Any]:
    """Every leaf command of the CLI by its path (``app list``)."""
    group = group if group is not None else typer.main.get_command(cli.app)
    found: dict[str, Any] = {}
    for name, cmd in group.commands.items():
        path = f"{prefix}{name}"
        if getattr(cmd, "commands", None):
            found.update(commands(cmd, f"{path} "))
        else:
            found[path] = cmd
    return found


def parse(cmd: Any, *args: str) -> dict[str, Any]:
    """The values a command would run with, its required arguments filled in (with a file that exists, for
    the commands that read one); nothing runs."""
    required = [__file__ for p in cmd.params if p.param_type_name == "argument" and p.required]
    ctx = cmd.make_context(cmd.name, [*required, *args])
    return dict(ctx.params)


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Address options resolve as on a machine without a user config file or Hadoop configuration."""
    monkeypatch.setenv("SHEPHERD_CONFIG", str(tmp_path / "absent.yaml"))
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "SHEPHERD_REST", "SHEPHERD_RM"):
        monkeypatch.delenv(name, raising=False)


def test_every_command_is_a_read_command_or_named_as_not_one() -> None:
    paths = set(commands())
    assert not (READ_COMMANDS & NOT_WATCHED)
    assert not READ_COMMANDS - paths, f"read commands gone: {READ_COMMANDS - paths}"
    assert not NOT_WATCHED - paths, f"named but gone: {NOT_WATCHED - paths}"
    unnamed = paths - READ_COMMANDS - NOT_WATCHED
    assert not unnamed, f"a new command? decorate a read with @read_command and add it to READ_COMMANDS, else " \
                        f"name it in NOT_WATCHED: {sorted(unnamed)}"


@pytest.mark.parametrize("path", sorted(READ_COMMANDS))
def test_a_read_command_takes_every_format_and_watch(path: str) -> None:
    cmd = commands()[path]
    for fmt in FORMATS:
        assert parse(cmd, "-o", fmt)["output"] == fmt
    params = parse(cmd, "--output", "wide", "--watch", "--interval", "0.5")
    assert (params["output"], params["watch"], params["interval"]) == ("wide", True, 0.5)
    assert parse(cmd, "-w")["watch"] is True
    assert parse(cmd)["output"] == "table"
    with pytest.raises(Exception, match="is not one of"):
        parse(cmd, "-o", "xml")
    with pytest.raises(Exception, match=r"0\.2"):
        parse(cmd, "--watch", "--interval", "0.01")


def test_every_other_output_option_takes_wide_too() -> None:
    with_output = {path: cmd for path, cmd in commands().items() if path in NOT_WATCHED
                   and any("--output" in getattr(p, "opts", []) for p in cmd.params)}
    assert {"job plan", "job quote", "slo accept", "config show"} <= set(with_output)
    for path, cmd in with_output.items():
        assert parse(cmd, "-o", "wide")["output"] == "wide", path
        assert "watch" not in parse(cmd), path


def test_read_command_wants_an_out_parameter() -> None:
    def no_out(rest: str = "") -> None:
        pass

    def own_output(out: Output, output: str = "table") -> None:
        pass

    for fn in (no_out, own_output):
        with pytest.raises(TypeError, match="out: Output"):
            read_command(fn)


def test_the_decorated_command_gets_one_output() -> None:
    seen: list[tuple[str, Output]] = []
    app = typer.Typer()

    @app.command()
    @read_command
    def look(name: str, out: Output = output.OUTPUT_OPTS, flag: bool = typer.Option(False, "--flag")) -> None:
        """Look at NAME."""
        seen.append((name, out))

    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["n1", "-o", "yaml", "--watch", "--interval", "3"])
    assert result.exit_code == 0, result.output
    assert seen == [("n1", Output("yaml", True, 3.0))]
    assert look.__doc__ == "Look at NAME."


@pytest.fixture
def printed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> pytest.CaptureFixture[str]:
    """What show() prints, tables and documents alike, as a pipe gets it (``capsys.readouterr().out``)."""
    monkeypatch.setattr(output, "console", Console(width=300))  # prints to sys.stdout, captured
    return capsys


def narrow(data: list[str]) -> Table:
    return Table("NARROW", *data)


def wide(data: list[str]) -> Table:
    return Table("NARROW", "EXTRA", *data)


def test_wide_draws_the_wide_view_or_the_table(printed: pytest.CaptureFixture[str]) -> None:
    show(lambda: ["A"], "wide", narrow, wide=wide)
    assert "EXTRA" in printed.readouterr().out
    show(lambda: ["A"], "table", narrow, wide=wide)
    text = printed.readouterr().out
    assert "NARROW" in text
    assert "EXTRA" not in text
    show(lambda: ["A"], "wide", narrow)  # no more columns to show: the table
    assert "NARROW" in printed.readouterr().out
    show(lambda: ["A"], "json", narrow, wide=wide)
    assert json.loads(printed.readouterr().out) == ["A"]


def test_wide_into_a_pipe_keeps_every_column_whole(printed: pytest.CaptureFixture[str]) -> None:
    names = [f"COLUMN {i}" for i in range(30)]  # some 450 characters: wider than the pipe's 300

    def many(data: list[str]) -> Table:
        table = Table(*names)
        table.add_row(*data)
        return table

    show(lambda: [f"value {i}" for i in range(30)], "wide", many, wide=many)
    header = next(line for line in printed.readouterr().out.splitlines() if "COLUMN 0" in line)
    assert all(name in header for name in names)
    show(lambda: [f"value {i}" for i in range(30)], "table", many)  # the table fits the width given
    assert "COLUMN 29" not in printed.readouterr().out


@pytest.mark.parametrize("fmt", ["yaml", "json", "wide"])
def test_watch_prints_one_document_per_update_until_interrupted(printed: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    naps: list[float] = []

    def nap(seconds: float) -> None:  # Ctrl-C during the third wait
        naps.append(seconds)
        if len(naps) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(output.time, "sleep", nap)
    fetched = iter(range(100))
    show(lambda: {"n": next(fetched)}, fmt, lambda d: Table(f"N{d['n']}"), wide=lambda d: Table(f"W{d['n']}"),
         watch=True, interval=0.7)
    text = printed.readouterr().out
    assert naps == [0.7] * 3
    if fmt == "yaml":
        assert [d["n"] for d in yaml.safe_load_all(text)] == [0, 1, 2]
    elif fmt == "json":
        decoder, docs, at = json.JSONDecoder(), [], 0
        while at < len(text.rstrip()):
            doc, at = decoder.raw_decode(text, at)
            docs.append(doc["n"])
            at += len(text[at:]) - len(text[at:].lstrip())
        assert docs == [0, 1, 2]
    else:
        assert ("W0" in text, "W1" in text, "W2" in text, "N0" in text) == (True, True, True, False)


APP = {"id": "application_1_0001", "name": "etl", "applicationType": "SHEPHERD-DAG", "user": "ann",
       "queue": "root.default", "state": "RUNNING", "finalStatus": "UNDEFINED", "progress": 40.0,
       "allocatedMB": 1024, "allocatedVCores": 2, "priority": 3, "fairShareMB": 2048, "fairShareVCores": 2,
       "runningContainers": 2, "pendingDefaultAsks": 4, "pendingAltruisticAsks": 1, "startedTime": 1_000,
       "finishedTime": 0, "amHostHttpAddress": "n1:8042"}
NODE = {"id": "n1:45454", "rack": "/rack-a", "state": "RUNNING", "nodeHTTPAddress": "n1:8042", "numContainers": 2,
        "usedResource": {"memory": 1024, "vCores": 2}, "totalResource": {"memory": 4096, "vCores": 4},
        "availableResource": {"memory": 3072, "vCores": 2}, "healthReport": "", "lastHealthUpdate": 1_000}


def headers(table: Table) -> list[str]:
    return [str(c.header) for c in table.columns]


def cells(table: Table) -> list[str]:
    return [str(next(iter(c.cells))) for c in table.columns]


def test_wide_apps_and_nodes_add_columns_to_the_table() -> None:
    assert headers(apps_table([APP])) == headers(apps_wide([APP]))[:9]
    assert headers(apps_wide([APP]))[9:] == ["PRIORITY", "FAIR SHARE", "CONTAINERS", "PENDING", "STARTED", "ELAPSED",
                                             "AM HOST"]
    row = dict(zip(headers(apps_wide([APP])), cells(apps_wide([APP])), strict=True))
    assert (row["PRIORITY"], row["FAIR SHARE"], row["CONTAINERS"], row["PENDING"], row["AM HOST"]) \
        == ("3", "2048 MB, 2 vcores", "2", "5", "n1:8042")
    assert row["ELAPSED"].endswith("h")  # running since 1970: days and hours
    assert headers(nodes_wide([NODE])) == [*headers(nodes_table([NODE]))[:6], "RACK", "AVAILABLE", "HEALTH UPDATED",
                                           "HEALTH"]
    node = dict(zip(headers(nodes_wide([NODE])), cells(nodes_wide([NODE])), strict=True))
    assert (node["RACK"], node["AVAILABLE"]) == ("/rack-a", "3072 MB, 2 vcores")
    assert node["HEALTH UPDATED"].endswith(" ago")


def test_the_sampling_view_shows_the_rule_and_each_ratios_jobs_and_score() -> None:
    from rich.console import Console

    from rm.commands.cluster import sampling_view

    state = {"enabled": True, "rule": "adaptive", "nextRatio": 0.02, "gatedApps": 3, "gateTimeoutSeconds": 300.0,
             "trustHistory": False, "counters": {"apps_sampled": 140},
             "ratios": [{"ratio": 0.02, "jobsSampled": 40, "jobsFinished": 12, "score": 1.8},
                        {"ratio": 0.03, "jobsSampled": 100, "jobsFinished": 100, "score": 2.25},
                        {"ratio": 0.05, "jobsSampled": 0, "jobsFinished": 0, "score": None}]}
    console = Console(width=200, record=True)
    console.print(sampling_view(state))
    text = console.export_text()
    assert "adaptive; the next wide app gets 2%" in text
    assert "apps_sampled 140" in text
    lines = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") >= 4}
    assert "100" in lines["3%"]
    assert "2.250" in lines["3%"]
    assert "1.800" in lines["2%"]
    assert lines["5%"].rstrip(" │").endswith("-")
