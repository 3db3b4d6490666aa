"""Stock YARN clients and Spark, unchanged, against a live shepherd over Hadoop IPC.

The clients come from the ``pyspark`` package's jars (Hadoop 3.5 client, Spark 4) and run on the
machine's Java 17; the tests are skipped where either is missing. Every cluster here listens on
ephemeral ports, which a generated ``HADOOP_CONF_DIR`` hands to the clients.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import yaml

from nodemanager.launch import Account, closed_to, container_account
from rm.client import ClientError, RMClient
from rm.local import LocalCluster
from tests.e2e.conftest import FINAL, sleep_job, submit_job, wait_until, write_job

JAVA = shutil.which("java")
PYSPARK = importlib.util.find_spec("pyspark")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(JAVA is None or PYSPARK is None, reason="needs Java 17+ and the pyspark package"),
]
SPARK_TIMEOUT_S = 300


def pyspark_home() -> Path:
    assert PYSPARK is not None
    assert PYSPARK.origin is not None
    return Path(PYSPARK.origin).parent


def java_home() -> str:
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    assert JAVA is not None
    return str(Path(JAVA).resolve().parents[1])


TOKEN_FILES: dict[Path, Path] = {}  # HADOOP_CONF_DIR -> the RM delegation token file of its cluster


def hadoop_conf(cluster: LocalCluster, where: Path, extra: dict[str, str] | None = None) -> Path:
    """A HADOOP_CONF_DIR pointing stock clients at the cluster's Hadoop IPC listeners (and, for the client
    environment, the token file the RM wrote: what `shepherd up` tells its user to export)."""
    where.mkdir(parents=True, exist_ok=True)
    assert cluster.hadoop_token_path.exists()
    TOKEN_FILES[where] = cluster.hadoop_token_path
    (where / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>file:///</value></property></configuration>")
    props = {"yarn.resourcemanager.hostname": "127.0.0.1",
             "yarn.resourcemanager.address": cluster.ipc_client_address,
             "yarn.resourcemanager.scheduler.address": cluster.ipc_scheduler_address, **(extra or {})}
    (where / "yarn-site.xml").write_text("<configuration>" + "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items()) + "</configuration>")
    return where


def run_yarn(conf: Path, tool: str, *args: str, token: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the stock YARN CLI (``application``, ``applicationattempt``, ``container``, ``node`` or ``rmadmin``),
    with the cluster's token file or without."""
    main = {"application": "ApplicationCLI", "applicationattempt": "ApplicationCLI", "container": "ApplicationCLI",
            "node": "NodeCLI", "rmadmin": "RMAdminCLI"}[tool]
    title = [] if tool == "rmadmin" else [tool]  # `yarn rmadmin` passes its flags alone
    env = {**os.environ, "JAVA_HOME": java_home()}
    env.pop("HADOOP_TOKEN_FILE_LOCATION", None)
    if token:
        env["HADOOP_TOKEN_FILE_LOCATION"] = str(TOKEN_FILES[conf])
    return subprocess.run(
        [JAVA or "java", "-cp", f"{conf}:{pyspark_home() / 'jars'}/*", f"org.apache.hadoop.yarn.client.cli.{main}",
         *title, *args], check=False, capture_output=True, text=True, timeout=120, env=env,
    )


