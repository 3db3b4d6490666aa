"""Install from a wheel: the built wheel carries what the daemons read at run time (the state store's
migrations, the example jobs, the web UI's static files), and `shepherd --version` and `shepherd demo` work
from a fresh virtual environment, away from the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT

pytestmark = pytest.mark.slow


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout, check=False)


def test_a_wheel_installs_and_runs_the_demo(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    # no build isolation and no dependencies: nothing is fetched, setuptools is the one installed here
    built = run(sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "--no-index",
                "-q", "-w", wheels, cwd=ROOT)
    assert built.returncode == 0, built.stderr
    [wheel] = wheels.glob("shepherd-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "rm/service/store/migrations/env.py" in names
    assert "rm/service/store/migrations/script.py.mako" in names
    assert {f"rm/service/store/migrations/versions/{p.name}" for p in (ROOT / "migrations" / "versions").glob("*.py")} \
        <= names
    assert {"rm/examples/wordcount.yaml", "rm/examples/verify_wordcount.py", "rm/examples/wordcount/gen.py"} <= names
    assert {"rm/service/ui/static/ui.css", "rm/service/ui/static/ui.js"} <= names

    venv = tmp_path / "venv"
    made = run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    # the dependencies come from this environment (a path entry, not an install); shepherd only from the wheel
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path)
    (Path(purelib.stdout.strip()) / "shepherd-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    installed = run(python, "-m", "pip", "install", "--no-index", "-q", wheel, cwd=tmp_path, env=env)
    assert installed.returncode == 0, installed.stderr

    where = run(python, "-c", "import rm.service.store as s; print(s.migrations_dir())", cwd=tmp_path, env=env)
    assert where.stdout.strip().startswith(str(venv)), where.stdout + where.stderr
    version = run(venv / "bin" / "shepherd", "--version", cwd=tmp_path, env=env)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("shepherd 0.")

    demo = run(venv / "bin" / "shepherd", "demo", cwd=tmp_path, env=env)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    out = " ".join(demo.stdout.split())
    assert "FINISHED/SUCCEEDED" in out
    assert "against words counted independently: OK:" in out
    assert "stopped: the cluster" in out
    assert "shepherd up" in out
    assert "http://127.0.0.1:8088/" in out
    assert "site-packages/rm/examples/wordcount.yaml" in out  # it points to the installed example
    assert any((tmp_path / ".shepherd" / "demo" / "output").glob("*/wordcount.json"))
