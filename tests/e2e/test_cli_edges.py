"""The operator's rough edges: a busy port named in one line, error texts printed literally and once without
Java class names, `shepherd nm --help` listing its flags, readable times, the default vcores of `shepherd up`,
the version, shell completion, and -o json in the REST API's shapes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from rm import cli
from rm.core.policies.registry import named_pipeline
from rm.core.reservation.stage import ReservationStage
from rm.service.settings import load_rm_settings
from tests.e2e.conftest import sleep_job, submit_job, wait_until, write_job


def shepherd(*args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False, cwd=cwd, env=env)


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another process (here: this one) listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_up_on_a_busy_port_says_which_in_one_line(busy_port: int, tmp_path: Path) -> None:
    run = shepherd("up", "--rest-port", str(busy_port), "--grpc-port", "0", "--data-dir", str(tmp_path / "d"))
    assert run.returncode == 2
    line = one_error_line(run.stderr)
    assert f"port {busy_port} (REST/web)" in line
    assert "--rest-port" in line
    assert not (tmp_path / "d").exists()  # refused before anything started
    ipc = shepherd("up", "--rest-port", "0", "--grpc-port", "0", "--ipc-client-port", str(busy_port),
                   "--data-dir", str(tmp_path / "d"))
    assert ipc.returncode == 2
    assert f"port {busy_port} (Hadoop IPC client)" in one_error_line(ipc.stderr)


def test_rm_on_a_busy_grpc_port_says_which_in_one_line(busy_port: int, tmp_path: Path) -> None:
    run = shepherd("rm", "--grpc-port", str(busy_port), "--rest-port", "0", "--ipc-client-port", "-1",
                   "--ipc-scheduler-port", "-1", "--data-dir", str(tmp_path), "--create-store", "--insecure")
    assert run.returncode == 2
    assert f"port {busy_port} (gRPC)" in one_error_line(run.stderr)


def test_a_malformed_job_file_is_reported_literally_once(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: broken\ninputs: [a, b\nstages: []\n")
    for command in (["submit", str(bad), "--rm", "127.0.0.1:1"], ["job", "plan", str(bad), "--rest", "127.0.0.1:1"]):
        run = shepherd(*command)
        assert run.returncode == 2, run.stderr
        assert run.stderr.startswith("error: invalid job file:"), run.stderr  # the parser's text, over lines
        assert run.stderr.count("error:") == 1
        assert "Traceback" not in run.stderr
        assert "expected ',' or ']'" in run.stderr  # rich markup would have eaten "[...]"


def test_an_rm_message_loses_its_java_class_name_and_keeps_brackets() -> None:
    from rm.commands.output import plain

    assert plain("ApplicationNotFoundException: Application with id 'application_1_0042' doesn't exist.") \
        == "Application with id 'application_1_0042' doesn't exist."
    assert plain("org.apache.hadoop.yarn.exceptions.YarnException: [QUEUE_AT_MAX_CAPACITY] full") \
        == "[QUEUE_AT_MAX_CAPACITY] full"
    assert plain("queue root.x: capacity must be in [0, 100]") == "queue root.x: capacity must be in [0, 100]"


def test_nm_help_lists_the_nodemanagers_flags() -> None:
    run = shepherd("nm", "--help")
    assert run.returncode == 0, run.stderr
    for flag in ("--rm", "--memory-mb", "--vcores", "--work-dir", "--credentials"):
        assert flag in run.stdout


def test_version_completion_and_grouped_help() -> None:
    run = shepherd("--version")
    assert run.returncode == 0
    assert re.fullmatch(r"shepherd \d+\.\d+\.\d+\S* \(Python 3\.\d+\.\d+\)\n", run.stdout), run.stdout
    completion = shepherd("--show-completion", "bash")
    assert completion.returncode == 0, completion.stderr
    assert "complete" in completion.stdout
    helped = shepherd("--help")
    for panel in ("Run a cluster", "Jobs", "Look at the cluster", "Configure and plan"):
        assert panel in helped.stdout
    assert "[default: this host's cores split among the nodes, at least 1]" in " ".join(
        shepherd("up", "--help").stdout.split()).replace("│ ", "")


def test_install_completion_writes_a_bash_completion_that_completes(tmp_path: Path) -> None:
    """`shepherd --install-completion bash` into a fresh home; the script it installs, sourced by bash, completes
    `shepherd app ki` to `kill` (an interactive shell's Tab press calls the same function)."""
    script = Path(sys.executable).parent / "shepherd"
    if not script.exists():
        pytest.skip("the shepherd console script is not installed next to this interpreter")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "HOME": str(tmp_path),
           "PATH": f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}  # name the shell rather than detect it
    installed = subprocess.run([str(script), "--install-completion", "bash"], capture_output=True, text=True,
                               timeout=60, check=False, env=env, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    completion = tmp_path / ".bash_completions" / "shepherd.sh"
    assert completion.exists(), installed.stdout
    assert str(completion) in (tmp_path / ".bashrc").read_text()
    env.pop("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION")

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        program = (f'source "{completion}"; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; '
                   '_shepherd_completion shepherd; printf "%s\\n" "${COMPREPLY[@]}"')
        run = subprocess.run(["bash", "--norc", "-c", program],
                             capture_output=True, text=True, timeout=60, check=False, env=env)
        assert run.returncode == 0, run.stderr
        return run.stdout.split()

    assert complete("shepherd", "app", "ki") == ["kill"]
    assert set(complete("shepherd", "ap")) == {"app", "apps"}


def test_up_splits_the_host_among_its_nodes_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import rm.local

    made: list[dict[str, Any]] = []

    class Refusing:
        def __init__(self, **kw: Any) -> None:
            made.append(kw)

        def start(self) -> None:
            raise RuntimeError("resourcemanager did not become ready (exit 2); log tail:\nerror: stopped here")

        def stop(self) -> None:
            pass

    monkeypatch.setattr(rm.local, "LocalCluster", Refusing)
    runner = CliRunner()
    result = runner.invoke(cli.app, ["up", "--grpc-port", "0", "--rest-port", "0", "--data-dir", str(tmp_path)])
    assert result.exit_code == 1
    cores = len(os.sched_getaffinity(0))
    assert made[0]["node_vcores"] == max(1, cores // 2)  # two nodes by default
    assert 512 <= made[0]["node_memory_mb"] <= 4096
    result = runner.invoke(cli.app, ["up", "--grpc-port", "0", "--rest-port", "0", "--node-vcores", "3"])
    assert made[1]["node_vcores"] == 3
    runner.invoke(cli.app, ["up", "--grpc-port", "0", "--rest-port", "0", "--nodes", "1", "--node-memory-mb", "700"])
    assert (made[2]["node_vcores"], made[2]["node_memory_mb"]) == (cores, 700)
    assert "stopped here" in result.output
    # containers of a root `shepherd up` run as an unprivileged account unless root ones are asked for by name
    assert (made[0]["container_user"], made[0]["allow_root_containers"]) == (None, False)
    runner.invoke(cli.app, ["up", "--grpc-port", "0", "--rest-port", "0", "--allow-root-containers"])
    assert made[3]["allow_root_containers"] is True
    assert made[3]["limit_users"] is True  # every container as the one account unless told otherwise
    runner.invoke(cli.app, ["up", "--grpc-port", "0", "--rest-port", "0", "--no-limit-users"])
    assert made[4]["limit_users"] is False
    assert "Traceback" not in result.output


def test_the_default_scheduler_serves_reservations() -> None:
    name = load_rm_settings(env={}).config.scheduler
    assert name == "mrm"
    stages, _ = named_pipeline(name)
    assert ReservationStage.name in [stage.name for stage in stages]


@pytest.mark.slow
def test_cluster_commands_read_well(make_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=1)
    rm = ["--rm", cluster.rm_address]
    app_id = submit_job(cluster, write_job(tmp_path, sleep_job("sleeper", 120, tasks=1)), tmp_path)

    apps = json.loads(shepherd("apps", "-o", "json", *rm).stdout)
    assert [a["id"] for a in apps] == [app_id]
    assert {"finalStatus", "allocatedMB", "allocatedVCores", "applicationType", "startedTime"} <= set(apps[0])
    listed = json.loads(shepherd("app", "list", "-o", "json", *rm).stdout)
    assert listed[0]["id"] == app_id
    nodes = json.loads(shepherd("nodes", "-o", "json", *rm).stdout)
    assert [n["id"] for n in nodes] == cluster.node_ids
    assert {"nodeHTTPAddress", "totalResource", "usedResource", "lastHealthUpdate"} <= set(nodes[0])
    assert nodes[0]["totalResource"]["vCores"] > 0
    assert json.loads(shepherd("node", "list", "-o", "json", *rm).stdout)[0]["id"] == cluster.node_ids[0]

    status = shepherd("node", "status", cluster.node_ids[0], *rm)
    assert status.returncode == 0, status.stderr
    assert re.search(r"last health update\s+\S*\s*20\d\d-\d\d-\d\d \d\d:\d\d:\d\d \(\d+ s ago\)", status.stdout), \
        status.stdout

    unknown = shepherd("app", "kill", "application_1_0042", *rm)
    assert unknown.returncode == 2
    line = one_error_line(unknown.stderr)
    assert "application_1_0042" in line
    assert "Exception" not in line
    killed = shepherd("app", "kill", app_id, *rm)
    assert killed.returncode == 0, killed.stderr
    wait_until(lambda: json.loads(shepherd("apps", "-o", "json", *rm).stdout)[0]["state"] == "KILLED", 30, "killed")
    again = shepherd("kill", app_id, *rm)
    assert again.returncode == 2
    assert "KILLED" in one_error_line(again.stderr)

    watch = subprocess.Popen([sys.executable, "-m", "rm.cli", "nodes", "--watch", "--interval", "0.3", "-o", "yaml",
                              *rm], stdout=subprocess.PIPE, text=True)
    assert watch.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and seen.count("---\n") < 2:
        seen.append(watch.stdout.readline())
    watch.send_signal(signal.SIGINT)
    assert watch.wait(10) == 0
    docs = [d for d in yaml.safe_load_all("".join(seen[:seen.index("---\n")]))]
    assert docs[0][0]["id"] == cluster.node_ids[0]



@pytest.mark.slow
def test_a_job_no_node_could_run_is_refused_at_submission(  # type: ignore[no-untyped-def]
        make_cluster, tmp_path: Path) -> None:
    """A stage asking 10x a node's memory: `submit` and `submit --wait` exit 2 with one line naming the stage and
    the amount, and no app appears; a job that fits still runs."""
    cluster = make_cluster(nodes=1)  # one node of 4096 MB: the maximum allocation
    rm = ["--rm", cluster.rm_address, "--data-dir", str(tmp_path / "out")]

    def app_ids() -> list[str]:
        listed = shepherd("apps", "-o", "json", "--rm", cluster.rm_address)
        assert listed.returncode == 0, listed.stderr
        return sorted(a["id"] for a in json.loads(listed.stdout))

    fits = shepherd("submit", str(write_job(tmp_path, sleep_job("fits", 0.5, tasks=2))), "--wait", *rm,
                    timeout=120)
    assert fits.returncode == 0, fits.stdout + fits.stderr
    before = app_ids()
    assert len(before) == 1
    huge = write_job(tmp_path, sleep_job("huge", 1, tasks=2, memory_mb=10 * 4096))
    for wait in ((), ("--wait",)):
        run = shepherd("submit", str(huge), *wait, *rm)
        assert run.returncode == 2, (wait, run.stdout, run.stderr)
        line = one_error_line(run.stderr)
        assert "stage 's0': a task of <memory-mb=40960, vcores=1> exceeds the maximum allocation" in line, line
        assert "Exception" not in line
        assert "submitted" not in run.stdout
    assert app_ids() == before

def test_a_plan_token_submits_only_while_the_plan_holds(  # type: ignore[no-untyped-def]
        make_cluster, tmp_path: Path) -> None:
    """`job plan` prints a plan token; `submit --plan-token` is accepted while the cluster is as planned, and
    refused (exit 2, naming the app submitted since) once another app came, or for another job."""
    cluster = make_cluster(nodes=1)
    rm = ["--rm", cluster.rm_address, "--data-dir", str(tmp_path / "out")]
    env = {"SHEPHERD_REST": cluster.rest_url}
    # long enough to be still running at the second submission: a plan is made on the unfinished apps, so one
    # that had already ended would leave the plan holding
    job = write_job(tmp_path, sleep_job("planned", 60, tasks=2))

    def plan_token() -> str:
        run = shepherd_env(env, "job", "plan", str(job))
        assert run.returncode == 0, run.stdout + run.stderr
        found = re.search(r"--plan-token (\S+)", run.stdout.replace("\n", ""))
        assert found, run.stdout
        return found.group(1)

    token = plan_token()
    accepted = shepherd("submit", str(job), "--plan-token", token, *rm)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    stale = shepherd("submit", str(job), "--plan-token", token, *rm)  # the first submission came since
    assert stale.returncode == 2, stale.stdout + stale.stderr
    line = one_error_line(stale.stderr)
    assert "the cluster changed since the plan (submitted since: application_" in line, line
    other = write_job(tmp_path, sleep_job("planned", 60, tasks=3))
    refused = shepherd("submit", str(other), "--plan-token", plan_token(), *rm)
    assert refused.returncode == 2
    assert "the job differs from the one planned" in one_error_line(refused.stderr)
    listed = json.loads(shepherd("apps", "-o", "json", "--rm", cluster.rm_address).stdout)
    assert len(listed) == 1  # only the submission whose plan held


def shepherd_env(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), **env}
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True, timeout=120,
                          check=False, env=full)


