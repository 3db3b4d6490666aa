"""The RM state store against real databases: a SQLite file and the PostgreSQL server on loopback.

PostgreSQL tests create a fresh database per test and drop it afterwards. When the server is not
reachable they are skipped, except under CI=true, where they fail. SHEPHERD_TEST_PG_URL points them
at another server (its maintenance database, e.g. .../postgres).
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import make_url, text
from sqlalchemy.exc import IntegrityError

import rm
from rm.core.records import (
    AppRecord,
    AttemptRecord,
    ContainerRecord,
    DatasetAccessRecord,
    JobRunRecord,
    MetaRecord,
    NodeRecord,
    Record,
    SloDecisionRecord,
    StoredState,
    WorkRunRecord,
)
from rm.core.reservation.records import ReservationRecord
from rm.service.store import Store, StoreError, default_sqlite_url, make_engine, migrations_dir
from rm.service.store.models import Base
from tests.integration.conftest import empty_pg_database

REPO_ROOT = Path(rm.__file__).resolve().parent.parent
EMPTY = StoredState(meta=None, apps=(), attempts=(), containers=(), nodes=())


# -- builders: every field set to a non-default value ------------------------------------------------


def app(n: int = 1, **overrides: Any) -> AppRecord:
    fields: dict[str, Any] = {
        "app_id": f"application_1732233600123_{n:04d}",
        "name": f"wordcount «{n}»",
        "queue": "root.prod.etl",
        "user": "alice",
        "app_type": "SPARK",
        "priority": 3,
        "am_resource": {"memory-mb": 2048, "vcores": 2, "yarn.io/gpu": 1},
        "am_launch": {
            "commands": ["python", "-m", "am", "--job", "job.yaml"],
            "environment": {"PYTHONUNBUFFERED": "1"},
            "local_resources": {"job.yaml": {"path": "/data/job.yaml", "size": 412}},
        },
        "max_attempts": 4,
        "tags": ("nightly", "team:data"),
        "unmanaged": True,
        "job_spec_json": '{"stages": [{"name": "map", "tasks": 8}]}',
        "submit_time": 1732233600.123456 + n,
        "state": "RUNNING",
        "final_status": "UNDEFINED",
        "diagnostics": "line one\nline two",
        "tracking_url": f"http://127.0.0.1:8088/proxy/application_1732233600123_{n:04d}/",
        "progress": 0.375,
        "start_time": 1732233601.5 + n,
        "launch_time": 1732233602.25 + n,
        "finish_time": 0.0,
        "attempts_started": 2,
        "failed_attempts": 1,
        "inputs": ("hdfs:///raw/événements", "/data/in"),
        "outputs": ("/data/out",),
        "sizing": {"gate": {"ratio": 0.03, "since": 1732233601.5, "pilots": 3, "open": False, "openedBy": "",
                            "openedAt": 0.0, "marks": [f"container_1732233600123_{n:04d}_01_000002"]}},
        "control": ({"heard": 1732233650.125, "age_s": 2.5, "progress": 0.375, "raw_units": 6,
                     "smoothed_units": 5.2, "requested_units": 6, "finish_in_s": 120.75, "status": "ON_TRACK",
                     "held": False},
                    {"heard": 1732233710.875, "age_s": 0.0, "progress": 0.5, "raw_units": 9,
                     "smoothed_units": 5.96, "requested_units": 6, "finish_in_s": 95.5, "status": "AT_RISK",
                     "held": True}),
    }
    fields.update(overrides)
    return AppRecord(**fields)


def attempt(app_record: AppRecord, number: int = 1, **overrides: Any) -> AttemptRecord:
    cluster, seq = app_record.app_id.split("_")[1:]
    fields: dict[str, Any] = {
        "attempt_id": f"appattempt_{cluster}_{seq}_{number:06d}",
        "app_id": app_record.app_id,
        "number": number,
        "state": "RUNNING",
        "am_container_id": f"container_{cluster}_{seq}_{number:02d}_000001",
        "node_id": "host-1.example.com:45454",
        "start_time": 1732233603.75,
        "finish_time": 1732233700.5,
        "diagnostics": "AM container exited with 137",
        "counts_as_failure": False,
        "host": "host-1.example.com",
        "rpc_port": 40123,
        "tracking_url": "http://host-1.example.com:4040/",
    }
    fields.update(overrides)
    return AttemptRecord(**fields)


def container(attempt_record: AttemptRecord, n: int = 1, **overrides: Any) -> ContainerRecord:
    cluster, seq, number = attempt_record.attempt_id.split("_")[1:]
    fields: dict[str, Any] = {
        "container_id": f"container_{cluster}_{seq}_{int(number):02d}_{n:06d}",
        "app_id": attempt_record.app_id,
        "attempt_id": attempt_record.attempt_id,
        "node_id": "host-2.example.com:45454",
        "resource": {"memory-mb": 4096, "vcores": 1},
        "priority": 20,
        "allocation_request_id": 2**40 + n,
        "ask_type": "ALTRUISTIC",
        "is_am": n == 1,
        "state": "RUNNING",
        "allocate_time": 1732233604.125 + n,
        "start_time": 1732233605.0,
        "finish_time": 1732233699.0,
        "exit_status": -105,
        "diagnostics": "Container killed by the ApplicationMaster.",
        "from_leftover": True,
    }
    fields.update(overrides)
    return ContainerRecord(**fields)


def node(name: str = "host-1.example.com", **overrides: Any) -> NodeRecord:
    fields: dict[str, Any] = {
        "node_id": f"{name}:45454",
        "http_address": f"{name}:8042",
        "rack": "/rack-07",
        "capability": {"memory-mb": 65536, "vcores": 32, "yarn.io/gpu": 4},
        "state": "UNHEALTHY",
        "registered_at": 1732233500.5,
        "last_heartbeat": 1732233710.875,
        "health_report": "disk /data1 is 97% full",
        "decommission_deadline": 1732234000.25,
    }
    fields.update(overrides)
    return NodeRecord(**fields)


def meta(**overrides: Any) -> MetaRecord:
    fields: dict[str, Any] = {
        "cluster_timestamp": 1732233600123,
        "next_app_seq": 42,
        "epoch": 7,
        "amrm_key_hex": "00ff" * 16,
        "container_key_hex": "a5" * 32,
        "extra": {"reservation_seq": 3, "previous_keys": ["beef", "cafe"], "nested": {"ok": True}},
    }
    fields.update(overrides)
    return MetaRecord(**fields)


def full_batch() -> list[Record]:
    a1, a2 = app(1), app(2, state="ACCEPTED", tags=(), am_launch={})
    t1, t2 = attempt(a1, 1, state="FAILED"), attempt(a1, 2)
    return [
        meta(),
        node("host-1.example.com"),
        node("host-2.example.com", state="RUNNING", health_report=""),
        a2,
        a1,
        t2,
        t1,
        attempt(a2, 1, state="SCHEDULED"),
        container(t1, 1, state="COMPLETED"),
        container(t2, 1),
        container(t2, 2, is_am=False),
    ]


def expected_state(records: list[Record]) -> StoredState:
    """What load() returns for records holding distinct keys, in load()'s order."""
    metas = [r for r in records if isinstance(r, MetaRecord)]
    apps = [r for r in records if isinstance(r, AppRecord)]
    attempts = [r for r in records if isinstance(r, AttemptRecord)]
    containers = [r for r in records if isinstance(r, ContainerRecord)]
    nodes = [r for r in records if isinstance(r, NodeRecord)]
    return StoredState(
        meta=metas[-1] if metas else None,
        apps=tuple(sorted(apps, key=lambda r: (r.submit_time, r.app_id))),
        attempts=tuple(sorted(attempts, key=lambda r: (r.app_id, r.number, r.attempt_id))),
        containers=tuple(sorted(containers, key=lambda r: (r.app_id, r.allocate_time, r.container_id))),
        nodes=tuple(sorted(nodes, key=lambda r: r.node_id)),
    )


