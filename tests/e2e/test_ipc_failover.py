"""The stock YARN CLI follows an active/standby pair of RMs over Hadoop IPC, configured as for YARN itself
(``yarn.resourcemanager.ha.rm-ids`` with an address per RM): the RM delegation token the first RM issued names
both RMs, so after the active one dies the client fails over to the new active RM and is still trusted there,
for reads and for a kill."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import httpx
import pytest

from common.hadoop import credentials
from rm.local import Daemon
from tests.e2e.conftest import fresh_pg_database, wait_until
from tests.e2e.test_rm_ha import LEASE_S, STANDING_BY, _free_port
from tests.e2e.test_yarn_clients import JAVA, PYSPARK, TOKEN_FILES, app_of, run_yarn

pytestmark = [
    pytest.mark.slow, pytest.mark.postgres,
    pytest.mark.skipif(JAVA is None or PYSPARK is None, reason="needs Java 17+ and the pyspark package"),
]


def _site(path: Path, props: dict[str, str]) -> Path:
    path.write_text("<configuration>" + "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items()) + "</configuration>")
    return path


def test_the_yarn_cli_fails_over_to_the_new_active_rm(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store_url, drop = fresh_pg_database()
    grpc_a, grpc_b, rest_b, client_a, client_b, sched_a, sched_b = (_free_port() for _ in range(7))
    conf_dir = tmp_path / "hadoop-conf"
    conf_dir.mkdir()
    (conf_dir / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>file:///</value></property></configuration>")
    site = _site(conf_dir / "yarn-site.xml", {
        "yarn.resourcemanager.ha.enabled": "true",
        "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
        "yarn.resourcemanager.address.rm1": f"127.0.0.1:{client_a}",
        "yarn.resourcemanager.scheduler.address.rm1": f"127.0.0.1:{sched_a}",
        "yarn.resourcemanager.address.rm2": f"127.0.0.1:{client_b}",
        "yarn.resourcemanager.scheduler.address.rm2": f"127.0.0.1:{sched_b}",
        # YARN's client waits 30 s between failovers by default
        "yarn.client.failover-sleep-base-ms": "200", "yarn.client.failover-sleep-max-ms": "1000",
    })
    ha = tmp_path / "ha.yaml"
    ha.write_text(f"yarn.resourcemanager.ha.enabled: true\n"
                  f"shepherd.resourcemanager.ha.grpc-addresses: '127.0.0.1:{grpc_a},127.0.0.1:{grpc_b}'\n"
                  f"shepherd.resourcemanager.store.lease-ms: {int(LEASE_S * 1000)}\n")
    b: Daemon | None = None
    try:
        cluster = make_cluster(nodes=1, grpc_port=grpc_a, store_url=store_url, ipc_client_port=client_a,
                               ipc_scheduler_port=sched_a, rm_args=["--config", str(ha), "--yarn-site", str(site)])
        token_file = cluster.hadoop_token_path
        TOKEN_FILES[conf_dir] = token_file
        (token,) = credentials.decode(token_file.read_bytes()).tokens.values()
        assert token.service == f"127.0.0.1:{client_a},127.0.0.1:{client_b}"

        b = Daemon("rm-b", [sys.executable, "-m", "rm.cli", "rm", "--grpc-port", str(grpc_b), "--rest-port",
                            str(rest_b), "--data-dir", str(tmp_path / "rm-b"), "--store-url", store_url,
                            "--config", str(ha), "--yarn-site", str(site), "--credentials",
                            str(cluster.credentials_path), "--ipc-client-port", str(client_b),
                            "--ipc-scheduler-port", str(sched_b)],
                   tmp_path / "logs" / "rm-b.log", STANDING_BY)
        b.start()

        secret = {"Authorization": f"Bearer {cluster.client_secret}"}
        rest = cluster.rest_url
        app_id = httpx.post(f"{rest}/ws/v1/cluster/apps/new-application", headers=secret).json()["application-id"]
        body = {"application-id": app_id, "application-name": "long", "resource": {"memory": 256, "vCores": 1},
                "am-container-spec": {"commands": {"command": "sleep 300"}}}
        assert httpx.post(f"{rest}/ws/v1/cluster/apps", json=body, headers=secret).status_code == 202

        listed = run_yarn(conf_dir, "application", "-list", "-appStates", "ALL")
        assert listed.returncode == 0, listed.stderr[-3000:]
        assert app_id in listed.stdout

        assert cluster.rm is not None
        cluster.rm.signal(signal.SIGKILL)
        killed_at = time.monotonic()
        wait_until(lambda: "resourcemanager ready" in (tmp_path / "logs" / "rm-b.log").read_text(),
                   LEASE_S + 10, "the standby to become active")

        # the same token file, the same configuration: the client finds rm2 and is trusted there
        listed = run_yarn(conf_dir, "application", "-list", "-appStates", "ALL")
        assert listed.returncode == 0, listed.stderr[-3000:]
        assert app_id in listed.stdout
        status = run_yarn(conf_dir, "application", "-status", app_id)
        assert status.returncode == 0, status.stderr[-3000:]
        assert app_of(status.stdout) == app_id
        assert "RUNNING" in status.stdout
        killed = run_yarn(conf_dir, "application", "-kill", app_id)
        assert killed.returncode == 0, killed.stderr[-3000:]
        final = httpx.get(f"http://127.0.0.1:{rest_b}/ws/v1/cluster/apps/{app_id}").json()["app"]
        assert final["state"] == "KILLED"
        print(f"the yarn CLI listed, read and killed through rm2 {time.monotonic() - killed_at:.1f} s after rm1 "
              "was killed")
    finally:
        if b is not None:
            b.stop()
        TOKEN_FILES.pop(conf_dir, None)
        drop()
