"""SLearn evaluation in the simulator (SLearn §5.2, §6): GS with each size estimator, on workloads calibrated to
the paper's traces.

Writes ``docs/results/slearn.md`` (and the raw figures in ``slearn.json`` beside it). For every workload and
seed, ``sim.gen.slearn`` draws a history half and a test half of mostly recurring jobs (``--jobs`` each, at most
150 tasks a stage) calibrated to Table 4 (``2sigma``, ``google2011``, ``google2019``; the share of one-off jobs
to Fig. 3's history error, ``--calibrate``; ``google2011-recurring`` is Google 2011 with every run recurring)
or with job-wise variation
far below task-wise (``history-wins``), and ``google2019-dag``: chains of 2-5 stages, each stage a
Google-2019-like job (§6's GTrace19-DAG, 900 jobs a half). Arrivals are bursty at an average load of 1 (Table
5) on 150 nodes that each run one task. The history half is what the RM's history predictor has learnt when
the test half starts (``SimConfig.size_history``; a DAG's stages too); it goes on learning as test jobs end, as
live. The job files the RM reads declare no durations: every size is learnt. GS's top queue bound ``q0`` is
the median size of the history half (``relative_q0``), the same for every policy of a run.

Policies (``VARIANTS``): ``gs:slearn`` (pilots only, the paper's SLearn), ``gs:history`` (3Sigma-like; on
DAGs 3Sigma-DAG, per stage), ``gs:las`` (least attained service), ``gs:oracle`` (true sizes), ``fifo``; on the
DAG workload ``gs:slearn-dag`` (SLearn-DAG: the first stage sampled, the others' history scaled by d_s/d_h)
takes ``gs:slearn``'s place. ``gs:slearn+history`` is the live RM's SLearn: pilots with the history as their
prior (§4.1), and a job not sampled when its history has estimated it at least as well as pilots did (§7).
Each policy's figures are its average JCT over the test half; ratios are baseline JCT / SLearn's JCT (and
oracle JCT / SLearn's). Estimation errors and the share of wide jobs (≥ 3 tasks) placed in the right queue are
of the first estimate that placed each job: the pilots' one under SLearn, the history's under ``gs:history``.

Studies (``--studies``): ``combined`` runs ``gs:slearn+history`` beside ``gs:history``; ``ratios`` runs SLearn
at each fixed sampling ratio of 1-5 % beside the adaptive rule (Table 6).

    python bench/eval_slearn.py [--workloads 2sigma,google2011] [--seeds 0,1,2] [--quick] [--jobs 1250] [--merge]
        [--studies combined,ratios] [--studies-only]
    python bench/eval_slearn.py --calibrate   # the recurring shares (Fig. 3) and the DAGs' variation (§6)

One policy on one workload and seed takes about a minute on this machine (the DAG workload about two), so the
default (five workloads, three seeds, no studies) takes over an hour: ``--quick`` runs the first seed only,
and ``--merge`` adds the runs of a later invocation (``--workloads 2sigma --seeds 1 --merge``) to the figures
already there. The page's closing section on where and why targets are missed is written from the figures by
hand: a new run keeps it under a warning to check it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.ids import AppId
from rm.core.sizes.gs import PAPER_Q0_S, GsConfig, bucket, relative_q0
from rm.core.sizes.history import HistoryPredictor
from rm.core.state_types import SamplingConfig
from sim.engine import SimConfig, Simulator, uniform_nodes
from sim.gen.slearn import (
    DAG_TIME_SCALE,
    PROFILES,
    SlearnOptions,
    generate,
    load_stats,
    swim_noisy,
    variation_stats,
    work_s,
)
from sim.policies import make_policy
from sim.sizes import history_key, stage_sizes

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces" / "swim"
NODES = 150
TABLE5 = {"2sigma": (1.05, 0.13, 2.47), "google2011": (1.01, 0.29, 1.49), "google2019": (1.04, 0.09, 0.91)}
# Table 7: the share of wide jobs in the right queue (per cent), SLearn's and 3Sigma's
TABLE7 = {"2sigma": (89.09, 73.84), "google2011": (86.45, 76.20), "google2019": (73.96, 58.07)}
# Fig. 3: P50 and P90 relative error of wide jobs' estimates, 3Sigma's and SLearn's (per cent)
FIG3 = {"2sigma": ((36.57, 475.78), (18.30, 58.66)), "google2011": ((21.39, 294.52), (9.15, 49.95)),
        "google2019": ((71.56, 1927.51), (21.39, 92.25))}
# the paper's results (§5.2.4, Table 7) that SLearn's average JCT must at least match
TARGETS = {"history": 1.28, "las": 1.65, "fifo": 3.0, "oracle": 0.79}
DAG_TARGET = 1.25  # SLearn-DAG over 3Sigma-DAG (§6: 1.26x measured)
DAG_P50 = (47.21, 33.90)  # §6: P50 error of 3Sigma-DAG's and SLearn-DAG's estimates (per cent)


@dataclass(frozen=True)
class Workload:
    profile: str  # the Table 4 variation (``sim.gen.slearn.PROFILES``)
    stages: tuple[int, int] = (1, 1)
    jobs: int | None = None  # jobs per half, when not ``--jobs``
    swim: bool = False  # the FB-2009 days with per-task noise instead of generated families
    nodes: tuple[int, int, int] = (NODES, 8192, 8)  # count, MB, vcores
    shared_drift: float = 0.5  # of a DAG run's change, the share its stages have in common (``SlearnOptions``)
    recurring: float | None = None  # the share of runs that recur; None: the profile's calibrated share
    time_scale: float | None = None  # a factor on the CoV in time; None: calibrated (``SlearnOptions``)

    def options(self, seed: int, jobs: int) -> SlearnOptions:
        return SlearnOptions(profile=self.profile, seed=seed, history_jobs=self.jobs or jobs,
                             test_jobs=self.jobs or jobs, slots=NODES, stages=self.stages,
                             shared_drift=self.shared_drift, recurring=self.recurring, time_scale=self.time_scale)

    @property
    def sensitivity(self) -> bool:
        """A variant of a calibrated workload that moves one setting away from its calibration: no targets."""
        calibrated = WORKLOADS.get(self.profile)
        return (calibrated is not None and calibrated != self and not self.dag and not self.swim
                and self.jobs is None)

    def recurring_share(self) -> float:
        return self.options(0, 1).recurring_share()

    @property
    def dag(self) -> bool:
        return self.stages[1] > 1

    @property
    def slots(self) -> int:
        """Tasks the cluster runs at once (every task asks one vcore)."""
        return self.nodes[0] * (1 if not self.swim else self.nodes[2])


SWIM_DAYS = (TRACES / "FB-2009_samples_24_times_1hr_1.tsv", TRACES / "FB-2009_samples_24_times_1hr_0.tsv")
SWIM_COMPRESS = 24.0  # eval_carbyne's FB-2009 setting: about three quarters of the vcores busy
WORKLOADS = {**{name: Workload(name) for name in PROFILES},
             # three times as many jobs per half: whether the adaptive ratio's start-up trials (3 x 100 sampled
             # jobs) are what keeps it from the best fixed ratio on a half of 1,250
             "2sigma-long": Workload("2sigma", jobs=3750),
             # every run recurring, as the workload was before its recurring share was calibrated to Fig. 3
             "google2011-recurring": Workload("google2011", recurring=1.0),
             "google2019-dag": Workload("google2019", (2, 5), 900),  # §6: about 900 DAGs of 2-5 stages
             # the same DAGs with every stage's change its own, or all of it shared (how much the first stage's
             # pilots can tell of the later stages: the sensitivity of the DAG hybrid)
             # the same DAGs with each stage varying in time as much as a Google-2019-like job (Table 4), as
             # they were before their variation was calibrated to 3Sigma-DAG's error; and at that variation, every
             # stage's change its own, or all of it shared
             "google2019-dag-full-drift": Workload("google2019", (2, 5), 900, time_scale=1.0),
             "google2019-dag-own": Workload("google2019", (2, 5), 900, shared_drift=0.0, time_scale=1.0),
             "google2019-dag-shared": Workload("google2019", (2, 5), 900, shared_drift=1.0, time_scale=1.0),
             # SWIM's two FB-2009 samples, the second day the history of the first; maps and reduces
             "fb2009-noise": Workload("2sigma", swim=True, nodes=(100, 16384, 8))}


@dataclass(frozen=True)
class Variant:
    scheduler: str
    history: bool = False  # the RM's history predictor has learnt the history half
    trust_history: bool = False  # a job its history estimated as well as pilots is not sampled (the live default)
    source: str | None = None  # whose first estimate the errors are of


VARIANTS = {
    "gs:slearn": Variant("gs:slearn", source="slearn"),
    "gs:slearn-dag": Variant("gs:slearn", history=True, source="slearn"),
    "gs:slearn+history": Variant("gs:slearn", history=True, trust_history=True, source="slearn"),
    "gs:history": Variant("gs:history", history=True, source="history"),
    "gs:las": Variant("gs:las"), "gs:oracle": Variant("gs:oracle"), "fifo": Variant("fifo"),
}
COMBINED = "gs:slearn+history"
RATIOS = (0.01, 0.02, 0.03, 0.04, 0.05)  # the fixed ratios the adaptive rule chooses among (Table 6)


def policies(workload: Workload) -> tuple[str, ...]:
    """The five policies of a workload, SLearn's first."""
    return ("gs:slearn-dag" if workload.dag else "gs:slearn", "gs:history", "gs:las", "gs:oracle", "fifo")


