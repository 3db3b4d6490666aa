"""The credentials file and how clients find it; the audit line's shape."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from common import credentials
from rm.service import audit


def test_a_client_finds_the_secret_of_the_cluster_it_talks_to(tmp_path: Path) -> None:
    env = {"SHEPHERD_HOME": str(tmp_path / "home")}
    a, _ = credentials.ensure(tmp_path / "a" / "credentials.json")
    b, created = credentials.ensure(tmp_path / "b" / "credentials.json")
    assert created
    assert a.client_secret != b.client_secret
    credentials.register(["127.0.0.1:7030", "http://127.0.0.1:8088"], tmp_path / "a" / "credentials.json", env)
    credentials.register(["127.0.0.1:7031"], tmp_path / "b" / "credentials.json", env)
    index = tmp_path / "home" / "clusters"
    assert stat.S_IMODE(index.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in index.iterdir())
    assert all(a.client_secret not in p.read_text() for p in index.iterdir())  # the index holds no secret
    assert credentials.client_secret("localhost:7030", env=env) == a.client_secret
    assert credentials.client_secret("http://localhost:8088/", env=env) == a.client_secret
    assert credentials.client_secret("127.0.0.1:7031", env=env) == b.client_secret
    assert credentials.client_secret("127.0.0.1:9999", env=env) is None
    assert credentials.client_secret("127.0.0.1:7030", "", env=env) is None  # explicitly none
    assert credentials.client_secret("127.0.0.1:7030", env={**env, "SHEPHERD_CLIENT_SECRET": "x"}) == "x"
    pointed = {**env, "SHEPHERD_CREDENTIALS": str(tmp_path / "b" / "credentials.json")}
    assert credentials.client_secret("127.0.0.1:7030", env=pointed) == b.client_secret
    # a stopped cluster forgets only its own entries
    credentials.unregister(["127.0.0.1:7031", "127.0.0.1:7030"], tmp_path / "b" / "credentials.json", env)
    assert credentials.client_secret("127.0.0.1:7031", env=env) is None
    assert credentials.client_secret("127.0.0.1:7030", env=env) == a.client_secret


def test_a_credentials_file_others_can_read_or_a_broken_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    credentials.ensure(path)
    path.chmod(0o640)
    with pytest.raises(credentials.CredentialsError, match="chmod 600"):
        credentials.load(path)
    path.write_text("{}")
    path.chmod(0o600)
    with pytest.raises(credentials.CredentialsError, match="no client_secret or node_secret"):
        credentials.load(path)


def test_audit_lines_are_yarns_and_cannot_be_forged() -> None:
    ok = audit.line(user="alice", ip="127.0.0.1", operation=audit.SUBMIT_APP, target=audit.REST, ok=True,
                    app_id="application_1_0001")
    assert ok == ("USER=alice\tIP=127.0.0.1\tOPERATION=Submit Application Request\tTARGET=RMWebService\t"
                  "RESULT=SUCCESS\tAPPID=application_1_0001")
    bad = audit.line(user="eve\tRESULT=SUCCESS\nUSER=x" + "y" * 1000, ip="::1", operation=audit.KILL_APP,
                     target=audit.CLIENT_SERVICE, ok=False, description="no")
    assert "\n" not in bad
    assert bad.count("\t") == 5
    assert "RESULT=FAILURE\tDESCRIPTION=no" in bad
    assert len(bad) < 600
    assert audit.peer_ip("ipv4:127.0.0.1:5312") == "127.0.0.1"
    assert audit.peer_ip("ipv6:[::1]:5312") == "::1"


def test_no_secret_starts_like_a_command_line_option() -> None:
    # one random draw in 64 starts with "-", which argparse takes for an option (`--secret -abc...` fails):
    # over 2,000 draws a secret generator that let them through would show one all but certainly
    drawn = [credentials.new_secret() for _ in range(2000)]
    assert not any(s.startswith("-") for s in drawn)
    assert len(set(drawn)) == len(drawn)
    assert min(map(len, drawn)) >= 40  # still 32 random bytes
