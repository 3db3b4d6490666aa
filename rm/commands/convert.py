"""``shepherd config convert``: a Hadoop configuration directory (``yarn-site.xml``, ``capacity-scheduler.xml``,
``core-site.xml``, ``resource-types.xml``, ``node-resources.xml``) as one shepherd YAML file for ``--config``.

The properties shepherd's daemons read keep their Hadoop names and values (``${...}`` references stay, and
expand as they did); the capacity scheduler's queue properties become the ``queues:`` tree, read with the
same code the ResourceManager uses on the XML (:func:`common.hadoop_conf.capacity_scheduler_queues`). What
shepherd does not read from a ``--config`` file is listed, as comments, at the end, with the reason."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
import yaml

from common.hadoop_conf import (
    CS,
    Configuration,
    HadoopConfError,
    capacity_scheduler_queues,
    conf_dir_from_env,
)
from common.resource_types import NODE_PREFIX, RESOURCE_TYPES
from rm.commands.output import console, error

# the capacity scheduler's properties the queue tree is made of (the rest has no counterpart here)
_QUEUE_PROPERTY = re.compile(
    rf"^{re.escape(CS)}\.(maximum-am-resource-percent|root(\.[^.]+)*\."
    r"(queues|capacity|maximum-capacity|maximum-am-resource-percent|user-limit-factor|state))$")
# read from yarn-site.xml itself (the Hadoop IPC listeners), not from shepherd's YAML
_YARN_SITE_ONLY = ("yarn.resourcemanager.address", "yarn.resourcemanager.scheduler.address",
                   "yarn.resourcemanager.admin.address",
                   "yarn.resourcemanager.ipc.allow-simple-writes", "yarn.admin.acl")


@dataclass
class Converted:
    files: list[str]
    properties: dict[str, str] = field(default_factory=dict)
    queues: dict[str, Any] | None = None
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (property, value, why)

    def to_yaml(self) -> str:
        head = [f"# shepherd configuration converted from {', '.join(self.files)} by `shepherd config convert`.",
                "# Use it with `shepherd rm --config FILE` and `shepherd nm --config FILE`."]
        body: dict[str, Any] = dict(sorted(self.properties.items()))
        if self.queues is not None:
            body["queues"] = self.queues
        text = yaml.safe_dump(body, sort_keys=False, default_flow_style=False) if body else ""
        tail = []
        if self.skipped:
            tail.append("# Not converted:")
            tail += [f"#   {key} = {value}  ({why})" for key, value, why in self.skipped]
        return "\n".join([*head, text.rstrip("\n"), *tail]).strip("\n") + "\n"


def known_properties() -> frozenset[str]:
    from nodemanager.config import nm_settings
    from rm.service.settings import RM_SETTINGS

    return frozenset(s.key for s in (*RM_SETTINGS, *nm_settings()))


def convert(conf_dir: Path, env: dict[str, str]) -> Converted:
    """Read the site files of ``conf_dir``; ``HadoopConfError`` if one is unreadable or the queues are invalid."""
    from rm.core.queues import QueueConfigError, build_queues

    conf = Configuration(env)
    found = conf.add_conf_dir(conf_dir)
    if not found:
        raise HadoopConfError(f"{conf_dir} has no core-site.xml, yarn-site.xml, capacity-scheduler.xml, "
                              "resource-types.xml or node-resources.xml")
    out = Converted([str(p) for p in found])
    known = known_properties()
    for name in conf.names():
        value = conf.raw(name) or ""
        if name in known or name == RESOURCE_TYPES or name.startswith((f"{RESOURCE_TYPES}.", NODE_PREFIX)):
            out.properties[name] = value
        elif _QUEUE_PROPERTY.match(name):
            continue
        elif name in _YARN_SITE_ONLY:
            out.skipped.append((name, value, ("Hadoop IPC: read from yarn-site.xml; keep it in $HADOOP_CONF_DIR "
                                              "or pass `shepherd rm --yarn-site`")))
        else:
            out.skipped.append((name, value, "not used by shepherd"))
    out.queues = capacity_scheduler_queues(conf)
    if out.queues is not None:
        try:
            build_queues(out.queues)
        except QueueConfigError as exc:
            raise HadoopConfError(f"{conf.source(f'{CS}.root.queues')}: the queues are invalid: {exc}") from None
    return out


def check_round_trip(text: str, expected: Converted) -> None:
    """The written YAML, read as ``--config`` by the ResourceManager, gives the same properties and queues."""
    from rm.service.settings import RMFlags, load_rm_settings

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        got = load_rm_settings(env={}, flags=RMFlags(), config_file=Path(f.name))
    finally:
        os.unlink(f.name)
    if expected.queues is not None and got.config.queues != expected.queues:
        raise HadoopConfError("the converted queue tree does not read back the same")
    for key, value in expected.properties.items():
        if got.layers.conf.raw(key) != value:
            raise HadoopConfError(f"{key} does not read back the same")


def convert_command(
    conf_dir: Path | None = typer.Option(None, "--hadoop-conf-dir", help="directory of yarn-site.xml and "
                                         "capacity-scheduler.xml \\[default: $YARN_CONF_DIR, $HADOOP_CONF_DIR]"),
    out: Path | None = typer.Option(None, "--out", help="write the YAML here \\[default: stdout]"),
    force: bool = typer.Option(False, "--force", help="overwrite --out if it exists"),
) -> None:
    """Convert a Hadoop configuration directory to one shepherd YAML file (for `--config`).

    The properties shepherd reads keep their names; the capacity scheduler's queues become `queues:`; what is
    not converted is listed at the end as comments, each with why. Exit 2 if a file is unreadable, the queue
    tree is invalid (named as `shepherd config validate` names it), or --out exists without --force."""
    env = dict(os.environ)
    directory = conf_dir if conf_dir is not None else conf_dir_from_env(env)
    if directory is None:
        error("no Hadoop configuration directory: give --hadoop-conf-dir or set HADOOP_CONF_DIR")
        raise typer.Exit(2)
    if out is not None and out.exists() and not force:
        error(f"{out} exists; pass --force to overwrite it")
        raise typer.Exit(2)
    try:
        converted = convert(directory, env)
        text = converted.to_yaml()
        check_round_trip(text, converted)
    except (HadoopConfError, ValueError) as exc:
        error(str(exc), prefix="invalid")
        raise typer.Exit(2) from None
    if out is None:
        print(text, end="")
        return
    out.write_text(text)
    queues = len(converted.queues or {})
    console.print(f"wrote {out}: {len(converted.properties)} properties, {queues} top-level queue(s), "
                  f"{len(converted.skipped)} not converted (listed at its end)", highlight=False, soft_wrap=True)
