"""Fixtures of every test: local clusters record their credentials files in a private index, not in ~/.shepherd."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from common.credentials import ENV_HOME


@pytest.fixture(scope="session", autouse=True)
def shepherd_home() -> Iterator[str]:
    """``$SHEPHERD_HOME`` for the session (inherited by the daemons and CLIs the tests start)."""
    saved = os.environ.get(ENV_HOME)
    home = tempfile.mkdtemp(prefix="shepherd-home-")
    os.environ[ENV_HOME] = home
    yield home
    if saved is None:
        os.environ.pop(ENV_HOME, None)
    else:
        os.environ[ENV_HOME] = saved
    shutil.rmtree(home, ignore_errors=True)
