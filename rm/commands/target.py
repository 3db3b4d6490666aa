"""Which cluster a command talks to: its ``--rm``/``--rest`` flags, the global ``--cluster``, the environment,
the user config file's current cluster, ``$HADOOP_CONF_DIR``, the defaults (order in
:mod:`common.user_config`). The ``--rm`` and ``--rest`` options resolve here, before the command runs, so a
command gets both of its addresses from one place."""

from __future__ import annotations

import os

import typer

from common.user_config import Endpoint, UserConfigError, resolve_rest, resolve_rm
from rm.commands.output import error

CLUSTER_KEY = "shepherd.cluster"  # ctx.meta (shared by a command's contexts): the global --cluster NAME


def selected_cluster(ctx: typer.Context) -> str | None:
    """The global ``--cluster`` of the command being run, if any."""
    value = ctx.meta.get(CLUSTER_KEY)
    return value if isinstance(value, str) else None


def hadoop_rest() -> str | None:
    """``yarn.resourcemanager.webapp.address`` of ``$HADOOP_CONF_DIR/yarn-site.xml``, if it sets one."""
    from common.settings import SettingsError
    from rm.service.settings import load_rm_settings

    try:
        s = load_rm_settings(env=dict(os.environ))
    except SettingsError:
        return None
    if s.layers.source("yarn.resourcemanager.webapp.address") == "default":
        return None
    host = s.config.http_host
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{s.config.rest_port}"


def rm_endpoint(rm: str | None = None, rest: str | None = None, cluster: str | None = None) -> Endpoint:
    """The gRPC address for these flags (None: not given); UserConfigError for a bad config or --cluster."""
    return resolve_rm(rm=rm, rest=rest, cluster=cluster, env=os.environ)


def rest_endpoint(rest: str | None = None, rm: str | None = None, cluster: str | None = None) -> Endpoint:
    """The REST URL for these flags (None: not given); UserConfigError for a bad config or --cluster."""
    return resolve_rest(rm=rm, rest=rest, cluster=cluster, env=os.environ, hadoop=hadoop_rest)


def config_failed(exc: ValueError) -> typer.Exit:
    """A user config (or credentials) problem: one ``error:`` line, exit 2."""
    error(str(exc))
    return typer.Exit(2)


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _flag(ctx: typer.Context, name: str) -> str | None:
    """The value of option ``name`` if it was given on the command line (click processes those first, so the
    other address option's callback sees it)."""
    value = ctx.params.get(name) if _on_command_line(ctx, name) else None
    return value if isinstance(value, str) and value else None


def resolve_rm_option(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> str | None:
    """``--rm``'s callback: the address the command uses (a flag, or from the environment or a named cluster)."""
    if ctx.resilient_parsing or param.name is None:  # shell completion: read no file
        return value
    given = value if _on_command_line(ctx, param.name) else None
    try:
        return rm_endpoint(given, _flag(ctx, "rest"), selected_cluster(ctx)).address
    except UserConfigError as exc:
        raise config_failed(exc) from None


def resolve_rest_option(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> str | None:
    """``--rest``'s callback: the REST URL the command uses."""
    if ctx.resilient_parsing or param.name is None:
        return value
    given = value if _on_command_line(ctx, param.name) else None
    try:
        return rest_endpoint(given, _flag(ctx, "rm"), selected_cluster(ctx)).address
    except UserConfigError as exc:
        raise config_failed(exc) from None
