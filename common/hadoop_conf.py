"""Hadoop configuration files: ``*-site.xml`` property lists, ``${var}`` substitution, ``final``.

``Configuration`` holds properties in layers, each value with the source it came from (a file, the
defaults, an environment variable, a command-line flag). As in Hadoop, a property marked ``final`` in
one file is not overridden by later files (only by the environment and flags, which are explicit), and
``${name}`` in a value expands to another property, ``${env.NAME}`` to an environment variable, with
Hadoop's limit of 20 nested expansions; a reference that cannot be resolved stays as written.

``capacity_scheduler_queues`` turns ``yarn.scheduler.capacity.*`` properties into the queue tree that
:func:`rm.core.queues.build_queues` takes.
"""

from __future__ import annotations

import getpass
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_SUBST = 20  # Hadoop's Configuration.MAX_SUBST
_VAR = re.compile(r"\$\{([^}$\s]+)\}")
# in this order; every daemon reads them all and takes the properties it uses (common.resource_types reads the
# last two: resource types, and what a NodeManager offers of each)
SITE_FILES = ("core-site.xml", "yarn-site.xml", "capacity-scheduler.xml", "resource-types.xml",
              "node-resources.xml")
CS = "yarn.scheduler.capacity"


class HadoopConfError(ValueError):
    """A configuration file or value that cannot be used; the message names the file or property."""


@dataclass(frozen=True, slots=True)
class Property:
    name: str
    value: str
    source: str
    final: bool = False


def read_xml(path: Path) -> list[Property]:
    """The properties of one Hadoop ``<configuration>`` file, in file order."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise HadoopConfError(f"{path}: cannot read it as a Hadoop configuration file: {exc}") from exc
    if root.tag != "configuration":
        raise HadoopConfError(f"{path}: the root element is <{root.tag}>, not <configuration>")
    out: list[Property] = []
    for i, prop in enumerate(root.iter("property"), start=1):
        name = (prop.findtext("name") or "").strip()
        if not name:
            raise HadoopConfError(f"{path}: property #{i} has no <name>")
        value = prop.findtext("value")
        final = (prop.findtext("final") or "").strip().lower() == "true"
        out.append(Property(name, (value or "").strip(), str(path), final))
    return out


def conf_dir_from_env(env: Mapping[str, str]) -> Path | None:
    """``YARN_CONF_DIR``, else ``HADOOP_CONF_DIR`` (as the yarn scripts and yarn-api-client look)."""
    for var in ("YARN_CONF_DIR", "HADOOP_CONF_DIR"):
        value = env.get(var, "").strip()
        if value:
            return Path(value)
    return None


class Configuration:
    """Layered properties with their sources; later layers win unless an earlier file made one final."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._props: dict[str, Property] = {}
        self._env = dict(os.environ if env is None else env)
        self.ignored: list[Property] = []  # values a final property kept out

    def set(self, name: str, value: str, source: str, *, final: bool = False, force: bool = False) -> None:
        old = self._props.get(name)
        if old is not None and old.final and not force:
            self.ignored.append(Property(name, value, source, final))
            return
        self._props[name] = Property(name, value, source, final and not force)

    def add(self, props: Iterable[Property]) -> None:
        for p in props:
            self.set(p.name, p.value, p.source, final=p.final)

    def add_file(self, path: Path) -> None:
        self.add(read_xml(path))

    def add_conf_dir(self, conf_dir: Path) -> list[Path]:
        """Read the site files the RM and NodeManagers use from ``conf_dir``; returns those found."""
        if not conf_dir.is_dir():
            raise HadoopConfError(f"the Hadoop configuration directory {conf_dir} does not exist")
        found = [conf_dir / f for f in SITE_FILES if (conf_dir / f).is_file()]
        for path in found:
            self.add_file(path)
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._props

    def names(self) -> list[str]:
        return sorted(self._props)

    def raw(self, name: str) -> str | None:
        p = self._props.get(name)
        return p.value if p is not None else None

    def source(self, name: str) -> str | None:
        p = self._props.get(name)
        return p.source if p is not None else None

    def get(self, name: str, default: str | None = None) -> str | None:
        raw = self.raw(name)
        return self.substitute(raw) if raw is not None else default

    def substitute(self, value: str) -> str:
        """Expand ``${name}``, ``${env.NAME}`` and ``${user.name}``-style references."""
        for _ in range(MAX_SUBST):
            changed = False

            def one(m: re.Match[str]) -> str:
                nonlocal changed
                key = m.group(1)
                found = self._lookup(key)
                if found is None:
                    return m.group(0)
                changed = True
                return found

            value = _VAR.sub(one, value)
            if not changed:
                return value
        raise HadoopConfError(f"variable substitution depth too large ({MAX_SUBST}): {value}")

    def _lookup(self, key: str) -> str | None:
        if key.startswith("env."):
            name, _, fallback = key[4:].partition(":-")
            return self._env.get(name) or (fallback if ":-" in key else None)
        raw = self.raw(key)
        if raw is not None:
            return raw
        if key == "user.name":
            return self._env.get("USER") or getpass.getuser()
        if key == "user.home":
            return self._env.get("HOME") or str(Path.home())
        if key == "java.io.tmpdir":
            return "/tmp"
        return None


# ---------------------------------------------------------------------------------- capacity scheduler


def _number(conf: Configuration, name: str, default: float | None) -> float | None:
    value = conf.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise HadoopConfError(
            f"{name} = {value!r} (from {conf.source(name)}) is not a number; shepherd reads percentages "
            "(absolute resources like [memory=...] and weights like 2w are not supported)"
        ) from None


def capacity_scheduler_queues(conf: Configuration) -> dict[str, Any] | None:
    """The queue tree (children of root) described by ``yarn.scheduler.capacity.*``; None if absent."""
    if conf.get(f"{CS}.root.queues") is None:
        return None
    am_default = _number(conf, f"{CS}.maximum-am-resource-percent", 0.1)
    assert am_default is not None
    return _children(conf, "root", am_default, depth=0)


def _children(conf: Configuration, path: str, am_default: float, depth: int) -> dict[str, Any]:
    if depth > 32:
        raise HadoopConfError(f"{CS}.{path}.queues: the queue tree is deeper than 32 levels")
    names = [n.strip() for n in (conf.get(f"{CS}.{path}.queues") or "").split(",") if n.strip()]
    out: dict[str, Any] = {}
    for name in names:
        child = f"{path}.{name}"
        prefix = f"{CS}.{child}"
        capacity = _number(conf, f"{prefix}.capacity", None)
        if capacity is None:
            raise HadoopConfError(f"{prefix}.capacity is not set (every queue under {path} needs one)")
        maximum = _number(conf, f"{prefix}.maximum-capacity", 100.0)
        am = _number(conf, f"{prefix}.maximum-am-resource-percent", am_default)
        ulf = _number(conf, f"{prefix}.user-limit-factor", 1.0)
        spec: dict[str, Any] = {
            "capacity": capacity,
            "maximum-capacity": 100.0 if maximum is None or maximum < 0 else maximum,
            "maximum-am-resource-percent": (am if am is not None else am_default) * 100,
            "state": (conf.get(f"{prefix}.state") or "RUNNING").strip().upper(),
            "user-limit-factor": ulf if ulf is not None else 1.0,
        }
        if conf.get(f"{prefix}.queues"):
            spec["queues"] = _children(conf, child, am_default, depth + 1)
        out[name] = spec
    if not out:
        raise HadoopConfError(f"{CS}.{path}.queues names no queue")
    return out
