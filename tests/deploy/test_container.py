"""The top-level Dockerfile, built and run as an operator would: a Debian base made here with debootstrap
(no image registry is reachable) and imported as a local image, the image built with podman, then a
ResourceManager and two NodeManager containers that run the word-count demo job to success.

A few minutes (less once podman's store holds the base image): it runs with ``pytest -m deploy`` (.ci/run
does). What the machine refuses (no podman, no debootstrap, containers that cannot start) is named in the skip
or failure message; the image is built before anything is run.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import ROOT

pytestmark = pytest.mark.deploy

BASE_IMAGE = os.environ.get("SHEPHERD_TEST_BASE_IMAGE", "localhost/shepherd-base:bookworm")
SUITE = os.environ.get("SHEPHERD_TEST_DEBIAN_SUITE", "bookworm")
MIRROR = os.environ.get("SHEPHERD_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECRETS = {"SHEPHERD_NODE_SECRET": uuid.uuid4().hex, "SHEPHERD_CLIENT_SECRET": uuid.uuid4().hex}


def _run(args: list[str], timeout: float = 600, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False, **kw)


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed (Debian package {tool}; .ci/run installs it)")
    return path


def _hard_limit(name: str, cap: int) -> int:
    hard = resource.getrlimit(getattr(resource, name))[1]
    return cap if hard == resource.RLIM_INFINITY else min(cap, hard)


def _limits() -> list[str]:
    """rlimits no higher than this process's own: the sandbox here refuses to raise them to podman's defaults
    ("setrlimit RLIMIT_NOFILE: Operation not permitted")."""
    nofile, nproc = _hard_limit("RLIMIT_NOFILE", 65536), _hard_limit("RLIMIT_NPROC", 4096)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


def _runtimes() -> list[list[str]]:
    """podman's default OCI runtime, then runc: crun refuses a hybrid cgroup v1/v2 host ("cgroups in hybrid mode
    not supported"), where runc works."""
    return [[], *([["--runtime", "runc"]] if shutil.which("runc") else [])]


def _base_image(podman: str, tmp: Path) -> None:
    """A minimal Debian with Python, from Debian's package registry, imported as a local image (kept for the
    next run: podman's store is the cache)."""
    if _run([podman, "image", "exists", BASE_IMAGE]).returncode == 0:
        return
    debootstrap = _need("debootstrap")
    if os.geteuid() != 0:
        pytest.skip("debootstrap needs root to make the base image")
    rootfs = tmp / "rootfs"
    made = _run([debootstrap, "--variant=minbase", "--include=python3,python3-venv,ca-certificates", SUITE,
                 str(rootfs), MIRROR], timeout=1800)
    assert made.returncode == 0, f"debootstrap failed:\n{made.stdout[-3000:]}\n{made.stderr[-3000:]}"
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run([podman, "import", "-", BASE_IMAGE], stdin=tar.stdout, capture_output=True,
                              text=True, timeout=600, check=False)
    tar.wait(60)
    assert imported.returncode == 0, f"podman import failed: {imported.stderr}"
    shutil.rmtree(rootfs, ignore_errors=True)


