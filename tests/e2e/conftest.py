"""Fixtures for end-to-end tests: real ResourceManager and NodeManager processes on loopback."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from rm.client import RMClient
from rm.local import LocalCluster
from rm.netns import Network, unavailable

ROOT = Path(__file__).resolve().parents[2]
FINAL = {"FINISHED", "FAILED", "KILLED"}


def wait_until(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """Wait, with a deadline, until ``pred()`` returns something truthy; return it."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def kill_strays(root: Path) -> None:
    """Kill container processes left behind under ``root`` (e.g. by a NodeManager killed with -9)."""
    root_s = str(root)
    for p in psutil.process_iter(["pid", "cwd"]):
        with contextlib.suppress(psutil.Error, OSError):
            if p.info["cwd"] and p.info["cwd"].startswith(root_s):
                os.killpg(os.getpgid(p.pid), signal.SIGKILL)


def searchable(path: Path) -> None:
    """Let other accounts enter ``path`` and the directories above it that this user owns (search, not list:
    pytest's tmp dirs are private to their user)."""
    for d in [path, *path.parents]:
        st = d.stat()
        if st.st_uid == os.geteuid() and not st.st_mode & 0o001:
            d.chmod(stat.S_IMODE(st.st_mode) | 0o011)


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[..., LocalCluster]]:
    clusters: list[LocalCluster] = []

    def make(nodes: int = 2, **kw: Any) -> LocalCluster:
        kw.setdefault("grpc_port", 0)
        kw.setdefault("rest_port", 0)
        kw.setdefault("ipc_client_port", 0)
        kw.setdefault("ipc_scheduler_port", 0)
        # as root, the tests' clusters run containers as root, asked for: their job files and data dirs are in
        # pytest's private tmp dirs (test_secure_defaults.py covers the default, an unprivileged account)
        kw.setdefault("allow_root_containers", "container_user" not in kw)
        if os.geteuid() == 0 and not kw["allow_root_containers"]:
            searchable(tmp_path)  # the container account must enter the data dir
        c = LocalCluster(data_dir=tmp_path / f"cluster{len(clusters)}", nodes=nodes, **kw)
        clusters.append(c)
        c.start()
        return c

    yield make
    for c in clusters:
        c.stop()
    kill_strays(tmp_path)


def write_job(tmp_path: Path, job: dict[str, Any]) -> Path:
    path = tmp_path / f"{job['id']}-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def sleep_job(job_id: str, seconds: float, tasks: int, memory_mb: int = 128, vcores: int = 1,
              stages: int = 1, **extra: Any) -> dict[str, Any]:
    stage_list = []
    for i in range(stages):
        stage_list.append({
            "name": f"s{i}", "tasks": tasks, "memory_mb": memory_mb, "vcores": vcores,
            "duration_s": seconds, "parents": [f"s{i - 1}"] if i else [],
            "command": f"sleep {seconds}",
        })
    return {"id": job_id, "stages": stage_list, **extra}


def submit_job(cluster: LocalCluster, job_path: Path, data_dir: Path) -> str:
    """Submit through the real CLI code path (without --wait); return the app id."""
    import re
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "rm.cli", "submit", str(job_path), "--rm", cluster.rm_address,
         "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    m = re.search(r"(application_\d+_\d+)", out)
    assert m, out
    return m.group(1)


def wait_final(client: RMClient, app_id: str, timeout: float = 120.0) -> Any:
    return wait_until(lambda: (r := client.app(app_id)).state in FINAL and r, timeout, f"{app_id} to end")


def am_process(container_id: str) -> psutil.Process:
    for p in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if "am.dag" in " ".join(p.info["cmdline"] or []) and \
                    p.environ().get("CONTAINER_ID") == container_id:
                return p
    raise LookupError(container_id)


def fresh_pg_database():  # type: ignore[no-untyped-def]
    """A new, empty PostgreSQL database for one test: its store URL and a function that drops it."""
    psycopg = pytest.importorskip("psycopg")
    name = f"shepherd_e2e_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"PostgreSQL is not reachable: {exc}")

    def drop() -> None:
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", drop


@pytest.fixture
def network() -> Iterator[Network]:
    """Hosts in network namespaces on a bridge (rm/netns.py); the test is skipped where the machine allows none."""
    why = unavailable()
    if why:
        pytest.skip(why)
    net = Network()
    refused = net.make()
    if refused:
        pytest.skip(refused)
    try:
        yield net
    finally:
        net.remove()