class EstimateLog:
    """A size-tracker watcher: each finished job's task count, first estimate per source, true size and whether
    it was held to pilots."""

    def __init__(self) -> None:
        self.jobs: list[tuple[int, dict[str, float], float, bool]] = []

    def gate_opened(self, why: str, waited_s: float) -> None:
        pass

    def app_sized(self, errors: Mapping[str, float]) -> None:
        pass

    def job_sized(self, app_id: AppId, tasks: int, first: dict[str, float], actual: float,
                  sampled: bool = False) -> None:
        self.jobs.append((tasks, first, actual, sampled))


def run_one(policy: str, q0: float, test: list[Any], history: list[Any], seed: int,
            ratio: float | None = None, nodes: tuple[int, int, int] = (NODES, 8192, 8)) -> dict[str, Any]:
    v = VARIANTS[policy]
    name = v.scheduler if v.scheduler == "fifo" else f"{v.scheduler}:{q0:.3f}"
    sim = Simulator(test, uniform_nodes(*nodes), make_policy(name),
                    SimConfig(seed=seed, size_history=history if v.history else (), job_file_durations=False,
                              sampling=SamplingConfig(ratio=ratio, trust_history=v.trust_history)))
    log = EstimateLog()
    sim.ledger.sizes.watchers.append(log)
    started = time.perf_counter()
    result = sim.run()
    jcts = [r.finish - r.arrival for r in result.jobs if r.finish is not None]
    out: dict[str, Any] = {"avg_jct_s": statistics.fmean(jcts), "p50_jct_s": statistics.median(jcts),
                           "unfinished": len(result.jobs) - len(jcts), "wall_s": time.perf_counter() - started,
                           "counters": dict(sim.ledger.sizes.counters)}
    if v.source is not None:
        cfg = GsConfig(q0)
        errors, right = [], 0
        wide = [(first, actual, sampled) for tasks, first, actual, sampled in log.jobs if tasks >= 3 and actual > 0]
        for first, actual, sampled in wide:
            # the estimate that placed the job: one the combined estimator did not sample, its history's
            est = first.get("history") if v.trust_history and not sampled else first.get(v.source)
            if est is None:
                errors.append(1.0)  # no estimate: as wrong as can be
                continue
            errors.append(abs(est - actual) / actual)
            right += bucket(max(0.0, est), cfg) == bucket(actual, cfg)
        out["wide_jobs"] = len(wide)
        out["p50_error"] = statistics.median(errors) if errors else math.nan
        out["right_bucket"] = right / len(wide) if wide else math.nan
    return out


