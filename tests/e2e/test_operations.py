"""Operating the daemons: JSON-lines logs carrying the ids they are about, gRPC health and server reflection
on the RM and every NodeManager, and ``--check-config`` failing fast with the file and key named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from proto.probe import check
from rm.client import RMClient
from rm.local import LocalCluster
from tests.e2e.conftest import ROOT, sleep_job, submit_job, wait_final, write_job

READY_LINES = ("resourcemanager ready ", "nodemanager ready ")


def _json_lines(path: Path) -> list[dict[str, object]]:
    """Every line of a daemon's log as JSON (the ready lines on stdout aside); fails on any other line."""
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith(READY_LINES):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"{path.name}:{n} is not a JSON line ({exc}): {line[:300]}") from None
        assert {"time", "level", "logger", "service", "message"} <= record.keys(), line
        out.append(record)
    return out


def _reflected(address: str) -> set[str]:
    with grpc.insecure_channel(address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                            timeout=10)
        return {s.name for reply in replies for s in reply.list_services_response.service}


def _health(address: str, service: str = "") -> str:
    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                          timeout=10)
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def test_json_logs_health_and_reflection(make_cluster: Callable[..., LocalCluster], tmp_path: Path) -> None:
    cluster = make_cluster(nodes=2)
    job = write_job(tmp_path, sleep_job("logged", 0.5, tasks=2))
    with RMClient(cluster.rm_address) as client:
        app_id = submit_job(cluster, job, tmp_path)
        report = wait_final(client, app_id)
        assert report.final_status == "SUCCEEDED", report.diagnostics

    assert _health(cluster.rm_address) == "SERVING"
    for service in ("shepherd.v1.ResourceTracker", "shepherd.v1.ApplicationMaster", "shepherd.v1.ApplicationClient"):
        assert _health(cluster.rm_address, service) == "SERVING"
    assert {"shepherd.v1.ApplicationClient", "grpc.health.v1.Health",
            "grpc.reflection.v1alpha.ServerReflection"} <= _reflected(cluster.rm_address)
    for node in cluster.node_ids:  # the node id is the ContainerManager's gRPC address
        assert _health(node) == "SERVING"
        assert check(node, "shepherd.v1.ContainerManager") == "SERVING"  # the probe the image's HEALTHCHECK runs
        assert "shepherd.v1.ContainerManager" in _reflected(node)
    assert check(cluster.rm_address, "shepherd.v1.NoSuchService") == "NOT_FOUND"

    logs = cluster.data_dir / "logs"
    rm_lines = _json_lines(logs / "rm.log")
    assert {r["service"] for r in rm_lines} == {"resourcemanager"}
    about_app = [r for r in rm_lines if r.get("app_id") == app_id]
    assert about_app, "no RM log line carries the app id"
    assert any(str(r.get("container_id", "")).startswith("container_") and r.get("attempt_id") for r in about_app)
    nm_lines = [r for i in range(2) for r in _json_lines(logs / f"nm{i}.log")]
    assert {r["service"] for r in nm_lines} == {"nodemanager"}
    assert any(r.get("app_id") == app_id and r.get("container_id") for r in nm_lines), \
        "no NodeManager log line carries the app and container ids"


# ------------------------------------------------------------------------------------------- --check-config


def _shepherd(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHEPHERD_", "HADOOP_", "YARN_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "rm.cli", *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd, check=False, env=env)


def test_check_config_accepts_a_good_file(tmp_path: Path) -> None:
    config = tmp_path / "shepherd.yaml"
    config.write_text("shepherd.resourcemanager.scheduler: drf\nshepherd.nodemanager.rack: /r1\n"
                      "queues: {a: {capacity: 50}, b: {capacity: 50}}\n")
    rm = _shepherd("rm", "--check-config", "--config", str(config), "--data-dir", str(tmp_path / "rm"),
                   cwd=tmp_path)
    assert rm.returncode == 0, rm.stderr
    assert "configuration is valid" in rm.stdout
    assert str(config) in rm.stdout
    assert not (tmp_path / "rm").exists()  # nothing opened, nothing created
    nm = _shepherd("nm", "--check-config", "--config", str(config), "--work-dir", str(tmp_path / "nm"),
                   cwd=tmp_path)
    assert nm.returncode == 0, nm.stderr
    assert "configuration is valid" in nm.stdout


