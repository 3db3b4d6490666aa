"""Regenerate the Python modules for shepherd's .proto files.

Run from anywhere: ``python -m proto.generate``. With ``--check`` it only reports whether the
committed modules match what the .proto files generate (the test suite uses this).

Two groups: ``proto/*.proto`` (shepherd's gRPC services: messages, stubs and type stubs) and
``proto/hadoop/*.proto`` (the Hadoop IPC wire subset: messages and type stubs, no gRPC).
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
ROOT = PROTO_DIR.parent
HADOOP_DIR = PROTO_DIR / "hadoop"
SOURCES = sorted(p.name for p in PROTO_DIR.glob("*.proto"))
HADOOP_SOURCES = sorted(p.name for p in HADOOP_DIR.glob("*.proto"))
OUTPUT_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")
HADOOP_OUTPUT_SUFFIXES = ("_pb2.py", "_pb2.pyi")


def _protoc(args: list[str]) -> None:
    from grpc_tools import protoc  # dev dependency; imported lazily

    if protoc.main(["protoc", f"-I{ROOT}", *args]) != 0:
        raise RuntimeError("protoc failed")


def generate(out_root: Path) -> list[Path]:
    """Generate every module under ``out_root``; return their paths relative to ``out_root``."""
    (out_root / "proto" / "hadoop").mkdir(parents=True, exist_ok=True)
    _protoc([
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        *(f"proto/{name}" for name in SOURCES),
    ])
    produced = [Path("proto") / (Path(name).stem + s) for name in SOURCES for s in OUTPUT_SUFFIXES]
    if HADOOP_SOURCES:
        _protoc([
            f"--python_out={out_root}",
            f"--pyi_out={out_root}",
            *(f"proto/hadoop/{name}" for name in HADOOP_SOURCES),
        ])
        produced += [
            Path("proto") / "hadoop" / (Path(name).stem + s)
            for name in HADOOP_SOURCES for s in HADOOP_OUTPUT_SUFFIXES
        ]
    return produced


def stale_files() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        stale = []
        for rel in generate(Path(tmp)):
            committed = ROOT / rel
            if not committed.exists() or not filecmp.cmp(Path(tmp) / rel, committed, shallow=False):
                stale.append(rel.relative_to("proto").as_posix())
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
