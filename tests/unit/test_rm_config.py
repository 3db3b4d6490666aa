"""ResourceManager configuration: secure and sane by default."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from rm.service.config import RMConfig


def test_loopback_is_the_default() -> None:
    cfg = RMConfig()
    assert cfg.host == "127.0.0.1"
    cfg.validate()


def test_the_insecure_setting_is_for_loopback_only() -> None:
    RMConfig(insecure=True).validate()
    with pytest.raises(ValueError, match="secret"):
        RMConfig(host="0.0.0.0", insecure=True).validate()
    with pytest.raises(ValueError, match="secret"):
        RMConfig(rest_host="10.1.2.3", insecure=True).validate()
    RMConfig(host="0.0.0.0").validate()  # the secrets come from the credentials file


def test_unset_secrets_come_from_a_private_credentials_file(tmp_path: Path) -> None:
    cfg, path = RMConfig(data_dir=tmp_path).with_secrets()
    assert path == tmp_path / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cfg.client_secret
    assert cfg.node_secret
    assert cfg.client_secret != cfg.node_secret
    again, _ = RMConfig(data_dir=tmp_path).with_secrets()  # a restart keeps them
    assert (again.client_secret, again.node_secret) == (cfg.client_secret, cfg.node_secret)
    mixed, mixed_path = RMConfig(data_dir=tmp_path, client_secret="c").with_secrets()
    assert (mixed.client_secret, mixed.node_secret, mixed_path) == ("c", cfg.node_secret, None)
    insecure, none = RMConfig(data_dir=tmp_path / "other", insecure=True).with_secrets()
    assert (insecure.client_secret, insecure.node_secret, none) == (None, None, None)
    assert not (tmp_path / "other").exists()
    path.chmod(0o644)  # others may have read it: refused, not used
    with pytest.raises(ValueError, match="readable by others"):
        RMConfig(data_dir=tmp_path).with_secrets()


def test_expiry_cannot_be_shorter_than_the_heartbeat() -> None:
    with pytest.raises(ValueError, match="expiry"):
        RMConfig(nm_expiry_s=0.5, heartbeat_interval_s=1.0).validate()
