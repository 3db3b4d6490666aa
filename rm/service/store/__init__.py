"""The RM's durable state store (SQLAlchemy; SQLite by default, PostgreSQL for production)."""

from __future__ import annotations

from .store import Store, StoreError, default_sqlite_url, make_engine, migrations_dir

__all__ = ["Store", "StoreError", "default_sqlite_url", "make_engine", "migrations_dir"]
