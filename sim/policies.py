"""Policies the simulator can run, by name: the schedulers of ``rm.core.policies.registry``.

A scheduler name means what it means live: an RM pipeline and the AM ask policy its jobs use unless they
name one. ``fifo``, ``drf`` (DRF across jobs, breadth-first inside), ``tetris`` (cross-job packing;
``tetris:F`` sets its fairness knob F in [0, 1), default 0) and ``sjf`` (shortest remaining critical path
first, with exact sizes) are the baselines, with greedy AMs; ``carbyne``, ``carbyne-pack`` and ``morpheus``
run altruistic (``carbyne``) AMs, and ``carbyne:CAP`` sets the leftover cap. Every run uses the registry's
share calculator for fair-share feedback and fairness metrics; what else a cycle needs (fresh shares, job
sizes) comes from what the pipeline's stages declare they read.
"""

from __future__ import annotations

from dataclasses import dataclass

from am.policies import ASK_POLICIES
from rm.core.policies.api import ESTIMATES, SHARES, SIZES, Pipeline, ShareCalculator, pipeline_reads
from rm.core.policies.gs import gs_args
from rm.core.policies.registry import SCHEDULERS, build_pipeline, scheduler, split_scheduler

BASELINES = ("fifo", "drf", "tetris", "sjf")


@dataclass(frozen=True, slots=True)
class SimPolicy:
    name: str
    pipeline: Pipeline
    shares: ShareCalculator
    needs_sizes: bool = False  # a stage reads ``AppView.size_hint_s``: sizes are refreshed before cycles
    needs_shares: bool = True  # a stage reads the cycle's fair shares: every cycle computes them
    ask_policy: str = "greedy"  # the AM ask policy of jobs that name none (the scheduler's)
    admission: str = "admit-all"  # the rule that admits the jobs' submissions (the scheduler's)
    # the size estimator of a GS pipeline (``gs:history``), ``slearn`` for a pipeline reading the RM's own
    # estimates, else None (the simulator hands the RM exact sizes)
    estimator: str | None = None


def known_policies() -> list[str]:
    return sorted(SCHEDULERS)


def make_policy(spec: str) -> SimPolicy:
    """A policy by name; ``tetris:0.25`` gives the packing stage a fairness knob of 0.25, ``carbyne:1.5``
    caps each job's take of the leftover at 1.5 times its fair share."""
    name = split_scheduler(spec)[0]
    if name not in SCHEDULERS:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(known_policies())}")
    args = scheduler(spec)
    if args.ask_policy not in ASK_POLICIES:
        raise ValueError(f"scheduler {name!r} names an unknown AM ask policy {args.ask_policy!r}")
    pipeline, shares = build_pipeline(args.pipeline)
    return policy_of(spec, pipeline, shares, args.ask_policy, args.admission)


def policy_of(name: str, pipeline: Pipeline, shares: ShareCalculator, ask_policy: str = "greedy",
              admission: str = "admit-all") -> SimPolicy:
    """A policy from a built pipeline (what its stages read decides what the simulator provides)."""
    reads = pipeline_reads(pipeline)
    gs = gs_args(pipeline)
    # a GS stage names its estimator; an order reading the RM's own estimates (``carbyne:estimate``) gets what
    # the size tracker measures, as live, instead of the simulator's exact sizes
    estimator = gs.estimator if gs is not None else "slearn" if ESTIMATES in reads else None
    return SimPolicy(name, pipeline, shares, needs_sizes=SIZES in reads, needs_shares=SHARES in reads,
                     ask_policy=ask_policy, admission=admission, estimator=estimator)


def parse_policies(text: str) -> list[str]:
    """A comma-separated list of policy names, validated, duplicates dropped."""
    names: list[str] = []
    for part in text.split(","):
        name = part.strip()
        if not name:
            continue
        make_policy(name)
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("no policy given")
    return names
