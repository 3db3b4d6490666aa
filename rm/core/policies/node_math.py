"""Vector helpers of the node index: picking the best position, and Python's rounding over numpy arrays."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from rm.core.policies.tetris import SCORE_DIGITS

Floats = npt.NDArray[np.float64]
Positions = npt.NDArray[np.intp]
_SCALE = 10.0**SCORE_DIGITS


def best_position(take: Positions, score_key: Floats, waste_key: Floats) -> int:
    """The position with the highest score key, then the lowest waste key, then the lowest position."""
    top = score_key == score_key.max()
    tied = take[top]
    if tied.size > 1:
        waste_key = waste_key[top]
        tied = tied[waste_key == waste_key.min()]
    return int(tied.min())


def round_like_python(values: Floats) -> Floats:
    """``round(v, SCORE_DIGITS)`` of every value, bit for bit as Python's ``round`` gives it.

    Python rounds the exact binary value to the nearest decimal (half to even) and returns the float nearest
    that decimal; n / 10^9 computed in float64 is that float when n is the right integer, since both n and
    10^9 are exact. rint(v × 10^9) is that integer unless v × 10^9 lands within its own rounding error of
    a half-integer; those few values (and huge ones) are rounded by Python itself.
    """
    scaled = values * _SCALE
    whole = np.rint(scaled)
    out: Floats = whole / _SCALE
    if not values.size:
        return out
    top = float(np.abs(scaled).max())
    if top >= 2.0**52:
        return np.array([round(v, SCORE_DIGITS) for v in values.tolist()])
    slack = top * 2.0**-50 + 1e-300  # above the rounding error of scaled, whatever its size
    doubtful = (np.abs(np.abs(scaled - whole) - 0.5) <= slack).nonzero()[0]
    if doubtful.size:  # often many, and many alike (nodes with the same free amounts): each value rounded once
        distinct, where = np.unique(values[doubtful], return_inverse=True)
        out[doubtful] = np.array([round(v, SCORE_DIGITS) for v in distinct.tolist()])[where]
    return out
