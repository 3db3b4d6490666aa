"""Container-token keys roll (YARN's master-key roll): which key signs, which keys NodeManagers accept, what
is stored, and the NodeManager's choice of key for a token."""

from __future__ import annotations

from pathlib import Path

import pytest

from common import tokens
from common.resources import Resources
from nodemanager.service import TokenKeys
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.ledger.keys import KeyRing, KeyRoll, MasterKey
from rm.core.plan import Place, Plan
from rm.core.queues import build_queues
from rm.core.records import MetaRecord, StoredState
from rm.core.state_types import CoreConfig
from tests.unit.test_state import add_node, running_app

TS = 1_700_000_000_000
T0 = TS / 1000  # when the first key was made
ROLL = KeyRoll(interval_s=60.0, activation_delay_s=15.0)


def fresh(n: int = 0) -> bytes:
    return bytes([n]) * 32


def ring() -> KeyRing:
    return KeyRing([MasterKey(1, fresh(1), T0, T0)])


def ids(keys: tuple[MasterKey, ...]) -> list[int]:
    return [k.key_id for k in keys]


def test_the_activation_delay_is_yarns_unless_the_interval_is_short() -> None:
    assert KeyRoll.of(86_400, nm_expiry_s=600) == KeyRoll(86_400, 900)  # 1.5 × the NodeManager expiry
    assert KeyRoll.of(6, nm_expiry_s=600) == KeyRoll(6, 2)  # a third of the interval
    with pytest.raises(ValueError, match="positive"):
        KeyRoll.of(0, nm_expiry_s=600)


def test_a_key_is_made_every_interval_and_signs_only_after_its_delay() -> None:
    r = ring()
    assert r.tick(T0 + 59, ROLL, lambda: fresh(2)) == (False, False)
    assert r.tick(T0 + 60, ROLL, lambda: fresh(2)) == (False, True)  # key 2 made: handed out, not signing
    assert (r.current.key_id, ids(r.accepted())) == (1, [1, 2])
    assert r.tick(T0 + 74, ROLL, lambda: fresh(3)) == (False, False)
    assert r.tick(T0 + 75, ROLL, lambda: fresh(3)) == (True, False)  # key 2 signs; key 1 still accepted
    assert (r.current.key_id, ids(r.accepted())) == (2, [1, 2])
    assert r.tick(T0 + 119, ROLL, lambda: fresh(3)) == (False, False)
    assert r.tick(T0 + 120, ROLL, lambda: fresh(3)) == (False, True)  # key 3 made: key 1 is no longer accepted
    assert (r.current.key_id, ids(r.accepted())) == (2, [2, 3])
    assert r.newest == MasterKey(3, fresh(3), T0 + 120, T0 + 135)


def test_an_rm_down_for_several_intervals_makes_one_key() -> None:
    r = ring()
    assert r.tick(T0 + 1000, ROLL, lambda: fresh(2)) == (False, True)
    assert r.tick(T0 + 1001, ROLL, lambda: fresh(3)) == (False, False)
    assert ids(r.accepted()) == [1, 2]


def test_a_stored_ring_comes_back_with_the_older_key_signing_until_a_tick() -> None:
    r = ring()
    r.tick(T0 + 60, ROLL, lambda: fresh(2))
    back = KeyRing.from_records(r.records(), "")
    assert back.records() == r.records()
    assert back.current.key_id == 1  # every NodeManager that knows the ring accepts the older key
    back.tick(T0 + 80, ROLL, lambda: fresh(3))
    assert back.current.key_id == 2
    legacy = KeyRing.from_records((), fresh(7).hex(), created=T0)  # a store from before keys rolled
    assert legacy.accepted() == (MasterKey(1, fresh(7), T0, T0),)


def _ledger(**cfg: float) -> Ledger:
    return Ledger(Ledger.fresh_meta(TS), build_queues(), CoreConfig(**cfg))  # type: ignore[arg-type]


