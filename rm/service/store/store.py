"""The RM's durable state store: records in, records out, one transaction per batch.

SQLite (the default, one file under the RM's data directory) or PostgreSQL. The schema is
owned by Alembic (``migrations/``); call :meth:`Store.migrate` before the first load or write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.resources
import json
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from alembic import command
from alembic.config import Config
from alembic.util import CommandError
from sqlalchemy import Connection, Engine, create_engine, delete, event, func, inspect, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry

import rm
from rm.core.records import (
    APP_FINAL_STATES,
    AppRecord,
    AttemptRecord,
    ContainerRecord,
    DatasetAccessRecord,
    JobRunRecord,
    MetaRecord,
    NodeRecord,
    Record,
    SloDecisionRecord,
    StageRunsRecord,
    StoredState,
    WorkRunRecord,
)
from rm.core.reservation.records import ReservationRecord

from . import lease as lease_row
from .errors import StoreError, StoreMissing
from .lease import Lease
from .models import (
    META_ROW_ID,
    AppRow,
    AttemptRow,
    Base,
    ContainerRow,
    DatasetAccessRow,
    JobRunRow,
    MetaRow,
    NodeRow,
    ReservationRow,
    SloDecisionRow,
    StageRunsRow,
    WorkRunRow,
)

SQLITE_FILE_NAME: Final = "rm-state.db"
_SUPPORTED_BACKENDS: Final = frozenset({"sqlite", "postgresql"})
_DELETE_CHUNK: Final = 500  # ids per DELETE ... IN (...), well under every backend's parameter limit
_PG_CONNECT_TIMEOUT_S: Final = 5  # unless the URL sets connect_timeout: an unreachable server fails fast


def default_sqlite_url(data_dir: Path) -> str:
    """The store URL for the SQLite file in the RM's data directory."""
    return f"sqlite:///{(data_dir.expanduser().resolve() / SQLITE_FILE_NAME).as_posix()}"


def migrations_dir() -> Path:
    """The Alembic script directory: ``rm/service/store/migrations`` in an installed wheel, else ``migrations/``
    beside the ``rm`` package (the source tree, an editable install)."""
    packaged = Path(str(importlib.resources.files("rm.service.store") / "migrations"))
    if (packaged / "env.py").is_file():
        return packaged
    return Path(rm.__file__).resolve().parent.parent / "migrations"


