"""The job resource model R* (Morpheus §5): one skyline that best fits the skylines of past runs.

Each run ``i`` is a sequence ``s_i,k`` of containers used per time step from its start (runs aligned at the
start, shorter ones padded with zeros). The LP picks ``s_k >= 0`` minimizing

    α·A_o(s) + (1 − α)·A_u(s)                                   (then + β·ε, see below)
    A_o = 1/N Σ_i Σ_k (s_k − s_i,k)+             over-allocation: wasted, cannot be recovered later
    A_u = 1/N Σ_i D_i,K,  D_i,k = (D_i,k−1 + s_i,k − s_k)+, D_i,0 = 0
                                                 under-allocation as the debt left at the end (an elastic
                                                 job catches up later, but credit never accumulates)

and, against lazy solutions that under-provision early and catch up at the end, the average normalized
instantaneous under-allocation ``1/N Σ_i Σ_k (s_i,k − s_k)+ / Σ_k s_i,k`` is held below ε, with ε rolled into
the objective as ``β·ε``: solve once without that term to get its optimum V, then again with β = 0.1·V.
The (·)+ terms become the usual auxiliary variables with two lower bounds each; the LP has O(N·K) variables
and constraints. It is solved by PuLP with its bundled CBC (which runs as a subprocess with temporary
files: call this off the scheduling loop, e.g. in the inference job or an executor).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_ALPHA = 0.01  # Morpheus found 1% the best balance of over-allocation and missed SLOs
BETA_FRACTION = 0.1


@dataclass(frozen=True, slots=True)
class SkylineFit:
    skyline: tuple[float, ...]  # s_k, containers per step
    over: float  # A_o at the optimum
    under: float  # A_u at the optimum (average final debt)
    eps: float  # the average normalized instantaneous under-allocation
    v: float  # optimum of the first solve (without β·ε)
    beta: float
    alpha: float


def _pad(runs: Sequence[Sequence[float]]) -> list[list[float]]:
    k = max((len(r) for r in runs), default=0)
    return [[float(x) for x in r] + [0.0] * (k - len(r)) for r in runs]


def _solve(
    runs: list[list[float]], alpha: float, beta: float | None, solver: Any
) -> tuple[float, list[float], float, float, float]:
    import pulp  # type: ignore[import-untyped, import-not-found, unused-ignore]

    n, k = len(runs), len(runs[0])
    prob = pulp.LpProblem("skyline", pulp.LpMinimize)

    def var(name: str) -> Any:
        if hasattr(prob, "add_variable"):  # PuLP >= 3.3
            return prob.add_variable(name, lowBound=0)
        return pulp.LpVariable(name, lowBound=0)

    s = [var(f"s_{j}") for j in range(k)]
    over_terms = []
    debts = []
    for i, run in enumerate(runs):
        prev = None
        for j in range(k):
            o = var(f"o_{i}_{j}")
            prob += o >= s[j] - run[j]
            over_terms.append(o)
            d = var(f"d_{i}_{j}")
            prob += d >= (prev if prev is not None else 0) + run[j] - s[j]
            prev = d
        debts.append(prev)
    a_o = pulp.lpSum(over_terms) * (1.0 / n)
    a_u = pulp.lpSum(debts) * (1.0 / n)
    objective = alpha * a_o + (1 - alpha) * a_u
    eps_var = None
    if beta is not None:
        eps_var = var("eps")
        norm = []
        for i, run in enumerate(runs):
            total = sum(run)
            if total <= 0:
                continue
            for j in range(k):
                u = var(f"u_{i}_{j}")
                prob += u >= run[j] - s[j]
                norm.append(u * (1.0 / total))
        prob += eps_var >= pulp.lpSum(norm) * (1.0 / n)
        objective = objective + beta * eps_var
    prob += objective
    status = prob.solve(solver or default_solver())
    if pulp.LpStatus[status] != "Optimal":
        raise RuntimeError(f"the skyline LP did not solve: {pulp.LpStatus[status]}")
    values = [max(0.0, float(v.value() or 0.0)) for v in s]
    over = float(pulp.value(a_o) or 0.0)
    under = float(pulp.value(a_u) or 0.0)
    value = alpha * over + (1 - alpha) * under
    eps = float(eps_var.value() or 0.0) if eps_var is not None else 0.0
    return value, values, over, under, eps


def default_solver() -> Any:
    """CBC without output: the binary PuLP bundles (PuLP < 4), else a CBC on the path (``pulp[cbc]``)."""
    import warnings

    import pulp  # type: ignore[import-untyped, import-not-found, unused-ignore]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        bundled = getattr(pulp, "PULP_CBC_CMD", None)
        if bundled is not None and bundled(msg=False).available():
            return bundled(msg=False)
    return pulp.COIN_CMD(msg=False)


def solve_skyline(
    runs: Sequence[Sequence[float]],
    alpha: float = DEFAULT_ALPHA,
    *,
    beta_fraction: float = BETA_FRACTION,
    solver: Any = None,
) -> SkylineFit:
    """R* for ``runs`` (containers per step each). ``solver``: a PuLP solver, default CBC without output."""
    if not runs or not any(len(r) for r in runs):
        raise ValueError("need at least one run with at least one step")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if any(x < 0 for r in runs for x in r):
        raise ValueError("skylines cannot be negative")
    padded = _pad(runs)
    v, _, _, _, _ = _solve(padded, alpha, None, solver)
    beta = beta_fraction * v
    _, values, over, under, _ = _solve(padded, alpha, beta, solver)
    eps = _normalized_under(padded, values)  # what the solution achieves (the bound is tight when beta > 0)
    return SkylineFit(tuple(round(x, 9) for x in values), over, under, eps, v, beta, alpha)


def _normalized_under(runs: list[list[float]], s: list[float]) -> float:
    parts = []
    for run in runs:
        total = sum(run)
        if total > 0:
            parts.append(sum(max(0.0, x - y) for x, y in zip(run, s, strict=True)) / total)
    return sum(parts) / len(runs) if runs else 0.0


def evaluate_skyline(runs: Sequence[Sequence[float]], s: Sequence[float], alpha: float) -> tuple[float, float, float]:
    """(A_o, A_u, normalized under-allocation) of skyline ``s`` on ``runs``: the LP's terms, computed directly."""
    padded = _pad([*runs, s])
    *rs, sk = padded
    n = len(rs)
    over = sum(max(0.0, y - x) for r in rs for x, y in zip(r, sk, strict=True)) / n
    under = 0.0
    for r in rs:
        d = 0.0
        for x, y in zip(r, sk, strict=True):
            d = max(0.0, d + x - y)
        under += d
    return over, under / n, _normalized_under(rs, list(sk))
