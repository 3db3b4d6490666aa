"""Regenerate the Python modules for shepherd's .proto files.

Run from anywhere: ``python -m proto.generate``. With ``--check`` it only reports whether the
committed modules match what the .proto files generate (the test suite uses this).
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
ROOT = PROTO_DIR.parent
SOURCES = sorted(p.name for p in PROTO_DIR.glob("*.proto"))
OUTPUT_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def generate(out_root: Path) -> list[Path]:
    from grpc_tools import protoc  # dev dependency; imported lazily

    (out_root / "proto").mkdir(parents=True, exist_ok=True)
    args = [
        "protoc",
        f"-I{ROOT}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        *(f"proto/{name}" for name in SOURCES),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed")
    return [
        out_root / "proto" / (Path(name).stem + suffix) for name in SOURCES for suffix in OUTPUT_SUFFIXES
    ]


def stale_files() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        stale = []
        for produced in generate(Path(tmp)):
            committed = PROTO_DIR / produced.name
            if not committed.exists() or not filecmp.cmp(produced, committed, shallow=False):
                stale.append(produced.name)
        return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when stale")
    args = parser.parse_args()
    if args.check:
        stale = stale_files()
        for name in stale:
            print(f"stale: proto/{name}")
        return 1 if stale else 0
    generate(ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
