"""PNG plots of a comparison: JCT CDFs per policy, and utilization over time per policy and resource.

matplotlib is imported only here, with the non-interactive Agg backend; without it no plots are written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sim.metrics import RunResult


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def write_plots(out: Path, results: Mapping[str, RunResult]) -> list[Path]:
    """jct_cdf.png and utilization.png in ``out``; returns the files written ([] without matplotlib)."""
    if not available():
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, result in results.items():
        jcts = sorted(result.jcts().values())
        if jcts:
            ax.step(jcts, [(i + 1) / len(jcts) for i in range(len(jcts))], where="post", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("JCT CDF")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = out / "jct_cdf.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    resources = sorted({r for res in results.values() for r in res.capacity.types()})
    fig, axes = plt.subplots(len(resources), 1, figsize=(8, 2.6 * len(resources)), sharex=True, squeeze=False)
    for name, result in results.items():
        span = max(result.makespan, 1.0)
        xs, series = result.util_series(max(span / 300.0, 1.0))
        for ax, r in zip(axes[:, 0], resources, strict=True):
            ax.plot([x - result.start for x in xs], series.get(r, [0.0] * len(xs)), label=name, linewidth=0.9)
    for ax, r in zip(axes[:, 0], resources, strict=True):
        ax.set_ylabel(f"{r} used")
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(loc="upper right")
    axes[-1, 0].set_xlabel("time since the first arrival (s)")
    fig.tight_layout()
    path = out / "utilization.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written
