"""Tokens the ResourceManager issues: AMRM (an AM acting for its attempt), NM (an AM talking to a
NodeManager) and container tokens (permission to start one container on one node).

A token is ``base64url(json payload) "." base64url(HMAC-SHA256(key, payload))``. The RM keeps the
keys; NodeManagers receive the container-token keys (those that may have signed a token they are to accept)
when they register and with their heartbeats. Container and NM tokens name the key that signed them
(``key_id``); one without is from before keys rolled. Pure: no I/O, time passed in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

TokenKind = Literal["amrm", "nm", "container", "user"]


class InvalidToken(Exception):
    """The token is malformed, forged, expired, or for something else."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    pad = "=" * (-len(text) % 4)
    return base64.urlsafe_b64decode(text + pad)


def sign(key: bytes, kind: TokenKind, fields: dict[str, Any]) -> str:
    payload = json.dumps({"kind": kind, **fields}, sort_keys=True, separators=(",", ":")).encode()
    mac = hmac.new(key, payload, hashlib.sha256).digest()
    return _b64(payload) + "." + _b64(mac)


def verify(key: bytes, token: str, kind: TokenKind, *, now: float | None = None) -> dict[str, Any]:
    """Return the token's fields when it is genuine, of ``kind`` and (if it expires) not expired."""
    try:
        body, mac_text = token.split(".", 1)
        payload = _unb64(body)
        mac = _unb64(mac_text)
    except (ValueError, AttributeError) as exc:
        raise InvalidToken("malformed token") from exc
    expected = hmac.new(key, payload, hashlib.sha256).digest()
    if not hmac.compare_digest(mac, expected):
        raise InvalidToken("token signature does not match")
    try:
        fields = json.loads(payload)
    except ValueError as exc:
        raise InvalidToken("malformed token payload") from exc
    if not isinstance(fields, dict) or fields.get("kind") != kind:
        raise InvalidToken(f"not a {kind} token")
    expires = fields.get("expires")
    if now is not None and isinstance(expires, int | float) and now > expires:
        raise InvalidToken("token has expired")
    return fields


@dataclass(frozen=True, slots=True)
class ContainerTokenFields:
    container_id: str
    node_id: str
    app_id: str
    user: str
    resource: dict[str, int]
    expires: float


def container_token(key: bytes, f: ContainerTokenFields, *, key_id: int | None = None) -> str:
    fields: dict[str, Any] = {
        "container_id": f.container_id,
        "node_id": f.node_id,
        "app_id": f.app_id,
        "user": f.user,
        "resource": f.resource,
        "expires": f.expires,
    }
    if key_id is not None:
        fields["key_id"] = key_id
    return sign(key, "container", fields)


def read_container_token(key: bytes, token: str, *, now: float) -> ContainerTokenFields:
    fields = verify(key, token, "container", now=now)
    try:
        return ContainerTokenFields(
            container_id=str(fields["container_id"]),
            node_id=str(fields["node_id"]),
            app_id=str(fields["app_id"]),
            user=str(fields["user"]),
            resource={str(k): int(v) for k, v in dict(fields["resource"]).items()},
            expires=float(fields["expires"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidToken("container token lacks fields") from exc


def amrm_token(key: bytes, attempt_id: str) -> str:
    return sign(key, "amrm", {"attempt_id": attempt_id})


def read_amrm_token(key: bytes, token: str) -> str:
    """The attempt id the token authenticates."""
    return str(verify(key, token, "amrm").get("attempt_id", ""))


def nm_token(key: bytes, attempt_id: str, node_id: str, *, key_id: int | None = None) -> str:
    fields: dict[str, Any] = {"attempt_id": attempt_id, "node_id": node_id}
    if key_id is not None:
        fields["key_id"] = key_id
    return sign(key, "nm", fields)


def read_nm_token(key: bytes, token: str) -> tuple[str, str]:
    """(attempt id, node id) the token authenticates."""
    fields = verify(key, token, "nm")
    return str(fields.get("attempt_id", "")), str(fields.get("node_id", ""))


def key_id_of(token: str) -> int | None:
    """The id of the key a token says signed it, read without verifying anything (only to pick the key to verify
    it with); None when it names none."""
    try:
        fields = json.loads(_unb64(token.split(".", 1)[0]))
    except (ValueError, AttributeError) as exc:
        raise InvalidToken("malformed token") from exc
    key_id = fields.get("key_id") if isinstance(fields, dict) else None
    if key_id is None:
        return None
    if not isinstance(key_id, int) or isinstance(key_id, bool):
        raise InvalidToken("malformed token key id")
    return key_id


T = TypeVar("T")


class Remembered(Generic[T]):
    """Tokens known to be good (verified, or minted here) and what each stands for, so that a token that does
    not expire is verified once; past ``limit`` they are all forgotten (and verified afresh)."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._known: dict[str, T] = {}

    def get(self, token: str) -> T | None:
        return self._known.get(token)

    def add(self, token: str, value: T) -> None:
        if len(self._known) >= self.limit:
            self._known.clear()
        self._known[token] = value

    def __len__(self) -> int:
        return len(self._known)