def test_the_ledger_signs_with_the_current_key_and_stores_the_keys_it_makes() -> None:
    st = _ledger(container_key_roll_s=60.0, nm_expiry_s=10.0)  # activation delay 15 s
    assert (st.container_key_id, ids(st.container_keys.accepted())) == (1, [1])
    assert st.meta.container_keys == st.container_keys.records()
    n = add_node(st, now=T0)
    app_id, amrm = running_app(st, n, now=T0)
    st.drain_records()

    def allocate(response_id: int, now: float) -> tuple[str, list[tuple[str, str]]]:
        ask = Ask(allocation_request_id=response_id, priority=1, capability=Resources.of(memory_mb=256, vcores=1),
                  num_containers=1)
        asked = st.am_allocate(amrm, 2 * response_id, [ask], [], 0.1, [], [], now)
        st.apply_plan(Plan(based_on=st.version, placements=[Place(
            app_id=app_id, allocation_request_id=response_id, node_id=n, resource=ask.capability,
            priority=1)]), now)
        res = st.am_allocate(amrm, 2 * response_id + 1, [], [], 0.1, [], [], now)
        return res.allocated[0].token, [*asked.nm_tokens, *res.nm_tokens]

    first, nm_first = allocate(0, T0 + 1)
    assert tokens.key_id_of(first) == 1
    assert [tokens.key_id_of(t) for _, t in nm_first] == [1]
    assert st.roll_container_keys(T0 + 59) == []
    st.drain_records()
    made = st.roll_container_keys(T0 + 60)
    assert len(made) == 1
    assert "key 2 made" in made[0]
    (stored,) = st.drain_records()  # the new key is stored with the meta record
    assert stored == st.meta
    assert [k["id"] for k in stored.container_keys] == [1, 2]
    assert stored.container_key_hex == st.container_keys.newest.key.hex()
    assert tokens.key_id_of(allocate(1, T0 + 61)[0]) == 1  # made, not yet signing
    st.drain_records()
    assert st.roll_container_keys(T0 + 75) == ["container-token key 2 now signs container and NM tokens"]
    assert st.drain_records() == []  # an activation changes nothing stored
    second, nm_second = allocate(2, T0 + 76)
    assert tokens.key_id_of(second) == 2
    # the AM's NM token for the node is renewed under the new key, without asking
    assert [(node, tokens.key_id_of(t)) for node, t in nm_second] == [(n, 2)]
    assert tokens.read_nm_token(st.container_key, nm_second[0][1]) == (st.apps[app_id].attempts[0].attempt_id, n)


def test_recovery_keeps_the_keys_and_the_one_that_signs() -> None:
    st = _ledger(container_key_roll_s=60.0, nm_expiry_s=10.0)
    st.roll_container_keys(T0 + 60)
    st.roll_container_keys(T0 + 75)
    stored = StoredState(meta=st.meta, apps=(), attempts=(), containers=(), nodes=())
    back = Ledger.recover(stored, build_queues(), CoreConfig(container_key_roll_s=60.0, nm_expiry_s=10.0),
                          now=T0 + 80)
    assert back.container_keys.accepted() == st.container_keys.accepted()
    assert back.container_key_id == 2
    assert back.meta.epoch == st.meta.epoch + 1
    # a store from before keys rolled: its one key is key 1, made at the restart
    legacy = StoredState(meta=MetaRecord(cluster_timestamp=TS, next_app_seq=1, epoch=0, amrm_key_hex=fresh(1).hex(),
                                         container_key_hex=fresh(9).hex()), apps=(), attempts=(), containers=(), nodes=())
    old = Ledger.recover(legacy, build_queues(), CoreConfig(), now=T0 + 5)
    assert old.container_keys.accepted() == (MasterKey(1, fresh(9), T0 + 5, T0 + 5),)
    assert old.meta.container_keys == old.container_keys.records()


def _container_token(key: bytes, key_id: int | None) -> str:
    fields = tokens.ContainerTokenFields(container_id="container_1_0001_01_000002", node_id="n1:7040",
                                         app_id="application_1_0001", user="u", resource={"vcores": 1},
                                         expires=T0 + 600)
    return tokens.container_token(key, fields, key_id=key_id)


def test_a_nodemanager_accepts_only_the_keys_it_was_handed_and_checks_the_one_a_token_names() -> None:
    keys = TokenKeys()
    keys.replace([(1, fresh(1)), (2, fresh(2))])
    assert keys.read_container_token(_container_token(fresh(1), 1), now=T0).app_id == "application_1_0001"
    assert keys.read_container_token(_container_token(fresh(2), 2), now=T0).app_id == "application_1_0001"
    assert keys.read_container_token(_container_token(fresh(2), None), now=T0)  # names no key: any accepted one
    with pytest.raises(tokens.InvalidToken, match="signature"):  # names key 2, signed with key 1
        keys.read_container_token(_container_token(fresh(1), 2), now=T0)
    with pytest.raises(tokens.InvalidToken, match="signature"):  # a guessed key
        keys.read_container_token(_container_token(fresh(42), 2), now=T0)
    keys.replace([(2, fresh(2)), (3, fresh(3))])  # the next roll: key 1 is refused from now on
    with pytest.raises(tokens.InvalidToken, match="key 1, which this NodeManager does not accept"):
        keys.read_container_token(_container_token(fresh(1), 1), now=T0)
    with pytest.raises(tokens.InvalidToken, match="signature"):
        keys.read_container_token(_container_token(fresh(1), None), now=T0)
    assert keys.ids() == (3, 2)
    with pytest.raises(tokens.InvalidToken, match="malformed"):
        keys.read_container_token("%%%.x", now=T0)


def test_the_rolling_interval_is_a_setting(tmp_path: Path) -> None:
    from rm.service.settings import load_rm_settings

    key = "yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs"
    assert load_rm_settings(env={}).config.container_key_roll_s == 86_400
    site = tmp_path / "shepherd.yaml"
    site.write_text(f"{key}: 30\n")
    cfg = load_rm_settings(env={}, config_file=site).config
    assert (cfg.container_key_roll_s, cfg.core().container_key_roll_s) == (30, 30)
    site.write_text(f"{key}: 0\n")
    with pytest.raises(ValueError, match="rolling interval must be positive"):
        load_rm_settings(env={}, config_file=site).config.validate()