@pytest.mark.slow
def test_a_scheduler_without_the_reservation_stage_refuses_reservations(  # type: ignore[no-untyped-def]
        make_cluster, tmp_path: Path) -> None:
    import httpx

    config = tmp_path / "rm.yaml"
    config.write_text(yaml.safe_dump({"shepherd.resourcemanager.scheduler": "drf"}))
    cluster = make_cluster(nodes=1, rm_args=["--config", str(config)])
    now_ms = int(time.time() * 1000)
    with httpx.Client(base_url=cluster.rest_url, timeout=30.0,
                      headers={"Authorization": f"Bearer {cluster.client_secret}"}) as http:
        rid = http.post("/ws/v1/cluster/reservation/new-reservation").json()["reservation-id"]
        resp = http.post("/ws/v1/cluster/reservation/submit", json={
            "queue": "default", "reservation-id": rid, "reservation-definition": {
                "arrival": now_ms, "deadline": now_ms + 15 * 60_000, "reservation-name": "prod",
                "reservation-requests": {"reservation-request-interpreter": 1, "reservation-request": [
                    {"capability": {"memory": 256, "vCores": 1}, "num-containers": 1, "min-concurrency": 1,
                     "duration": 60_000}]}}})
        assert resp.status_code == 400, resp.text
        message = resp.json()["RemoteException"]["message"]
        assert "'drf' has no reservation stage" in message
        assert "mrm" in message
        listed = http.get("/ws/v1/cluster/reservation/list", params={"queue": "default"})
        assert rid not in listed.text  # nothing was recorded
    refused = shepherd("slo", "accept", "nightly", "--rest", cluster.rest_url)
    assert refused.returncode == 2
    assert "no reservation stage" in one_error_line(refused.stderr)


