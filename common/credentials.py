"""A cluster's credentials file and where clients find it (as kubectl finds a kubeconfig).

The file is JSON, ``{"client_secret": ..., "node_secret": ...}``, readable only by its owner (0600); a user's
own, which ``shepherd admin token --out`` writes, is ``{"user": ..., "client_secret": <user token>}``. A
ResourceManager creates it with fresh random secrets the first time it starts without secrets of its own
(``<data dir>/credentials.json``) and reuses it afterwards, so a restarted RM keeps its clients and nodes.

Clients find the client secret, first hit wins: an explicit value, ``$SHEPHERD_CLIENT_SECRET``, the file
named by ``$SHEPHERD_CREDENTIALS``, the ``credentials`` of the named cluster in the user config file
(:mod:`common.user_config`) that has this address, then the index a local RM keeps in ``~/.shepherd/clusters/``
(or ``$SHEPHERD_HOME/clusters/``): one small file per address it listens on (``127.0.0.1_7030``), naming its
credentials file. The index holds no secret itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from common import user_config
from common.atomic import replace_file

FILE_NAME = "credentials.json"
ENV_FILE = "SHEPHERD_CREDENTIALS"
ENV_CLIENT_SECRET = "SHEPHERD_CLIENT_SECRET"
ENV_NODE_SECRET = "SHEPHERD_NODE_SECRET"
ENV_HOME = "SHEPHERD_HOME"
SECRET_BYTES = 32
_LOOPBACK = ("localhost", "::1", "[::1]", "0.0.0.0", "::", "")


class CredentialsError(ValueError):
    """The credentials file is missing fields, is not JSON, or others may read it."""


@dataclass(frozen=True, slots=True)
class ClusterCredentials:
    client_secret: str
    node_secret: str


def new_secret() -> str:
    """A random URL-safe secret that does not start with "-": handed over on a command line (``--secret
    VALUE``), a leading dash reads as an option to many parsers (argparse among them), one draw in 64."""
    while True:
        secret = secrets.token_urlsafe(SECRET_BYTES)
        if not secret.startswith("-"):
            return secret


def write_private(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` atomically, readable and writable only by the owner from the start."""
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, data.encode() if isinstance(data, str) else data)


def load(path: Path) -> ClusterCredentials:
    """The credentials of ``path``; a file that others can read is refused (its secrets may be known)."""
    try:
        mode = path.stat().st_mode
        text = path.read_text()
    except OSError as exc:
        raise CredentialsError(f"cannot read the credentials file {path}: {exc.strerror or exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CredentialsError(f"the credentials file {path} is readable by others (mode {stat.S_IMODE(mode):o}); "
                               f"run chmod 600 {path}, or delete it and restart the ResourceManager for new secrets")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CredentialsError(f"the credentials file {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CredentialsError(f"the credentials file {path} must hold a JSON object")
    values = {k: data.get(k) for k in ("client_secret", "node_secret")}
    # a user's own file (shepherd admin token --out) has no node secret
    required = ("client_secret",) if isinstance(data.get("user"), str) else ("client_secret", "node_secret")
    missing = [k for k in required if not isinstance(values[k], str) or not values[k]]
    if missing:
        raise CredentialsError(f"the credentials file {path} has no {' or '.join(missing)}")
    return ClusterCredentials(client_secret=str(values["client_secret"]), node_secret=str(values["node_secret"] or ""))


def reads_verifier(client_secret: str) -> bytes:
    """What a NodeManager checks a reader's credential against when reads need one: a one-way digest of the
    client secret. The RM hands it to its nodes; it cannot be turned back into the secret, nor presented in its
    place (:func:`opens_reads` digests what it is given)."""
    return hashlib.sha256(b"shepherd node reads\0" + client_secret.encode()).digest()


def opens_reads(verifier: bytes, presented: str) -> bool:
    """Whether ``presented`` (a bearer credential, or a Basic password) is the client secret ``verifier`` was
    made from."""
    return bool(verifier) and bool(presented) and hmac.compare_digest(reads_verifier(presented), verifier)


def ensure(path: Path) -> tuple[ClusterCredentials, bool]:
    """The credentials of ``path``, created with fresh secrets (0600) if it does not exist; and whether it was."""
    if path.exists():
        return load(path), False
    creds = ClusterCredentials(client_secret=new_secret(), node_secret=new_secret())
    write_private(path, json.dumps({"client_secret": creds.client_secret, "node_secret": creds.node_secret},
                                   indent=2) + "\n")
    return creds, True


# ---------------------------------------------------------------- the per-user index of local clusters


def home(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    return Path(env[ENV_HOME]) if env.get(ENV_HOME) else Path.home() / ".shepherd"


def address_key(address: str) -> str:
    """``http://localhost:8088/`` -> ``127.0.0.1_8088``: one key per listening address, loopback spelt one way."""
    rest = address.split("://", 1)[-1].split("/", 1)[0]
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, ""
    host = host.strip("[]")
    if host in _LOOPBACK or host.startswith("127."):
        host = "127.0.0.1"
    return f"{host}_{port}".replace("/", "_")


def register(addresses: list[str], path: Path, env: dict[str, str] | None = None) -> None:
    """Let clients of these addresses find ``path`` on their own."""
    index = home(env) / "clusters"
    index.mkdir(parents=True, exist_ok=True, mode=0o700)
    for address in addresses:
        if address:
            write_private(index / address_key(address), json.dumps({"credentials": str(path.resolve())}) + "\n")


def unregister(addresses: list[str], path: Path, env: dict[str, str] | None = None) -> None:
    """Forget these addresses, unless another cluster has taken them over since."""
    index = home(env) / "clusters"
    for address in addresses:
        entry = index / address_key(address) if address else None
        if entry is not None and _entry_target(entry) == str(path.resolve()):
            with contextlib.suppress(OSError):
                entry.unlink()


def _entry_target(entry: Path) -> str | None:
    try:
        data = json.loads(entry.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    target = data.get("credentials") if isinstance(data, dict) else None
    return target if isinstance(target, str) else None


def find_file(address: str | None, env: dict[str, str] | None = None) -> Path | None:
    """The credentials file for a client of ``address``: ``$SHEPHERD_CREDENTIALS``, else the index entry."""
    env = dict(os.environ) if env is None else env
    if env.get(ENV_FILE):
        return Path(env[ENV_FILE])
    if not address:
        return None
    target = _entry_target(home(env) / "clusters" / address_key(address))
    return Path(target) if target else None


def client_secret(address: str | None, explicit: str | None = None, env: dict[str, str] | None = None) -> str | None:
    """The client secret to present to the RM at ``address`` (None: none found, the call goes without).
    An explicit ``""`` means none."""
    env = dict(os.environ) if env is None else env
    if explicit is not None:
        return explicit or None
    # credentials the user's config binds to this very address come first: a secret exported for another
    # cluster (``shepherd up`` prints such exports) must not be sent here
    named = user_config.credentials_for(address, address_key, env) if address else None
    if named is not None:
        return load(named).client_secret  # named in the user's own config: a problem with it is an error
    if env.get(ENV_CLIENT_SECRET):
        return env[ENV_CLIENT_SECRET]
    path = find_file(address, env)
    if path is None:
        return None
    try:
        return load(path).client_secret
    except CredentialsError:
        if env.get(ENV_FILE):
            raise
        return None  # a stale index entry (the cluster's data is gone): go without
