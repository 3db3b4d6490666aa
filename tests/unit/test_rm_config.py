"""ResourceManager configuration: secure and sane by default."""

from __future__ import annotations

import pytest

from rm.service.config import RMConfig


def test_loopback_is_the_default() -> None:
    cfg = RMConfig()
    assert cfg.host == "127.0.0.1"
    cfg.validate()


def test_listening_beyond_loopback_needs_node_and_client_secrets() -> None:
    with pytest.raises(ValueError, match="secret"):
        RMConfig(host="0.0.0.0").validate()
    with pytest.raises(ValueError, match="secret"):
        RMConfig(host="10.1.2.3", node_secret="n").validate()
    RMConfig(host="0.0.0.0", node_secret="n", client_secret="c").validate()


def test_expiry_cannot_be_shorter_than_the_heartbeat() -> None:
    with pytest.raises(ValueError, match="expiry"):
        RMConfig(nm_expiry_s=0.5, heartbeat_interval_s=1.0).validate()
