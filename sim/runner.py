"""Run one workload under several policies, the same cluster and the same seed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from am.jobspec import Job
from sim.engine import NodeSpec, SimConfig, Simulator
from sim.metrics import RunResult
from sim.policies import make_policy

Progress = Callable[[str, float, int, int], None]


def scale_load(jobs: Sequence[Job], factor: float) -> list[Job]:
    """Arrivals compressed by ``factor`` (2 = twice the arrival rate, so about twice the load)."""
    if factor <= 0:
        raise ValueError(f"the load scale must be positive, got {factor}")
    if factor == 1.0:
        return list(jobs)
    return [j.model_copy(update={"arrival_s": j.arrival_s / factor}) for j in jobs]


def run_policies(jobs: Sequence[Job], nodes: Sequence[NodeSpec], policies: Sequence[str],
                 config: SimConfig | None = None, progress: Progress | None = None) -> dict[str, RunResult]:
    cfg = config or SimConfig()
    out: dict[str, RunResult] = {}
    for name in policies:
        policy = make_policy(name)
        report = None if progress is None else (lambda t, d, n, name=name: progress(name, t, d, n))
        out[name] = Simulator(jobs, nodes, policy, replace(cfg)).run(report)
    return out
