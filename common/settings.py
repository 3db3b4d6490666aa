"""Layered daemon settings: defaults < files < environment < flags, every value with its source.

Settings are named by Hadoop's property names where one exists (``yarn.resourcemanager.webapp.address``)
and under ``shepherd.`` otherwise. The file layer is, in order, the Hadoop site files of the
configuration directory (``--hadoop-conf-dir``, else ``YARN_CONF_DIR``/``HADOOP_CONF_DIR``: core-site.xml,
yarn-site.xml, capacity-scheduler.xml, resource-types.xml, node-resources.xml) and then shepherd's own YAML
file (``--config``), whose keys are the same property names (flat, or nested mappings joined with dots) plus
an optional ``queues:`` tree.
Each setting may also come from one environment variable, and the daemons' flags win over everything.

Every daemon resolves its settings with :func:`load_layers`: the ResourceManager in
:mod:`rm.service.settings`, the NodeManager in :mod:`nodemanager.config`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from common.hadoop_conf import Configuration, HadoopConfError, conf_dir_from_env

DEFAULT_GRPC_PORT = 7030  # YARN's own RM ports (8030-8033, 8088, 8090) stay free for YARN protocols
DEFAULT_REST_PORT = 8088

DEFAULT = "default"


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the property and where its value came from."""


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    default: str | None
    env: str | None = None
    help: str = ""
    secret: bool = False


# Properties every daemon may refer to in ${...} substitutions.
COMMON: tuple[Setting, ...] = (
    Setting("hadoop.tmp.dir", "/tmp/hadoop-${user.name}", None, "base of YARN's temporary directories"),
    Setting("yarn.resourcemanager.hostname", "127.0.0.1", "SHEPHERD_RM_HOSTNAME",
            "the RM's host; the default address of every RM port (YARN's default is 0.0.0.0)"),
    Setting("shepherd.resourcemanager.grpc.address", f"${{yarn.resourcemanager.hostname}}:{DEFAULT_GRPC_PORT}",
            "SHEPHERD_RM_GRPC_ADDRESS", "the RM's gRPC address (clients, AMs and NodeManagers)"),
)

@dataclass
class Layered:
    """Every property of every layer, with typed getters that name the property and source on error."""

    conf: Configuration
    settings: Sequence[Setting]
    files: list[str] = field(default_factory=list)
    yaml_extra: dict[str, Any] = field(default_factory=dict)  # non-property YAML sections (``queues``)

    def _bad(self, key: str, value: str, what: str) -> SettingsError:
        return SettingsError(f"{key} = {value!r} (from {self.conf.source(key)}) is not {what}")

    def text(self, key: str) -> str | None:
        value = self.conf.get(key)
        return value if value not in (None, "") else None

    def integer(self, key: str) -> int | None:
        value = self.text(key)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise self._bad(key, value, "an integer") from None

    def number(self, key: str) -> float | None:
        value = self.text(key)
        if value is None:
            return None
        try:
            f = float(value)
        except ValueError:
            raise self._bad(key, value, "a number") from None
        if not math.isfinite(f):
            raise self._bad(key, value, "a finite number")
        return f

    def seconds(self, key: str) -> float | None:
        """A ``*-ms`` property in seconds."""
        ms = self.number(key)
        if ms is not None and ms <= 0:
            raise self._bad(key, str(ms), "a positive number of milliseconds")
        return ms / 1000.0 if ms is not None else None

    def address(self, key: str) -> tuple[str, int]:
        value = self.text(key) or ""
        host, sep, port = value.rpartition(":")
        if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
            raise self._bad(key, value, "a host:port address")
        return host.strip("[]") or "0.0.0.0", int(port)

    def source(self, key: str) -> str:
        return self.conf.source(key) or DEFAULT

    def rows(self, extra: Sequence[tuple[str, str, str]] = ()) -> list[tuple[str, str, str]]:
        """(property, effective value, source) of every setting; secrets masked."""
        out: list[tuple[str, str, str]] = []
        for s in self.settings:
            value = self.conf.get(s.key)
            shown = "" if value is None else ("********" if s.secret and value else value)
            out.append((s.key, shown, self.source(s.key) if value is not None else DEFAULT))
        return [*out, *extra]


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{key}."))
        elif isinstance(v, bool):
            out[key] = "true" if v else "false"
        elif isinstance(v, list | tuple):
            out[key] = ",".join(str(x) for x in v)
        elif v is not None:
            out[key] = str(v)
    return out


def read_yaml(path: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """(properties, other sections) of a shepherd YAML config file."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SettingsError(f"{path}: cannot read it as YAML: {exc}") from exc
    if not isinstance(data, Mapping):
        raise SettingsError(f"{path}: the top level must be a mapping of property names to values")
    extra = {k: data[k] for k in ("queues",) if k in data}
    props = _flatten({k: v for k, v in data.items() if k not in extra})
    return props, extra


def load_layers(
    settings: Sequence[Setting],
    *,
    env: Mapping[str, str],
    conf_dir: Path | None = None,
    config_file: Path | None = None,
    flags: Mapping[str, tuple[str, str]] | None = None,
) -> Layered:
    """Defaults, then the conf dir's site files, then the YAML file, then env vars, then flags
    (``property -> (value, flag name)``)."""
    conf = Configuration(env)
    for s in settings:
        if s.default is not None:
            conf.set(s.key, s.default, DEFAULT)
    layered = Layered(conf, settings)
    directory = conf_dir if conf_dir is not None else conf_dir_from_env(env)
    try:
        if directory is not None:
            layered.files += [str(p) for p in conf.add_conf_dir(directory)]
        if config_file is not None:
            props, layered.yaml_extra = read_yaml(config_file)
            for k, v in props.items():
                conf.set(k, v, str(config_file))
            layered.files.append(str(config_file))
    except HadoopConfError as exc:
        raise SettingsError(str(exc)) from exc
    for s in settings:
        if s.env and env.get(s.env):
            conf.set(s.key, env[s.env], f"env {s.env}", force=True)
    for key, (value, flag) in (flags or {}).items():
        conf.set(key, value, f"flag {flag}", force=True)
    return layered
