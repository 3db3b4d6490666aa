"""SASL for Hadoop IPC: SIMPLE, and TOKEN authentication with DIGEST-MD5 (RFC 2831, qop "auth").

Hadoop's token authentication is DIGEST-MD5 with the token identifier as the user name and the
token password as the secret, both base64-encoded, in realm "default". The server sends its
challenge inside the NEGOTIATE reply, the client answers in INITIATE, and the server's SUCCESS
carries ``rspauth`` so the client can check the server knew the password too. Only the "auth"
quality of protection is offered: after SASL the connection is not wrapped.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass

REALM = "default"
SERVER_ID = "default"
SASL_PROTOCOL = ""
DIGEST_URI = f"{SASL_PROTOCOL}/{SERVER_ID}"
MECHANISM = "DIGEST-MD5"
METHOD_TOKEN = "TOKEN"
METHOD_SIMPLE = "SIMPLE"
MAX_TOKEN_BYTES = 64 * 1024


class SaslError(Exception):
    """The client's SASL message is malformed or does not prove it holds the token."""


def encode_identifier(identifier: bytes) -> str:
    return base64.b64encode(identifier).decode("ascii")


def encode_password(password: bytes) -> str:
    return base64.b64encode(password).decode("ascii")


def new_nonce() -> str:
    return base64.b64encode(secrets.token_bytes(24)).decode("ascii")


def server_challenge(nonce: str) -> bytes:
    return f'realm="{REALM}",nonce="{nonce}",qop="auth",charset=utf-8,algorithm=md5-sess'.encode()


def parse_directives(data: bytes) -> dict[str, str]:
    """``key=value,key="quoted, \\"value\\""`` -> dict. Raises SaslError on malformed input."""
    if len(data) > MAX_TOKEN_BYTES:
        raise SaslError("DIGEST-MD5: message too long")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SaslError("DIGEST-MD5: message is not UTF-8") from exc
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t,":
            i += 1
        if i >= n:
            break
        eq = text.find("=", i)
        if eq < 0:
            raise SaslError("DIGEST-MD5: directive without a value")
        key = text[i:eq].strip().lower()
        i = eq + 1
        if i < n and text[i] == '"':
            i += 1
            value = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
            if i >= n:
                raise SaslError("DIGEST-MD5: unterminated quoted string")
            i += 1
            out[key] = "".join(value)
        else:
            end = text.find(",", i)
            end = n if end < 0 else end
            out[key] = text[i:end].strip()
            i = end
        if not key:
            raise SaslError("DIGEST-MD5: empty directive name")
    return out


def _md5(data: bytes) -> bytes:
    return hashlib.md5(data, usedforsecurity=False).digest()


def _hex(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _response_value(d: dict[str, str], password: str, a2_prefix: str) -> str:
    a1 = _md5(f"{d['username']}:{d.get('realm', '')}:{password}".encode()) + \
        f":{d['nonce']}:{d['cnonce']}".encode()
    if d.get("authzid"):
        a1 += f":{d['authzid']}".encode()
    a2 = f"{a2_prefix}:{d['digest-uri']}".encode()
    qop = d.get("qop", "auth")
    return _hex(f"{_hex(a1)}:{d['nonce']}:{d['nc']}:{d['cnonce']}:{qop}:{_hex(a2)}".encode())


@dataclass(frozen=True, slots=True)
class DigestOutcome:
    identifier: bytes  # the token identifier the client proved it holds
    rspauth: bytes  # the server's proof, sent in SUCCESS


def verify_response(response: bytes, nonce: str, passwords_for: Callable[[bytes], Sequence[bytes]]
                    ) -> DigestOutcome:
    """Check a client's digest-response to our challenge with ``nonce``.

    ``passwords_for(identifier)`` returns the passwords the RM may have minted for that identifier
    (one per key still accepted), none when the identifier is not one of ours.
    """
    d = parse_directives(response)
    for key in ("username", "nonce", "cnonce", "nc", "response", "digest-uri"):
        if key not in d:
            raise SaslError(f"DIGEST-MD5: digest response format violation: {key} missing")
    if d["nonce"] != nonce:
        raise SaslError("DIGEST-MD5: digest response format violation. Mismatched nonce.")
    if d.get("qop", "auth") != "auth":
        raise SaslError(f"DIGEST-MD5: quality of protection {d['qop']!r} is not offered")
    if d.get("realm", REALM) != REALM:
        raise SaslError("DIGEST-MD5: unknown realm")
    try:
        identifier = base64.b64decode(d["username"], validate=True)
    except ValueError as exc:
        raise SaslError("DIGEST-MD5: the user name is not a base64 token identifier") from exc
    candidates = passwords_for(identifier)
    if not candidates:
        raise SaslError("DIGEST-MD5: the token identifier is not valid here")
    for password in candidates:
        secret = encode_password(password)
        expected = _response_value(d, secret, "AUTHENTICATE")
        if hmac.compare_digest(expected, d["response"].lower()):
            rspauth = _response_value(d, secret, "")
            return DigestOutcome(identifier=identifier, rspauth=f"rspauth={rspauth}".encode())
    raise SaslError("DIGEST-MD5: digest response format violation. Mismatched response.")


@dataclass(frozen=True, slots=True)
class DigestClientStep:
    response: bytes  # what the client sends in INITIATE
    expected_rspauth: bytes  # what a genuine server answers in SUCCESS


def client_response(challenge: bytes, identifier: bytes, password: bytes, *, cnonce: str | None = None
                    ) -> DigestClientStep:
    """The client side (used by shepherd's own IPC client and by tests)."""
    c = parse_directives(challenge)
    if "nonce" not in c:
        raise SaslError("DIGEST-MD5: challenge without a nonce")
    d = {
        "username": encode_identifier(identifier),
        "realm": c.get("realm", REALM),
        "nonce": c["nonce"],
        "nc": "00000001",
        "cnonce": cnonce or new_nonce(),
        "digest-uri": DIGEST_URI,
        "qop": "auth",
    }
    secret = encode_password(password)
    d["response"] = _response_value(d, secret, "AUTHENTICATE")
    text = (f'charset=utf-8,username="{d["username"]}",realm="{d["realm"]}",nonce="{d["nonce"]}",'
            f'nc={d["nc"]},cnonce="{d["cnonce"]}",digest-uri="{d["digest-uri"]}",maxbuf=65536,'
            f'response={d["response"]},qop=auth')
    rspauth = _response_value(d, secret, "")
    return DigestClientStep(response=text.encode(), expected_rspauth=f"rspauth={rspauth}".encode())
