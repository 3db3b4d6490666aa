"""Hadoop-format tokens minted by the RM: AMRM tokens, NM tokens and container tokens.

A token is ``Token{identifier, password, kind, service}``: the identifier is the serialized
identifier message (no length prefix), the password an HMAC-SHA256 of kind and identifier under
an RM key: the AMRM key for AMRM tokens, the container key (which NodeManagers receive from the RM;
it rolls, and the identifier names the key's id) for NM and container tokens. Binding the kind into the
HMAC keeps one kind of token from passing for another. Verification needs only the identifier and the
key, so a DIGEST-MD5 server can compute the password a client must know.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import socket
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from common.hadoop import records
from common.resources import Resources
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_records_pb2 as yr
from proto.hadoop import yarn_tokens_pb2 as yt

KIND_AMRM = "YARN_AM_RM_TOKEN"
KIND_NM = "NMToken"
KIND_CONTAINER = "ContainerToken"
KEY_ID = 1


class TokenError(Exception):
    """Not a genuine token of the expected kind, or one that has expired."""


def password(key: bytes, kind: str, identifier: bytes) -> bytes:
    return hmac.new(key, kind.encode() + b"\0" + identifier, hashlib.sha256).digest()


def genuine(key: bytes, kind: str, identifier: bytes, pw: bytes) -> bool:
    return hmac.compare_digest(password(key, kind, identifier), pw)


def _token(key: bytes, kind: str, identifier: bytes, service: str) -> ipc.Token:
    return ipc.Token(identifier=identifier, password=password(key, kind, identifier), kind=kind,
                     service=service)


# ---------------------------------------------------------------- AMRM


def amrm_token(key: bytes, attempt_id: str, service: str) -> ipc.Token:
    ident = yt.AMRMTokenIdentifier(app_attempt_id=records.attempt_id_pb(attempt_id), key_id=KEY_ID)
    return _token(key, KIND_AMRM, ident.SerializeToString(), service)


def read_amrm(identifier: bytes) -> str:
    """The attempt id an AMRM identifier names (authenticity is checked separately)."""
    try:
        ident = yt.AMRMTokenIdentifier.FromString(identifier)
        return records.attempt_id_str(ident.app_attempt_id)
    except (DecodeError, ValueError) as exc:
        raise TokenError(f"malformed AMRMToken identifier: {exc}") from exc


# ---------------------------------------------------------------- NM


@dataclass(frozen=True, slots=True)
class NMIdentity:
    attempt_id: str
    app_id: str
    node_id: str  # host:port of the ContainerManagement listener
    submitter: str


def nm_token(key: bytes, attempt_id: str, node_id: str, submitter: str, *, key_id: int = KEY_ID) -> ipc.Token:
    ident = yt.NMTokenIdentifier(app_attempt_id=records.attempt_id_pb(attempt_id),
                                 node_id=records.node_id_pb(node_id), app_submitter=submitter, key_id=key_id)
    return _token(key, KIND_NM, ident.SerializeToString(), node_id)


def read_nm(identifier: bytes) -> NMIdentity:
    try:
        ident = yt.NMTokenIdentifier.FromString(identifier)
        attempt = records.attempt_id_str(ident.app_attempt_id)
        return NMIdentity(attempt_id=attempt, app_id=records.app_id_str(ident.app_attempt_id.application_id),
                          node_id=records.node_id_str(ident.node_id), submitter=ident.app_submitter)
    except (DecodeError, ValueError) as exc:
        raise TokenError(f"malformed NMToken identifier: {exc}") from exc


# ---------------------------------------------------------------- container


@dataclass(frozen=True, slots=True)
class ContainerGrant:
    """What a container token allows: one container, with these resources, on one node."""

    container_id: str
    app_id: str
    node_id: str
    submitter: str
    resource: Resources
    expiry_ms: int
    priority: int
    is_am: bool
    allocation_request_id: int


def container_token(key: bytes, grant: ContainerGrant, *, rm_identifier: int, created_ms: int,
                    key_id: int = KEY_ID) -> ipc.Token:
    ident = yt.ContainerTokenIdentifier(
        container_id=records.container_id_pb(grant.container_id), nm_host_addr=grant.node_id,
        app_submitter=grant.submitter, resource=records.resource_pb(grant.resource),
        expiry_time_stamp=grant.expiry_ms, master_key_id=key_id, rm_identifier=rm_identifier,
        priority=yr.Priority(priority=grant.priority), creation_time=created_ms,
        container_type=yr.APPLICATION_MASTER if grant.is_am else yr.TASK,
        execution_type=yr.GUARANTEED, allocation_request_id=grant.allocation_request_id,
    )
    return _token(key, KIND_CONTAINER, ident.SerializeToString(), grant.node_id)


def read_container(identifier: bytes) -> ContainerGrant:
    try:
        ident = yt.ContainerTokenIdentifier.FromString(identifier)
        cid = records.container_id_str(ident.container_id)
        return ContainerGrant(
            container_id=cid, app_id=records.app_id_str(ident.container_id.app_id), node_id=ident.nm_host_addr,
            submitter=ident.app_submitter, resource=records.resources_from_pb(ident.resource),
            expiry_ms=ident.expiry_time_stamp, priority=ident.priority.priority,
            is_am=ident.container_type == yr.APPLICATION_MASTER,
            allocation_request_id=ident.allocation_request_id,
        )
    except (DecodeError, ValueError) as exc:
        raise TokenError(f"malformed ContainerToken identifier: {exc}") from exc


def verify_container(keys: tuple[bytes, ...], token: ipc.Token, *, now_ms: int) -> ContainerGrant:
    """A genuine, unexpired container token's grant (any of ``keys`` may have signed it)."""
    if token.kind != KIND_CONTAINER:
        raise TokenError(f"expected a {KIND_CONTAINER}, got {token.kind!r}")
    if not any(genuine(k, KIND_CONTAINER, token.identifier, token.password) for k in keys):
        raise TokenError("container token password does not match")
    grant = read_container(token.identifier)
    if grant.expiry_ms and now_ms > grant.expiry_ms:
        raise TokenError(f"container token for {grant.container_id} expired")
    return grant


