"""Fixtures the integration tests share: the PostgreSQL server the store tests use for real."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

# The server's maintenance database; each test gets its own database beside it (empty_pg_database).
PG_ADMIN_URL = os.environ.get("SHEPHERD_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def postgres_unavailable(reason: str) -> None:
    """Skip, or under CI (which starts PostgreSQL) fail: the store must be tested on it for real there."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL at {PG_ADMIN_URL} is required under CI: {reason}")
    pytest.skip(f"PostgreSQL at {PG_ADMIN_URL} is not reachable: {reason}")


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[Engine]:
    engine = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as e:
        engine.dispose()
        postgres_unavailable(str(e.orig))
    yield engine
    engine.dispose()


def empty_pg_database(admin: Engine) -> Iterator[str]:
    """A new, empty PostgreSQL database for one test (its URL), dropped afterwards."""
    name = f"shepherd_test_{secrets.token_hex(6)}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
