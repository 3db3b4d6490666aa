"""The MRM evaluation runs end to end in its quick mode and writes its page; its model's cached book gives the
same free room as the project's book."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from random import Random

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import mrm_model

from rm.core.deadlines.book import DeadlineBook
from rm.core.deadlines.layout import Phase


def test_the_cached_book_sees_the_same_room_as_the_book() -> None:
    rng = Random(3)
    plain, fast = DeadlineBook(16.0, dt=2.0), mrm_model.FastBook(16.0, dt=2.0)
    now = 0.0
    for i in range(40):
        now += rng.uniform(0, 20)
        phases = (Phase(rng.uniform(10, 400), rng.choice((1.0, 4.0, 8.0))), Phase(rng.uniform(5, 100), 2.0))
        f1, f2 = plain.earliest_finish(phases, now), fast.earliest_finish(phases, now)
        assert f1 == f2
        deadline = f1 + rng.uniform(0, 200)
        plain.admit(str(i), phases, deadline, now)
        fast.admit(str(i), phases, deadline, now)
        if i % 7 == 3:
            plain.remove(str(i - 2))
            fast.remove(str(i - 2))
        s0 = plain.first_step(now)
        assert np.array_equal(plain.free(s0, s0 + 500), fast.free(s0, s0 + 500))


def test_quick_run_writes_the_page(tmp_path: Path) -> None:
    out = tmp_path / "mrm.md"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "eval_mrm.py"), "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    for section in ("## Targets", "## 1. Estimator accuracy", "## 2. Predictability with no slack",
                    "## 3. Service differentiation", "## Where we fall short", "queueing model"):
        assert section in page
    assert "| PI upper bound exceeded, map" in page
    assert "jump ahead of FCFS" in page