@pytest.mark.slow
def test_up_serves_until_interrupted_with_the_hosts_cores(tmp_path: Path) -> None:
    up = subprocess.Popen([sys.executable, "-m", "rm.cli", "up", "--nodes", "1", "--grpc-port", "0", "--rest-port",
                           "0", "--ipc-client-port", "0", "--ipc-scheduler-port", "0", "--data-dir",
                           str(tmp_path / "c"), "--allow-root-containers"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    assert up.stdout is not None
    said: list[str] = []
    try:
        for line in up.stdout:
            said.append(line)
            if line.startswith("cluster ready"):
                break
        ready = re.search(r"cluster ready rm=(\S+) rest=(\S+)", said[-1])
        assert ready, "".join(said)
        assert any(f"web UI {ready.group(2)}/" in line for line in said)
        assert any(f"{ready.group(2)}/metrics" in line for line in said)
        nodes = json.loads(shepherd("nodes", "-o", "json", "--rm", ready.group(1)).stdout)
        assert [n["totalResource"]["vCores"] for n in nodes] == [len(os.sched_getaffinity(0))]
    finally:
        up.send_signal(signal.SIGINT)
        rest, _ = up.communicate(timeout=60)
    assert up.returncode == 0, rest
    assert "stopped the cluster" in rest
