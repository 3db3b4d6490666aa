"""Turning a ContainerLaunchContext into a running process group.

Everything here works on one container and knows nothing about tokens or the RM: directory layout,
localization of ``file://`` resources, YARN's command and environment expansions, spawning
``/bin/bash -c`` in a new session under the container's supervisor (``nodemanager/supervise.py``),
and killing a whole process group or tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import re
import signal
import site
import stat
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlparse

import psutil

INHERITED_ENV = ("PATH", "LANG", "HOME", "PYTHONPATH", "JAVA_HOME", "VIRTUAL_ENV")
# Where the shepherd packages live, so "$SHEPHERD_PYTHON -m am.dag" works from a source checkout too.
SHEPHERD_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
ARCHIVE_SUFFIXES = (".zip", ".jar", ".tar", ".tar.gz", ".tgz")
RESOURCE_TYPES = ("FILE", "ARCHIVE")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VAR_REF = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")


class LaunchError(Exception):
    """The container cannot be launched as described (bad resource, bad environment, ...)."""


@dataclass(frozen=True, slots=True)
class LocalResource:
    url: str
    type: str = "FILE"


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """A validated ContainerLaunchContext."""

    commands: tuple[str, ...]
    environment: Mapping[str, str] = field(default_factory=dict)
    local_resources: Mapping[str, LocalResource] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ContainerDirs:
    work: Path  # the container's working directory (PWD)
    logs: Path  # stdout, stderr and any other log the container writes to <LOG_DIR>
    app: Path  # the application's local dir (LOCAL_DIRS)


def container_dirs(root: Path, app_id: str, container_id: str) -> ContainerDirs:
    app = root / "containers" / app_id
    return ContainerDirs(work=app / container_id, logs=root / "logs" / app_id / container_id, app=app)


# ---------------------------------------------------------------- the account containers run as

LOCAL_USER = "yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user"


@dataclass(frozen=True, slots=True)
class Account:
    """A local account containers run as (a NodeManager running as root never runs them as root)."""

    name: str
    uid: int
    gid: int


def container_account(user: str | None, allow_root: bool, *, euid: int | None = None) -> Account | None:
    """The account containers run as; None: as this daemon, which is not root (or explicitly may run root
    containers). ``user`` is YARN's nonsecure-mode local user, ``nobody`` by default."""
    if (os.geteuid() if euid is None else euid) != 0 or allow_root:
        return None
    name = user or "nobody"
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        raise ValueError(f"the container user {name!r} ({LOCAL_USER}) does not exist on this host") from None
    if pw.pw_uid == 0:
        raise ValueError(f"containers may not run as root ({LOCAL_USER} = {name}); name an unprivileged account, "
                         "or set shepherd.nodemanager.allow-root-containers to run them as root anyway")
    return Account(name=name, uid=pw.pw_uid, gid=pw.pw_gid)


LIMIT_USERS = "yarn.nodemanager.linux-container-executor.nonsecure-mode.limit-users"


def submitter_account(user: str, min_uid: int) -> Account:
    """The local account of an app's user, for a NodeManager that runs each container as its submitter
    (``LIMIT_USERS`` false). Refused (LaunchError): a user with no account here, root, or an account below
    ``min_uid`` (system accounts: container-executor's min.user.id)."""
    if not user:
        raise LaunchError("the container token names no user, and containers run as their app's user "
                          f"({LIMIT_USERS} is false)")
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        raise LaunchError(f"containers run as their app's user ({LIMIT_USERS} is false), and user {user!r} has no "
                          "account on this host") from None
    if pw.pw_uid == 0:
        raise LaunchError(f"user {user!r} maps to root, and containers may not run as root")
    if pw.pw_uid < min_uid:
        raise LaunchError(f"user {user!r} (uid {pw.pw_uid}) is below the lowest uid containers may run as "
                          f"({min_uid}, shepherd.nodemanager.min-user-id)")
    return Account(name=pw.pw_name, uid=pw.pw_uid, gid=pw.pw_gid)


