"""A YARN ContainerLaunchContext (Hadoop records) as a shepherd LaunchSpec, the way YARN's
NodeManager prepares a container:

* local resources from ``file:`` URLs: FILE linked, ARCHIVE (and PATTERN) unpacked under the key;
* the credentials in ``tokens`` written to ``container_tokens`` in the working directory, with
  ``HADOOP_TOKEN_FILE_LOCATION`` pointing at it;
* a ``tmp`` directory in the working directory (JVMs get ``-Djava.io.tmpdir={{PWD}}/tmp``);
* ``$VAR`` / ``${VAR}`` in environment values expanded against the container's environment, as in
  YARN's launch script (shepherd's own containers keep ``$`` literal), plus the NodeManager's
  ``NM_PORT`` (this listener), ``NM_HTTP_ADDRESS`` and ``JAVA_HOME`` when the NodeManager has one.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from common.hadoop import records
from nodemanager.launch import LaunchError, LaunchSpec, LocalResource, container_dirs
from proto.hadoop import yarn_records_pb2 as yr

TOKENS_FILE = "container_tokens"
_DOLLAR_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_TYPES = {yr.FILE: "FILE", yr.ARCHIVE: "ARCHIVE", yr.PATTERN: "ARCHIVE"}


def java_home() -> str | None:
    """The NodeManager's JAVA_HOME, or the JDK of the ``java`` on its PATH."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java is None:
        return None
    return str(Path(java).resolve().parents[1])


def _yarn_value(value: str) -> str:
    return _DOLLAR_VAR.sub(lambda m: "{{" + (m.group(1) or m.group(2)) + "}}", value)


def launch_spec(
    clc: yr.ContainerLaunchContext,
    *,
    work_root: Path,
    app_id: str,
    container_id: str,
    nm_host: str,
    ipc_port: int,
    http_port: int,
) -> LaunchSpec:
    """Translate and stage what must exist before the launch (tokens file, tmp directory)."""
    resources: dict[str, LocalResource] = {}
    for entry in clc.local_resources:
        res = entry.value
        kind = _TYPES.get(res.type, "FILE") if res.HasField("type") else "FILE"
        if not res.HasField("resource"):
            raise LaunchError(f"local resource {entry.key!r} has no URL")
        resources[entry.key] = LocalResource(url=records.url_str(res.resource), type=kind)
    env = {e.key: _yarn_value(e.value) for e in clc.environment}
    env.setdefault("NM_PORT", str(ipc_port))
    env.setdefault("NM_HTTP_ADDRESS", f"{nm_host}:{http_port}")
    jh = java_home()
    if jh and "JAVA_HOME" not in env:
        env["JAVA_HOME"] = jh
    dirs = container_dirs(work_root, app_id, container_id)
    staging = dirs.app / ".staging" / container_id
    if clc.tokens:
        staging.mkdir(parents=True, exist_ok=True)
        tokens_path = staging / TOKENS_FILE
        fd = os.open(tokens_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(clc.tokens)
        resources.setdefault(TOKENS_FILE, LocalResource(url=str(tokens_path), type="FILE"))
        env["HADOOP_TOKEN_FILE_LOCATION"] = str(dirs.work / TOKENS_FILE)
    if "tmp" not in resources:
        tmp = staging / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        resources["tmp"] = LocalResource(url=str(tmp), type="FILE")
    return LaunchSpec(commands=tuple(clc.command), environment=env, local_resources=resources)
