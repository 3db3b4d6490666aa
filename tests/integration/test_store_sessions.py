"""Migration 0014: nodes keep the hash of their registration's session and the meta row the container-token keys,
on SQLite and PostgreSQL; a store from before it reads back with neither, and its one key becomes key 1."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from rm.core.ledger import Ledger
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig
from rm.service.store import Store, default_sqlite_url
from tests.integration.conftest import empty_pg_database
from tests.integration.test_store import down_and_up, meta, node


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield default_sqlite_url(tmp_path / "data" / "rm")
        return
    yield from empty_pg_database(request.getfixturevalue("pg_admin"))


def _reload(url: str) -> tuple[object, ...]:
    store = Store(url)
    try:
        loaded = store.load()
    finally:
        store.close()
    return loaded.meta, loaded.nodes


def test_sessions_and_keys_round_trip(store_url: str) -> None:
    keys = ({"id": 4, "key": "ab" * 32, "created": 1732233600.5, "activates": 1732233600.5},
            {"id": 5, "key": "cd" * 32, "created": 1732320000.25, "activates": 1732320900.25})
    store = Store(store_url)
    store.migrate()
    store.write([meta(container_keys=keys), node(session_hash="f0" * 32)])
    store.close()
    assert _reload(store_url) == (meta(container_keys=keys), (node(session_hash="f0" * 32),))


def test_a_store_from_before_keys_rolled_reads_back_with_its_key_as_key_1(store_url: str) -> None:
    store = Store(store_url)
    store.migrate()
    store.write([meta(), node()])
    store.close()
    down_and_up(store_url, "0013")  # the columns go, and come back empty for the rows already there
    stored_meta, nodes = _reload(store_url)
    assert stored_meta == meta()
    assert nodes == (node(session_hash=""),)
    store = Store(store_url)
    stored = store.load()
    store.close()
    ledger = Ledger.recover(stored, build_queues(), CoreConfig(), now=1732233700.0)
    (key,) = ledger.container_keys.accepted()
    assert (key.key_id, key.key.hex()) == (1, meta().container_key_hex)
    assert ledger.meta == dataclasses.replace(meta(), epoch=meta().epoch + 1, container_keys=(key.to_dict(),))