def closed_to(account: Account, path: Path) -> Path | None:
    """The first directory on the way to ``path`` (itself included) that the account may not enter; None if
    every one lets it search."""
    for d in reversed([path.resolve(), *path.resolve().parents]):
        try:
            st = d.stat()
        except OSError:
            continue
        mode = st.st_mode
        if (st.st_uid == account.uid and mode & stat.S_IXUSR) or (st.st_gid == account.gid and mode & stat.S_IXGRP) \
                or mode & stat.S_IXOTH:
            continue
        return d
    return None


def check_reachable(account: Account, path: Path) -> None:
    """Refuse a work directory the account cannot reach (each ancestor must let it search)."""
    d = closed_to(account, path)
    if d is not None:
        raise ValueError(f"containers run as {account.name}, who cannot enter {d} (mode "
                         f"{stat.S_IMODE(d.stat().st_mode):o}): choose a work directory {account.name} can reach, "
                         f"or another {LOCAL_USER}")


def give(account: Account | None, *paths: Path, tree: bool = False) -> None:
    """Make ``paths`` (with everything under them if ``tree``) the account's; symlinks themselves, not targets."""
    if account is None:
        return
    for top in paths:
        if not top.exists() and not top.is_symlink():
            continue
        os.chown(top, account.uid, account.gid, follow_symlinks=False)
        if tree and top.is_dir() and not top.is_symlink():
            for root, dirs, files in os.walk(top):
                for name in [*dirs, *files]:
                    os.chown(os.path.join(root, name), account.uid, account.gid, follow_symlinks=False)


# ---------------------------------------------------------------- validation and localization


def resource_path(url: str) -> Path:
    """The local path of a ``file://`` URL (or of a plain absolute path)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("", "file"):
        raise LaunchError(f"unsupported local resource URL {url!r}: only file:// URLs can be localized")
    if parsed.netloc not in ("", "localhost"):
        raise LaunchError(f"local resource URL {url!r} names another host")
    path = unquote(parsed.path)
    if not path.startswith("/"):
        raise LaunchError(f"local resource URL {url!r} is not absolute")
    return Path(path)


def validate(spec: LaunchSpec) -> None:
    """Reject what can never launch, before anything is created."""
    if not any(c.strip() for c in spec.commands):
        raise LaunchError("the launch context has no command")
    for name in spec.environment:
        if not _ENV_NAME.match(name):
            raise LaunchError(f"invalid environment variable name {name!r}")
    for link, res in spec.local_resources.items():
        parts = Path(link).parts
        if not link or link.startswith("/") or ".." in parts or not parts:
            raise LaunchError(f"invalid local resource link name {link!r}")
        if res.type not in RESOURCE_TYPES:
            raise LaunchError(f"local resource {link!r} has unsupported type {res.type!r}")
        resource_path(res.url)


def localize(resources: Mapping[str, LocalResource], work_dir: Path) -> None:
    """Link FILE resources and unpack ARCHIVE resources into ``work_dir`` (blocking)."""
    for link, res in resources.items():
        source = resource_path(res.url)
        if not source.exists():
            raise LaunchError(f"local resource {link!r}: {source} does not exist")
        target = work_dir / link
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() or target.is_symlink():
            raise LaunchError(f"local resource {link!r} collides with an existing file")
        if res.type == "FILE":
            target.symlink_to(source)
        else:
            unpack(source, target)


def unpack(archive: Path, dest: Path) -> None:
    """Extract a .zip/.jar/.tar/.tar.gz/.tgz archive into ``dest``, refusing paths that escape it."""
    name = archive.name.lower()
    dest.mkdir(parents=True)
    try:
        if name.endswith((".zip", ".jar")):
            _unzip(archive, dest)
        elif name.endswith((".tar", ".tar.gz", ".tgz")):
            with tarfile.open(archive) as tar:
                tar.extractall(dest, filter="data")
        else:
            raise LaunchError(f"{archive.name}: unknown archive format (expected one of {ARCHIVE_SUFFIXES})")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
        raise LaunchError(f"cannot unpack {archive}: {exc}") from exc


def _unzip(archive: Path, dest: Path) -> None:
    root = dest.resolve()
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            target = (dest / info.filename).resolve()
            if target != root and root not in target.parents:
                raise LaunchError(f"{archive.name}: member {info.filename!r} escapes the archive root")
            zf.extract(info, dest)
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                os.chmod(target, mode | stat.S_IRUSR)


# ---------------------------------------------------------------- command and environment


def _literals(text: str, log_dir: Path) -> str:
    return text.replace("<LOG_DIR>", str(log_dir)).replace("<CPS>", ":")


def expand(text: str, log_dir: Path) -> str:
    """YARN's expansions: ``<LOG_DIR>``, ``{{VAR}}`` -> ``$VAR``, ``<CPS>`` -> ``:``."""
    return _VAR_REF.sub(r"$\1", _literals(text, log_dir))


