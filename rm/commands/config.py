"""``shepherd config validate`` and ``shepherd config show [--sources]``: the effective daemon settings
from defaults, Hadoop site files, shepherd's YAML file, the environment and flags; and the CLI's named
clusters (``clusters``, ``add-cluster``, ``use-cluster``, ``remove-cluster``, ``which``; in
:mod:`rm.commands.clusters`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from common.config_check import unknown_properties
from common.settings import load_layers
from nodemanager.check_config import NAMESPACES as NM_NAMESPACES
from nodemanager.config import nm_settings
from rm.commands import clusters as named_clusters
from rm.commands.convert import convert_command
from rm.commands.hadoop_client import hadoop_client_command
from rm.commands.output import OUT_OPT, check_format, console, dump, error
from rm.core.queues import QueueConfigError, build_queues
from rm.service.check_config import NAMESPACES as RM_NAMESPACES

config_group = typer.Typer(no_args_is_help=True,
                           help="Daemon configuration: validate, show, convert; hadoop-client for the stock "
                                "clients. The CLI's named clusters: clusters, add-cluster, use-cluster, "
                                "remove-cluster, which.")

CONFIG_OPT = typer.Option(None, "--config", "-c", help="shepherd YAML config file")
CONF_DIR_OPT = typer.Option(None, "--hadoop-conf-dir",
                            help="directory of yarn-site.xml and capacity-scheduler.xml "
                                 "(default: $YARN_CONF_DIR or $HADOOP_CONF_DIR)")
QUEUES_OPT = typer.Option(None, "--queues", help="YAML file with the queue tree (as `shepherd rm --queues`)")


def _rm(config: Path | None, conf_dir: Path | None, queues: Path | None) -> Any:
    from rm.service.settings import RMFlags, load_rm_settings

    return load_rm_settings(env=dict(os.environ), flags=RMFlags(queues_file=queues), config_file=config,
                            conf_dir=conf_dir)


def _nm(config: Path | None, conf_dir: Path | None) -> Any:
    from nodemanager.config import NodeManagerConfig, load_nm_settings

    return load_nm_settings(NodeManagerConfig(), env=dict(os.environ), config_file=config, conf_dir=conf_dir)


@config_group.command("validate")
def validate(config: Path | None = CONFIG_OPT, conf_dir: Path | None = CONF_DIR_OPT,
             queues: Path | None = QUEUES_OPT) -> None:
    """Check the ResourceManager and NodeManager settings, queue tree included; exit 2 on any error."""
    problems: list[str] = []
    try:
        rm = _rm(config, conf_dir, queues)
    except ValueError as exc:
        problems.append(f"ResourceManager: {exc}")
        rm = None
    if rm is not None:
        try:
            tree = build_queues(rm.config.queues)
            leaves = sorted(p for p, q in tree.items() if q.is_leaf)
        except QueueConfigError as exc:
            problems.append(f"queues ({rm.queues_source}): {exc}")
            leaves = []
        try:
            rm.config.validate()
        except ValueError as exc:
            problems.append(f"ResourceManager: {exc}")
        problems += [f"ResourceManager: {p}" for p in unknown_properties(rm.layers, RM_NAMESPACES)]
        for w in rm.warnings:
            error(w, prefix="warning")
    try:
        _nm(config, conf_dir)
        nm_layers = load_layers(nm_settings(), env=dict(os.environ), conf_dir=conf_dir, config_file=config)
        problems += [f"NodeManager: {p}" for p in unknown_properties(nm_layers, NM_NAMESPACES)]
    except ValueError as exc:
        problems.append(f"NodeManager: {exc}")
    if problems:
        for p in problems:
            error(p, prefix="invalid")
        raise typer.Exit(2)
    assert rm is not None
    files = ", ".join(rm.layers.files) or "no files (defaults, environment)"
    console.print(f"configuration is valid ({files}); leaf queues: {', '.join(leaves)}")


@config_group.command("show")
def show(
    sources: bool = typer.Option(False, "--sources", help="show where each value comes from"),
    nodemanager: bool = typer.Option(False, "--nm", help="the NodeManager's settings instead of the RM's"),
    config: Path | None = CONFIG_OPT,
    conf_dir: Path | None = CONF_DIR_OPT,
    queues: Path | None = QUEUES_OPT,
    output: str = OUT_OPT,
) -> None:
    """Print the effective settings (secrets masked)."""
    check_format(output)
    try:
        rows = _nm(config, conf_dir).rows if nodemanager else _rm(config, conf_dir, queues).rows()
    except ValueError as exc:
        error(str(exc), prefix="invalid")
        raise typer.Exit(2) from None
    if output in ("json", "yaml"):  # -o wide is the table: it has no more columns
        data = {k: {"value": v, "source": s} for k, v, s in rows} if sources else {k: v for k, v, _ in rows}
        print(dump(data, output), end="")
        return
    header = ("PROPERTY", "VALUE", *(["SOURCE"] if sources else []))
    lines = [(k, v, *([s] if sources else [])) for k, v, s in rows]
    if not console.is_terminal:  # whole lines for grep and scripts
        widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header) - 1)]
        for r in [header, *lines]:
            print("  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip())
        return
    table = Table(*header)
    for line in lines:
        table.add_row(*line)
    console.print(table)


config_group.command("convert")(convert_command)
config_group.command("hadoop-client")(hadoop_client_command)
config_group.command("clusters")(named_clusters.clusters)
config_group.command("add-cluster")(named_clusters.add_cluster)
config_group.command("use-cluster")(named_clusters.use_cluster)
config_group.command("remove-cluster")(named_clusters.remove_cluster)
config_group.command("which")(named_clusters.which)
