"""Check a word-count run: ``python examples/verify_wordcount.py OUTPUT_DIR [--tasks N]``.

Regenerates the input texts the generate stage must have written, counts their words here (not
with the job's own map/reduce/merge code) and compares with OUTPUT_DIR/wordcount.json. Exits 0 iff
the output is correct.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def _load_generator() -> ModuleType:
    sys.path.insert(0, str(HERE / "wordcount"))
    spec = importlib.util.spec_from_file_location("wordcount_gen", HERE / "wordcount" / "gen.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expected_counts(tasks: int) -> Counter[str]:
    gen = _load_generator()
    counts: Counter[str] = Counter()
    for task in range(tasks):
        counts.update(word.lower() for word in gen.generate_text(task).split())
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--tasks", type=int, default=4, help="tasks of the generate stage (default 4)")
    args = parser.parse_args(argv)
    result_path = args.output_dir / "wordcount.json"
    try:
        result = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"FAIL: cannot read {result_path}: {exc}")
        return 1
    expected = expected_counts(args.tasks)
    got = Counter({str(k): int(v) for k, v in result.get("counts", {}).items()})
    if got != expected:
        wrong = sorted(w for w in set(got) | set(expected) if got[w] != expected[w])
        print(f"FAIL: {len(wrong)} word(s) counted wrongly, e.g. {wrong[:5]}")
        return 1
    if result.get("total") != sum(expected.values()):
        print(f"FAIL: total {result.get('total')} != {sum(expected.values())}")
        return 1
    print(f"OK: {sum(expected.values())} words, {len(expected)} distinct")
    return 0


if __name__ == "__main__":
    sys.exit(main())
