"""count stage, first half: emit one ``word<TAB>1`` line per word of input part i."""

from __future__ import annotations

import sys

from common import input_path, output_dir, task_arg


def main() -> None:
    task = task_arg()
    path = input_path(output_dir(), task)
    if not path.exists():
        sys.exit(f"map {task}: input {path} is missing")
    out = sys.stdout
    with path.open(encoding="utf-8") as f:
        for line in f:
            for word in line.split():
                out.write(f"{word.lower()}\t1\n")


if __name__ == "__main__":
    main()
