"""NodeManager container launch pieces: expansions, environment, localization, process groups."""

from __future__ import annotations

import asyncio
import io
import os
import sys
import tarfile
import zipfile
from pathlib import Path

import psutil
import pytest

from nodemanager.config import NodeManagerConfig, parse_resources
from nodemanager.launch import (
    SHEPHERD_ROOT,
    LaunchError,
    LaunchSpec,
    LocalResource,
    container_dirs,
    exit_code,
    expand,
    kill_group,
    localize,
    plan_process,
    spawn,
    validate,
)
from nodemanager.limits import CgroupV2, MemorySample, pmem_diagnostic, sample_tree

CID = "container_1700000000000_0001_01_000002"
APP = "application_1700000000000_0001"


def spec(
    *commands: str, env: dict[str, str] | None = None, res: dict[str, LocalResource] | None = None
) -> LaunchSpec:
    return LaunchSpec(commands=commands, environment=env or {}, local_resources=res or {})


def plan(
    tmp_path: Path, s: LaunchSpec, base_env: dict[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    p = plan_process(
        s,
        container_dirs(tmp_path, APP, CID),
        container_id=CID,
        app_id=APP,
        user="alice",
        nm_host="127.0.0.1",
        nm_port=7040,
        nm_http_port=8042,
        base_env=base_env if base_env is not None else {"PATH": "/bin", "SECRET": "x", "HOME": "/home/a"},
    )
    return list(p.argv), p.env


# ---------------------------------------------------------------- expansions and environment


def test_expand_follows_yarn() -> None:
    assert (
        expand("<LOG_DIR>/x {{JAVA_HOME}}/bin<CPS>{{PWD}}", Path("/logs/c1"))
        == "/logs/c1/x $JAVA_HOME/bin:$PWD"
    )


def test_dirs_layout(tmp_path: Path) -> None:
    dirs = container_dirs(tmp_path, APP, CID)
    assert dirs.work == tmp_path / "containers" / APP / CID
    assert dirs.logs == tmp_path / "logs" / APP / CID
    assert dirs.app == tmp_path / "containers" / APP


def test_command_is_bash_with_expansions(tmp_path: Path) -> None:
    argv, _ = plan(tmp_path, spec("echo", "hi > <LOG_DIR>/f", "{{HOME}}"))
    logs = container_dirs(tmp_path, APP, CID).logs
    assert argv == ["/bin/bash", "-c", f"echo hi > {logs}/f $HOME"]


def test_environment_is_filtered_then_yarn_then_launch_context(tmp_path: Path) -> None:
    _, env = plan(tmp_path, spec("true", env={"FOO": "bar", "USER": "override"}))
    dirs = container_dirs(tmp_path, APP, CID)
    assert "SECRET" not in env
    assert env["PATH"] == "/bin"
    assert env["HOME"] == "/home/a"
    assert env["CONTAINER_ID"] == CID
    assert env["APPLICATION_ID"] == APP
    assert (env["NM_HOST"], env["NM_PORT"], env["NM_HTTP_PORT"]) == ("127.0.0.1", "7040", "8042")
    assert env["LOG_DIRS"] == str(dirs.logs)
    assert env["LOCAL_DIRS"] == str(dirs.app)
    assert env["PWD"] == str(dirs.work)
    assert env["LOGNAME"] == "alice"
    assert env["SHEPHERD_PYTHON"] == sys.executable
    assert env["FOO"] == "bar"
    assert env["USER"] == "override"


def test_shepherd_source_root_is_importable_in_containers(tmp_path: Path) -> None:
    _, env = plan(tmp_path, spec("true"), base_env={"PYTHONPATH": "/opt/lib"})
    assert env["PYTHONPATH"] == f"/opt/lib:{SHEPHERD_ROOT}"
    _, env = plan(tmp_path, spec("true"), base_env={"PYTHONPATH": f"{SHEPHERD_ROOT}:/opt/lib"})
    assert env["PYTHONPATH"] == f"{SHEPHERD_ROOT}:/opt/lib"


def test_path_defaults_when_daemon_has_none(tmp_path: Path) -> None:
    _, env = plan(tmp_path, spec("true"), base_env={})
    assert env["PATH"].startswith("/usr/local/bin")


def test_variable_references_are_left_to_bash(tmp_path: Path) -> None:
    job = '{"command": "\\"$SHEPHERD_PYTHON\\" run.py"}'
    env_in = {"PYTHONPATH": "{{PWD}}<CPS>{{PYTHONPATH}}", "Q": 'a"b', "JOB": job}
    argv, env = plan(tmp_path, spec("run", env=env_in))
    assert env["PYTHONPATH"] == str(SHEPHERD_ROOT)  # the launch context's value is exported instead
    assert argv[2].splitlines() == ['export PYTHONPATH="${PWD}:${PYTHONPATH}"', "run"]
    assert env["Q"] == 'a"b'
    assert env["JOB"] == job  # a bare $ is literal


def test_exported_values_expand_in_bash(tmp_path: Path) -> None:
    dirs = container_dirs(tmp_path, APP, CID)
    dirs.work.mkdir(parents=True)
    dirs.logs.mkdir(parents=True)
    s = spec('echo "$LIB"; echo "$JOB"', env={"LIB": '{{PWD}}/lib "q" `x` $HOME \\', "JOB": '{"a": "$X"}'})
    p = plan_process(s, dirs, container_id=CID, app_id=APP, user="u", nm_host="h", nm_port=1, nm_http_port=2)

    async def go() -> int:
        proc = await spawn(p, dirs)
        return await proc.wait()

    assert asyncio.run(go()) == 0
    assert (dirs.logs / "stdout").read_text() == f'{dirs.work}/lib "q" `x` $HOME \\\n{{"a": "$X"}}\n'


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("s", "message"),
    [
        (spec(), "no command"),
        (spec("  "), "no command"),
        (spec("true", env={"BAD-NAME": "x"}), "invalid environment variable"),
        (spec("true", res={"../x": LocalResource("file:///etc/hosts")}), "link name"),
        (spec("true", res={"/abs": LocalResource("file:///etc/hosts")}), "link name"),
        (spec("true", res={"x": LocalResource("hdfs://nn/x")}), "only file://"),
        (spec("true", res={"x": LocalResource("file://otherhost/x")}), "another host"),
        (spec("true", res={"x": LocalResource("file:///etc/hosts", "PATTERN")}), "unsupported type"),
    ],
)
def test_validate_rejects(s: LaunchSpec, message: str) -> None:
    with pytest.raises(LaunchError, match=message):
        validate(s)


# ---------------------------------------------------------------- localization


def test_file_resource_is_symlinked(tmp_path: Path) -> None:
    src = tmp_path / "input.txt"
    src.write_text("data")
    work = tmp_path / "work"
    work.mkdir()
    localize({"in/data.txt": LocalResource(f"file://{src}")}, work)
    assert (work / "in" / "data.txt").is_symlink()
    assert (work / "in" / "data.txt").read_text() == "data"


def test_missing_file_resource_fails(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="does not exist"):
        localize({"x": LocalResource(f"file://{tmp_path}/nope")}, tmp_path)


@pytest.mark.parametrize("suffix", [".tar.gz", ".tgz", ".tar", ".zip", ".jar"])
def test_archive_resource_is_unpacked(tmp_path: Path, suffix: str) -> None:
    archive = tmp_path / f"pkg{suffix}"
    data = b"#!/bin/sh\necho ok\n"
    if suffix in (".zip", ".jar"):
        with zipfile.ZipFile(archive, "w") as zf:
            member = zipfile.ZipInfo("bin/run.sh")
            member.external_attr = 0o755 << 16
            zf.writestr(member, data)
    else:
        with tarfile.open(archive, "w:gz" if suffix != ".tar" else "w:") as tar:
            entry = tarfile.TarInfo("bin/run.sh")
            entry.size, entry.mode = len(data), 0o755
            tar.addfile(entry, io.BytesIO(data))
    work = tmp_path / "work"
    work.mkdir()
    localize({"pkg": LocalResource(f"file://{archive}", "ARCHIVE")}, work)
    script = work / "pkg" / "bin" / "run.sh"
    assert script.read_text().endswith("echo ok\n")
    assert os.access(script, os.X_OK)


def test_zip_slip_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../escaped.txt", "x")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(LaunchError, match="escapes"):
        localize({"pkg": LocalResource(f"file://{archive}", "ARCHIVE")}, work)
    assert not (tmp_path / "escaped.txt").exists()


def test_tar_escape_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(LaunchError, match="cannot unpack"):
        localize({"pkg": LocalResource(f"file://{archive}", "ARCHIVE")}, work)
    assert not (work / "escaped.txt").exists()


def test_unknown_archive_format_fails(tmp_path: Path) -> None:
    archive = tmp_path / "pkg.rar"
    archive.write_bytes(b"x")
    with pytest.raises(LaunchError, match="unknown archive format"):
        localize({"pkg": LocalResource(f"file://{archive}", "ARCHIVE")}, tmp_path / "w")


def test_corrupt_archive_fails(tmp_path: Path) -> None:
    archive = tmp_path / "pkg.zip"
    archive.write_bytes(b"not a zip")
    with pytest.raises(LaunchError, match="cannot unpack"):
        localize({"pkg": LocalResource(f"file://{archive}", "ARCHIVE")}, tmp_path / "w")


# ---------------------------------------------------------------- processes


@pytest.mark.parametrize(("returncode", "expected"), [(0, 0), (3, 3), (-9, 137), (-15, 143)])
def test_exit_code_is_shell_like(returncode: int, expected: int) -> None:
    assert exit_code(returncode) == expected


def _dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_kill_group_escalates_to_sigkill(tmp_path: Path) -> None:
    dirs = container_dirs(tmp_path, APP, CID)
    dirs.work.mkdir(parents=True)
    dirs.logs.mkdir(parents=True)
    # Both the shell and its background child ignore SIGTERM.
    s = spec("trap '' TERM; sleep 100 & echo $! > child.pid; echo ready > ready; wait")
    p = plan_process(s, dirs, container_id=CID, app_id=APP, user="u", nm_host="h", nm_port=1, nm_http_port=2)

    async def go() -> tuple[int, int]:
        proc = await spawn(p, dirs)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not (dirs.work / "ready").exists() and loop.time() < deadline:
            await asyncio.sleep(0.02)
        child = int((dirs.work / "child.pid").read_text())
        started = loop.time()
        await kill_group(proc.pid, [], grace_s=0.3)
        assert loop.time() - started >= 0.3
        return await asyncio.wait_for(proc.wait(), 5), child

    rc, child = asyncio.run(go())
    assert exit_code(rc) == 137
    assert _dead(child)


def test_sample_tree_counts_descendants() -> None:
    sample = sample_tree(os.getpid())
    assert sample.rss_bytes > 0
    assert sample.tree[0][0] == os.getpid()
    assert sample_tree(2**22 + 1).tree == ()


def test_pmem_diagnostic_has_yarn_shape() -> None:
    sample = MemorySample(812 * 1024 * 1024, ((42, 1, "python", 812 * 1024 * 1024),))
    text = pmem_diagnostic(42, CID, sample, 256)
    assert text.startswith(
        f"Container [pid=42,containerID={CID}] is running beyond physical memory limits. "
        "Current usage: 812 MB of 256 MB physical memory used. Killing container."
    )
    assert "|- 42 1 python 812" in text


# ---------------------------------------------------------------- config


def test_config_detects_resources_with_reserve() -> None:
    cfg = NodeManagerConfig(reserved_memory_mb=1024, extra_resources={"gpu": 2})
    cap = cfg.capability()
    total_mb = psutil.virtual_memory().total // (1024 * 1024)
    assert cap["memory-mb"] == max(512, total_mb - 1024)
    assert cap["vcores"] >= 1
    assert cap["gpu"] == 2
    assert NodeManagerConfig(memory_mb=2048, vcores=3).capability() == {"memory-mb": 2048, "vcores": 3}
    assert NodeManagerConfig(reserved_memory_mb=10**9).resolved_memory_mb() == 512


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="ports"):
        NodeManagerConfig(port=70000)
    with pytest.raises(ValueError, match="extra resource"):
        NodeManagerConfig(extra_resources={"memory-mb": 1})
    assert parse_resources("gpu=2, fpga=1") == {"gpu": 2, "fpga": 1}
    with pytest.raises(ValueError, match="NAME=AMOUNT"):
        parse_resources("gpu")


