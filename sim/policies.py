"""Policies the simulator can run, by name: the RM pipelines of ``rm.core.policies.registry``.

``fifo``, ``drf`` (the default RM pipeline: DRF across jobs, breadth-first inside), ``tetris`` (cross-job
packing; ``tetris:F`` sets its fairness knob F in [0, 1), default 0) and ``sjf`` (shortest remaining critical
path first, with exact sizes) are the baselines; any other pipeline the registry names (e.g. ``carbyne``)
runs too. Every run uses the registry's share calculator for fair-share feedback and fairness metrics.
"""

from __future__ import annotations

from dataclasses import dataclass

from rm.core.policies.api import Pipeline, ShareCalculator
from rm.core.policies.packing import PackingStage
from rm.core.policies.registry import PIPELINES, build_pipeline, make_scorer, named_pipeline

BASELINES = ("fifo", "drf", "tetris", "sjf")
SIZE_ORDERED = frozenset({"sjf"})
"""Pipelines that read ``AppView.size_hint_s``: the simulator refreshes the sizes before their cycles."""
SHARE_FREE = frozenset({"fifo", "drf", "tetris", "sjf"})
LEFTOVER_CAPPED = frozenset({"carbyne", "carbyne-pack", "morpheus"})
"""Pipelines with a leftover stage: ``carbyne:1.5`` bounds what one job takes from the leftover."""
"""Pipelines whose stages do not read ``plan.shares``; for the others every cycle computes the shares."""


@dataclass(frozen=True, slots=True)
class SimPolicy:
    name: str
    pipeline: Pipeline
    shares: ShareCalculator
    needs_sizes: bool = False
    needs_shares: bool = True  # the pipeline's stages read the cycle's fair shares


def known_policies() -> list[str]:
    return sorted(PIPELINES)


def make_policy(spec: str) -> SimPolicy:
    """A policy by name; ``tetris:0.25`` gives the packing stage a fairness knob of 0.25, ``carbyne:1.5``
    caps each job's take of the leftover at 1.5 times its fair share."""
    name, _, knob = spec.partition(":")
    if name not in PIPELINES:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(known_policies())}")
    if knob and name in LEFTOVER_CAPPED:
        try:
            cap = float(knob)
        except ValueError:
            raise ValueError(f"{name} leftover cap must be a number >= 1, got {knob!r}") from None
        pipeline, shares = named_pipeline(name, leftover_cap=cap)
        return SimPolicy(spec, pipeline, shares, needs_sizes=name in SIZE_ORDERED, needs_shares=True)
    if knob:
        if name != "tetris":
            raise ValueError(f"policy {name!r} takes no parameter (got {spec!r})")
        try:
            fairness = float(knob)
        except ValueError:
            raise ValueError(f"tetris fairness knob must be a number in [0, 1), got {knob!r}") from None
        args = PIPELINES[name]
        _, shares = build_pipeline(args)
        return SimPolicy(spec, [PackingStage(make_scorer(args.scorer), fairness)], shares, needs_shares=False)
    pipeline, shares = build_pipeline(PIPELINES[name])
    return SimPolicy(spec, pipeline, shares, needs_sizes=name in SIZE_ORDERED, needs_shares=name not in SHARE_FREE)


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