def reload(url: str) -> StoredState:
    """Read through a fresh Store, so nothing cached in the writer's engine can help."""
    store = Store(url)
    try:
        return store.load()
    finally:
        store.close()


# -- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield default_sqlite_url(tmp_path / "data" / "rm")
        return
    yield from empty_pg_database(request.getfixturevalue("pg_admin"))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    s.migrate()
    yield s
    s.close()


# -- schema ------------------------------------------------------------------------------------------


def test_migrate_is_idempotent(store_url: str) -> None:
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    first = Store(store_url)
    first.migrate()
    first.migrate()
    first.close()
    second = Store(store_url)
    second.migrate()
    assert second.load() == EMPTY
    second.close()

    engine = make_engine(store_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [head]
    engine.dispose()


def test_migrations_build_exactly_the_model_schema(store: Store, store_url: str) -> None:
    engine = make_engine(store_url)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()


def test_table_columns_are_the_record_fields() -> None:
    for table, record in [
        ("apps", AppRecord),
        ("attempts", AttemptRecord),
        ("containers", ContainerRecord),
        ("nodes", NodeRecord),
        ("meta", MetaRecord),
        ("reservations", ReservationRecord),
        ("job_runs", JobRunRecord),
        ("dataset_accesses", DatasetAccessRecord),
        ("slo_decisions", SloDecisionRecord),
        ("work_runs", WorkRunRecord),
    ]:
        columns = set(Base.metadata.tables[table].columns.keys()) - {"id"}
        assert columns == {f.name for f in dataclasses.fields(record)}, table


def test_alembic_command_line_upgrades_from_the_repo_root(store_url: str) -> None:
    alembic = [sys.executable, "-m", "alembic"]
    env = _child_env()
    env.pop("SHEPHERD_STORE_URL", None)
    subprocess.run(
        [*alembic, "-x", f"url={store_url}", "upgrade", "head"], cwd=REPO_ROOT, env=env, check=True
    )
    env["SHEPHERD_STORE_URL"] = store_url
    done = subprocess.run(
        [*alembic, "current"], cwd=REPO_ROOT, env=env, check=True, capture_output=True, text=True
    )
    assert "(head)" in done.stdout

    store = Store(store_url)
    store.migrate()
    store.write([meta()])
    assert store.load().meta == meta()
    store.close()


def test_sqlite_runs_in_wal_mode_with_normal_sync(tmp_path: Path) -> None:
    engine = make_engine(default_sqlite_url(tmp_path / "a" / "b"))
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
    engine.dispose()
    assert (tmp_path / "a" / "b" / "rm-state.db").is_file()


# -- reading and writing -----------------------------------------------------------------------------


def test_every_record_type_round_trips_with_all_fields(store: Store, store_url: str) -> None:
    batch = full_batch()
    store.write(batch)

    loaded = reload(store_url)
    assert loaded == expected_state(batch)
    assert loaded.apps[0].tags == ("nightly", "team:data")  # tuples come back as tuples
    assert loaded.apps[0].control[1]["held"] is True  # an ended app's control trace, every field
    assert loaded.apps[0].submit_time == 1732233600.123456 + 1  # full double precision
    assert loaded.containers[-1].allocation_request_id == 2**40 + 2


def test_load_orders_apps_by_submit_time_then_app_id(store: Store) -> None:
    store.write([app(3, submit_time=10.0), app(1, submit_time=20.0), app(2, submit_time=10.0)])
    assert [a.app_id[-1] for a in store.load().apps] == ["2", "3", "1"]


def test_write_updates_existing_rows(store: Store, store_url: str) -> None:
    first = full_batch()
    store.write(first)
    changed: list[Record] = []
    for record in first:
        if isinstance(record, AppRecord):
            changed.append(
                dataclasses.replace(record, state="FINISHED", final_status="SUCCEEDED", tags=("x",))
            )
        elif isinstance(record, AttemptRecord):
            changed.append(dataclasses.replace(record, state="FINISHED", rpc_port=1))
        elif isinstance(record, ContainerRecord):
            changed.append(dataclasses.replace(record, state="COMPLETED", exit_status=0, resource={}))
        elif isinstance(record, NodeRecord):
            changed.append(dataclasses.replace(record, state="LOST", capability={"memory-mb": 1}))
        else:
            changed.append(dataclasses.replace(record, next_app_seq=43, extra={}))
    store.write(changed[::2])
    store.write(changed[1::2])

    loaded = reload(store_url)
    assert loaded == expected_state(changed)
    assert len(loaded.apps) == 2
    assert len(loaded.containers) == 3


def test_meta_is_a_single_row(store: Store, store_url: str) -> None:
    store.write([meta()])
    store.write([meta(epoch=8, cluster_timestamp=1732233999999)])
    engine = make_engine(store_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM meta")).scalar() == 1
    engine.dispose()
    assert reload(store_url).meta == meta(epoch=8, cluster_timestamp=1732233999999)


def test_later_record_wins_within_one_batch(store: Store) -> None:
    store.write([app(1, progress=0.1), node(), app(1, progress=0.9), node(state="LOST")])
    loaded = store.load()
    assert loaded.apps == (app(1, progress=0.9),)
    assert loaded.nodes == (node(state="LOST"),)


def test_write_of_nothing_is_a_no_op(store: Store) -> None:
    store.write([])
    assert store.load() == EMPTY


def test_write_is_all_or_nothing_when_a_value_cannot_be_encoded(store: Store, store_url: str) -> None:
    before: list[Record] = [app(1), node()]
    store.write(before)
    t = attempt(app(1))
    # Meta, nodes, apps and attempts are sent before the container, whose resource is not JSON.
    bad = container(t, resource={"memory-mb": object()})
    batch: list[Record] = [meta(), node("host-9"), app(1, state="KILLED"), app(2), t, bad]

    with pytest.raises(StoreError) as failure:
        store.write(batch)

    assert isinstance(failure.value.__cause__, TypeError)
    assert reload(store_url) == expected_state(before)


def test_write_is_all_or_nothing_when_the_database_rejects_a_row(store: Store, store_url: str) -> None:
    before: list[Record] = [app(1), node()]
    store.write(before)
    t = attempt(app(1))
    # Every earlier statement of the transaction succeeds; the last one breaks NOT NULL.
    bad = container(t, state=None)
    batch: list[Record] = [meta(), node("host-9"), app(1, state="KILLED"), app(2), t, container(t, 2), bad]

    with pytest.raises(StoreError) as failure:
        store.write(batch)

    assert isinstance(failure.value.__cause__, IntegrityError)
    assert reload(store_url) == expected_state(before)
    store.write([app(3)])  # the store is still usable
    assert len(store.load().apps) == 2


def test_written_records_survive_sigkill_right_after_write_returns(store: Store, store_url: str) -> None:
    batch = full_batch()
    child = textwrap.dedent(
        """
        import os, pickle, signal, sys
        from rm.service.store import Store
        store = Store(sys.argv[1])
        records = pickle.load(sys.stdin.buffer)
        store.write(records)
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no interpreter shutdown
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", child, store_url],
        input=pickle.dumps(batch),
        env=_child_env(),
        capture_output=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    database = make_url(store_url).database
    if store_url.startswith("sqlite") and database:
        assert Path(database + "-wal").exists()  # the data is still in the WAL, never checkpointed
    assert reload(store_url) == expected_state(batch)


# -- pruning -----------------------------------------------------------------------------------------


def test_prune_completed_apps_deletes_the_oldest_with_their_attempts_and_containers(store: Store) -> None:
    records: list[Record] = []
    finished = {  # app number -> (state, finish_time)
        1: ("FINISHED", 500.0),
        2: ("FAILED", 100.0),
        3: ("KILLED", 300.0),
        4: ("FINISHED", 400.0),
        5: ("FAILED", 200.0),
    }
    for n in range(1, 9):
        state, finish_time = finished.get(n, ("RUNNING", 0.0))
        a = app(n, state=state, finish_time=finish_time)
        t = attempt(a)
        records += [a, t, container(t, 1), container(t, 2)]
    store.write(records)

    assert store.prune_completed_apps(keep=2) == 3

    loaded = store.load()
    kept = {1, 4, 6, 7, 8}  # the two newest finished ones and every running one
    assert {a.app_id for a in loaded.apps} == {app(n).app_id for n in kept}
    assert {t.app_id for t in loaded.attempts} == {app(n).app_id for n in kept}
    assert len(loaded.containers) == 2 * len(kept)
    assert {c.app_id for c in loaded.containers} == {app(n).app_id for n in kept}

    assert store.prune_completed_apps(keep=2) == 0
    assert store.prune_completed_apps(keep=0) == 2
    assert [a.state for a in store.load().apps] == ["RUNNING"] * 3
    with pytest.raises(ValueError, match="keep"):
        store.prune_completed_apps(keep=-1)


# -- run history (SLO inference) ----------------------------------------------------------------------


def job_run(job: str, n: int, **overrides: Any) -> JobRunRecord:
    fields: dict[str, Any] = {
        "app_id": f"application_1732233600123_{n:04d}", "job": job, "queue": "root.prod", "user": "etl",
        "submit_time": 1_000.0 + 86_400 * n, "start_time": 1_030.0 + 86_400 * n, "finish_time": 1_630.25 + 86_400 * n,
        "succeeded": n % 4 != 0, "skyline": (1.5, 4.0, 0.333333), "unit": {"memory-mb": 1024, "vcores": 1},
        "step_s": 60, "inputs": ("/raw/a",), "outputs": ("/etl/«b»",),
    }
    fields.update(overrides)
    return JobRunRecord(**fields)


def access(app_id: str, kind: str, path: str, t: float) -> DatasetAccessRecord:
    return DatasetAccessRecord(f"{app_id} {kind} {path}", path, kind, t, app_id)


def test_run_history_and_decisions_round_trip(store: Store, store_url: str) -> None:
    runs = [job_run("nightly", n) for n in (3, 1, 2, 4)] + [job_run("hourly", 9, inputs=(), outputs=())]
    reads = [access(runs[1].app_id, "read", "/raw/a", 1_030.0), access(runs[1].app_id, "write", "/etl/«b»", 1_630.0),
             access("application_1_0077", "read", "/etl/«b»", 5_000.5), access("x", "read", "/elsewhere", 1.0)]
    decision = SloDecisionRecord("nightly", "accepted", "reservation_1732233600123_0001", runs[0].app_id, 3,
                                 1_732_233_700.5, "alice", {"deadline": 25_200.0, "skyline": [1, 2]})
    store.write([*runs, *reads, decision, meta()])

    fresh = Store(store_url)
    try:
        assert fresh.load().slo_decisions == (decision,)
        assert fresh.job_run_index() == [
            ("hourly", runs[4].app_id, runs[4].submit_time, True),
            *[("nightly", f"application_1732233600123_{n:04d}", 1_000.0 + 86_400 * n, n % 4 != 0)
              for n in (1, 2, 3, 4)],
        ]
        nightly = fresh.job_runs("nightly")
        assert [r.app_id[-1] for r in nightly] == ["1", "2", "3", "4"]
        assert nightly[0] == runs[1]  # every field, tuples back as tuples
        assert [r.app_id[-1] for r in fresh.job_runs("nightly", limit=2)] == ["3", "4"]  # the newest, oldest first
        assert fresh.job_runs("nope") == []
        assert fresh.dataset_accesses({"/raw/a", "/etl/«b»"}) == sorted(reads[:3], key=lambda a: a.time)
        assert fresh.dataset_access_stamp({"/raw/a", "/etl/«b»"}) == (3, 5_000.5)
        assert fresh.dataset_access_stamp(set()) == (0, 0.0)
        # an access recorded again (the same app, kind and path) replaces the earlier one
        fresh.write([access(runs[1].app_id, "read", "/raw/a", 1_031.0)])
        assert fresh.dataset_access_stamp({"/raw/a"}) == (1, 1_031.0)
        fresh.write([dataclasses.replace(decision, status="rejected", reservation_id="", overrides={})])
        assert fresh.load().slo_decisions[0].status == "rejected"
        assert fresh.prune_job_runs(2) == 2
        assert [r.app_id[-1] for r in fresh.job_runs("nightly")] == ["3", "4"]
        assert len(fresh.job_runs("hourly")) == 1
        with pytest.raises(ValueError, match="keep_per_job"):
            fresh.prune_job_runs(-1)
    finally:
        fresh.close()


def test_size_runs_round_trip_and_older_runs_read_back_without_sizes(store: Store, store_url: str) -> None:
    sizes = {"key": {"name": "etl «x»", "user": "alice", "queue": "root.prod", "app_type": "MAPREDUCE",
                     "submit_hour": 7, "resources": "2048MB,1vc"},
             "groups": {"0": {"tasks": 100, "runtimes": [9.5, 10.25], "finished": 2, "total": 19.75}},
             "total": 19.75, "estimates": {"history": 900.0, "slearn": 987.5}, "gate": None, "jct": 60.0,
             "runtime": 30.5}
    new = WorkRunRecord("application_1732233600123_0002", "etl «x»", 2_000.0, {"name": "etl «x»"}, (1.0,), (2.0,),
                        sizes)
    old = WorkRunRecord("application_1732233600123_0001", "etl «x»", 1_000.0, {"name": "etl «x»"}, (1.0,), (2.0,))
    store.write([old, new])
    assert reload(store_url).work_runs == (old, new)  # oldest first, every field; no sizes read back as {}
    assert reload(store_url).work_runs[0].sizes == {}


def down_and_up(store_url: str, revision: str) -> None:
    """Migrate the store down to ``revision`` and back up to the newest: what a store written before the later
    migrations looks like once upgraded."""
    config = _alembic_config()
    engine = make_engine(store_url)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
    engine.dispose()


def test_apps_of_a_store_older_than_the_control_trace_read_back_without_one(store: Store, store_url: str) -> None:
    ended = app(1, state="FINISHED", final_status="SUCCEEDED", finish_time=1732233800.0)
    store.write([ended])
    down_and_up(store_url, "0012")  # the column goes, and comes back empty for the apps already there
    assert reload(store_url).apps == (dataclasses.replace(ended, control=()),)


# -- errors ------------------------------------------------------------------------------------------


def test_using_an_unmigrated_store_raises_store_error(store_url: str) -> None:
    store = Store(store_url)
    with pytest.raises(StoreError):
        store.load()
    with pytest.raises(StoreError):
        store.write([meta()])
    store.close()


def test_unreachable_postgresql_raises_store_error() -> None:
    store = Store("postgresql+psycopg://postgres@127.0.0.1:1/nothing")
    with pytest.raises(StoreError):
        store.migrate()
    with pytest.raises(StoreError):
        store.load()
    store.close()


def test_bad_urls_and_records_are_rejected() -> None:
    with pytest.raises(StoreError, match="unsupported"):
        Store("mysql+pymysql://root@localhost/x")
    with pytest.raises(StoreError, match="invalid"):
        Store("not a url")
    store = Store("sqlite://")
    with pytest.raises(TypeError, match="not a store record"):
        store.write(["application_1_0001"])  # type: ignore[list-item]
    store.close()


# -- helpers -----------------------------------------------------------------------------------------


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def _child_env() -> dict[str, str]:
    """The environment for a child Python that must import this checkout's packages."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return env


# -- reservations ------------------------------------------------------------------------------------


def reservation(n: int = 1, **overrides: Any) -> ReservationRecord:
    fields: dict[str, Any] = {
        "reservation_id": f"reservation_1732233600000_{n:04d}", "queue": "root.default", "user": "alice",
        "definition": {"arrival": 1_000, "deadline": 7_200_000, "reservation-name": "nightly",
                       "reservation-requests": {"reservation-request-interpreter": 1, "reservation-request": [
                           {"capability": {"memory": 1024, "vCores": 1}, "num-containers": 2,
                            "min-concurrency": 1, "duration": 60_000}]}},
        "acceptance_ms": 1_732_233_600_123,
        "bookings": ({"start": 28_870_560, "period": 0, "kind": "plan", "instance": 0, "length": 2,
                      "loads": {"memory-mb": [2048.0, 1024.5], "vcores": [2.0, 1.0]}},),
        "apps": ("application_1732233600000_0001",), "period": 0, "per_instance": False,
        "next_instance": 3, "missed": (1, 2),
    }
    fields.update(overrides)
    return ReservationRecord(**fields)


def test_reservations_round_trip_and_a_tombstone_drops_the_row(store: Store, store_url: str) -> None:
    store.write([reservation(1), reservation(2, apps=(), missed=())])
    assert reload(store_url).reservations == (reservation(1), reservation(2, apps=(), missed=()))
    # a later record for the same id replaces it; a deleted one (tombstone) removes the row
    store.write([reservation(1, user="bob"), ReservationRecord(reservation(2).reservation_id, "", "", {}, 0,
                                                               deleted=True)])
    assert reload(store_url).reservations == (reservation(1, user="bob"),)
    # delete then re-create within one batch: the row stays
    store.write([ReservationRecord(reservation(1).reservation_id, "", "", {}, 0, deleted=True), reservation(1)])
    assert reload(store_url).reservations == (reservation(1),)
