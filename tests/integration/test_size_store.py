"""SLearn's state through the real state store (SQLite, and PostgreSQL when reachable): a ledger whose records
are written and read back keeps a sampling app's gate and learns the sizes of the stored runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rm.core.ledger import Ledger
from rm.core.queues import build_queues
from rm.core.sizes.history import inverse_square
from rm.core.sizes_learn import job_key
from rm.core.state_types import CoreConfig, NodeStatus
from rm.service.store import Store, default_sqlite_url
from tests.integration.conftest import empty_pg_database
from tests.unit.test_size_history_live import _run
from tests.unit.test_size_recovery import TASKS, _gated, _offered, _place_pilots


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        urls: Iterator[str] = iter([default_sqlite_url(tmp_path / "rm")])
    else:
        urls = empty_pg_database(request.getfixturevalue("pg_admin"))
    url = next(urls)
    s = Store(url)
    s.migrate()
    yield s
    s.close()
    for _ in urls:  # drops the PostgreSQL database
        pass


def test_a_sampling_app_and_the_run_history_survive_a_restart_through_the_store(store: Store) -> None:
    st, n, app_id, token, _ = _gated()
    st.sizes.sampling = True
    earlier = _run(st, n, "nightly", [10.0, 30.0, 20.0], 2.0)  # a finished run of another family
    assert _offered(st, app_id, 40.0) == (3, TASKS)
    pilots = _place_pilots(st, app_id, token, n, 3, 40.0)
    st.node_heartbeat(n, 9, [NodeStatus(pilots[0], "COMPLETE", 0, "", 41.0, 50.0)], True, "", 50.0)
    store.write(st.drain_records())

    again = Ledger.recover(store.load(), build_queues(), CoreConfig(), now=60.0)
    again.sizes.sampling = True
    gate = again.sizes.apps[app_id].gate
    assert gate is not None
    assert (gate.ratio, gate.pilots, gate.open, gate.marks) == (0.03, 3, False, pilots)
    assert again.sizes.describe(app_id)["sampling"]["pilotsFinished"] == 1
    assert again.sizes.history is not None
    got = again.sizes.history.predict(job_key(again.apps[earlier]))
    assert got is not None
    assert got[0] == pytest.approx(inverse_square([60.0]))  # the one stored run of its family
