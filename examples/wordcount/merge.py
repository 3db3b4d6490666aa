"""merge stage: add up the partial counts into wordcount.json, checking nothing was lost.

Exits 1 when a partial is missing or the merged total differs from the number of words the
generate stage wrote.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

from common import output_dir, write_json


def main() -> None:
    out = output_dir()
    metas = sorted((out / "input").glob("part-*.meta.json"))
    if not metas:
        sys.exit(f"merge: no generated inputs under {out / 'input'}")
    expected_words = 0
    merged: Counter[str] = Counter()
    for meta_path in metas:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        expected_words += int(meta["words"])
        partial_path = out / "counts" / meta_path.name.replace(".meta.json", ".json")
        if not partial_path.exists():
            print(f"merge: partial counts {partial_path} are missing", file=sys.stderr)
            sys.exit(1)
        partial = json.loads(partial_path.read_text(encoding="utf-8"))
        if sum(partial["counts"].values()) != partial["total"]:
            print(f"merge: {partial_path} does not add up", file=sys.stderr)
            sys.exit(1)
        merged.update(partial["counts"])
    total = sum(merged.values())
    if total != expected_words:
        print(f"merge: counted {total} words but generate wrote {expected_words}", file=sys.stderr)
        sys.exit(1)
    write_json(out / "wordcount.json", {"total": total, "parts": len(metas), "counts": dict(sorted(merged.items()))})
    print(f"merge: {total} words, {len(merged)} distinct, from {len(metas)} parts")


if __name__ == "__main__":
    main()
