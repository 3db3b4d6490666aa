"""A user's own credentials on a live cluster: the operator issues them with `shepherd admin token`, the user's
CLI finds them on its own, its calls are made as that user whatever name it sends, and the ACLs hold for it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from common.hadoop import credentials as hadoop_credentials
from common.hadoop import tokens as hadoop_tokens
from proto import shepherd_pb2 as pb
from rm.client import ClientError, RMClient
from rm.local import LocalCluster
from tests.e2e.conftest import wait_until

pytestmark = pytest.mark.slow


def shepherd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, **(env or {})})


def unmanaged(client: RMClient, user: str) -> str:
    app_id = client.new_application()
    client.submit(pb.ApplicationSubmissionContext(application_id=app_id, name="held", user=user,
                                                  unmanaged_am=True))
    return app_id


def test_a_user_token_makes_calls_as_its_user_and_the_acls_hold(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster: LocalCluster = make_cluster(nodes=1)
    rest = ["--rest", cluster.rest_url]
    alice_dir = tmp_path / "alice"
    issued = shepherd("admin", "token", "--user", "alice", "--lifetime", "1h", "--out", str(alice_dir), *rest)
    assert issued.returncode == 0, issued.stdout + issued.stderr
    creds = alice_dir / "credentials.json"
    assert f"export SHEPHERD_CREDENTIALS={creds}" in issued.stdout
    assert f"export HADOOP_TOKEN_FILE_LOCATION={alice_dir / 'hadoop.token'}" in issued.stdout
    for private in (creds, alice_dir / "hadoop.token"):
        assert stat.S_IMODE(os.stat(private).st_mode) == 0o600, private
    assert cluster.client_secret not in creds.read_text()
    # the Hadoop token file holds an RM delegation token whose owner is alice
    (token,) = hadoop_credentials.decode((alice_dir / "hadoop.token").read_bytes()).tokens.values()
    assert hadoop_tokens.read_rm_delegation(token.identifier).owner == "alice"

    as_alice = {"SHEPHERD_CREDENTIALS": str(creds)}
    with RMClient(cluster.rm_address) as owner:  # the cluster's secret: the owner, who may act for anyone
        bobs = unmanaged(owner, "bob")
        assert owner.app(bobs).user == "bob"
    os.environ.update(as_alice)
    try:
        with RMClient(cluster.rm_address) as alice:
            own = unmanaged(alice, "bob")  # the name sent is ignored: the token says alice
            assert alice.app(own).user == "alice"
            with pytest.raises(ClientError, match="AccessControlException"):
                alice.kill(bobs)
            alice.kill(own)
            wait_until(lambda: alice.app(own).state == "KILLED", 30, "alice's app killed")
    finally:
        for key in as_alice:
            os.environ.pop(key, None)

    refused = shepherd("app", "kill", bobs, "--rm", cluster.rm_address, env=as_alice)
    assert refused.returncode != 0
    assert "MODIFY_APP" in refused.stdout + refused.stderr
    # over REST too, with the same credentials; and alice may not issue tokens
    secret = json.loads(creds.read_text())["client_secret"]
    kill = httpx.put(f"{cluster.rest_url}/ws/v1/cluster/apps/{bobs}/state", json={"state": "KILLED"},
                     headers={"Authorization": f"Bearer {secret}"}, params={"user.name": "bob"}, timeout=10)
    assert kill.status_code == 403, kill.text
    assert kill.json()["RemoteException"]["exception"] == "AccessControlException"
    again = shepherd("admin", "token", "--user", "mallory", *rest, env=as_alice)
    assert again.returncode != 0
    assert "issueToken" in again.stdout + again.stderr
    with RMClient(cluster.rm_address) as owner:
        assert owner.app(bobs).state not in ("KILLED", "FINISHED", "FAILED")
    audit = (cluster.data_dir / "logs" / "rm.log").read_text()
    assert any("USER=alice" in line and "RESULT=FAILURE" in line and bobs in line for line in audit.splitlines())