def _bash_value(value: str) -> str:
    """A double-quoted bash word in which only the ``{{VAR}}`` references expand (as ``${VAR}``);
    everything else, ``$`` included, stays literal."""
    out: list[str] = []
    pos = 0
    for m in _VAR_REF.finditer(value):
        out.append(_escape(value[pos : m.start()]))
        out.append("${" + m.group(1) + "}")
        pos = m.end()
    out.append(_escape(value[pos:]))
    return '"' + "".join(out) + '"'


def _escape(text: str) -> str:
    for ch in ("\\", '"', "`", "$"):
        text = text.replace(ch, "\\" + ch)
    return text


@dataclass(frozen=True, slots=True)
class ProcessPlan:
    argv: tuple[str, ...]
    env: dict[str, str]


def plan_process(
    spec: LaunchSpec,
    dirs: ContainerDirs,
    *,
    container_id: str,
    app_id: str,
    user: str,
    nm_host: str,
    nm_port: int,
    nm_http_port: int,
    base_env: Mapping[str, str] | None = None,
) -> ProcessPlan:
    """The argv and environment of the container's process.

    The environment is the daemon's PATH/LANG/HOME/PYTHONPATH/JAVA_HOME/VIRTUAL_ENV (PYTHONPATH
    extended with the shepherd source root when shepherd is not installed), then YARN's container
    variables, then the launch context's own (which win). Launch-context values are literal, except
    for ``<LOG_DIR>``, ``<CPS>`` and ``{{VAR}}`` references: values with references are exported at
    the top of the bash script, so bash expands them against the container's environment. (YARN's
    launch script also expands a bare ``$VAR`` in values; shepherd keeps ``$`` literal so values such
    as a job's JSON arrive intact.)
    """
    source = os.environ if base_env is None else base_env
    env = {k: source[k] for k in INHERITED_ENV if k in source}
    env.setdefault("PATH", DEFAULT_PATH)
    if not _on_site_path(SHEPHERD_ROOT):
        parts = [p for p in env.get("PYTHONPATH", "").split(":") if p]
        if str(SHEPHERD_ROOT) not in parts:
            env["PYTHONPATH"] = ":".join([*parts, str(SHEPHERD_ROOT)])
    env.update(
        {
            "CONTAINER_ID": container_id,
            "APPLICATION_ID": app_id,
            "NM_HOST": nm_host,
            "NM_PORT": str(nm_port),
            "NM_HTTP_PORT": str(nm_http_port),
            "LOG_DIRS": str(dirs.logs),
            "LOCAL_DIRS": str(dirs.app),
            "PWD": str(dirs.work),
            "USER": user,
            "LOGNAME": user,
            "SHEPHERD_PYTHON": sys.executable,
        }
    )
    exports: list[str] = []
    for name, raw in spec.environment.items():
        value = _literals(raw, dirs.logs)
        if _VAR_REF.search(value):
            exports.append(f"export {name}={_bash_value(value)}")
        else:
            env[name] = value
    command = expand(" ".join(c for c in spec.commands if c.strip()), dirs.logs)
    script = "\n".join([*exports, command])
    return ProcessPlan(argv=("/bin/bash", "-c", script), env=env)


