"""``shepherd config clusters|add-cluster|use-cluster|remove-cluster|which``: the named clusters of the user
config file (:mod:`common.user_config`) and which one a command talks to."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from common import user_config
from common.user_config import UserConfig, UserConfigError
from rm.commands.output import console, dump, error
from rm.commands.target import config_failed, rest_endpoint, rm_endpoint, selected_cluster

FORMAT_OPT = typer.Option("table", "-o", "--output", help="table, json or yaml")


def _load() -> UserConfig:
    try:
        return user_config.load(user_config.config_path())
    except UserConfigError as exc:
        raise config_failed(exc) from None


def _save(config: UserConfig) -> None:
    try:
        user_config.save(config)
    except UserConfigError as exc:
        raise config_failed(exc) from None


def _structured(output: str) -> bool:
    if output not in ("table", "wide", "json", "yaml"):
        raise typer.BadParameter(f"-o must be one of table, json or yaml, not {output!r}")
    return output in ("json", "yaml")


def _overridden() -> list[str]:
    """The environment variables that win over the current cluster, when set."""
    return [f"${v}" for v in (user_config.ENV_RM, user_config.ENV_REST) if os.environ.get(v)]


def clusters(output: str = FORMAT_OPT) -> None:
    """List the named clusters of the user config file; `*` marks the current one."""
    as_data = _structured(output)
    config = _load()
    if as_data:
        rows = [{"name": c.name, "current": c.name == config.current, "rm": c.rm, "rest": c.rest,
                 "credentials": c.credentials} for c in config.clusters]
        print(dump({"file": str(config.path), "current-cluster": config.current, "clusters": rows}, output), end="")
        return
    if not config.clusters:
        console.print(f"no clusters in {config.path}; add one with `shepherd config add-cluster NAME --rm "
                      "HOST:PORT --rest URL`", highlight=False, soft_wrap=True)
        return
    table = Table("CURRENT", "NAME", "GRPC", "REST", "CREDENTIALS", box=None, pad_edge=False)
    for c in config.clusters:
        table.add_row("*" if c.name == config.current else "", c.name, c.rm, c.rest, c.credentials or "-")
    console.print(table)
    console.print(f"file: {config.path}", highlight=False, soft_wrap=True)


def add_cluster(
    name: str = typer.Argument(..., help="a name for the cluster (letters, digits, '.', '_', '-')"),
    rm: str = typer.Option(..., "--rm", help="its gRPC address host:port (an active/standby pair: both, "
                           "comma-separated)"),
    rest: str = typer.Option(..., "--rest", help="its REST URL (http://host:8088)"),
    credentials: Path | None = typer.Option(None, "--credentials", help="the credentials file whose client "
                                            "secret goes to it \\[default: found as for any address]"),
    use: bool = typer.Option(False, "--use", help="make it the current cluster too"),
) -> None:
    """Add a named cluster to the user config file, or change the one of that name."""
    checks: list[tuple[str, Callable[[], str | None]]] = [
        ("NAME", lambda: user_config.check_name(name)), ("--rm", lambda: user_config.grpc_address(rm)),
        ("--rest", lambda: user_config.rest_url(rest)), ("--credentials", lambda: _credentials(credentials))]
    values: list[str | None] = []
    for what, check in checks:
        try:
            values.append(check())
        except ValueError as exc:
            error(f"{what}: {exc}", prefix="invalid")
            raise typer.Exit(2) from None
    cluster = user_config.NamedCluster(name, str(values[1]), str(values[2]), values[3])
    config = _load()
    known = config.get(name) is not None
    config = config.with_cluster(cluster)
    if use:
        config = config.using(name)
    _save(config)
    console.print(f"{'changed' if known else 'added'} cluster {name} (gRPC {cluster.rm}, REST {cluster.rest}) in "
                  f"{config.path}", highlight=False, soft_wrap=True)
    if config.current == name:
        _said_current(name)
    else:
        console.print(f"use it: `shepherd config use-cluster {name}`, or `shepherd --cluster {name} ...` for one "
                      "command", highlight=False, soft_wrap=True)


def _credentials(path: Path | None) -> str | None:
    if path is None:
        return None
    path = path.expanduser()
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    return str(path.resolve())


def use_cluster(name: str = typer.Argument(..., help="one of `shepherd config clusters`")) -> None:
    """Make a named cluster the current one: commands talk to it when no flag or variable names another."""
    config = _load()
    try:
        config = config.using(name)
    except UserConfigError as exc:
        raise config_failed(exc) from None
    _save(config)
    _said_current(name)


def _said_current(name: str) -> None:
    console.print(f"current cluster: {name}", highlight=False)
    overridden = _overridden()
    if overridden:
        error(f"{' and '.join(overridden)} set in this shell win over the current cluster; unset them to use it",
              prefix="note")


def remove_cluster(name: str = typer.Argument(..., help="one of `shepherd config clusters`")) -> None:
    """Remove a named cluster from the user config file (if it was the current one, there is none after)."""
    config = _load()
    was_current = config.current == name
    try:
        config = config.without(name)
    except UserConfigError as exc:
        raise config_failed(exc) from None
    _save(config)
    tail = "; there is no current cluster now" if was_current else ""
    console.print(f"removed cluster {name}{tail}", highlight=False)


def which(ctx: typer.Context, output: str = FORMAT_OPT) -> None:
    """The gRPC address and REST URL a command would use here, and where each comes from (`shepherd --cluster`,
    a variable, the current cluster, $HADOOP_CONF_DIR or the default)."""
    as_data = _structured(output)
    try:
        cluster = selected_cluster(ctx)
        grpc, rest = rm_endpoint(cluster=cluster), rest_endpoint(cluster=cluster)
    except UserConfigError as exc:
        raise config_failed(exc) from None
    data: dict[str, Any] = {"grpc": {"address": grpc.address, "from": grpc.source},
                            "rest": {"address": rest.address, "from": rest.source},
                            "file": str(user_config.config_path())}
    if as_data:
        print(dump(data, output), end="")
        return
    console.print(f"gRPC  {grpc.address}  ({grpc.source})", highlight=False, soft_wrap=True)
    console.print(f"REST  {rest.address}  ({rest.source})", highlight=False, soft_wrap=True)
