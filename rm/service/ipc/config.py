"""Where the Hadoop IPC listeners go.

Ports, in order of precedence: the RM's own settings (``ipc_client_port``, ``ipc_scheduler_port``,
``ipc_admin_port``; 0 = any free port, a negative port = no listener), then the addresses of a
``yarn-site.xml`` (``yarn.resourcemanager.address``, ``yarn.resourcemanager.scheduler.address``,
``yarn.resourcemanager.admin.address``, with ``${yarn.resourcemanager.hostname}`` substituted), then YARN's
defaults 8032, 8030 and 8033. The listeners bind the RM's own host, so an RM on loopback stays on loopback
whatever the file says.

The admin listener (ResourceManagerAdministrationProtocol, ``yarn rmadmin``) is the one exception: an RM given
its client port explicitly but not its admin port opens the admin listener on any free port when the client
port is 0, and none otherwise, rather than YARN's 8033 (two RMs of a pair on one host, or tests, would contend
for it).

The file is the RM's ``yarn_site`` setting, else ``$YARN_CONF_DIR/yarn-site.xml``, else
``$HADOOP_CONF_DIR/yarn-site.xml``.

For an active/standby pair the file names every RM as Hadoop clients see them
(``yarn.resourcemanager.ha.rm-ids`` with ``yarn.resourcemanager.address.<id>`` and
``yarn.resourcemanager.scheduler.address.<id>``, or ``yarn.resourcemanager.hostname.<id>`` with the default
ports). Tokens are then issued for every RM's address at once, as YARN's clients look for them: a client
failing over to the other RM presents the same RM delegation token, and an AM the same AMRM token.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_CLIENT_PORT = 8032
DEFAULT_SCHEDULER_PORT = 8030
DEFAULT_ADMIN_PORT = 8033
CLIENT_ADDRESS = "yarn.resourcemanager.address"
SCHEDULER_ADDRESS = "yarn.resourcemanager.scheduler.address"
ADMIN_ADDRESS = "yarn.resourcemanager.admin.address"
ALLOW_SIMPLE_WRITES = "yarn.resourcemanager.ipc.allow-simple-writes"
HA_ENABLED = "yarn.resourcemanager.ha.enabled"
HA_RM_IDS = "yarn.resourcemanager.ha.rm-ids"
_VAR = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True, slots=True)
class IpcSettings:
    host: str
    client_port: int  # < 0: no ApplicationClientProtocol listener
    scheduler_port: int  # < 0: no ApplicationMasterProtocol listener
    allow_simple_writes: bool  # changes (client and admin calls) over SIMPLE authentication, without a token
    admin_port: int = -1  # < 0: no ResourceManagerAdministrationProtocol listener
    ha_client_addresses: tuple[str, ...] = ()  # every RM's client address (HA), as the clients are told them
    ha_scheduler_addresses: tuple[str, ...] = ()  # every RM's scheduler address (HA)


def read_yarn_site(path: Path) -> dict[str, str]:
    """Hadoop configuration XML -> {name: value}, with ``${name}`` references expanded."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ValueError(f"{path}: cannot read it as a Hadoop configuration file: {exc}") from exc
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name:
            props[name.strip()] = (value or "").strip()

    def expand(value: str, depth: int = 0) -> str:
        if depth > 10:
            return value
        def one(m: re.Match[str]) -> str:
            return expand(props.get(m.group(1), os.environ.get(m.group(1), "")), depth + 1)

        return _VAR.sub(one, value)

    return {k: expand(v) for k, v in props.items()}


def find_yarn_site(explicit: Path | str | None, env: dict[str, str] | None = None) -> Path | None:
    if explicit:
        return Path(explicit)
    env = dict(os.environ) if env is None else env
    for var in ("YARN_CONF_DIR", "HADOOP_CONF_DIR"):
        if env.get(var) and (Path(env[var]) / "yarn-site.xml").is_file():
            return Path(env[var]) / "yarn-site.xml"
    return None


def _port(address: str | None, default: int) -> int:
    if not address:
        return default
    _, _, port = address.rpartition(":")
    try:
        return int(port)
    except ValueError as exc:
        raise ValueError(f"invalid address {address!r} in yarn-site.xml: expected host:port") from exc


def settings(cfg: Any, env: dict[str, str] | None = None) -> IpcSettings:
    """Resolve the listeners of an RMConfig (attributes read with defaults, so older configs work)."""
    site_path = find_yarn_site(getattr(cfg, "yarn_site", None), env)
    site = read_yarn_site(site_path) if site_path is not None else {}
    client = getattr(cfg, "ipc_client_port", None)
    scheduler = getattr(cfg, "ipc_scheduler_port", None)
    admin = getattr(cfg, "ipc_admin_port", None)
    if admin is None and site.get(ADMIN_ADDRESS) is None and client is not None:
        admin = 0 if client == 0 else -1  # see the module's docstring
    host = str(getattr(cfg, "host", "127.0.0.1"))
    allow = site.get(ALLOW_SIMPLE_WRITES, "").lower() == "true" or \
        bool(getattr(cfg, "ipc_allow_simple_writes", False))
    return IpcSettings(
        host=host,
        client_port=client if client is not None else _port(site.get(CLIENT_ADDRESS), DEFAULT_CLIENT_PORT),
        scheduler_port=scheduler if scheduler is not None else _port(site.get(SCHEDULER_ADDRESS),
                                                                     DEFAULT_SCHEDULER_PORT),
        allow_simple_writes=allow,
        admin_port=admin if admin is not None else _port(site.get(ADMIN_ADDRESS), DEFAULT_ADMIN_PORT),
        ha_client_addresses=ha_addresses(site, CLIENT_ADDRESS, DEFAULT_CLIENT_PORT),
        ha_scheduler_addresses=ha_addresses(site, SCHEDULER_ADDRESS, DEFAULT_SCHEDULER_PORT),
    )


def ha_addresses(site: dict[str, str], key: str, default_port: int) -> tuple[str, ...]:
    """Each RM's ``key`` address of an HA configuration, in ``rm-ids`` order (empty when HA is off)."""
    if site.get(HA_ENABLED, "").lower() != "true":
        return ()
    out = []
    for rm_id in (i.strip() for i in site.get(HA_RM_IDS, "").split(",")):
        if not rm_id:
            continue
        address = site.get(f"{key}.{rm_id}")
        if not address:
            host = site.get(f"yarn.resourcemanager.hostname.{rm_id}")
            if not host:
                raise ValueError(f"yarn-site.xml: RM {rm_id!r} of {HA_RM_IDS} has neither {key}.{rm_id} nor "
                                 f"yarn.resourcemanager.hostname.{rm_id}")
            address = f"{host}:{default_port}"
        _port(address, default_port)  # refuse a malformed one here
        out.append(address)
    return tuple(out)