def _on_site_path(root: Path) -> bool:
    """True when shepherd is installed (its root is a site-packages dir every interpreter searches)."""
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return any(Path(d).resolve() == root for d in dirs if d)


async def spawn(plan: ProcessPlan, dirs: ContainerDirs, account: Account | None = None
                ) -> asyncio.subprocess.Process:
    """Start the process in a new session (so it leads its own process group), output to files; as
    ``account`` when given (its uid, gid and no other groups; HOME its working directory)."""
    out, err = await asyncio.to_thread(_open_logs, dirs.logs)
    identity: dict[str, object] = {}
    env = plan.env
    if account is not None:
        give(account, dirs.logs / "stdout", dirs.logs / "stderr")
        identity = {"user": account.uid, "group": account.gid, "extra_groups": []}
        env = {**plan.env, "HOME": str(dirs.work)}
    try:
        return await asyncio.create_subprocess_exec(
            *plan.argv,
            cwd=dirs.work,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            **identity,  # type: ignore[arg-type]
        )
    finally:
        out.close()
        err.close()


SUPERVISOR_MODULE = "nodemanager.supervise"


def supervisor_env() -> dict[str, str]:
    """The supervisor's own environment: enough for this interpreter to import shepherd, nothing of the
    container's (whose PYTHONPATH may name anything)."""
    env = {k: os.environ[k] for k in ("PATH", "LANG", "PYTHONPATH") if k in os.environ}
    env.setdefault("PATH", DEFAULT_PATH)
    if not _on_site_path(SHEPHERD_ROOT):
        env["PYTHONPATH"] = ":".join([str(SHEPHERD_ROOT), *(p for p in env.get("PYTHONPATH", "").split(":") if p)])
    return env


async def spawn_supervised(plan: ProcessPlan, dirs: ContainerDirs, account: Account | None, *, state_dir: Path,
                           container_id: str, grace_s: float, alive: Path | None = None) -> asyncio.subprocess.Process:
    """Start the container's supervisor (``python -m nodemanager.supervise``, as this daemon's account, in a
    session of its own), which starts ``plan`` as ``account`` and records its exit code in ``state_dir``.

    Call it on the event loop's thread: the supervisor dies with the thread that forked it until it has
    recorded itself (PR_SET_PDEATHSIG follows the forking thread, not the process)."""
    out, err = await asyncio.to_thread(_open_logs, dirs.logs)
    env = plan.env
    spec: dict[str, object] = {"argv": list(plan.argv), "cwd": str(dirs.work), "grace_s": grace_s}
    if alive is not None:
        spec["alive_file"] = str(alive)
    if account is not None:
        give(account, dirs.logs / "stdout", dirs.logs / "stderr")
        env = {**plan.env, "HOME": str(dirs.work)}
        spec.update(uid=account.uid, gid=account.gid)
    spec["env"] = env
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-P", "-m", SUPERVISOR_MODULE, "--state-dir", str(state_dir),
            "--parent", str(os.getpid()), container_id,
            cwd=dirs.work, env=supervisor_env(), stdin=asyncio.subprocess.PIPE, stdout=out, stderr=err,
            start_new_session=True,
        )
    finally:
        out.close()
        err.close()
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it died at once: its exit tells
        proc.stdin.write(json.dumps(spec).encode())
        await proc.stdin.drain()
    proc.stdin.close()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        await proc.stdin.wait_closed()
    return proc


def _open_logs(log_dir: Path) -> tuple[BinaryIO, BinaryIO]:
    out = open(log_dir / "stdout", "ab")  # noqa: SIM115 - handed to the child, closed by spawn()
    try:
        return out, open(log_dir / "stderr", "ab")
    except OSError:
        out.close()
        raise


def exit_code(returncode: int) -> int:
    """A shell's view of how the process ended: a signal N becomes 128+N."""
    return 128 - returncode if returncode < 0 else returncode


