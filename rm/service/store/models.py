"""Tables of the RM state store, one per record type in :mod:`rm.core.records`.

Column names equal the record field names, so rows and records convert field by field
(see ``store.py``). Dict and tuple fields are JSON text; times are floating-point seconds.
Any change here needs a matching Alembic revision in ``migrations/versions``.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, CheckConstraint, Double, Integer, MetaData, String, Text, false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Deterministic constraint and index names, so migrations can refer to them on every backend.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_name)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

META_ROW_ID = 1
LEASE_ROW_ID = 1


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class AppRow(Base):
    __tablename__ = "apps"

    app_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    queue: Mapped[str] = mapped_column(Text)
    user: Mapped[str] = mapped_column(Text)
    app_type: Mapped[str] = mapped_column(Text)
    priority: Mapped[int] = mapped_column(Integer)
    am_resource: Mapped[str] = mapped_column(Text)  # JSON object
    am_launch: Mapped[str] = mapped_column(Text)  # JSON object
    max_attempts: Mapped[int] = mapped_column(Integer)
    tags: Mapped[str] = mapped_column(Text)  # JSON array
    unmanaged: Mapped[bool] = mapped_column(Boolean)
    job_spec_json: Mapped[str] = mapped_column(Text)
    submit_time: Mapped[float] = mapped_column(Double)
    state: Mapped[str] = mapped_column(String(32), index=True)
    final_status: Mapped[str] = mapped_column(String(32))
    diagnostics: Mapped[str] = mapped_column(Text)
    tracking_url: Mapped[str] = mapped_column(Text)
    progress: Mapped[float] = mapped_column(Double)
    start_time: Mapped[float] = mapped_column(Double)
    launch_time: Mapped[float] = mapped_column(Double)
    finish_time: Mapped[float] = mapped_column(Double)
    attempts_started: Mapped[int] = mapped_column(Integer)
    failed_attempts: Mapped[int] = mapped_column(Integer)
    lifetime_expiry: Mapped[float] = mapped_column(Double)
    reservation_id: Mapped[str] = mapped_column(Text)
    inputs: Mapped[str] = mapped_column(Text)  # JSON array
    outputs: Mapped[str] = mapped_column(Text)  # JSON array
    terms: Mapped[str] = mapped_column(Text, server_default="{}")  # JSON object (common.terms.AppTerms)
    keep_containers: Mapped[bool] = mapped_column(Boolean, server_default=false())
    am_checkpoint: Mapped[str] = mapped_column(Text, server_default="")
    sizing: Mapped[str] = mapped_column(Text, server_default="{}")  # JSON object (its SLearn sampling gate)
    control: Mapped[str] = mapped_column(Text, server_default="[]")  # JSON array (its AM's decisions, once ended)


class AttemptRow(Base):
    __tablename__ = "attempts"

    attempt_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    app_id: Mapped[str] = mapped_column(String(128), index=True)
    number: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(32))
    am_container_id: Mapped[str] = mapped_column(String(128))
    node_id: Mapped[str] = mapped_column(Text)
    start_time: Mapped[float] = mapped_column(Double)
    finish_time: Mapped[float] = mapped_column(Double)
    diagnostics: Mapped[str] = mapped_column(Text)
    counts_as_failure: Mapped[bool] = mapped_column(Boolean)
    host: Mapped[str] = mapped_column(Text)
    rpc_port: Mapped[int] = mapped_column(Integer)
    tracking_url: Mapped[str] = mapped_column(Text)
    delivered_until: Mapped[float] = mapped_column(Double, server_default="0")


class ContainerRow(Base):
    __tablename__ = "containers"

    container_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    app_id: Mapped[str] = mapped_column(String(128), index=True)
    attempt_id: Mapped[str] = mapped_column(String(128))
    node_id: Mapped[str] = mapped_column(Text)
    resource: Mapped[str] = mapped_column(Text)  # JSON object
    priority: Mapped[int] = mapped_column(Integer)
    allocation_request_id: Mapped[int] = mapped_column(BigInteger)
    ask_type: Mapped[str] = mapped_column(String(32))
    is_am: Mapped[bool] = mapped_column(Boolean)
    state: Mapped[str] = mapped_column(String(32))
    allocate_time: Mapped[float] = mapped_column(Double)
    start_time: Mapped[float] = mapped_column(Double)
    finish_time: Mapped[float] = mapped_column(Double)
    exit_status: Mapped[int] = mapped_column(Integer)
    diagnostics: Mapped[str] = mapped_column(Text)
    from_leftover: Mapped[bool] = mapped_column(Boolean)


class NodeRow(Base):
    __tablename__ = "nodes"

    node_id: Mapped[str] = mapped_column(Text, primary_key=True)
    http_address: Mapped[str] = mapped_column(Text)
    rack: Mapped[str] = mapped_column(Text)
    capability: Mapped[str] = mapped_column(Text)  # JSON object
    state: Mapped[str] = mapped_column(String(32))
    registered_at: Mapped[float] = mapped_column(Double)
    last_heartbeat: Mapped[float] = mapped_column(Double)
    health_report: Mapped[str] = mapped_column(Text)
    decommission_deadline: Mapped[float] = mapped_column(Double, server_default="0")  # 0: not decommissioning
    session_hash: Mapped[str] = mapped_column(Text, server_default="")  # SHA-256 of its registration's session


class MetaRow(Base):
    """The single row of cluster-wide facts (``id`` is always ``META_ROW_ID``)."""

    __tablename__ = "meta"
    __table_args__ = (CheckConstraint(f"id = {META_ROW_ID}", name="single_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    cluster_timestamp: Mapped[int] = mapped_column(BigInteger)
    next_app_seq: Mapped[int] = mapped_column(BigInteger)
    epoch: Mapped[int] = mapped_column(BigInteger)
    amrm_key_hex: Mapped[str] = mapped_column(Text)
    container_key_hex: Mapped[str] = mapped_column(Text)
    extra: Mapped[str] = mapped_column(Text)  # JSON object
    container_keys: Mapped[str] = mapped_column(Text, server_default="[]")  # JSON array (the keys NMs accept)


class ReservationRow(Base):
    """One accepted reservation: its definition and its bookings exactly as placed (rm.core.reservation)."""

    __tablename__ = "reservations"

    reservation_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    queue: Mapped[str] = mapped_column(Text)
    user: Mapped[str] = mapped_column(Text)
    definition: Mapped[str] = mapped_column(Text)  # JSON object (YARN's reservation-definition)
    acceptance_ms: Mapped[int] = mapped_column(BigInteger)
    bookings: Mapped[str] = mapped_column(Text)  # JSON array
    apps: Mapped[str] = mapped_column(Text)  # JSON array
    period: Mapped[int] = mapped_column(BigInteger)
    per_instance: Mapped[bool] = mapped_column(Boolean)
    next_instance: Mapped[int] = mapped_column(BigInteger)
    missed: Mapped[str] = mapped_column(Text)  # JSON array
    deleted: Mapped[bool] = mapped_column(Boolean)


class JobRunRow(Base):
    """One ended application as a run of its recurring job (run history for SLO inference)."""

    __tablename__ = "job_runs"

    app_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    job: Mapped[str] = mapped_column(Text, index=True)
    queue: Mapped[str] = mapped_column(Text)
    user: Mapped[str] = mapped_column(Text)
    submit_time: Mapped[float] = mapped_column(Double)
    start_time: Mapped[float] = mapped_column(Double)
    finish_time: Mapped[float] = mapped_column(Double)
    succeeded: Mapped[bool] = mapped_column(Boolean)
    skyline: Mapped[str] = mapped_column(Text)  # JSON array
    unit: Mapped[str] = mapped_column(Text)  # JSON object
    step_s: Mapped[int] = mapped_column(Integer)
    inputs: Mapped[str] = mapped_column(Text)  # JSON array
    outputs: Mapped[str] = mapped_column(Text)  # JSON array


class WorkRunRow(Base):
    """One finished application's measured work per phase (the deadline estimators' history)."""

    __tablename__ = "work_runs"

    app_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    job: Mapped[str] = mapped_column(Text, index=True)
    finish_time: Mapped[float] = mapped_column(Double, index=True)
    features: Mapped[str] = mapped_column(Text)  # JSON object
    work: Mapped[str] = mapped_column(Text)  # JSON array
    longest: Mapped[str] = mapped_column(Text)  # JSON array
    sizes: Mapped[str] = mapped_column(Text, server_default="{}")  # JSON object (task runtimes, size features)


class StageRunsRow(Base):
    """One ended run's per-stage report from its ApplicationMaster (a recurring job's profile, Jockey)."""

    __tablename__ = "stage_runs"

    app_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    job: Mapped[str] = mapped_column(Text, index=True)
    queue: Mapped[str] = mapped_column(Text)
    user: Mapped[str] = mapped_column(Text)
    finish_time: Mapped[float] = mapped_column(Double)
    succeeded: Mapped[bool] = mapped_column(Boolean)
    stages: Mapped[str] = mapped_column(Text)  # JSON array, one object per stage


class DatasetAccessRow(Base):
    """A read or write of a declared dataset by an application."""

    __tablename__ = "dataset_accesses"

    access_id: Mapped[str] = mapped_column(Text, primary_key=True)
    path: Mapped[str] = mapped_column(Text, index=True)
    kind: Mapped[str] = mapped_column(String(8))
    time: Mapped[float] = mapped_column(Double)
    app_id: Mapped[str] = mapped_column(String(128))


class SloDecisionRow(Base):
    """A user's decision on a recurring job's SLO proposal."""

    __tablename__ = "slo_decisions"

    job: Mapped[str] = mapped_column(Text, primary_key=True)
    status: Mapped[str] = mapped_column(String(16))
    reservation_id: Mapped[str] = mapped_column(Text)
    based_on: Mapped[str] = mapped_column(Text)
    runs: Mapped[int] = mapped_column(Integer)
    decided_at: Mapped[float] = mapped_column(Double)
    user: Mapped[str] = mapped_column(Text)
    overrides: Mapped[str] = mapped_column(Text)  # JSON object


class LeaseRow(Base):
    """Which ResourceManager may write the store (``id`` is always ``LEASE_ROW_ID``; see ``lease.py``).

    ``epoch`` grows by one at every take-over and every write transaction checks it (fencing); ``owner`` is
    empty while nobody holds the lease. Times are the holder's clock, in seconds.
    """

    __tablename__ = "store_lease"
    __table_args__ = (CheckConstraint(f"id = {LEASE_ROW_ID}", name="single_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    owner: Mapped[str] = mapped_column(Text)
    epoch: Mapped[int] = mapped_column(BigInteger)
    acquired_at: Mapped[float] = mapped_column(Double)
    renewed_at: Mapped[float] = mapped_column(Double)
    expires_at: Mapped[float] = mapped_column(Double)
    endpoints: Mapped[str] = mapped_column(Text, server_default="{}")  # JSON: where the holder serves
