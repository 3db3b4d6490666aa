"""Stock Hadoop clients across RM restarts and failovers.

* The stock YARN CLI follows an active/standby pair of RMs over Hadoop IPC, configured as for YARN itself
  (``yarn.resourcemanager.ha.rm-ids`` with an address per RM): the RM delegation token the first RM issued
  names both RMs, so after the active one dies the client fails over to the new active RM and is still trusted
  there, for reads and for a kill.
* A Spark job in cluster mode rides through a SIGKILL and restart of the RM: its AM (Hadoop's AMRMClient) is told
  to re-register, does so with the same AMRM token, and the job succeeds in its first attempt with its executors
  kept."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from common.hadoop import credentials
from rm.client import RMClient
from rm.local import Daemon
from tests.e2e.conftest import fresh_pg_database, wait_until
from tests.e2e.test_rm_ha import LEASE_S, STANDING_BY, _free_port
from tests.e2e.test_yarn_clients import (
    JAVA,
    PYSPARK,
    SPARK_TIMEOUT_S,
    TOKEN_FILES,
    _running_with_executors,
    app_of,
    hadoop_conf,
    run_yarn,
    spark_args,
    spark_env,
)

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


@pytest.mark.long
def test_spark_rides_through_an_rm_restart(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=2)
    # Hadoop's clients wait 30 s between reconnections by default; the AM reads this file too (Spark ships it)
    conf = hadoop_conf(cluster, tmp_path / "conf", {"yarn.resourcemanager.connect.retry-interval.ms": "500",
                                                    "yarn.resourcemanager.connect.max-wait.ms": "120000"})
    err_path = tmp_path / "spark.err"
    with err_path.open("w") as err:
        spark = subprocess.Popen(spark_args(tmp_path, "cluster", slices=300), stdout=subprocess.DEVNULL,
                                 stderr=err, env=spark_env(conf), cwd=tmp_path, start_new_session=True)
    try:
        app_id = wait_until(lambda: (m := re.search(r"application_\d+_\d+", err_path.read_text())) and m.group(0),
                            120, "spark-submit to submit")
        with RMClient(cluster.rm_address) as rm:
            wait_until(lambda: _running_with_executors(rm, app_id), 120, "the Spark app to run with executors")
            # the AM and both executors started on their NodeManagers
            before = wait_until(lambda: len(r := {c.container_id for c in rm.containers(app_id)
                                                   if c.state == "RUNNING"}) >= 3 and r, 120,
                                "the executors to run")
        assert cluster.rm is not None
        cluster.rm.signal(signal.SIGKILL)
        cluster.rm.stop()
        cluster.start_rm()
        with RMClient(cluster.rm_address) as rm:
            wait_until(lambda: len(rm.nodes(["RUNNING"])) == 2, 60, "both NodeManagers to re-register")
            kept = {c.container_id for c in rm.containers(app_id) if c.state == "RUNNING"}
            assert spark.wait(SPARK_TIMEOUT_S) == 0, err_path.read_text()[-4000:]
            report = rm.app(app_id)
            assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED"), report.diagnostics
            assert report.attempts == 1
        assert before <= kept, (before, kept)  # the AM and executors running at the kill were kept
        (driver,) = [p for p in cluster.data_dir.glob(f"nm*/logs/{app_id}/*/stderr") if "SparkContext" in p.read_text()]
        log = driver.read_text()
        assert "out of sync with ResourceManager, hence resyncing" in log  # Hadoop's AMRMClient re-registered
        assert "Lost executor" not in log
    finally:
        if spark.poll() is None:
            os.killpg(spark.pid, signal.SIGKILL)