def _context(tmp: Path) -> Path:
    """The build context: the project's files (as git lists them, with their working-tree contents) and a
    wheelhouse built here, so that nothing inside the build needs the network."""
    ctx = tmp / "context"
    files = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT).stdout
    for name in filter(None, files.split("\0")):
        src = ROOT / name
        if src.is_file() and not name.startswith(("tests/", "bench/", ".git")):
            (ctx / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, ctx / name)
    wheels = _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(ctx / "wheels"), str(ctx),
                   "setuptools>=68"], timeout=1800)
    assert wheels.returncode == 0, f"pip wheel failed: {wheels.stderr[-3000:]}"
    return ctx


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str], list[str]]]:
    """(image tag, podman command with the runtime that works here, run flags)."""
    podman = _need("podman")
    tmp = tmp_path_factory.mktemp("image")
    _base_image(podman, tmp)
    ctx = _context(tmp)
    tag = f"localhost/shepherd:test-{uuid.uuid4().hex[:8]}"
    failures = []
    for runtime in _runtimes():
        for limits in ([], _limits()):
            # --format docker: an OCI image has no HEALTHCHECK; --layers=false: no intermediate images left
            # behind by every run (the build stage's among them)
            args = [podman, *runtime, "build", *limits, "--layers=false", "--format", "docker", "--build-arg",
                    f"BASE_IMAGE={BASE_IMAGE}", "-t", tag, str(ctx)]
            built = _run(args, timeout=1800)
            if built.returncode == 0:
                break
            failures.append(f"{' '.join(args)}:\n{built.stdout[-2000:]}\n{built.stderr[-2000:]}")
        else:
            continue
        break
    else:
        raise AssertionError("the image did not build:\n" + "\n".join(failures))
    try:
        inspect = json.loads(_run([podman, "image", "inspect", tag]).stdout)[0]
        config = inspect.get("Config") or {}
        assert config.get("User") == "shepherd"
        assert (inspect.get("Healthcheck") or config.get("Healthcheck") or {}).get("Test"), "no HEALTHCHECK"
        refused = []
        for runtime in _runtimes():
            for flags in ([], _limits()):
                probe = _run([podman, *runtime, "run", "--rm", *flags, "--entrypoint", "id", tag, "-u"],
                             timeout=120)
                if probe.returncode == 0:
                    assert probe.stdout.strip() == "10001"  # not root
                    yield tag, [podman, *runtime], flags
                    return
                refused.append(f"podman {' '.join([*runtime, 'run', *flags])}: {probe.stderr.strip()[-400:]}")
        pytest.skip("the image was built, but this machine refused to run containers:\n" + "\n".join(refused))
    finally:
        _run([podman, "rmi", "-f", tag])


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Containers:
    def __init__(self, podman: list[str], run_flags: list[str], image: str) -> None:
        self.podman, self.run_flags, self.image = podman, run_flags, image
        self.names: list[str] = []

    def start(self, name: str, args: list[str], volumes: list[str]) -> str:
        full = f"shepherd-test-{name}-{uuid.uuid4().hex[:6]}"
        env = [f"--env={k}" for k in SECRETS]  # from this process's environment: not on the command line
        # the host's network: every daemon on 127.0.0.1, each on its own ports
        cmd = [*self.podman, "run", "-d", "--name", full, "--network", "host", *self.run_flags, *env,
               *[f"--volume={v}" for v in volumes], self.image, *args]
        started = _run(cmd, timeout=120, env={**os.environ, **SECRETS})
        assert started.returncode == 0, f"{' '.join(cmd)}: {started.stderr}"
        self.names.append(full)
        return full

    def logs(self, name: str) -> str:
        out = _run([*self.podman, "logs", name], timeout=60)
        return out.stdout + out.stderr

    def exec(self, name: str, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return _run([*self.podman, "exec", name, *args], timeout=timeout)

    def wait_for(self, name: str, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.logs(name):
                return
            if _run([*self.podman, "inspect", "-f", "{{.State.Running}}", name]).stdout.strip() == "false":
                break
            time.sleep(1)
        raise AssertionError(f"{name} never printed {text!r}; its log:\n{self.logs(name)[-4000:]}")

    def remove(self) -> None:
        for name in self.names:
            _run([*self.podman, "rm", "-f", "-t", "10", name], timeout=120)


def test_rm_and_two_nodemanagers_in_containers_run_the_demo_job(image: tuple[str, list[str], list[str]],
                                                                tmp_path: Path) -> None:
    tag, podman, run_flags = image
    shared = tmp_path / "shared"  # stands in for the cluster's shared file system (NFS, a FUSE mount, ...)
    shared.mkdir()
    if os.geteuid() == 0:
        os.chown(shared, 10001, 10001)
    else:
        shared.chmod(0o777)
    grpc_port, rest_port, *nm_ports = _free_ports(8)
    containers = Containers(podman, run_flags, tag)
    try:
        rm = containers.start("rm", ["rm", "--grpc-port", str(grpc_port), "--rest-port", str(rest_port),
                                     "--ipc-client-port", "-1", "--ipc-scheduler-port", "-1",
                                     "--data-dir", "/var/lib/shepherd/rm", "--create-store"], [f"{shared}:/shared"])
        containers.wait_for(rm, "resourcemanager ready")
        nms = []
        for i in range(2):
            port, http, ipc = nm_ports[3 * i: 3 * i + 3]
            nms.append(containers.start(f"nm{i}", [
                "nm", "--rm", f"127.0.0.1:{grpc_port}", "--port", str(port), "--http-port", str(http),
                "--ipc-port", str(ipc), "--memory-mb", "2048", "--vcores", "2", "--no-cgroups",
                "--work-dir", "/var/lib/shepherd/nm"], [f"{shared}:/shared"]))
        for nm in nms:
            containers.wait_for(nm, "nodemanager ready")
        nodes = httpx.get(f"http://127.0.0.1:{rest_port}/ws/v1/cluster/nodes", timeout=10).json()
        assert len(nodes["nodes"]["node"]) == 2, nodes

        for name in (rm, *nms):
            assert containers.exec(name, ["id", "-u"]).stdout.strip() == "10001"  # the daemons are not root
            health = _run([*podman, "healthcheck", "run", name], timeout=60)
            assert health.returncode == 0, f"{name} HEALTHCHECK: {health.stdout} {health.stderr}"

        submit = containers.exec(rm, ["shepherd", "submit", "/opt/shepherd/app/examples/wordcount.yaml", "--wait",
                                      "--rm", f"127.0.0.1:{grpc_port}", "--data-dir", "/shared"], timeout=600)
        logs = "".join(f"\n--- {n}:\n{containers.logs(n)[-3000:]}" for n in (rm, *nms))
        assert submit.returncode == 0, f"{submit.stdout}\n{submit.stderr}{logs}"
        (out_dir,) = (shared / "output").iterdir()
        verify = _run([sys.executable, str(ROOT / "examples" / "verify_wordcount.py"), str(out_dir)])
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert all("container_" in containers.logs(nm) for nm in nms), f"not both nodes ran containers{logs}"
        for line in containers.logs(rm).splitlines():  # the image logs JSON lines (the ready line aside)
            if line.strip() and not line.startswith("resourcemanager ready"):
                try:
                    json.loads(line)
                except json.JSONDecodeError:
                    raise AssertionError(f"not a JSON log line: {line}") from None
    finally:
        containers.remove()
