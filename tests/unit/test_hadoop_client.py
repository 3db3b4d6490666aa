"""``shepherd config hadoop-client``: the HADOOP_CONF_DIR and RM delegation token a client host makes with the
client secret. The token must be one the RM's check accepts for its client listener, and no other's; the
stock clients using it are run in tests/e2e/test_multihost.py."""

from __future__ import annotations

import os
import stat
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from typer.testing import CliRunner

from common.hadoop import credentials, tokens
from rm.cli import app

SECRET = "s" * 64


def _props(path: Path) -> dict[str, str]:
    return {p.findtext("name") or "": p.findtext("value") or "" for p in ET.parse(path).getroot()}


def _run(tmp_path: Path, *args: str, secret: str | None = SECRET) -> tuple[int, str]:
    env = {"SHEPHERD_CLIENT_SECRET": secret} if secret else {"SHEPHERD_CLIENT_SECRET": ""}
    env["SHEPHERD_HOME"] = str(tmp_path / "home")  # no credentials file recorded for any RM
    result = CliRunner().invoke(app, ["config", "hadoop-client", "--dir", str(tmp_path / "conf"), *args], env=env)
    return result.exit_code, result.output


def test_one_rm_gets_its_listeners_and_a_token_signed_with_the_client_secret(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "--rm", "127.0.0.1:7030", "--user", "alice")
    assert code == 0, out
    conf = tmp_path / "conf"
    assert f"export HADOOP_CONF_DIR={conf}" in out
    assert f"export HADOOP_TOKEN_FILE_LOCATION={conf / 'hadoop.token'}" in out
    assert _props(conf / "yarn-site.xml") == {"yarn.resourcemanager.hostname": "127.0.0.1",
                                              "yarn.resourcemanager.address": "127.0.0.1:8032",
                                              "yarn.resourcemanager.scheduler.address": "127.0.0.1:8030"}
    assert _props(conf / "core-site.xml") == {"fs.defaultFS": "file:///"}
    assert stat.S_IMODE(os.stat(conf / "hadoop.token").st_mode) == 0o600
    (token,) = credentials.decode((conf / "hadoop.token").read_bytes()).tokens.values()
    assert token.kind == tokens.KIND_RM_DELEGATION
    assert token.service == "127.0.0.1:8032"
    assert tokens.read_rm_delegation(token.identifier).owner == "alice"
    now = int(time.time() * 1000)
    assert tokens.rm_delegation_password(tokens.rm_delegation_key(SECRET), token.identifier, now_ms=now) \
        == token.password
    assert tokens.rm_delegation_password(tokens.rm_delegation_key("other"), token.identifier, now_ms=now) \
        != token.password


def test_an_active_standby_pair_is_yarns_ha_configuration_and_one_token_names_both(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "--ipc-client", "127.0.0.1:18032,127.0.0.2:18032",
                     "--ipc-scheduler", "127.0.0.1:18030,127.0.0.2:18030")
    assert code == 0, out
    props = _props(tmp_path / "conf" / "yarn-site.xml")
    assert props["yarn.resourcemanager.ha.enabled"] == "true"
    assert props["yarn.resourcemanager.ha.rm-ids"] == "rm1,rm2"
    assert props["yarn.resourcemanager.address.rm2"] == "127.0.0.2:18032"
    assert props["yarn.resourcemanager.scheduler.address.rm1"] == "127.0.0.1:18030"
    (token,) = credentials.decode((tmp_path / "conf" / "hadoop.token").read_bytes()).tokens.values()
    assert token.service == "127.0.0.1:18032,127.0.0.2:18032"


def test_without_a_client_secret_nothing_is_written(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "--rm", "127.0.0.1:7030", secret=None)
    assert code == 2
    assert "no client secret" in out
    assert not (tmp_path / "conf").exists()
    code, out = _run(tmp_path, "--ipc-client", "127.0.0.1:1,127.0.0.2:1", "--ipc-scheduler", "127.0.0.1:2")
    assert code == 2
    assert "as many --ipc-scheduler" in out
    assert not (tmp_path / "conf").exists()