def history_replay(w: Workload, seed: int, jobs: int) -> dict[str, float]:
    """The history predictor's errors on a generated workload without the simulator: it learns the history
    half, then each test job in arrival order is estimated and learnt at once (in a simulation it is learnt only
    when it ends, so this is a little kinder to it). P50 and P90 relative error of the wide jobs' estimates, and
    the share of them it overestimates: to set beside the paper's Fig. 3, which gives only those percentiles (on
    DAGs, the per-stage history's, beside §6's 3Sigma-DAG)."""
    history, test = generate(w.options(seed, jobs))
    # one predictor of whole jobs, or for DAGs one per stage (3Sigma-DAG: a DAG's estimate is its stages' sum)
    predictors: dict[int, HistoryPredictor] = {}

    def learn(job: Any) -> None:
        key = history_key(job)
        for depth, size in (enumerate(sum(st.durations_s) for st in job.stages) if w.dag else [(0, work_s(job))]):
            predictors.setdefault(depth, HistoryPredictor()).observe(key, size)

    for j in history:
        learn(j)
    errors, over = [], 0
    for j in test:
        key, actual = history_key(j), work_s(j)
        if sum(st.tasks for st in j.stages) >= 3 and actual > 0:
            est = 0.0
            for depth in range(len(j.stages) if w.dag else 1):
                got = predictors[depth].predict(key) if depth in predictors else None
                est += 0.0 if got is None else got[0]
            errors.append(abs(est - actual) / actual)
            over += est > actual
        learn(j)
    errors.sort()
    return {"p50": errors[len(errors) // 2], "p90": errors[min(len(errors) - 1, int(0.9 * len(errors)))],
            "over": over / len(errors)}


def run_workload(name: str, seed: int, jobs: int, studies: Collection[str] = (),
                 earlier: dict[str, Any] | None = None, rerun: Collection[str] = ()) -> dict[str, Any]:
    """The five policies on one workload and seed (or, with ``earlier``, that run kept but for the policies in
    ``rerun``, run again), and the studies asked for: ``ratios`` (SLearn at each fixed ratio, and adaptive, run
    again beside them), ``combined`` (``gs:slearn+history``, and gs:history beside it: the stored run when
    it is kept, else run again)."""
    w = WORKLOADS[name]
    if w.swim:
        history, test = (swim_noisy(day, nodes=w.nodes[0], seed=seed * 2 + k, compress=SWIM_COMPRESS,
                                    prefix=("h-", "t-")[k], noise=PROFILES[w.profile])
                         for k, day in enumerate(SWIM_DAYS))
    else:
        history, test = generate(w.options(seed, jobs))
    q0 = relative_q0([work_s(j) for j in history], PAPER_Q0_S)
    hist = [(history_key(j), work_s(j), stage_sizes(j)) for j in history]
    first = policies(w)[0]

    def one(p: str, ratio: float | None = None, label: str = "") -> dict[str, Any]:
        got = run_one(p, q0, test, hist, seed, ratio, w.nodes)
        print(f"  {name} seed {seed} {label or p:19s} avg JCT {got['avg_jct_s']:9.1f} s  "
              f"({got['wall_s']:.0f} s wall)", flush=True)
        return got

    if earlier:
        out = earlier
        for p in rerun:
            out["policies"][p] = one(p)
    else:  # a new record: with ``earlier`` empty ({}), of the studies only
        out = {"q0_s": q0, "load": load_stats(test, w.slots), "variation": variation_stats(history, test),
               "history_replay": None if w.swim else history_replay(w, seed, jobs),
               "jobs": len(test), "tasks": sum(s.tasks for j in test for s in j.stages), "policies": {}}
        for p in policies(w) if earlier is None else ():
            out["policies"][p] = one(p)
    if "combined" in studies:  # gs:history beside it: the run above when there is one (the same code and draw)
        history_run = out["policies"].get("gs:history") if earlier is None or "gs:history" not in rerun else None
        out["combined"] = {COMBINED: one(COMBINED), "gs:history": history_run or one("gs:history")}
    if "ratios" in studies:
        out["ratios"] = {"adaptive": one(first, label=f"{first} adaptive"),
                         **{f"{r:g}": one(first, r, f"{first} r={r:g}") for r in RATIOS}}
    return out


def ratios(run: Mapping[str, Any]) -> dict[str, float]:
    p = run["policies"]
    s = p["gs:slearn-dag" if "gs:slearn-dag" in p else "gs:slearn"]["avg_jct_s"]
    return {"history": p["gs:history"]["avg_jct_s"] / s, "las": p["gs:las"]["avg_jct_s"] / s,
            "fifo": p["fifo"]["avg_jct_s"] / s, "oracle": p["gs:oracle"]["avg_jct_s"] / s}


def _f(x: float, d: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{d}f}"


ANALYSIS = "## Where the targets are missed, and why"


def analysis(out: Path) -> str:
    """The page's analysis, written by a person from the figures: kept from the page being replaced, under a
    warning that the figures above it are new and it must be checked against them."""
    old = out.read_text() if out.exists() else ""
    if ANALYSIS not in old:
        return f"\n{ANALYSIS}\n\n(not written yet for these figures)\n"
    kept = old[old.index(ANALYSIS) + len(ANALYSIS):].lstrip("\n")
    warning = "(Written for an earlier run: check it against the figures above before relying on it.)\n\n"
    return f"\n{ANALYSIS}\n\n" + ("" if kept.startswith(warning[:30]) else warning) + kept


def page(results: Mapping[str, Mapping[int, Any]], wall_s: float, jobs: int) -> str:
    lines = ["# SLearn: GS with learned job sizes (simulator)", "",
             ("Generated by `bench/eval_slearn.py` (`sim/gen/slearn.py`, `rm/core/policies/gs.py`); "
             f"{jobs} test jobs per workload after {jobs} history jobs (the DAG workloads 900, 2sigma-long "
             f"{WORKLOADS['2sigma-long'].jobs}, the FB-2009 day its own), {NODES} nodes running one task each "
             "(FB-2009: 100 nodes of 8 vcores); seeds per workload: "
             f"{'; '.join(f'{w} ' + ', '.join(str(s) for s in sorted(b)) for w, b in results.items())}"
             f"; {wall_s / 60:.0f} min of simulation on this 2-core machine."), "",
             ("The paper's traces are not public: each workload is drawn to match what the paper reports of them "
             "(Table 4: CoV of task runtimes over time and space; Table 5: bursty load around 1; Fig. 3: how far "
             "3Sigma's history errs, which sets the share of runs that recur). "
             "GS's q0 is the history half's median job size (E = 10, N = 10, weights falling tenfold). The job "
             "files the RM reads declare no durations. Ratios are the baseline's average JCT over SLearn's "
             "(oracle: the oracle's over SLearn's, so 1.0 is as good as knowing every size)."), ""]
    verdicts: list[str] = []
    for name, by_seed in results.items():
        w = WORKLOADS[name]
        v = PROFILES[w.profile]
        pols = policies(w)
        lead = pols[0]
        lines += [f"## {name}", ""]
        if w.dag:
            shared = {0.0: "none of its log-variance", 0.5: "half of its log-variance",
                      1.0: "all of its log-variance"}.get(w.shared_drift, f"{w.shared_drift:g} of its log-variance")
            factor = w.options(0, 1).time_factor()
            lines += [(f"Chains of {w.stages[0]}-{w.stages[1]} stages, each stage drawn as a {w.profile}-like job"
                      + (f" whose runs vary {factor:g} times as much in time (calibrated to §6's 3Sigma-DAG error: "
                         "`--calibrate`)" if factor != 1.0 else
                         " varying in time as Table 4 has it (as before that variation was calibrated to §6's "
                         "3Sigma-DAG error)" if DAG_TIME_SCALE.get(w.profile, 1.0) != 1.0 else "")
                      + f"; a run's change in time is shared by its stages for {shared} (more or "
                      "other input moves every stage), the rest each stage's own. The CoVs below are of the "
                      "first stage."), ""]
        if w.swim:
            lines += [(f"SWIM's FB-2009 sample day 0 as the test half and day 1 as the history, {w.nodes[0]} nodes of "
                      f"{w.nodes[1]} MB / {w.nodes[2]} vcores, arrivals compressed {SWIM_COMPRESS:g}x; every task's "
                      f"time its stage's times a mean-1 log-normal factor with a CoV drawn per stage through "
                      f"{w.profile}'s space percentiles. Jobs do not recur: the history predicts from the features "
                      "they share (submit hour, queue, container)."), ""]
        if not w.swim and w.recurring_share() < 1.0:
            lines += [(f"{w.recurring_share() * 100:.0f}% of the runs recur; the others are one-off jobs, known to "
                      "the history only by their user (the share calibrated to Fig. 3: `--calibrate`)."), ""]
        elif not w.swim and w.sensitivity:
            lines += ["Every run recurs (the workload before its recurring share was calibrated to Fig. 3).", ""]
        lines += ["| seed | jobs / tasks | q0 (task-s) | load avg / p50 / p90 | CoV time p50 / p90 | CoV space p50 / p90 |",
                  "|---|---|---|---|---|---|"]
        for seed, run in sorted(by_seed.items()):
            ld, va = run["load"], run["variation"]
            lines.append(f"| {seed} | {run.get('jobs', jobs)} / {run['tasks']} | {run['q0_s']:.0f} | {_f(ld['avg'])} / "
                         f"{_f(ld['p50'])} / {_f(ld['p90'])} | {_f(va['time_p50'])} / {_f(va['time_p90'])} | "
                         f"{_f(va['space_p50'])} / {_f(va['space_p90'])} |")
        t5 = TABLE5.get(w.profile)
        if w.swim:
            lines += ["", (f"The per-task noise is drawn through {w.profile}'s Table 4 space percentiles "
                          f"({v.space_p50} / {v.space_p90}); a job's CoV in time is undefined (no job recurs)."), ""]
        else:
            lines += ["", f"Paper (Table 4): CoV time {v.time_p50} / {v.time_p90}, space {v.space_p50} / {v.space_p90}"
                      + (f"; Table 5 load {t5[0]} / {t5[1]} / {t5[2]}." if t5 else "."), ""]
        fig3 = FIG3.get(w.profile)
        replayed: tuple[str, str] | None = None  # what the history's replay is of, and the paper's figure beside it
        if w.dag:
            replayed = (("The per-stage history's errors (3Sigma-DAG: a DAG's stages' estimates summed) on the same DAGs, "
                        "replayed without the simulator (each test DAG estimated and learnt at its arrival):"),
                        f"Paper (§6): 3Sigma-DAG P50 {DAG_P50[0]}%, SLearn-DAG P50 {DAG_P50[1]}%.")
        elif fig3 is not None and not w.swim:
            replayed = (("The history predictor's errors on the same jobs, replayed without the simulator (each test job "
                        "estimated and learnt at its arrival; wide jobs):"),
                        (f"Paper (Fig. 3): 3Sigma P50 {fig3[0][0]}%, P90 {fig3[0][1]}%; SLearn P50 {fig3[1][0]}%, "
                        f"P90 {fig3[1][1]}%."))
        if replayed is not None:
            lines += [replayed[0], "", "| seed | history P50 error | history P90 error | overestimated |", "|---|---|---|---|"]
            for seed, run in sorted(by_seed.items()):
                rep = run.get("history_replay") or history_replay(w, seed, run.get("jobs", jobs))
                lines.append(f"| {seed} | {rep['p50'] * 100:.0f}% | {rep['p90'] * 100:.0f}% | "
                             f"{rep['over'] * 100:.0f}% |")
            lines += ["", replayed[1], ""]
        if not all(run["policies"] for run in by_seed.values()):
            lines += ["Only the studies below were run on this workload.", ""]
            lines += studies_md(name, by_seed, lead, verdicts)
            continue
        lines += ["| seed | " + " | ".join(f"{p} avg JCT (s)" for p in pols)
                  + f" | ×history | ×LAS | ×FIFO | oracle/{lead} | P50 err {lead} | P50 err history "
                  f"| right queue {lead} | right queue history |",
                  "|---" * (len(pols) + 9) + "|"]
        per_seed = []
        for seed, run in sorted(by_seed.items()):
            r = ratios(run)
            per_seed.append((r, run))
            p = run["policies"]
            lines.append(f"| {seed} | " + " | ".join(f"{p[x]['avg_jct_s']:.0f}" for x in pols)
                         + f" | {_f(r['history'])} | {_f(r['las'])} | {_f(r['fifo'])} | {_f(r['oracle'])} | "
                         f"{_f(p[lead]['p50_error'] * 100, 0)}% | {_f(p['gs:history']['p50_error'] * 100, 0)}% | "
                         f"{_f(p[lead]['right_bucket'] * 100, 1)}% | "
                         f"{_f(p['gs:history']['right_bucket'] * 100, 1)}% |")
        med = {k: statistics.median(r[k] for r, _ in per_seed) for k in TARGETS}
        err_s = statistics.median(run["policies"][lead]["p50_error"] for _, run in per_seed)
        err_h = statistics.median(run["policies"]["gs:history"]["p50_error"] for _, run in per_seed)
        right = statistics.median(run["policies"][lead]["right_bucket"] for _, run in per_seed)
        lines += ["", "Median over seeds against the targets:", ""]
        combined = [run["combined"] for _, run in per_seed if "combined" in run]
        if w.dag and w != WORKLOADS["google2019-dag"]:
            lines.append(f"* a sensitivity run, no target: ×history (3Sigma-DAG) {med['history']:.2f}, ×LAS "
                         f"{med['las']:.2f}; P50 estimate error SLearn-DAG {err_s * 100:.0f}%, 3Sigma-DAG "
                         f"{err_h * 100:.0f}%")
        elif w.dag:
            ok = med["history"] >= DAG_TARGET
            lines.append(f"* ×history (3Sigma-DAG): {med['history']:.2f} (target ≥ {DAG_TARGET}) — "
                         f"{'met' if ok else 'MISSED'}; ×LAS {med['las']:.2f} (paper 2.15)")
            lines.append(f"* P50 estimate error: SLearn-DAG {err_s * 100:.0f}%, 3Sigma-DAG {err_h * 100:.0f}% "
                         "(paper 33.9% and 47.2%)")
            verdicts.append(f"{name} ×history {med['history']:.2f} vs ≥ {DAG_TARGET}: {'met' if ok else 'MISSED'}")
        elif w.swim:
            lines.append(f"* no target (the paper has no such run): ×history {med['history']:.2f}, ×LAS "
                         f"{med['las']:.2f}, ×FIFO {med['fifo']:.2f}, oracle/slearn {med['oracle']:.2f}; P50 error "
                         f"of wide jobs slearn {err_s * 100:.0f}%, history {err_h * 100:.0f}%")
        elif w.sensitivity:
            lines.append(f"* a sensitivity run, no target: ×history {med['history']:.2f}, ×LAS {med['las']:.2f}, "
                         f"×FIFO {med['fifo']:.2f}, oracle/slearn {med['oracle']:.2f}; wide jobs in the right "
                         f"queue {right * 100:.1f}%")
        elif name == "history-wins":
            ok = med["history"] >= 1 / 1.05
            lines.append(f"* gs:slearn (pilots only) against gs:history: history/slearn JCT {med['history']:.2f} "
                         "(not the target's estimator)")
            if combined:
                c = statistics.median(x["gs:history"]["avg_jct_s"] / x[COMBINED]["avg_jct_s"] for x in combined)
                ok = c >= 1 / 1.05
                lines.append(f"* {COMBINED} (the combined estimator) within 5% of gs:history: history/combined "
                             f"JCT {c:.2f} (≥ 0.95) — {'met' if ok else 'MISSED'}")
                verdicts.append(f"{name}: combined within 5% of history {'met' if ok else 'MISSED'} ({c:.2f})")
        else:
            for k, target in TARGETS.items():
                ok = med[k] >= target
                lines.append(f"* ×{k}: {med[k]:.2f} (target ≥ {target}) — {'met' if ok else 'MISSED'}")
                verdicts.append(f"{name} ×{k} {med[k]:.2f} vs ≥ {target}: {'met' if ok else 'MISSED'}")
            head = {k: statistics.median(r[k] / r["oracle"] for r, _ in per_seed) for k in ("history", "fifo")}
            lines.append(f"* headroom: the oracle itself is {head['history']:.2f}× better than history and "
                         f"{head['fifo']:.2f}× better than FIFO (median over seeds): no estimator can go much "
                         "beyond these")
            ok = right >= 0.86
            t7 = TABLE7.get(w.profile)
            lines.append(f"* wide jobs in the right queue: {right * 100:.1f}% (target ≥ 86%) — "
                         f"{'met' if ok else 'MISSED'}"
                         + (f"; the paper's Table 7 on its trace: SLearn {t7[0]}%, 3Sigma {t7[1]}%" if t7 else ""))
            verdicts.append(f"{name} wide jobs in the right queue {right * 100:.1f}% vs ≥ 86%: "
                            f"{'met' if ok else 'MISSED'}")
            if name == "2sigma":
                ok_e = err_s <= 0.20 and err_h >= 0.35
                lines.append(f"* P50 estimate error of wide jobs: slearn {err_s * 100:.0f}% (target ≤ 20%), "
                             f"history {err_h * 100:.0f}% (paper ≥ 35%) — {'met' if ok_e else 'MISSED'}")
        lines.append("")
        lines += studies_md(name, by_seed, lead, verdicts)
    lines += ["## Verdicts", "", *(f"* {v}" for v in verdicts), ""]
    return "\n".join(lines)


def studies_md(name: str, by_seed: Mapping[int, Any], lead: str, verdicts: list[str]) -> list[str]:
    """The studies' tables of one workload: the combined estimator against the history, fixed ratios against
    the adaptive rule."""
    lines: list[str] = []
    combined = [(seed, run["combined"]) for seed, run in sorted(by_seed.items()) if "combined" in run]
    if combined:
        lines += [(f"{COMBINED} (pilots with the history as prior; not sampled where the history has been as "
                  "accurate as pilots):"), "",
                  (f"| seed | {COMBINED} avg JCT (s) | gs:history avg JCT (s) | history / combined | P50 err combined "
                  "| right queue combined | wide jobs not sampled |"), "|---|---|---|---|---|---|---|"]
        for seed, c in combined:
            x = c[COMBINED]
            trusted = x.get("counters", {}).get("apps_history_trusted", 0)
            lines.append(f"| {seed} | {x['avg_jct_s']:.0f} | {c['gs:history']['avg_jct_s']:.0f} | "
                         f"{c['gs:history']['avg_jct_s'] / x['avg_jct_s']:.2f} | {_f(x['p50_error'] * 100, 0)}% | "
                         f"{_f(x['right_bucket'] * 100, 1)}% | "
                         f"{trusted} of {x.get('wide_jobs', 0)} |")
        lines.append("")
    sweeps = [(seed, run["ratios"]) for seed, run in sorted(by_seed.items()) if "ratios" in run]
    if sweeps:
        lines += [f"{lead} at fixed sampling ratios against the adaptive rule (Table 6):", "",
                  "| seed | " + " | ".join(f"{r:g} avg JCT (s)" for r in RATIOS)
                  + " | adaptive avg JCT (s) | best fixed | adaptive / best fixed |", "|---" * (len(RATIOS) + 4) + "|"]
        gaps = []
        for seed, sweep in sweeps:
            fixed = {r: sweep[f"{r:g}"]["avg_jct_s"] for r in RATIOS}
            best = min(fixed, key=lambda r: fixed[r])
            gap = sweep["adaptive"]["avg_jct_s"] / fixed[best]
            gaps.append(gap)
            lines.append(f"| {seed} | " + " | ".join(f"{fixed[r]:.0f}" for r in RATIOS)
                         + f" | {sweep['adaptive']['avg_jct_s']:.0f} | {best:g} | {gap:.3f} |")
        worst = max(gaps)
        ok = worst <= 1.01
        lines += ["", f"Adaptive within 1% of the best fixed ratio: worst {worst:.3f} — {'met' if ok else 'MISSED'}", ""]
        verdicts.append(f"{name} adaptive / best fixed ratio {worst:.3f} vs ≤ 1.01: {'met' if ok else 'MISSED'}")
    return lines


def calibrate(seeds: Collection[int], jobs: int) -> None:
    """Print, per calibrated profile, the history predictor's replayed errors as fewer runs recur (from all of
    them, in steps of 0.05), down to the first share whose median P50 over ``seeds`` reaches Fig. 3's for 3Sigma:
    the share ``sim.gen.slearn.RECURRING`` holds; then, for DAGs, the per-stage history's as their runs vary
    less, down to the first factor on the CoV in time at which it errs at most §6's 3Sigma-DAG: the factor
    ``sim.gen.slearn.DAG_TIME_SCALE`` holds."""
    for profile, ((p50, p90), _) in FIG3.items():
        print(f"{profile}: Fig. 3 3Sigma P50 {p50}%, P90 {p90}%")
        for step in range(20, 7, -1):
            share = step / 20
            w = Workload(profile, recurring=share)
            reps = [history_replay(w, s, jobs) for s in seeds]
            m50 = statistics.median(r["p50"] for r in reps) * 100
            m90 = statistics.median(r["p90"] for r in reps) * 100
            print(f"  recurring {share:.2f}: P50 {m50:.1f}%, P90 {m90:.1f}% (seeds: "
                  + ", ".join(f"{r['p50'] * 100:.0f}/{r['p90'] * 100:.0f}" for r in reps) + ")")
            if m50 >= p50:
                print(f"  -> {share:.2f}")
                break
    for profile in DAG_TIME_SCALE:
        print(f"{profile} DAGs: 3Sigma-DAG P50 {DAG_P50[0]}% (§6)")
        for step in range(20, 0, -1):
            scale = step / 20
            w = Workload(profile, (2, 5), 900, time_scale=scale)
            reps = [history_replay(w, s, jobs) for s in seeds]
            m50 = statistics.median(r["p50"] for r in reps) * 100
            print(f"  time variation x{scale:.2f}: P50 {m50:.1f}% (seeds: "
                  + ", ".join(f"{r['p50'] * 100:.0f}" for r in reps) + ")")
            if m50 <= DAG_P50[0]:
                print(f"  -> {scale:.2f}")
                break


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--jobs", type=int, default=1250)
    ap.add_argument("--quick", action="store_true", help="one seed (the first of --seeds)")
    ap.add_argument("--merge", action="store_true",
                    help="add to the figures already in the JSON beside --out (another seed, another workload)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "slearn.md")
    ap.add_argument("--studies", default="", metavar="ratios,combined",
                    help="also run: 'ratios' (each fixed sampling ratio against the adaptive rule), 'combined' "
                         "(pilots with the history as prior against the history alone)")
    ap.add_argument("--studies-only", action="store_true",
                    help="with --merge: keep the five policies' figures already stored, run only --studies (with "
                         "none stored, the workload's record has the studies alone)")
    ap.add_argument("--rerun", default="", metavar="POLICY,...",
                    help="with --studies-only: run these of the five policies again (after a change to them)")
    ap.add_argument("--calibrate", action="store_true",
                    help="only print how the history's replayed error grows as fewer runs recur, per profile (the "
                         "calibration of sim.gen.slearn.RECURRING to Fig. 3), and stop")
    args = ap.parse_args()
    if args.calibrate:
        calibrate([int(s) for s in args.seeds.split(",") if s.strip()], args.jobs)
        return
    rerun = [x.strip() for x in args.rerun.split(",") if x.strip()]
    if set(rerun) - set(VARIANTS):
        raise SystemExit(f"unknown policies {sorted(set(rerun) - set(VARIANTS))}; known: {', '.join(VARIANTS)}")
    studies = {x.strip() for x in args.studies.split(",") if x.strip()}
    if studies - {"ratios", "combined"}:
        raise SystemExit(f"unknown studies {sorted(studies - {'ratios', 'combined'})}; known: ratios, combined")
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    if args.quick:
        seeds = seeds[:1]
    started = time.perf_counter()
    results: dict[str, dict[int, Any]] = {}
    earlier = args.out.with_suffix(".json")
    wall_before = 0.0
    if args.merge and earlier.exists():
        stored = json.loads(earlier.read_text())
        wall_before = float(stored.pop("_wall_s", 0.0))
        results = {w: {int(k): v for k, v in by_seed.items()} for w, by_seed in stored.items()}
    for profile in [w.strip() for w in args.workloads.split(",") if w.strip()]:
        if profile not in WORKLOADS:
            raise SystemExit(f"unknown workload {profile!r}; known: {', '.join(WORKLOADS)}")
        for s in seeds:
            kept = results.get(profile, {}).get(s) if args.studies_only else None
            if args.studies_only and kept is None:
                kept = {}  # nothing stored: a record of the studies alone
            again = [p for p in rerun if p in policies(WORKLOADS[profile])]
            results.setdefault(profile, {})[s] = run_workload(profile, s, args.jobs, studies, kept, again)
    wall = time.perf_counter() - started + wall_before
    args.out.parent.mkdir(parents=True, exist_ok=True)
    earlier.write_text(json.dumps({**results, "_wall_s": wall}, indent=1, default=str))
    args.out.write_text(page(results, wall, args.jobs) + analysis(args.out))
    print(f"wrote {args.out} ({wall / 60:.1f} min)")


if __name__ == "__main__":
    main()