def yarn(conf: Path, tool: str, *args: str) -> str:
    """Run the stock YARN CLI with the cluster's token file; return its stdout."""
    out = run_yarn(conf, tool, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def spark_env(conf: Path) -> dict[str, str]:
    return {**os.environ, "JAVA_HOME": java_home(), "HADOOP_CONF_DIR": str(conf), "SPARK_LOCAL_IP": "127.0.0.1",
            "HADOOP_TOKEN_FILE_LOCATION": str(TOKEN_FILES[conf])}


def spark_args(tmp: Path, mode: str, *extra: str, slices: int = 4) -> list[str]:
    home = pyspark_home()
    return [
        str(home / "bin" / "spark-submit"), "--master", "yarn", "--deploy-mode", mode,
        "--conf", f"spark.yarn.stagingDir=file://{tmp / 'staging'}", "--conf", f"spark.pyspark.python={sys.executable}",
        "--num-executors", "2", "--executor-memory", "512m", "--driver-memory", "512m", *extra,
        str(home / "examples" / "src" / "main" / "python" / "pi.py"), str(slices),
    ]


def hadoop_node_ids(cluster: LocalCluster) -> dict[str, str]:
    """Each NodeManager's Hadoop NodeId (its IPC listener, which Hadoop clients see) by its shepherd node id."""
    out = {}
    for i in range(len(cluster.nms)):
        m = re.search(r"nodemanager ready node_id=(\S+) .* ipc=(\S+)",
                      (cluster.data_dir / "logs" / f"nm{i}.log").read_text())
        assert m
        out[m.group(1)] = m.group(2)
    return out


def ipc_node_ids(cluster: LocalCluster) -> set[str]:
    return set(hadoop_node_ids(cluster).values())


def app_of(text: str) -> str:
    m = re.search(r"application_\d+_\d+", text)
    assert m, text[-2000:]
    return m.group(0)


def test_yarn_cli_lists_shepherds_apps_and_nodes(make_cluster: Callable[..., LocalCluster], tmp_path: Path) -> None:
    cluster = make_cluster(nodes=2)
    conf = hadoop_conf(cluster, tmp_path / "conf")
    running = submit_job(cluster, write_job(tmp_path, sleep_job("cli-sleep", 60, tasks=1)), tmp_path / "submit")
    done = submit_job(cluster, write_job(tmp_path, sleep_job("cli-quick", 0.1, tasks=1)), tmp_path / "submit2")
    with RMClient(cluster.rm_address) as rm:
        wait_until(lambda: rm.app(running).state == "RUNNING", 60, "the sleeping job to run")
        wait_until(lambda: rm.app(done).state in FINAL, 60, "the quick job to end")
        listing = yarn(conf, "application", "-list", "-appStates", "ALL")
        assert "Total number of applications" in listing
        rows = {line.split()[0]: line.split() for line in listing.splitlines() if line.strip().startswith("application_")}
        assert set(rows) == {running, done}
        for app_id, row in rows.items():
            r = rm.app(app_id)
            assert r.name in row
            assert r.user in row
            assert r.state in row
            assert r.final_status in row
            assert "default" in row
    nodes = yarn(conf, "node", "-list", "-showDetails")
    assert "Total Nodes:2" in nodes
    listed = {line.split()[0] for line in nodes.splitlines() if re.match(r"\s*\S+:\d+\s+RUNNING", line)}
    assert listed == ipc_node_ids(cluster)
    assert nodes.count("Configured Resources : <memory:4096, vCores:4>") == 2
    assert "Allocated Resources : <memory:" in nodes


def report_fields(text: str) -> dict[str, str]:
    """The ``\tName : value`` lines of a CLI status report."""
    return {k.strip(): v.strip() for k, _, v in (line.partition(" : ") for line in text.splitlines() if " : " in line)}


def test_yarn_cli_lists_attempts_and_containers(make_cluster: Callable[..., LocalCluster], tmp_path: Path) -> None:
    """`yarn applicationattempt -list/-status` and `yarn container -list/-status` for a finished and a running
    app: the ids, states and hosts shepherd holds (containers on the NodeManagers' Hadoop ids)."""
    cluster = make_cluster(nodes=2)
    conf = hadoop_conf(cluster, tmp_path / "conf")
    nodes = hadoop_node_ids(cluster)
    done = submit_job(cluster, write_job(tmp_path, sleep_job("cli-quick", 0.1, tasks=1)), tmp_path / "submit")
    with RMClient(cluster.rm_address) as rm:
        wait_until(lambda: rm.app(done).state == "FINISHED", 60, "the quick job to finish")
        # long enough to outlast every `yarn` call below (a JVM each) on a slow machine; the teardown stops it
        running = submit_job(cluster, write_job(tmp_path, sleep_job("cli-sleep", 600, tasks=2)), tmp_path / "submit2")
        wait_until(lambda: sum(c.state == "RUNNING" for c in rm.containers(running)) == 3, 60,
                   "the sleeping job's AM and tasks to run")
        for app_id, state, live in ((done, "FINISHED", 0), (running, "RUNNING", 3)):
            (attempt,) = rm.attempts(app_id)
            listing = yarn(conf, "applicationattempt", "-list", app_id)
            assert "Total number of application attempts :1" in listing, listing
            (row,) = [line.split() for line in listing.splitlines() if line.strip().startswith("appattempt_")]
            assert row[:3] == [attempt.attempt_id, state, attempt.am_container_id], listing
            status = report_fields(yarn(conf, "applicationattempt", "-status", attempt.attempt_id))
            assert status["ApplicationAttempt-Id"] == attempt.attempt_id
            assert status["State"] == state
            assert status["AMContainer"] == attempt.am_container_id
            am_host = nodes[attempt.node_id].rpartition(":")[0]  # the DAG AM registers from its node's host
            assert status["AM Host"] == am_host
            held = {c.container_id: c for c in rm.containers(app_id)}
            listed = yarn(conf, "container", "-list", attempt.attempt_id)
            assert f"Total number of containers :{len(held)}" in listed, listed
            rows = {r[0]: r for line in listed.splitlines() if (r := line.split()) and r[0].startswith("container_")}
            assert set(rows) == set(held), listed
            # YARN's RMContainerImpl: RUNNING until it completes (the running job's AM may have let a spare go)
            shown = {cid: "COMPLETE" if c.state == "COMPLETED" else "RUNNING" for cid, c in held.items()}
            assert list(shown.values()).count("RUNNING") == live
            for cid, c in held.items():
                host, container_state = nodes[c.node_id], shown[cid]
                assert container_state in rows[cid], rows[cid]
                assert host in rows[cid], rows[cid]
                one = report_fields(yarn(conf, "container", "-status", cid))
                assert (one["Container-Id"], one["State"], one["Host"]) == (cid, container_state, host)
                assert one["LOG-URL"].endswith(f"/ws/v1/node/containers/{cid}/logs")
                assert one["Finish-Time"] == str(c.finish_time_ms)
        # unknown ids: the CLI's own messages for YARN's exceptions, and a failing exit code
        gone = f"{attempt.attempt_id[:-6]}000009"
        missing = run_yarn(conf, "applicationattempt", "-status", gone)
        assert missing.returncode != 0
        assert f"Application Attempt with id '{gone}' doesn't exist in RM" in missing.stdout, missing.stdout
        lost = f"{attempt.am_container_id[:-6]}999999"
        missing = run_yarn(conf, "container", "-status", lost)
        assert missing.returncode != 0
        assert f"Container with id '{lost}' doesn't exist in RM" in missing.stdout, missing.stdout
        assert rm.app(running).state == "RUNNING"


def test_yarn_cli_moves_reprioritizes_and_refreshes_queues(make_cluster: Callable[..., LocalCluster],
                                                           tmp_path: Path) -> None:
    queues = tmp_path / "queues.yaml"
    queues.write_text(yaml.safe_dump({"default": {"capacity": 60}, "batch": {"capacity": 40}}))
    cluster = make_cluster(nodes=1, rm_args=["--queues", str(queues)])
    assert cluster.ipc_admin_address  # any free port, as the client listener's
    conf = hadoop_conf(cluster, tmp_path / "conf", {"yarn.resourcemanager.admin.address": cluster.ipc_admin_address})
    app_id = submit_job(cluster, write_job(tmp_path, sleep_job("cli-move", 600, tasks=1)), tmp_path / "submit")
    with RMClient(cluster.rm_address) as rm:
        moved = yarn(conf, "application", "-appId", app_id, "-changeQueue", "batch")
        assert "Successfully completed move" in moved, moved
        assert rm.app(app_id).queue.endswith("batch")
        yarn(conf, "application", "-appId", app_id, "-updatePriority", "3")
        assert rm.app(app_id).priority == 3
    queues.write_text(yaml.safe_dump({"default": {"capacity": 50}, "batch": {"capacity": 30},
                                      "ops": {"capacity": 20}}))
    # Hadoop's admin client sends no token (its protocol names no token kind), so over SIMPLE it is refused ...
    refused = run_yarn(conf, "rmadmin", "-refreshQueues")
    assert refused.returncode != 0, refused.stdout[-3000:]
    assert "needs an RM delegation token" in refused.stderr, refused.stderr[-3000:]
    # ... unless the operator trusts SIMPLE names (then the name is checked against yarn.admin.acl)
    site = tmp_path / "rm-yarn-site.xml"
    site.write_text("<configuration><property><name>yarn.resourcemanager.ipc.allow-simple-writes</name>"
                    "<value>true</value></property></configuration>")
    cluster.rm_args += ["--yarn-site", str(site)]
    cluster.restart_rm()
    refreshed = run_yarn(conf, "rmadmin", "-refreshQueues")
    assert refreshed.returncode == 0, refreshed.stderr[-3000:]
    log = (cluster.data_dir / "logs" / "rm.log").read_text()
    assert "queues refreshed: root.batch, root.default, root.ops" in log
    assert any("Refresh Queues" in line and "AdminService" in line and "RESULT=SUCCESS" in line
               for line in log.splitlines())


def test_spark_client_mode_with_an_unmanaged_am(make_cluster: Callable[..., LocalCluster], tmp_path: Path) -> None:
    cluster = make_cluster(nodes=2)
    conf = hadoop_conf(cluster, tmp_path / "conf")
    out = subprocess.run(spark_args(tmp_path, "client", "--conf", "spark.yarn.unmanagedAM.enabled=true"),
                         check=False, capture_output=True, text=True, timeout=SPARK_TIMEOUT_S, env=spark_env(conf),
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "Pi is roughly 3.1" in out.stdout
    app_id = app_of(out.stderr)
    with RMClient(cluster.rm_address) as rm:
        report = rm.app(app_id)
        assert (report.state, report.final_status, report.application_type) == ("FINISHED", "SUCCEEDED", "SPARK")
        executors = rm.containers(app_id)
    assert len(executors) >= 2  # the executors ran as containers on shepherd's NodeManagers
    assert {c.node_id for c in executors} <= set(cluster.node_ids)


def test_spark_cluster_mode_runs_its_am_in_a_container(make_cluster: Callable[..., LocalCluster],
                                                        tmp_path: Path) -> None:
    cluster = make_cluster(nodes=2)
    conf = hadoop_conf(cluster, tmp_path / "conf")
    out = subprocess.run(spark_args(tmp_path, "cluster"), check=False, capture_output=True, text=True,
                         timeout=SPARK_TIMEOUT_S, env=spark_env(conf), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-4000:]
    app_id = app_of(out.stderr)
    with RMClient(cluster.rm_address) as rm:
        report = rm.app(app_id)
        assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED")
        am_container = rm.attempts(app_id)[0].am_container_id
        assert am_container
    logs = subprocess.run([sys.executable, "-m", "rm.cli", "logs", app_id, "--container", am_container, "--rm",
                           cluster.rm_address], check=False, capture_output=True, text=True, timeout=60)
    assert "Pi is roughly 3.1" in logs.stdout, logs.stdout[-2000:] + logs.stderr[-2000:]


def test_yarn_kill_ends_a_running_spark_app(make_cluster: Callable[..., LocalCluster], tmp_path: Path) -> None:
    cluster = make_cluster(nodes=2)
    conf = hadoop_conf(cluster, tmp_path / "conf")
    err = (tmp_path / "spark.err").open("w")
    spark = subprocess.Popen(spark_args(tmp_path, "cluster", slices=5000), stdout=subprocess.DEVNULL, stderr=err,
                             env=spark_env(conf), cwd=tmp_path, start_new_session=True)
    try:
        app_id = wait_until(lambda: (m := re.search(r"application_\d+_\d+", (tmp_path / "spark.err").read_text()))
                            and m.group(0), 120, "spark-submit to submit")
        with RMClient(cluster.rm_address) as rm:
            wait_until(lambda: _running_with_executors(rm, app_id), 120, "the Spark app to run with executors")
            # without the token file the stock client authenticates SIMPLE, which proves nothing: refused
            refused = run_yarn(conf, "application", "-kill", app_id, token=False)
            assert refused.returncode != 0, refused.stdout[-3000:]
            assert "AccessControlException" in refused.stderr + refused.stdout, refused.stderr[-3000:]
            assert rm.app(app_id).state == "RUNNING"
            killed = yarn(conf, "application", "-kill", app_id)
            assert f"Killing application {app_id}" in killed
            report = rm.app(app_id)
            assert (report.state, report.final_status) == ("KILLED", "KILLED")
            assert spark.wait(120) != 0  # spark-submit sees the kill
            wait_until(lambda: all(c.state == "COMPLETED" for c in rm.containers(app_id)), 60,
                       "the app's containers to be stopped")
        wait_until(lambda: not _container_processes(cluster.data_dir), 60, "the container processes to exit")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(spark.pid, 9)
        spark.wait(10)
        err.close()


def python_for(account: Account) -> str | None:
    """A Python 3.9+ the account can run (this test run's own is often in a virtualenv under /root)."""
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        path = Path(candidate)
        if path.exists() and closed_to(account, path.resolve().parent) is None and os.stat(path.resolve()).st_mode & 0o001:
            version = subprocess.run([candidate, "-c", "import sys; print(sys.version_info >= (3, 9))"],
                                     capture_output=True, text=True, check=False, user=account.uid,
                                     group=account.gid, timeout=30)
            if version.stdout.strip() == "True":
                return candidate
    return None


@pytest.mark.parametrize("mode", ["client", "cluster"])
def test_spark_runs_as_an_unprivileged_user_in_its_containers(make_cluster: Callable[..., LocalCluster],
                                                             tmp_path: Path, mode: str) -> None:
    """The default setup: containers run as ``nobody``. A user submits pi.py with credentials of its own (issued
    by ``shepherd admin token``) from its own account; the driver (in the AM container in cluster mode) and the
    executors run as that account, and read what it staged."""
    if os.geteuid() != 0:
        pytest.skip("runs the client as another account: needs root")
    account = container_account("nobody", False, euid=0)
    assert account is not None
    jars = pyspark_home() / "jars"
    if closed_to(account, jars) is not None:
        pytest.skip(f"nobody cannot reach the pyspark jars ({closed_to(account, jars)} is closed to it)")
    python = python_for(account)
    if python is None:
        pytest.skip("no Python 3.9+ that nobody can run")
    cluster = make_cluster(nodes=2, container_user="nobody")
    conf = hadoop_conf(cluster, tmp_path / "conf")
    home = tmp_path / "home"
    home.mkdir()
    issued = subprocess.run([sys.executable, "-m", "rm.cli", "admin", "token", "--user", "nobody", "--out",
                             str(home / "creds"), "--rest", cluster.rest_url], capture_output=True, text=True,
                            timeout=60, check=False, env={**os.environ, "SHEPHERD_CREDENTIALS": str(cluster.credentials_path)})
    assert issued.returncode == 0, issued.stderr
    (home / "staging").mkdir()
    for d, dirs, files in os.walk(home):
        for name in [d, *(os.path.join(d, f) for f in dirs + files)]:
            os.chown(name, account.uid, account.gid)
    conf.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "JAVA_HOME": java_home(), "SPARK_HOME": str(pyspark_home()),
           "HADOOP_CONF_DIR": str(conf), "SPARK_LOCAL_IP": "127.0.0.1",
           "HADOOP_TOKEN_FILE_LOCATION": str(home / "creds" / "hadoop.token"), "PYSPARK_PYTHON": python}
    out = subprocess.run(spark_args(home, mode, "--conf", f"spark.pyspark.python={python}"), check=False,
                         capture_output=True, text=True, timeout=SPARK_TIMEOUT_S, env=env, cwd=home,
                         user=account.uid, group=account.gid)
    assert out.returncode == 0, out.stderr[-4000:]
    app_id = app_of(out.stderr)
    with RMClient(cluster.rm_address) as rm:
        report = rm.app(app_id)
        assert (report.state, report.final_status, report.user) == ("FINISHED", "SUCCEEDED", "nobody")
        containers = rm.containers(app_id)
    assert len(containers) >= 2
    logs = [d for d in cluster.data_dir.glob(f"nm*/logs/{app_id}/container_*") if d.is_dir()]
    assert len(logs) >= len(containers)  # the AM's too, in cluster mode
    assert {d.stat().st_uid for d in logs} == {account.uid}  # every container ran as nobody
    if mode == "client":
        assert "Pi is roughly 3.1" in out.stdout
    else:
        assert any("Pi is roughly 3.1" in (d / "stdout").read_text() for d in logs if (d / "stdout").exists())


def _running_with_executors(rm: RMClient, app_id: str) -> bool:
    try:  # spark-submit names the app before it is submitted
        return rm.app(app_id).state == "RUNNING" and len(rm.containers(app_id)) >= 2
    except ClientError:
        return False


def _container_processes(root: Path) -> list[int]:
    pids = []
    for p in psutil.process_iter(["pid", "cwd"]):
        with contextlib.suppress(psutil.Error):
            if p.info["cwd"] and p.info["cwd"].startswith(str(root)) and "containers" in p.info["cwd"]:
                pids.append(p.pid)
    return pids

