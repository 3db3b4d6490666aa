"""The committed protobuf modules match the .proto files."""

from __future__ import annotations

import pytest

from proto.generate import stale_files


def test_generated_modules_are_current() -> None:
    pytest.importorskip("grpc_tools")
    assert stale_files() == [], "run `python -m proto.generate` and commit the result"
