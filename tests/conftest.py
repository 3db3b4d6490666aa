"""Fixtures of every test: local clusters record their credentials files in a private index, not in ~/.shepherd,
and the CLI reads no user config file of the account running the tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from common.credentials import ENV_HOME
from common.user_config import ENV_CONFIG


@pytest.fixture(scope="session", autouse=True)
def shepherd_home() -> Iterator[str]:
    """``$SHEPHERD_HOME`` for the session (inherited by the daemons and CLIs the tests start)."""
    saved = os.environ.get(ENV_HOME)
    home = tempfile.mkdtemp(prefix="shepherd-home-")
    os.environ[ENV_HOME] = home
    saved_config = os.environ.get(ENV_CONFIG)
    os.environ[ENV_CONFIG] = os.path.join(home, "config.yaml")  # absent: no named clusters unless a test adds some
    yield home
    if saved is None:
        os.environ.pop(ENV_HOME, None)
    else:
        os.environ[ENV_HOME] = saved
    if saved_config is None:
        os.environ.pop(ENV_CONFIG, None)
    else:
        os.environ[ENV_CONFIG] = saved_config
    shutil.rmtree(home, ignore_errors=True)
