"""Piecewise-linear utility of a job's completion time (Jockey §4.3, §5.1).

A utility maps the time a job finishes, in seconds after it started, to a value: flat while the job is
on time, then falling. Jockey's evaluation uses the points (0, 1), (d, 1), (d + 10, -1), (d + 1000, -1000)
in minutes for a deadline of d = 60 minutes; ``default_utility`` scales the two offsets with the deadline
(+d/6 and +100·d/6), so a 60-minute deadline gets exactly the paper's shape.

Between points the value is interpolated linearly; before the first point it is the first value; after
the last point the last segment's slope continues (so a late job keeps losing utility, as in the paper).
Values never rise with time: a utility whose points rise is refused with ``UtilityError``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

# The paper's offsets at d = 60 min: utility -1 at d + 10 min, -1000 at d + 1000 min.
_PAPER_DEADLINE_S = 3600.0
_PAPER_DROP_S = 600.0
_PAPER_FLOOR_S = 60_000.0


class UtilityError(ValueError):
    """A utility function's points are malformed; the message says which point and why."""


@dataclass(frozen=True, slots=True)
class Utility:
    """Points ``(t_s, value)``: times strictly increasing, values non-increasing."""

    points: tuple[tuple[float, float], ...]

    def __post_init__(self) -> None:
        if len(self.points) < 1:
            raise UtilityError("a utility needs at least one point")
        for i, (t, u) in enumerate(self.points):
            if not (math.isfinite(t) and math.isfinite(u)):
                raise UtilityError(f"utility point {i} ({t}, {u}) is not finite")
        for i in range(1, len(self.points)):
            (t0, u0), (t1, u1) = self.points[i - 1], self.points[i]
            if t1 <= t0:
                raise UtilityError(f"utility point {i}: time {t1} does not come after {t0}")
            if u1 > u0:
                raise UtilityError(
                    f"utility point {i}: value rises from {u0} to {u1}; a utility must not increase with time"
                )

    @staticmethod
    def of(points: Sequence[Sequence[float]]) -> Utility:
        """Build from ``[[t_s, value], ...]`` as a job file gives them."""
        out: list[tuple[float, float]] = []
        for i, p in enumerate(points):
            if len(p) != 2:
                raise UtilityError(f"utility point {i} has {len(p)} numbers, not 2 (time, value)")
            out.append((float(p[0]), float(p[1])))
        return Utility(tuple(out))

    @property
    def top(self) -> float:
        """The best value: what finishing early enough earns."""
        return self.points[0][1]

    @property
    def deadline(self) -> float:
        """The last time at which the utility still has its best value (the end of the flat top)."""
        last = self.points[0][0]
        for t, u in self.points:
            if u < self.top:
                break
            last = t
        return last

    def shifted(self, by_s: float) -> Utility:
        """The same shape moved ``by_s`` seconds earlier (Jockey's dead zone shifts the utility left)."""
        return Utility(tuple((t - by_s, u) for t, u in self.points))

    def _tail_slope(self) -> float:
        if len(self.points) < 2:
            return 0.0
        (t0, u0), (t1, u1) = self.points[-2], self.points[-1]
        return (u1 - u0) / (t1 - t0)

    def __call__(self, t: float) -> float:
        return float(self.values(np.asarray([t], dtype=np.float64))[0])

    def values(self, ts: npt.ArrayLike) -> FloatArray:
        """U at every time of ``ts`` (any shape)."""
        arr = np.asarray(ts, dtype=np.float64)
        xs = np.fromiter((p[0] for p in self.points), dtype=np.float64, count=len(self.points))
        ys = np.fromiter((p[1] for p in self.points), dtype=np.float64, count=len(self.points))
        out = np.interp(arr, xs, ys)
        beyond = arr > xs[-1]
        if np.any(beyond):
            out = np.where(beyond, ys[-1] + self._tail_slope() * (arr - xs[-1]), out)
        return out

    def expected(self, completion_s: npt.ArrayLike, axis: int = -1) -> FloatArray:
        """E[U(T)] over equally likely completion times along ``axis``."""
        return np.asarray(self.values(completion_s).mean(axis=axis), dtype=np.float64)


def default_utility(deadline_s: float) -> Utility:
    """The paper's utility for deadline ``deadline_s``, offsets scaled by deadline / 60 min."""
    if not (math.isfinite(deadline_s) and deadline_s > 0):
        raise UtilityError(f"a deadline must be a positive number of seconds, got {deadline_s}")
    scale = deadline_s / _PAPER_DEADLINE_S
    return Utility(
        (
            (0.0, 1.0),
            (deadline_s, 1.0),
            (deadline_s + _PAPER_DROP_S * scale, -1.0),
            (deadline_s + _PAPER_FLOOR_S * scale, -1000.0),
        )
    )