# ---------------------------------------------------------------- RM delegation


KIND_RM_DELEGATION = "RM_DELEGATION_TOKEN"
RM_DELEGATION_MAX_LIFETIME_MS = 7 * 24 * 3600 * 1000  # yarn.resourcemanager.delegation.token.max-lifetime


@dataclass(frozen=True, slots=True)
class Delegation:
    """Who an RM delegation token lets its holder act as, and until when."""

    owner: str
    renewer: str
    issue_ms: int
    max_ms: int
    sequence: int


def service_of(address: str) -> str:
    """A token service as Hadoop builds it (SecurityUtil.buildTokenService): the address with its host resolved
    to an IP."""
    host, _, port = address.rpartition(":")
    with contextlib.suppress(OSError):
        host = socket.gethostbyname(host)
    return f"{host}:{port}"


def rm_delegation_key(client_secret: str) -> bytes:
    """The key RM delegation tokens are signed with: derived from the client secret, so tokens survive an RM
    restart and die with the secret."""
    return hmac.new(client_secret.encode(), b"shepherd RM delegation token key", hashlib.sha256).digest()


def rm_delegation_token(key: bytes, d: Delegation, service: str) -> ipc.Token:
    ident = yt.YARNDelegationTokenIdentifierProto(
        owner=d.owner, renewer=d.renewer, realUser="", issueDate=d.issue_ms, maxDate=d.max_ms,
        sequenceNumber=d.sequence, masterKeyId=KEY_ID)
    return _token(key, KIND_RM_DELEGATION, ident.SerializeToString(), service)


def read_rm_delegation(identifier: bytes) -> Delegation:
    try:
        ident = yt.YARNDelegationTokenIdentifierProto.FromString(identifier)
    except DecodeError as exc:
        raise TokenError(f"malformed RM delegation token identifier: {exc}") from exc
    if not ident.owner or not ident.HasField("maxDate"):
        raise TokenError("an RM delegation token identifier names an owner and a maximum date")
    return Delegation(owner=ident.owner, renewer=ident.renewer, issue_ms=ident.issueDate, max_ms=ident.maxDate,
                      sequence=ident.sequenceNumber)


def rm_delegation_password(key: bytes, identifier: bytes, *, now_ms: int) -> bytes | None:
    """The password of an unexpired RM delegation token with this identifier (None: not one, or expired)."""
    try:
        d = read_rm_delegation(identifier)
    except TokenError:
        return None
    if now_ms > d.max_ms:
        return None
    return password(key, KIND_RM_DELEGATION, identifier)


def issue_rm_delegation(client_secret: str, owner: str, service: str, *, now_ms: int, sequence: int = 0,
                        renewer: str = "") -> ipc.Token:
    """An RM delegation token for ``owner``, valid for the longest lifetime from ``now_ms``: what the RM issues
    to a holder of its client secret (who may act as anyone)."""
    d = Delegation(owner=owner, renewer=renewer or owner, issue_ms=now_ms,
                   max_ms=now_ms + RM_DELEGATION_MAX_LIFETIME_MS, sequence=sequence)
    return rm_delegation_token(rm_delegation_key(client_secret), d, service)
