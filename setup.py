"""Packaging beyond ``pyproject.toml``: a built wheel carries what the daemons read at run time but keeps
beside the packages in the source tree, the state store's Alembic scripts (``migrations/``, installed as
``rm/service/store/migrations``) and the example jobs (``examples/``, installed as ``rm/examples``).
An editable install reads both from the source tree instead."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
DATA_TREES = {"migrations": ("rm", "service", "store", "migrations"), "examples": ("rm", "examples")}


class BuildPyWithData(build_py):
    """``build_py`` that also copies the data trees into the built packages (not for editable installs)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for source, target in DATA_TREES.items():
            dest = Path(self.build_lib).joinpath(*target)
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(HERE / source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithData})
