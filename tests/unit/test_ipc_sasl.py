"""DIGEST-MD5 token authentication as Hadoop uses it (RFC 2831, qop=auth, realm "default")."""

from __future__ import annotations

import base64
import hashlib

import pytest

from common.hadoop import sasl

IDENT = b"\x0a\x0c\x0a\x06\x08\x01\x10\xe8\x07\x10\x01\x10\x01"
PASSWORD = b"sixteen byte pwd"


def challenge() -> tuple[str, bytes]:
    nonce = sasl.new_nonce()
    return nonce, sasl.server_challenge(nonce)


def test_client_and_server_agree() -> None:
    nonce, chal = challenge()
    step = sasl.client_response(chal, IDENT, PASSWORD)
    outcome = sasl.verify_response(step.response, nonce, lambda ident: [PASSWORD] if ident == IDENT else [])
    assert outcome.identifier == IDENT
    assert outcome.rspauth == step.expected_rspauth


def test_response_value_follows_rfc_2831() -> None:
    """The digest computed independently, as a Java DIGEST-MD5 client does."""
    nonce, chal = challenge()
    step = sasl.client_response(chal, IDENT, PASSWORD, cnonce="OA6MHXh6VqTrRk")
    d = sasl.parse_directives(step.response)
    user, pw = base64.b64encode(IDENT).decode(), base64.b64encode(PASSWORD).decode()

    def md5(b: bytes) -> bytes:
        return hashlib.md5(b).digest()

    def hexmd5(b: bytes) -> str:
        return hashlib.md5(b).hexdigest()

    a1 = md5(f"{user}:default:{pw}".encode()) + f":{nonce}:OA6MHXh6VqTrRk".encode()
    a2 = b"AUTHENTICATE:/default"
    expected = hexmd5(f"{hexmd5(a1)}:{nonce}:00000001:OA6MHXh6VqTrRk:auth:{hexmd5(a2)}".encode())
    assert d["response"] == expected
    assert d["digest-uri"] == "/default"
    assert d["realm"] == "default"
    assert d["qop"] == "auth"


def test_wrong_password_is_refused() -> None:
    nonce, chal = challenge()
    step = sasl.client_response(chal, IDENT, b"not the password")
    with pytest.raises(sasl.SaslError, match="Mismatched response"):
        sasl.verify_response(step.response, nonce, lambda ident: [PASSWORD])


def test_any_of_several_keys_may_match() -> None:
    nonce, chal = challenge()
    step = sasl.client_response(chal, IDENT, PASSWORD)
    assert sasl.verify_response(step.response, nonce, lambda ident: [b"old", PASSWORD]).identifier == IDENT


@pytest.mark.parametrize("response", [
    b"", b"username", b'username="x', b"\xff\xfe", b'username="x",nonce="n"',
])
def test_malformed_responses_are_refused(response: bytes) -> None:
    with pytest.raises(sasl.SaslError):
        sasl.verify_response(response, "n", lambda ident: [PASSWORD])


def test_unknown_identifier_and_replayed_nonce_are_refused() -> None:
    nonce, chal = challenge()
    step = sasl.client_response(chal, IDENT, PASSWORD)
    with pytest.raises(sasl.SaslError, match="not valid"):
        sasl.verify_response(step.response, nonce, lambda ident: [])
    with pytest.raises(sasl.SaslError, match="nonce"):
        sasl.verify_response(step.response, sasl.new_nonce(), lambda ident: [PASSWORD])


def test_parse_directives_handles_quotes_and_escapes() -> None:
    d = sasl.parse_directives(b'realm="a,b",nonce="x\\"y",qop=auth,  charset=utf-8')
    assert d == {"realm": "a,b", "nonce": 'x"y', "qop": "auth", "charset": "utf-8"}
