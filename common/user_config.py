"""The CLI's user config file: named clusters and the current one (as kubectl's kubeconfig and its context).

The file is YAML, at ``$SHEPHERD_CONFIG``, else ``$XDG_CONFIG_HOME/shepherd/config.yaml``, else
``~/.config/shepherd/config.yaml``::

    current-cluster: prod
    clusters:
      prod:
        rm: rm1.example.com:7030,rm2.example.com:7030   # gRPC; an active/standby pair comma-separated
        rest: http://rm1.example.com:8088
        credentials: /home/me/prod-credentials.json     # optional: whose client secret to present
      local:
        rm: 127.0.0.1:7030
        rest: http://127.0.0.1:8088

A command finds its two addresses (gRPC and REST), first hit wins, and never takes them from two different
named clusters:

1. ``--rm`` / ``--rest``, or the global ``--cluster NAME`` (both addresses from that cluster);
2. ``$SHEPHERD_RM`` / ``$SHEPHERD_REST``;
3. the file's current cluster (both addresses), used only when no address was given by 1 or 2;
4. for REST, ``yarn.resourcemanager.webapp.address`` of ``$HADOOP_CONF_DIR/yarn-site.xml``;
5. ``127.0.0.1:7030`` and ``http://127.0.0.1:8088``.

The file holds no secret; ``shepherd config add-cluster`` and friends write it readable only by its owner.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from common.atomic import replace_file
from common.settings import DEFAULT_GRPC_PORT, DEFAULT_REST_PORT

ENV_CONFIG = "SHEPHERD_CONFIG"
ENV_RM = "SHEPHERD_RM"
ENV_REST = "SHEPHERD_REST"
DEFAULT_RM = f"127.0.0.1:{DEFAULT_GRPC_PORT}"
DEFAULT_REST = f"http://127.0.0.1:{DEFAULT_REST_PORT}"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CLUSTER_KEYS = ("rm", "rest", "credentials")
_TOP_KEYS = ("current-cluster", "clusters")
_HEADER = ("# shepherd's named clusters: `shepherd config clusters` lists them; `shepherd config add-cluster`,\n"
           "# `use-cluster` and `remove-cluster` rewrite this file (comments are not kept).\n")


class UserConfigError(ValueError):
    """The user config file cannot be read or used; the message names the file."""


@dataclass(frozen=True, slots=True)
class NamedCluster:
    name: str
    rm: str  # gRPC host:port, or every RM of an active/standby pair, comma-separated
    rest: str  # REST base URL, with its scheme and no trailing slash
    credentials: str | None = None  # the credentials file whose client secret goes to this cluster


@dataclass(frozen=True, slots=True)
class UserConfig:
    path: Path
    clusters: tuple[NamedCluster, ...] = ()
    current: str | None = None

    def get(self, name: str) -> NamedCluster | None:
        return next((c for c in self.clusters if c.name == name), None)

    def names(self) -> list[str]:
        return [c.name for c in self.clusters]

    def named(self, name: str) -> NamedCluster:
        """The cluster called ``name``; UserConfigError naming the ones there are if there is none."""
        found = self.get(name)
        if found is None:
            known = ", ".join(self.names()) or "none; add one with `shepherd config add-cluster`"
            raise UserConfigError(f"no cluster named {name!r} in {self.path} (known: {known})")
        return found

    def with_cluster(self, cluster: NamedCluster) -> UserConfig:
        """Add ``cluster``, or replace the one of that name where it stands."""
        if self.get(cluster.name) is None:
            return replace(self, clusters=(*self.clusters, cluster))
        return replace(self, clusters=tuple(cluster if c.name == cluster.name else c for c in self.clusters))

    def without(self, name: str) -> UserConfig:
        self.named(name)
        return replace(self, clusters=tuple(c for c in self.clusters if c.name != name),
                       current=None if self.current == name else self.current)

    def using(self, name: str) -> UserConfig:
        self.named(name)
        return replace(self, current=name)


# ---------------------------------------------------------------------------- the file


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """``$SHEPHERD_CONFIG``, else ``$XDG_CONFIG_HOME/shepherd/config.yaml`` (an absolute one, as the XDG
    spec asks), else ``~/.config/shepherd/config.yaml``."""
    env = os.environ if env is None else env
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]).expanduser()
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "shepherd" / "config.yaml"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".config" / "shepherd" / "config.yaml"


def load(path: Path) -> UserConfig:
    """The clusters of ``path``; none if it does not exist. UserConfigError, in one line naming the file and
    the key, if it cannot be read or is not a valid config."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return UserConfig(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UserConfigError(f"{path}: cannot read the user config file: {getattr(exc, 'strerror', None) or exc}"
                              ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserConfigError(f"{path}: not valid YAML: {_yaml_problem(exc)}") from None
    return parse(data, path)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else str(problem)


