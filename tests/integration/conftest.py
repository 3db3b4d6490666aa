"""Fixtures the integration tests share: the PostgreSQL server the store tests use for real."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

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
