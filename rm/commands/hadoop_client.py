"""``shepherd config hadoop-client``: a ``HADOOP_CONF_DIR`` for the stock Hadoop clients (the ``yarn`` CLI,
``spark-submit --master yarn``) on any host that holds the cluster's client secret: ``yarn-site.xml`` naming
the RM's Hadoop IPC listeners, ``core-site.xml``, and ``hadoop.token``, an RM delegation token for
``HADOOP_TOKEN_FILE_LOCATION``.

A ResourceManager on loopback writes such a token file itself for its own user; off loopback a client host
makes one here. The token is signed with a key derived from the client secret, so whoever holds the secret can
make one without asking the RM, and every token dies with the secret.
"""

from __future__ import annotations

import getpass
import time
from pathlib import Path
from xml.sax.saxutils import escape

import typer

from common import credentials
from common.credentials import write_private
from common.hadoop import credentials as hadoop_credentials
from common.hadoop import tokens
from rm.commands.output import error
from rm.commands.target import resolve_rm_option

TOKEN_FILE = "hadoop.token"
CLIENT_PORT, SCHEDULER_PORT = 8032, 8030  # YARN's defaults for yarn.resourcemanager.address / .scheduler.address


def _site(props: dict[str, str]) -> str:
    rows = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n'


def _addresses(given: str | None, host: str, port: int) -> list[str]:
    return [a.strip() for a in (given or f"{host}:{port}").split(",") if a.strip()]


def hadoop_client_command(
    out: Path = typer.Option(..., "--dir", help="the directory to write (created; files in it are replaced)"),
    rm: str | None = typer.Option(None, "--rm", envvar="SHEPHERD_RM", callback=resolve_rm_option,
                                  help="the RM's gRPC address; its host is where the Hadoop IPC listeners are "
                                       "looked for, and whose client secret is used (default: as every command "
                                       "finds it, `shepherd --cluster`, $SHEPHERD_RM, the current cluster, "
                                       "127.0.0.1:7030)"),
    ipc_client: str | None = typer.Option(None, "--ipc-client",
                                          help="the RM's Hadoop IPC client address (yarn.resourcemanager.address; "
                                               "default <RM host>:8032); for an active/standby pair, both, "
                                               "comma-separated"),
    ipc_scheduler: str | None = typer.Option(None, "--ipc-scheduler",
                                             help="the scheduler address AMs use (default <RM host>:8030)"),
    fs: str = typer.Option("file:///", "--fs", help="fs.defaultFS: a file system every host shares"),
    user: str | None = typer.Option(None, "--user", help="whom the token lets its holder act as (default: you)"),
    secret: str | None = typer.Option(None, "--client-secret", help="default: $SHEPHERD_CLIENT_SECRET, else the "
                                                                    "credentials file recorded for --rm"),
) -> None:
    """Write a HADOOP_CONF_DIR and an RM delegation token for the stock yarn CLI and Spark."""
    address = rm or "127.0.0.1:7030"
    host = address.split(",")[0].strip().rpartition(":")[0] or "127.0.0.1"
    found = credentials.client_secret(address, secret)
    if not found:
        error("no client secret: give --client-secret, set SHEPHERD_CLIENT_SECRET, or run where the RM's "
              "credentials file is recorded", prefix="cannot make a token")
        raise typer.Exit(2)
    clients = _addresses(ipc_client, host, CLIENT_PORT)
    schedulers = _addresses(ipc_scheduler, host, SCHEDULER_PORT)
    if len(clients) != len(schedulers):
        error("give as many --ipc-scheduler addresses as --ipc-client ones", prefix="invalid")
        raise typer.Exit(2)
    props = {"yarn.resourcemanager.hostname": clients[0].rpartition(":")[0]}
    if len(clients) == 1:
        props.update({"yarn.resourcemanager.address": clients[0],
                      "yarn.resourcemanager.scheduler.address": schedulers[0]})
    else:  # YARN's HA client configuration: the failover proxy tries each RM
        ids = [f"rm{n}" for n in range(1, len(clients) + 1)]
        props.update({"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": ",".join(ids)})
        for rm_id, client, scheduler in zip(ids, clients, schedulers, strict=True):
            props.update({f"yarn.resourcemanager.hostname.{rm_id}": client.rpartition(":")[0],
                          f"yarn.resourcemanager.address.{rm_id}": client,
                          f"yarn.resourcemanager.scheduler.address.{rm_id}": scheduler})
    out.mkdir(parents=True, exist_ok=True)
    (out / "yarn-site.xml").write_text(_site(props))
    (out / "core-site.xml").write_text(_site({"fs.defaultFS": fs}))
    owner = user or getpass.getuser()
    # the service names every RM of a pair: Hadoop's selectors match a service that contains their address
    service = ",".join(tokens.service_of(a) for a in clients)
    token = tokens.issue_rm_delegation(found, owner, service, now_ms=int(time.time() * 1000),
                                       sequence=int(time.time()))
    creds = hadoop_credentials.Credentials()
    creds.add(token.service, token)
    write_private(out / TOKEN_FILE, hadoop_credentials.encode(creds))
    print(f"export HADOOP_CONF_DIR={out}")
    print(f"export HADOOP_TOKEN_FILE_LOCATION={out / TOKEN_FILE}")