def parse(data: Any, path: Path) -> UserConfig:
    """The config in ``data`` (the file's YAML), checked; ``path`` names the file in errors."""
    def bad(what: str) -> UserConfigError:
        return UserConfigError(f"{path}: {what}")

    if data is None:
        return UserConfig(path)
    if not isinstance(data, dict):
        raise bad(f"must be a mapping with {' and '.join(_TOP_KEYS)}, not {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if unknown:
        raise bad(f"unknown key {unknown[0]!r} (expected {', '.join(_TOP_KEYS)})")
    raw = data.get("clusters") or {}
    if not isinstance(raw, dict):
        raise bad("clusters: must be a mapping of cluster names to {rm, rest, credentials}")
    clusters: list[NamedCluster] = []
    for name, body in raw.items():
        where = f"clusters.{name}"
        try:
            check_name(str(name))
        except ValueError as exc:
            raise bad(f"{where}: {exc}") from None
        if not isinstance(body, dict):
            raise bad(f"{where}: must be a mapping with rm and rest")
        extra = sorted(str(k) for k in body if k not in _CLUSTER_KEYS)
        if extra:
            raise bad(f"{where}: unknown key {extra[0]!r} (expected {', '.join(_CLUSTER_KEYS)})")
        for key, what in (("rm", "the gRPC address host:port"), ("rest", "the REST URL")):
            if not isinstance(body.get(key), str) or not body[key].strip():
                raise bad(f"{where}.{key}: missing ({what})")
        creds = body.get("credentials")
        if creds is not None and (not isinstance(creds, str) or not creds.strip()):
            raise bad(f"{where}.credentials: must be the path of a credentials file")
        try:
            rm = grpc_address(body["rm"])
        except ValueError as exc:
            raise bad(f"{where}.rm: {exc}") from None
        try:
            rest = rest_url(body["rest"])
        except ValueError as exc:
            raise bad(f"{where}.rest: {exc}") from None
        clusters.append(NamedCluster(str(name), rm, rest, creds.strip() if creds else None))
    current = data.get("current-cluster")
    if current is not None and not any(c.name == current for c in clusters):
        known = ", ".join(c.name for c in clusters) or "none"
        raise bad(f"current-cluster: {current!r} is not one of the clusters (known: {known})")
    return UserConfig(path, tuple(clusters), current)


def save(config: UserConfig) -> None:
    """Write ``config`` to its path atomically, readable and writable only by the owner (0600)."""
    clusters: dict[str, dict[str, str]] = {}
    for c in config.clusters:
        clusters[c.name] = {"rm": c.rm, "rest": c.rest, **({"credentials": c.credentials} if c.credentials else {})}
    data: dict[str, Any] = {"current-cluster": config.current, "clusters": clusters}
    if config.current is None:
        del data["current-cluster"]
    text = _HEADER + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    try:
        config.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        replace_file(config.path, text.encode())
    except OSError as exc:
        raise UserConfigError(f"{config.path}: cannot write the user config file: {exc.strerror or exc}") from None


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"{name!r} is not a cluster name (letters, digits, '.', '_' and '-')")
    return name


