"""The RM's durable state store (SQLAlchemy; SQLite by default, PostgreSQL for production)."""

from __future__ import annotations

from .errors import LeaseLost, StoreError, StoreLocked, StoreMissing
from .lease import Lease
from .store import Store, default_sqlite_url, make_engine, migrations_dir, record_key

__all__ = ["Lease", "LeaseLost", "Store", "StoreError", "StoreLocked", "StoreMissing", "default_sqlite_url",
           "make_engine", "migrations_dir", "record_key"]