def test_advertised_host() -> None:
    assert NodeManagerConfig().advertised_host() == "127.0.0.1"
    assert NodeManagerConfig(host="10.0.0.5").advertised_host() == "10.0.0.5"
    assert NodeManagerConfig(host="0.0.0.0", hostname="n1.example").advertised_host() == "n1.example"
    assert NodeManagerConfig(host="0.0.0.0").advertised_host() not in ("", "0.0.0.0")


# ---------------------------------------------------------------- cgroup v2 (on a stand-in tree)


def test_cgroup_v2_on_a_delegated_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nodemanager.limits._own_cgroup", lambda: "/nm.service")
    own = tmp_path / "nm.service"
    own.mkdir()
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids")
    (own / "cgroup.controllers").write_text("cpu memory pids")
    cgroups = CgroupV2.detect(tmp_path)
    assert cgroups is not None
    assert cgroups.parent == own / f"shepherd-containers-{os.getpid()}"
    assert (own / "cgroup.subtree_control").read_text() == "+memory"
    path = cgroups.create(CID, 128 * 1024 * 1024)
    assert (path / "memory.max").read_text() == str(128 * 1024 * 1024)
    assert (path / "memory.swap.max").read_text() == "0"
    assert not CgroupV2.oom_killed(path)
    (path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert CgroupV2.oom_killed(path)


def test_cgroup_v2_needs_the_memory_controller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nodemanager.limits._own_cgroup", lambda: "/")
    assert CgroupV2.detect(tmp_path) is None  # no cgroup.controllers: cgroup v1 or hybrid
    (tmp_path / "cgroup.controllers").write_text("cpu pids")
    assert CgroupV2.detect(tmp_path) is None