def grpc_address(text: str) -> str:
    """``host:port``, or several comma-separated; ValueError naming the bad one."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError("no gRPC address (host:port)")
    for part in parts:
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{part!r} is not a host:port address")
    return ",".join(parts)


def rest_url(text: str) -> str:
    """A REST base URL: ``http://`` added when there is no scheme, no trailing slash; ValueError if it has no
    host or another scheme than http and https."""
    base = text.strip()
    if "://" not in base:
        base = f"http://{base}"
    scheme, _, rest = base.partition("://")
    if scheme not in ("http", "https") or not rest.strip("/"):
        raise ValueError(f"{text!r} is not an http(s) URL")
    return base.rstrip("/")


# ---------------------------------------------------------------------------- which cluster


@dataclass(frozen=True, slots=True)
class Endpoint:
    address: str
    source: str  # what gave it: "--rm", "$SHEPHERD_REST", "cluster prod (current-cluster of FILE)", ...


def named_source(
    *, rm: str | None, rest: str | None, cluster: str | None, env: Mapping[str, str],
) -> tuple[NamedCluster, str] | None:
    """The named cluster both of a command's addresses come from, and why; None when they come from flags,
    the environment, ``$HADOOP_CONF_DIR`` or the defaults. ``rm``/``rest`` are the command's flags (not the
    environment), ``cluster`` the global ``--cluster``."""
    if cluster:
        if rm or rest:
            flag = "--rm" if rm else "--rest"
            raise UserConfigError(f"--cluster {cluster} and {flag} both say which cluster: give one of them")
        return load(config_path(env)).named(cluster), f"cluster {cluster}, from --cluster"
    if rm or rest or env.get(ENV_RM) or env.get(ENV_REST):
        return None  # an address given: the file gives neither the other one nor this one
    config = load(config_path(env))
    if config.current is None:
        return None
    return config.named(config.current), f"cluster {config.current}, the current cluster of {config.path}"


def resolve_rm(*, rm: str | None, rest: str | None = None, cluster: str | None = None,
               env: Mapping[str, str]) -> Endpoint:
    """A command's gRPC address: --rm, --cluster, $SHEPHERD_RM, the current cluster, 127.0.0.1:7030."""
    named = named_source(rm=rm, rest=rest, cluster=cluster, env=env)
    if named is not None:
        return Endpoint(named[0].rm, named[1])
    if rm:
        return Endpoint(rm, "--rm")
    if env.get(ENV_RM):
        return Endpoint(env[ENV_RM], f"${ENV_RM}")
    return Endpoint(DEFAULT_RM, "default")


def resolve_rest(*, rm: str | None = None, rest: str | None, cluster: str | None = None, env: Mapping[str, str],
                 hadoop: Callable[[], str | None] = lambda: None) -> Endpoint:
    """A command's REST URL: --rest, --cluster, $SHEPHERD_REST, the current cluster, the RM web address of
    ``$HADOOP_CONF_DIR/yarn-site.xml`` (``hadoop()``, asked only then), http://127.0.0.1:8088."""
    named = named_source(rm=rm, rest=rest, cluster=cluster, env=env)
    if named is not None:
        return Endpoint(named[0].rest, named[1])
    if rest:
        return Endpoint(_with_scheme(rest), "--rest")
    if env.get(ENV_REST):
        return Endpoint(_with_scheme(env[ENV_REST]), f"${ENV_REST}")
    found = hadoop()
    if found:
        return Endpoint(_with_scheme(found), "yarn.resourcemanager.webapp.address of $HADOOP_CONF_DIR")
    return Endpoint(DEFAULT_REST, "default")


def _with_scheme(base: str) -> str:
    return (base if "://" in base else f"http://{base}").rstrip("/")


def credentials_for(address: str, key: Callable[[str], str], env: Mapping[str, str]) -> Path | None:
    """The credentials file of the named cluster that listens at ``address`` (its gRPC address or REST URL,
    compared by ``key``), if the file names one."""
    want = key(address)
    for c in load(config_path(env)).clusters:
        mine = {key(a) for a in c.rm.split(",")} | {key(c.rest)}
        if c.credentials and want in mine:
            return Path(c.credentials).expanduser()
    return None