def test_check_config_names_the_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "shepherd.yaml"
    config.write_text("shepherd.resourcemanager.schedular: drf\nshepherd.nodemanager.rak: /r1\n")
    rm = _shepherd("rm", "--check-config", "--config", str(config), cwd=tmp_path)
    assert rm.returncode == 2
    assert f"{config}: unknown property shepherd.resourcemanager.schedular" in rm.stderr, rm.stderr
    assert "did you mean shepherd.resourcemanager.scheduler?" in rm.stderr, rm.stderr
    nm = _shepherd("nm", "--check-config", "--config", str(config), cwd=tmp_path)
    assert nm.returncode == 2
    assert f"{config}: unknown property shepherd.nodemanager.rak" in nm.stderr, nm.stderr

    config.write_text("yarn.resourcemanager.am.max-attempts: lots\n")
    bad = _shepherd("rm", "--check-config", "--config", str(config), cwd=tmp_path)
    assert bad.returncode == 2
    assert "yarn.resourcemanager.am.max-attempts" in bad.stderr, bad.stderr
    assert str(config) in bad.stderr, bad.stderr

    config.write_text("shepherd.resourcemanager.scheduler: nonesuch\n")
    unknown = _shepherd("rm", "--check-config", "--config", str(config), cwd=tmp_path)
    assert unknown.returncode == 2
    assert f"shepherd.resourcemanager.scheduler from {config}" in unknown.stderr, unknown.stderr


def test_start_fails_fast_on_a_bad_config(tmp_path: Path) -> None:
    """The daemons run the same checks at start: exit 2 before the RM opens (or creates) its store."""
    config = tmp_path / "shepherd.yaml"
    config.write_text("shepherd.resourcemanager.data-dir: " + str(tmp_path / "rm") + "\n"
                      "shepherd.resourcemanager.leftover-cap: 2\n")
    rm = _shepherd("rm", "--config", str(config), "--create-store", "--grpc-port", "0", "--rest-port", "0",
                   cwd=tmp_path)
    assert rm.returncode == 2, rm.stderr
    assert "unknown property shepherd.resourcemanager.leftover-cap" in rm.stderr, rm.stderr
    assert "did you mean shepherd.resourcemanager.carbyne.leftover-cap" in rm.stderr, rm.stderr
    assert not (tmp_path / "rm").exists()
    config.write_text("shepherd.nodemanager.heartbeat-interval: 1000\n")
    nm = _shepherd("nm", "--config", str(config), "--work-dir", str(tmp_path / "nm"), "--port", "0",
                   "--http-port", "0", cwd=tmp_path)
    assert nm.returncode == 2, nm.stderr
    assert "unknown property shepherd.nodemanager.heartbeat-interval" in nm.stderr, nm.stderr


def test_config_validate_names_unknown_properties_too(tmp_path: Path) -> None:
    config = tmp_path / "shepherd.yaml"
    config.write_text("shepherd.resourcemanager.scheduler: drf\nshepherd.nodemanager.racks: /r1\n")
    run = _shepherd("config", "validate", "--config", str(config), cwd=tmp_path)
    assert run.returncode == 2
    assert f"NodeManager: {config}: unknown property shepherd.nodemanager.racks" in run.stderr, run.stderr
    assert "did you mean shepherd.nodemanager.rack?" in run.stderr, run.stderr
    config.write_text("shepherd.resourcemanager.scheduler: drf\nshepherd.nodemanager.rack: /r1\n")
    ok = _shepherd("config", "validate", "--config", str(config), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