def make_engine(url: str, *, create_parent: bool = True) -> Engine:
    """An engine for a store URL, set up as the store needs it (used by ``migrations/env.py`` too).

    For SQLite this creates the file's directory (unless ``create_parent`` is False), turns on WAL and takes
    over transaction control.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as e:
        raise StoreError(f"invalid store URL: {e}") from e
    backend = parsed.get_backend_name()
    if backend not in _SUPPORTED_BACKENDS:
        raise StoreError(f"unsupported store backend {backend!r}; use sqlite or postgresql")
    try:
        if backend == "sqlite":
            if create_parent:
                _create_sqlite_parent(parsed)
            engine = create_engine(parsed)
            _configure_sqlite(engine)
        else:
            connect_args = {} if "connect_timeout" in parsed.query else {"connect_timeout": _PG_CONNECT_TIMEOUT_S}
            engine = create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
    except (ArgumentError, ImportError) as e:
        raise StoreError(f"cannot create a store engine for {parsed.render_as_string()}: {e}") from e
    return engine


@dataclass(frozen=True, slots=True)
class _Table:
    """How one record type maps onto its table."""

    record: type[Any]
    row: type[Base]
    key: str  # the primary-key column
    json_fields: frozenset[str]  # dict/tuple fields, stored as JSON text
    tuple_fields: frozenset[str] = frozenset()  # JSON arrays read back as tuples

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self.record))

    def to_row(self, record: Any) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for name in self.fields:
            value = getattr(record, name)
            row[name] = _dump_json(value) if name in self.json_fields else value
        if self.row is MetaRow:
            row["id"] = META_ROW_ID
        return row

    def from_row(self, row: Mapping[Any, Any]) -> Any:
        values: dict[str, Any] = {}
        for name in self.fields:
            value = row[name]
            if name in self.json_fields:
                value = json.loads(value)
                if name in self.tuple_fields:
                    value = tuple(value)
            values[name] = value
        return self.record(**values)


# Write order inside a batch. Tables have no foreign keys between them, so this is for readability only.
_TABLES: Final[tuple[_Table, ...]] = (
    _Table(MetaRecord, MetaRow, "id", frozenset({"extra", "container_keys"}), frozenset({"container_keys"})),
    _Table(NodeRecord, NodeRow, "node_id", frozenset({"capability"})),
    _Table(AppRecord, AppRow, "app_id",
           frozenset({"am_resource", "am_launch", "tags", "inputs", "outputs", "terms", "sizing", "control"}),
           frozenset({"tags", "inputs", "outputs", "control"})),
    _Table(AttemptRecord, AttemptRow, "attempt_id", frozenset()),
    _Table(ContainerRecord, ContainerRow, "container_id", frozenset({"resource"})),
    _Table(ReservationRecord, ReservationRow, "reservation_id",
           frozenset({"definition", "bookings", "apps", "missed"}), frozenset({"bookings", "apps", "missed"})),
    _Table(JobRunRecord, JobRunRow, "app_id", frozenset({"skyline", "unit", "inputs", "outputs"}),
           frozenset({"skyline", "inputs", "outputs"})),
    _Table(DatasetAccessRecord, DatasetAccessRow, "access_id", frozenset()),
    _Table(SloDecisionRecord, SloDecisionRow, "job", frozenset({"overrides"})),
    _Table(WorkRunRecord, WorkRunRow, "app_id", frozenset({"features", "work", "longest", "sizes"}),
           frozenset({"work", "longest"})),
    _Table(StageRunsRecord, StageRunsRow, "app_id", frozenset({"stages"}), frozenset({"stages"})),
)
WORK_RUNS_LOADED = 5000  # the newest finished runs read back at start (the estimators' history)
_BY_RECORD: Final[Mapping[type[Any], _Table]] = {t.record: t for t in _TABLES}


def _dump_json(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def record_key(record: Record) -> tuple[str, Any]:
    """The identity of a record in the store: a later record with the same key replaces it."""
    table = _BY_RECORD.get(type(record))
    if table is None:
        raise TypeError(f"not a store record: {type(record).__name__}")
    return table.row.__tablename__, META_ROW_ID if table.row is MetaRow else getattr(record, table.key)


class Store:
    """Synchronous state store over SQLAlchemy. Not thread-safe; the RM calls it from one place.

    Creating a store is explicit: :meth:`exists` tells whether one is there, :meth:`migrate` creates or upgrades
    it. A writer takes the lease (:meth:`take_lease`); from then on every write transaction first checks that
    the lease is still its own and raises :class:`LeaseLost` otherwise (see ``lease.py``).
    """

    def __init__(self, url: str, *, clock: Callable[[], float] = time.time) -> None:
        self._engine: Engine = make_engine(url, create_parent=False)
        self._url: URL = self._engine.url
        self._upserts: dict[type[Any], Any] = {t.record: self._upsert(t) for t in _TABLES}
        self._clock = clock
        self._held: tuple[str, int, float] | None = None  # (owner, epoch, lease seconds) once taken

    @property
    def url(self) -> str:
        """The store URL with any password masked, for logs."""
        return self._url.render_as_string(hide_password=True)

    def exists(self) -> bool:
        """Whether the store holds shepherd's tables. A missing SQLite file is not created by asking."""
        database = self._url.database
        if self._url.get_backend_name() == "sqlite" and database and database != ":memory:" \
                and not database.startswith("file:") and not Path(database).expanduser().is_file():
            return False
        with self._transaction("inspecting the state store") as conn:
            tables = set(inspect(conn).get_table_names())
        return {"alembic_version", AppRow.__tablename__, MetaRow.__tablename__} <= tables

    def migrate(self) -> None:
        """Create the store, or bring its schema to the newest Alembic revision. Safe to call on every start."""
        if self._url.get_backend_name() == "sqlite":
            _create_sqlite_parent(self._url)
        script_location = migrations_dir()
        if not (script_location / "env.py").is_file():
            raise StoreError(f"migrations directory not found at {script_location}")
        config = Config()
        config.set_main_option("script_location", str(script_location))
        try:
            with self._engine.begin() as conn:
                config.attributes["connection"] = conn
                command.upgrade(config, "head")
        except (SQLAlchemyError, CommandError) as e:
            raise StoreError(f"migrating the state store failed: {e}") from e

    def revisions(self) -> tuple[str | None, str, list[str]]:
        """(the store's schema revision, None before any; the newest revision this build has; the revisions an
        upgrade would apply, oldest first)."""
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        config = Config()
        config.set_main_option("script_location", str(migrations_dir()))
        script = ScriptDirectory.from_config(config)
        head = script.get_current_head() or ""
        with self._transaction("reading the store's schema revision") as conn:
            current = MigrationContext.configure(conn).get_current_revision()
        pending = [rev.revision for rev in script.iterate_revisions(head, current or "base")]
        return current, head, list(reversed(pending))

    def require(self) -> None:
        """Raise StoreMissing unless the store exists."""
        if not self.exists():
            raise StoreMissing(
                f"no state store at {self.url}: start with --create-store to create a new, empty one (an RM "
                "pointed at a wrong path or a lost volume would otherwise start an empty cluster)")

    # -- the lease (lease.py) --------------------------------------------------------------------

    @property
    def held_lease(self) -> tuple[str, int] | None:
        """(owner, epoch) of the lease this store object holds, if any."""
        return None if self._held is None else self._held[:2]

    def read_lease(self) -> Lease | None:
        """The lease row; None for a store from before leases (not yet migrated)."""
        with self._transaction("reading the store lease") as conn:
            return lease_row.read(conn) if lease_row.has_lease_table(conn) else None

    def take_lease(self, owner: str, lease_s: float) -> tuple[bool, Lease]:
        """Take the lease as ``owner`` if it is free or expired. Returns (taken, the lease row afterwards);
        once taken, every write of this object is fenced by it."""
        if lease_s <= 0:
            raise ValueError(f"the lease time must be positive, got {lease_s}")
        return self._take("taking the store lease", owner, lease_s,
                          lambda conn: lease_row.take(conn, owner, lease_s, self._clock()))

    def take_lease_over(self, owner: str, lease_s: float, dead: Lease) -> tuple[bool, Lease]:
        """Take the lease from a holder known to have crashed, without waiting for it to expire."""
        return self._take("taking the store lease over", owner, lease_s,
                          lambda conn: lease_row.take_over(conn, owner, lease_s, self._clock(), dead))

    def _take(self, what: str, owner: str, lease_s: float, take: Callable[[Connection], bool]) -> tuple[bool, Lease]:
        with self._transaction(what) as conn:
            taken = take(conn)
            current = lease_row.read(conn)
        if current is None:
            raise StoreError("the store has no lease row; migrate it first", transient=False)
        if taken:
            self._held = (owner, current.epoch, lease_s)
        return taken, current

    def advertise(self, endpoints: dict[str, str]) -> None:
        """Record, under the lease, where this ResourceManager serves (standbys redirect clients there)."""
        if self._held is None:
            raise StoreError("advertising without holding the lease", transient=False)
        owner, epoch, _ = self._held
        with self._transaction("advertising the active ResourceManager") as conn:
            lease_row.advertise(conn, owner, epoch, endpoints)

    def active_endpoints(self) -> dict[str, str]:
        """Where the holder of the lease serves, as it advertised."""
        with self._transaction("reading the store lease") as conn:
            return lease_row.endpoints(conn) if lease_row.has_lease_table(conn) else {}

    def renew_lease(self) -> None:
        """Extend the lease; raises LeaseLost when another ResourceManager has taken the store over."""
        with self._transaction("renewing the store lease") as conn:
            self._fence(conn)

    def release_lease(self) -> bool:
        """Give the lease up (clean shutdown): a restarted RM may take it at once. False if it was not held."""
        if self._held is None:
            return False
        owner, epoch, _ = self._held
        self._held = None
        with self._transaction("releasing the store lease") as conn:
            return lease_row.release(conn, owner, epoch, self._clock())

    def load(self) -> StoredState:
        """Everything the store holds, read in one transaction."""
        with self._transaction("loading the state store") as conn:

            def read(record: type[Any], *order_by: Any) -> tuple[Any, ...]:
                table = _BY_RECORD[record]
                query = select(table.row.__table__).order_by(*order_by)
                return tuple(table.from_row(row) for row in conn.execute(query).mappings())

            metas = read(MetaRecord)
            return StoredState(
                meta=metas[0] if metas else None,
                apps=read(AppRecord, AppRow.submit_time, AppRow.app_id),
                attempts=read(AttemptRecord, AttemptRow.app_id, AttemptRow.number, AttemptRow.attempt_id),
                containers=read(
                    ContainerRecord,
                    ContainerRow.app_id,
                    ContainerRow.allocate_time,
                    ContainerRow.container_id,
                ),
                nodes=read(NodeRecord, NodeRow.node_id),
                reservations=read(ReservationRecord, ReservationRow.reservation_id),
                slo_decisions=read(SloDecisionRecord, SloDecisionRow.job),
                work_runs=self._work_runs(conn),
            )

    def _work_runs(self, conn: Any) -> tuple[WorkRunRecord, ...]:
        table = _BY_RECORD[WorkRunRecord]
        newest = (select(table.row.__table__).order_by(WorkRunRow.finish_time.desc(), WorkRunRow.app_id.desc())
                  .limit(WORK_RUNS_LOADED))
        return tuple(reversed([table.from_row(row) for row in conn.execute(newest).mappings()]))

    def write(self, records: Sequence[Record]) -> None:
        """Insert or update every record, all in one transaction; on any error nothing is written.

        Returns only after the commit, so the records survive a crash of this process. When a batch
        holds the same record key twice, the later record wins.
        """
        batches: dict[type[Any], dict[Any, Any]] = {t.record: {} for t in _TABLES}
        dropped: dict[str, None] = {}  # deleted reservations (tombstones): their rows go
        for record in records:
            if isinstance(record, ReservationRecord):
                if record.deleted:
                    batches[ReservationRecord].pop(record.reservation_id, None)
                    dropped[record.reservation_id] = None
                    continue
                dropped.pop(record.reservation_id, None)
            table = _BY_RECORD.get(type(record))
            if table is None:
                raise TypeError(f"not a store record: {type(record).__name__}")
            key = META_ROW_ID if table.row is MetaRow else getattr(record, table.key)
            batches[table.record][key] = record
        if not records:
            return
        with self._transaction("writing to the state store") as conn:
            self._fence(conn)
            for table in _TABLES:
                batch = batches[table.record]
                if batch:
                    rows = [table.to_row(r) for r in batch.values()]
                    conn.execute(self._upserts[table.record], rows)
            ids = list(dropped)
            for start in range(0, len(ids), _DELETE_CHUNK):
                chunk = ids[start : start + _DELETE_CHUNK]
                conn.execute(delete(ReservationRow).where(ReservationRow.reservation_id.in_(chunk)))

    def job_run_index(self) -> list[tuple[str, str, float, bool]]:
        """(job, app id, submit time, succeeded) of every recorded run, by job then submission."""
        with self._transaction("reading the run history") as conn:
            query = select(JobRunRow.job, JobRunRow.app_id, JobRunRow.submit_time, JobRunRow.succeeded).order_by(
                JobRunRow.job, JobRunRow.submit_time, JobRunRow.app_id)
            return [(str(j), str(a), float(t), bool(ok)) for j, a, t, ok in conn.execute(query)]

    def job_runs(self, job: str, *, limit: int | None = None) -> list[JobRunRecord]:
        """The runs of one job, oldest first; with ``limit``, only the newest ``limit``."""
        table = _BY_RECORD[JobRunRecord]
        with self._transaction("reading the run history") as conn:
            query = select(JobRunRow.__table__).where(JobRunRow.job == job).order_by(
                JobRunRow.submit_time.desc(), JobRunRow.app_id.desc())
            if limit is not None:
                query = query.limit(limit)
            rows = [table.from_row(row) for row in conn.execute(query).mappings()]
        return rows[::-1]

    def stage_runs(self, job: str, *, limit: int | None = None) -> list[StageRunsRecord]:
        """The per-stage reports of one job's runs, oldest first; with ``limit``, only the newest ``limit``."""
        table = _BY_RECORD[StageRunsRecord]
        with self._transaction("reading the stage reports") as conn:
            query = select(StageRunsRow.__table__).where(StageRunsRow.job == job).order_by(
                StageRunsRow.finish_time.desc(), StageRunsRow.app_id.desc())
            if limit is not None:
                query = query.limit(limit)
            rows = [table.from_row(row) for row in conn.execute(query).mappings()]
        return rows[::-1]

    def prune_stage_runs(self, keep_per_job: int) -> int:
        """Delete each job's oldest stage reports beyond its newest ``keep_per_job``; how many were deleted."""
        if keep_per_job < 0:
            raise ValueError(f"keep_per_job must be >= 0, got {keep_per_job}")
        with self._transaction("pruning the stage reports") as conn:
            self._fence(conn)
            ranked = select(
                StageRunsRow.app_id,
                func.row_number().over(partition_by=StageRunsRow.job, order_by=(
                    StageRunsRow.finish_time.desc(), StageRunsRow.app_id.desc())).label("n"),
            ).subquery()
            old = list(conn.scalars(select(ranked.c.app_id).where(ranked.c.n > keep_per_job)))
            for start in range(0, len(old), _DELETE_CHUNK):
                conn.execute(delete(StageRunsRow).where(StageRunsRow.app_id.in_(old[start : start + _DELETE_CHUNK])))
            return len(old)

    def dataset_accesses(self, paths: Collection[str]) -> list[DatasetAccessRecord]:
        """Every recorded access to one of ``paths``, by time."""
        table = _BY_RECORD[DatasetAccessRecord]
        wanted = sorted(set(paths))
        out: list[DatasetAccessRecord] = []
        with self._transaction("reading dataset accesses") as conn:
            for start in range(0, len(wanted), _DELETE_CHUNK):
                chunk = wanted[start : start + _DELETE_CHUNK]
                query = select(DatasetAccessRow.__table__).where(DatasetAccessRow.path.in_(chunk))
                out.extend(table.from_row(row) for row in conn.execute(query).mappings())
        return sorted(out, key=lambda a: (a.time, a.path, a.kind, a.app_id))

    def dataset_access_stamp(self, paths: Collection[str]) -> tuple[int, float]:
        """(how many accesses, the latest access time) over ``paths``: changes whenever one is recorded."""
        wanted = sorted(set(paths))
        count, latest = 0, 0.0
        with self._transaction("reading dataset accesses") as conn:
            for start in range(0, len(wanted), _DELETE_CHUNK):
                chunk = wanted[start : start + _DELETE_CHUNK]
                query = select(func.count(), func.max(DatasetAccessRow.time)).where(DatasetAccessRow.path.in_(chunk))
                n, t = conn.execute(query).one()
                count += int(n or 0)
                latest = max(latest, float(t or 0.0))
        return count, latest

    def prune_job_runs(self, keep_per_job: int) -> int:
        """Delete each job's oldest runs beyond its newest ``keep_per_job``. Returns how many were deleted."""
        if keep_per_job < 0:
            raise ValueError(f"keep_per_job must be >= 0, got {keep_per_job}")
        with self._transaction("pruning the run history") as conn:
            self._fence(conn)
            ranked = select(
                JobRunRow.app_id,
                func.row_number().over(partition_by=JobRunRow.job, order_by=(
                    JobRunRow.submit_time.desc(), JobRunRow.app_id.desc())).label("n"),
            ).subquery()
            old = list(conn.scalars(select(ranked.c.app_id).where(ranked.c.n > keep_per_job)))
            for start in range(0, len(old), _DELETE_CHUNK):
                conn.execute(delete(JobRunRow).where(JobRunRow.app_id.in_(old[start : start + _DELETE_CHUNK])))
            return len(old)

    def prune_completed_apps(self, keep: int) -> int:
        """Delete the oldest completed apps beyond the newest ``keep``, with their attempts and containers.

        Age is by finish time (then submit time, then app id). Returns how many apps were deleted.
        """
        if keep < 0:
            raise ValueError(f"keep must be >= 0, got {keep}")
        with self._transaction("pruning completed apps") as conn:
            self._fence(conn)
            newest_first = (
                select(AppRow.app_id)
                .where(AppRow.state.in_(sorted(APP_FINAL_STATES)))
                .order_by(AppRow.finish_time.desc(), AppRow.submit_time.desc(), AppRow.app_id.desc())
                .offset(keep)
            )
            app_ids = list(conn.scalars(newest_first))
            for start in range(0, len(app_ids), _DELETE_CHUNK):
                chunk = app_ids[start : start + _DELETE_CHUNK]
                conn.execute(delete(ContainerRow).where(ContainerRow.app_id.in_(chunk)))
                conn.execute(delete(AttemptRow).where(AttemptRow.app_id.in_(chunk)))
                conn.execute(delete(AppRow).where(AppRow.app_id.in_(chunk)))
            return len(app_ids)

    def close(self) -> None:
        """Release every pooled connection. The store must not be used afterwards."""
        self._engine.dispose()

    # -- internals -------------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, what: str) -> Iterator[Connection]:
        """One transaction, committed on success and rolled back on any error (driver errors become
        StoreError, and so do values that cannot be stored, such as non-JSON data)."""
        try:
            with self._engine.begin() as conn:
                yield conn
        except StoreError:
            raise
        except SQLAlchemyError as e:
            # a lost connection, a locked or unreachable database may go away; a row the database refuses won't
            transient = isinstance(e, OperationalError) or not isinstance(e, DatabaseError)
            raise StoreError(f"{what} failed: {e}", transient=transient) from e
        except (TypeError, ValueError) as e:
            raise StoreError(f"{what} failed: {type(e).__name__}: {e}", transient=False) from e

    def _fence(self, conn: Connection) -> None:
        """The first statement of a write transaction: renew the lease held, or raise LeaseLost."""
        if self._held is not None:
            owner, epoch, lease_s = self._held
            lease_row.renew(conn, owner, epoch, lease_s, self._clock())

    def _upsert(self, table: _Table) -> Any:
        """INSERT ... ON CONFLICT (key) DO UPDATE, which SQLite and PostgreSQL spell the same way."""
        sqlite = self._url.get_backend_name() == "sqlite"
        insert: Callable[..., Any] = sqlite_insert if sqlite else postgresql_insert
        stmt = insert(table.row)
        updates = {c.name: stmt.excluded[c.name] for c in table.row.__table__.columns if c.name != table.key}
        return stmt.on_conflict_do_update(index_elements=[table.key], set_=updates)


def _create_sqlite_parent(url: URL) -> None:
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    try:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create the directory for {database}: {e}") from e


def _configure_sqlite(engine: Engine) -> None:
    """WAL with synchronous=NORMAL (a commit survives a process kill), and real transactions.

    The sqlite3 module's legacy mode does not BEGIN before SELECT or DDL, so reads in one
    transaction could see different states; SQLAlchemy emits BEGIN itself instead.
    The database file is made readable by its owner only (it holds the token keys) before its WAL and
    shared-memory files exist: SQLite creates those with the database file's permissions.
    """
    database = engine.url.database or ""
    path = Path(database).expanduser() if database and database != ":memory:" and \
        not database.startswith("file:") else None

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        if path is not None:
            for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                with contextlib.suppress(OSError):
                    if p.exists() and p.stat().st_mode & 0o077:
                        p.chmod(0o600)
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=5000")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN")
