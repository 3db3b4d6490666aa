"""count stage, second half: sum ``word<TAB>n`` lines from stdin into partial counts for part i."""

from __future__ import annotations

import sys
from collections import Counter

from common import counts_path, output_dir, task_arg, write_json


def main() -> None:
    task = task_arg()
    counts: Counter[str] = Counter()
    for number, line in enumerate(sys.stdin, start=1):
        word, sep, n = line.rstrip("\n").partition("\t")
        if not sep or not n.isdigit():
            sys.exit(f"reduce {task}: malformed line {number}: {line!r}")
        counts[word] += int(n)
    path = counts_path(output_dir(), task)
    write_json(path, {"task": task, "total": sum(counts.values()), "counts": dict(counts)})
    print(f"count {task}: {sum(counts.values())} words, {len(counts)} distinct, in {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
