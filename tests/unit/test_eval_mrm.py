"""The MRM evaluation runs end to end in its quick mode and writes its page; its model's cached book gives the
same free room as the project's book; its one-server model serves one job at a time, preempting only under
EDF, and on it the project's book keeps every deadline whose work stayed within its claim."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from random import Random

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import mrm_model
import mrm_workload

from rm.core.deadlines.book import DeadlineBook
from rm.core.deadlines.estimate import JobFeatures, PhaseShape
from rm.core.deadlines.layout import Phase
from rm.core.deadlines.pricing import Pricer

CAP = 160.0


def job(index: int, arrival: float, work: float) -> mrm_workload.MrJob:
    features = JobFeatures(f"j{index}", (PhaseShape(4, 1.0),))
    return mrm_workload.MrJob(index, arrival, 1, features, (work,), (work / 4,), (0,))


def server_run(index: int, arrival: float, service_s: float, *, cls: str = "", deadline: float = math.inf,
               claim_s: float | None = None) -> mrm_model.Run:
    r = mrm_model.Run(job(index, arrival, service_s * CAP), (Phase((claim_s or service_s) * CAP, 4.0),), cls=cls)
    out = mrm_model.on_one_server(r, CAP)
    out.deadline = deadline
    return out


def finishes(runs: list[mrm_model.Run]) -> dict[int, float]:
    return {r.job.index: round(r.finish, 6) for r in runs}


def test_one_server_serves_one_job_at_a_time_in_fcfs_order() -> None:
    runs = [server_run(0, 0.0, 10.0), server_run(1, 1.0, 0.25), server_run(2, 2.5, 5.0)]
    assert runs[0].claim == (Phase(10.0 * CAP, CAP),)  # the whole server, no width or critical path
    done = mrm_model.ServerModel(runs, "fcfs").run()
    assert finishes(done) == {0: 10.0, 1: 10.25, 2: 15.25}
    assert [r.start for r in done] == [0.0, 10.0, 10.25]


def test_priority_never_preempts_and_edf_does_unless_told_not_to() -> None:
    def three() -> list[mrm_model.Run]:
        return [server_run(0, 0.0, 10.0, cls="DT", deadline=100.0),
                server_run(1, 2.0, 3.0, cls="DT", deadline=50.0),
                server_run(2, 4.0, 1.0, cls="DS", deadline=6.0)]

    prio = finishes(mrm_model.ServerModel(three(), "priority").run())
    assert prio == {0: 10.0, 2: 11.0, 1: 14.0}  # the DS job jumps the waiting DT job, not the one in service
    edf = finishes(mrm_model.ServerModel(three(), "edf").run())
    assert edf == {2: 5.0, 1: 6.0, 0: 14.0}  # 1 preempts 0 at 2 s, 2 preempts 1 at 4 s
    edf_np = finishes(mrm_model.ServerModel(three(), "edf", preemptive=False).run())
    assert edf_np == {0: 10.0, 2: 11.0, 1: 14.0}


def test_on_one_server_the_book_keeps_every_deadline_whose_work_stayed_within_its_claim() -> None:
    """Random arrivals buying their earliest feasible finish (no slack) or a later one; each job's work at or
    below its claim: preemptive EDF on the book's deadlines misses none, although arrivals fall between the
    book's steps and services last fractions of a step."""
    rng = Random(11)
    for trial in range(6):
        runs, t = [], 0.0
        for i in range(150):
            t += rng.expovariate(1 / 30.0)
            claim = rng.choice((0.3, 4.0, 25.0, 90.0))
            runs.append(server_run(i, t, claim * rng.uniform(0.5, 1.0), claim_s=claim,
                                   cls=rng.choice(("DS", "DT"))))

        def choose(run: mrm_model.Run, pricer: Pricer) -> float:
            return pricer.earliest + (0.0 if run.cls == "DS" else rng.uniform(0, 120))

        model = mrm_model.ServerModel(runs, "mrm", dt=rng.choice((1.0, 5.0)), chooser=choose, avg_work=1000.0)
        done = model.run()
        assert all(r.finish <= r.deadline + 1e-6 for r in done), trial
        assert sum(r.start > r.job.arrival + 1.0 for r in done) > 10  # jobs waited for others: a busy book
        assert model.stats.max_claims > 3


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
    assert "### 3a. On one server" in page
    assert "### 3b. On the cluster model" in page
    assert "| unrestricted EDF (never preempting" in page