# ---------------------------------------------------------------- process groups


def process_tree(pid: int) -> list[psutil.Process]:
    """The process and all its descendants that are still alive."""
    try:
        leader = psutil.Process(pid)
        return [leader, *leader.children(recursive=True)]
    except psutil.Error:
        return []


def group_members(pgid: int) -> list[psutil.Process]:
    """Live (non-zombie) processes of process group ``pgid``."""
    out: list[psutil.Process] = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except (OSError, psutil.Error):
            continue
    return out


def container_of(proc: psutil.Process) -> str | None:
    """The CONTAINER_ID in a process's environment (as a container's processes inherit it), if readable."""
    try:
        return proc.environ().get("CONTAINER_ID")
    except (psutil.Error, OSError):
        return None


def processes_of(container_id: str) -> list[psutil.Process]:
    """Live processes whose environment names ``container_id`` (blocking; reads every process's environment)."""
    out: list[psutil.Process] = []
    for proc in psutil.process_iter(["status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and container_of(proc) == container_id:
            out.append(proc)
    return out


def session_members(leader: int) -> list[psutil.Process]:
    """Live processes other than ``leader`` in the session or process group it leads (a container's task
    leads both). Safe against PID reuse: the kernel does not hand out a pid still in use as a session or
    group id."""
    out: list[psutil.Process] = []
    for proc in psutil.process_iter(["status"]):
        if proc.pid == leader:
            continue
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and leader in (os.getpgid(proc.pid), os.getsid(proc.pid)):
                out.append(proc)
        except (OSError, psutil.Error):
            continue
    return out


def signal_all(pgid: int, sig: signal.Signals, extra: Iterable[psutil.Process] = ()) -> None:
    """Send ``sig`` to a process group and to known processes that may have left it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for proc in extra:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)


def _alive(pgid: int, extra: Iterable[psutil.Process]) -> bool:
    if group_members(pgid):
        return True
    for proc in extra:
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                return True
    return False


async def wait_gone(pgid: int, extra: Iterable[psutil.Process], timeout: float) -> bool:
    """Wait until no process of the group (nor of ``extra``) is alive; False on timeout."""
    procs = list(extra)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while await asyncio.to_thread(_alive, pgid, procs):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def _live(procs: Iterable[psutil.Process]) -> list[psutil.Process]:
    out: list[psutil.Process] = []
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
    return out


async def kill_processes(collect: Callable[[], list[psutil.Process]], grace_s: float) -> bool:
    """SIGTERM what ``collect()`` finds, SIGKILL what it still finds after ``grace_s``, and again until it
    finds nothing (each round collects anew, so processes forked meanwhile are caught); False when some
    process survived ten seconds of SIGKILLs."""
    loop = asyncio.get_running_loop()

    async def gone_within(seconds: float, sig: signal.Signals) -> bool:
        deadline = loop.time() + seconds
        told: set[psutil.Process] = set()  # SIGTERM once each; SIGKILL every round
        while True:
            procs = await asyncio.to_thread(lambda: _live(collect()))
            if not procs:
                return True
            if loop.time() >= deadline:
                return False
            for proc in procs:
                if sig == signal.SIGKILL or proc not in told:
                    told.add(proc)
                    with contextlib.suppress(psutil.Error):
                        proc.send_signal(sig)
            await asyncio.sleep(0.05)

    if grace_s > 0 and await gone_within(grace_s, signal.SIGTERM):
        return True
    return await gone_within(10.0, signal.SIGKILL)


async def kill_group(pgid: int, extra: Iterable[psutil.Process], grace_s: float) -> None:
    """SIGTERM the group, SIGKILL whatever is left after ``grace_s``, until nothing survives."""
    procs = list(extra)
    if grace_s > 0:
        signal_all(pgid, signal.SIGTERM, procs)
        if await wait_gone(pgid, procs, grace_s):
            return
    for _ in range(20):
        signal_all(pgid, signal.SIGKILL, procs)
        if await wait_gone(pgid, procs, 0.5):
            return
