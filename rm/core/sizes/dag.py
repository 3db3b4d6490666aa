"""The DAG hybrid of sampling and history (SLearn-DAG, SLearn §6).

Sampling every stage of a DAG in turn would only tell the whole DAG's size once its last stage starts. The
hybrid samples the first stage alone, which measures d_s, and compares it with what history predicted for the
same stage, d_h. The ratio d_s/d_h says how far the history is off for this run (new code, more data), and the
history (or, without history, the job file's declared) estimates of all later stages are scaled by it. The
DAG's size is the sum over its stages; the history-only baseline (3Sigma-DAG) sums the unscaled estimates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def adjustment(sampled_first: float, history_first: float) -> float:
    """d_s/d_h, or 1 (no correction) when the history's first-stage estimate is not positive and finite."""
    if math.isnan(sampled_first) or sampled_first < 0:
        raise ValueError(f"sampled_first must be >= 0, got {sampled_first}")
    if not (history_first > 0 and math.isfinite(history_first)):
        return 1.0
    return sampled_first / history_first


def hybrid(sampled_first: float, history_first: float, others: Sequence[float]) -> tuple[float, ...]:
    """Every stage's estimate: the sampled first stage, then each of ``others`` (the later stages' history
    or declared estimates, in task-seconds) times d_s/d_h. ``sum()`` of the result is the DAG's size."""
    if any(math.isnan(o) or o < 0 for o in others):
        raise ValueError(f"stage estimates must be >= 0, got {tuple(others)}")
    ratio = adjustment(sampled_first, history_first)
    return (sampled_first, *(o * ratio for o in others))
