"""Hadoop-format AMRM, NM and container tokens, and the id / resource records they carry."""

from __future__ import annotations

import pytest

from common.hadoop import records, tokens
from common.resources import Resources
from proto.hadoop import yarn_records_pb2 as yr
from proto.hadoop import yarn_tokens_pb2 as yt

KEY, OTHER = b"k" * 32, b"o" * 32
ATTEMPT = "appattempt_1700000000000_0003_000002"


def grant(**kw: object) -> tokens.ContainerGrant:
    base: dict[str, object] = {
        "container_id": "container_e02_1700000000000_0003_02_000007", "app_id": "application_1700000000000_0003",
        "node_id": "127.0.0.1:45454", "submitter": "alice", "resource": Resources.of(memory_mb=896, vcores=1, gpu=1),
        "expiry_ms": 2_000_000, "priority": 1, "is_am": False, "allocation_request_id": -1,
    }
    base.update(kw)
    return tokens.ContainerGrant(**base)  # type: ignore[arg-type]


def test_ids_round_trip_with_epoch() -> None:
    cid = "container_e02_1700000000000_0003_02_000007"
    msg = records.container_id_pb(cid)
    assert msg.id == (2 << 40) | 7
    assert msg.app_attempt_id.attempt_id == 2
    assert records.container_id_str(msg) == cid
    assert records.attempt_id_str(records.attempt_id_pb(ATTEMPT)) == ATTEMPT
    assert records.app_id_str(records.app_id_pb("application_1700000000000_0003")) == "application_1700000000000_0003"
    with pytest.raises(records.RecordError):
        records.app_id_str(yr.ApplicationId(id=0, cluster_timestamp=1))


def test_resources_carry_the_map_and_the_legacy_fields() -> None:
    r = Resources.of(memory_mb=1408, vcores=2, gpu=1)
    msg = records.resource_pb(r)
    assert (msg.memory, msg.virtual_cores) == (1408, 2)
    assert {i.key: (i.value, i.units) for i in msg.resource_value_map} == {
        "memory-mb": (1408, "Mi"), "vcores": (2, ""), "yarn.io/gpu": (1, "")}
    assert records.resources_from_pb(msg) == r
    gi = yr.Resource(resource_value_map=[yr.ResourceInformation(key="memory-mb", value=2, units="Gi")])
    assert records.resources_from_pb(gi).memory_mb == 2048


def test_amrm_token() -> None:
    tok = tokens.amrm_token(KEY, ATTEMPT, "127.0.0.1:8030")
    assert tok.kind == "YARN_AM_RM_TOKEN"
    assert tok.service == "127.0.0.1:8030"
    assert yt.AMRMTokenIdentifier.FromString(tok.identifier).app_attempt_id.attempt_id == 2
    assert tokens.read_amrm(tok.identifier) == ATTEMPT
    assert tokens.genuine(KEY, tokens.KIND_AMRM, tok.identifier, tok.password)
    assert not tokens.genuine(OTHER, tokens.KIND_AMRM, tok.identifier, tok.password)


def test_nm_token_names_attempt_and_node() -> None:
    tok = tokens.nm_token(KEY, ATTEMPT, "127.0.0.1:45454", "alice")
    ident = tokens.read_nm(tok.identifier)
    assert (ident.attempt_id, ident.app_id, ident.node_id, ident.submitter) == (
        ATTEMPT, "application_1700000000000_0003", "127.0.0.1:45454", "alice")
    assert tok.service == "127.0.0.1:45454"


def test_container_token_verifies_and_decodes() -> None:
    tok = tokens.container_token(KEY, grant(), rm_identifier=1700000000000, created_ms=1_000_000)
    assert tokens.verify_container((OTHER, KEY), tok, now_ms=1_500_000) == grant()


def test_container_token_refusals() -> None:
    tok = tokens.container_token(KEY, grant(), rm_identifier=1, created_ms=1)
    with pytest.raises(tokens.TokenError, match="expired"):
        tokens.verify_container((KEY,), tok, now_ms=3_000_000)
    with pytest.raises(tokens.TokenError, match="password"):
        tokens.verify_container((OTHER,), tok, now_ms=1)
    forged = yt.ContainerTokenIdentifier.FromString(tok.identifier)
    forged.resource.memory = 65536
    tok2 = type(tok)(identifier=forged.SerializeToString(), password=tok.password, kind=tok.kind, service=tok.service)
    with pytest.raises(tokens.TokenError, match="password"):
        tokens.verify_container((KEY,), tok2, now_ms=1)


def test_one_kind_cannot_pass_for_another() -> None:
    nm = tokens.nm_token(KEY, ATTEMPT, "127.0.0.1:45454", "alice")
    as_container = type(nm)(identifier=nm.identifier, password=nm.password, kind="ContainerToken", service="")
    with pytest.raises(tokens.TokenError):
        tokens.verify_container((KEY,), as_container, now_ms=1)
