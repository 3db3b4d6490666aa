"""generate stage: task i writes a deterministic text file and records how many words it holds."""

from __future__ import annotations

import random

from common import WORDS, input_path, output_dir, task_arg, write_atomically, write_json


def generate_text(task: int) -> str:
    """The text of part ``task``: the same on every run and every host."""
    rng = random.Random(f"shepherd-wordcount-{task}")
    lines = []
    for _ in range(200 + 25 * task):
        lines.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))))
    return "\n".join(lines) + "\n"


def main() -> None:
    task = task_arg()
    out = output_dir()
    text = generate_text(task)
    path = input_path(out, task)
    write_atomically(path, text)
    words = len(text.split())
    write_json(path.with_suffix(".meta.json"), {"task": task, "words": words})
    print(f"generate {task}: wrote {words} words to {path}")


if __name__ == "__main__":
    main()
