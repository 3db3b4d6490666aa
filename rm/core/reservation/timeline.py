"""The capacity timeline of one plan: load per resource type in fixed steps, with a repeating window.

Time is cut into steps of ``step_s`` seconds (default one minute) counted from the epoch, so step ``s``
covers ``[s·step, (s+1)·step)``. Two kinds of load add up at every step:

* periodic load lives in one **window** of ``W`` steps (default one day, the LCM of the periods the plan
  accepts) and repeats forever: step ``s`` sees ``periodic[:, s mod W]``. A job with period ``P`` dividing
  ``W`` is written there ``W/P`` times, once per instance, all at the same offset.
* one-off load (non-periodic reservations, instances of periods that do not divide the window, dynamic
  reprovisioning) lives in sparse **pages**, one per window-length of absolute time that holds any.

Everything is numpy: arrays of shape ``(R, n)`` with one row per resource type in ``types`` order.
Capacity is one vector for the whole timeline (the reservable share of the cluster).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from common.resources import Resources

FloatArray = npt.NDArray[np.float64]

DEFAULT_STEP_S = 60
DEFAULT_WINDOW_S = 86_400
_TOL = 1e-9


class Timeline:
    def __init__(
        self, capacity: Resources, *, step_s: int = DEFAULT_STEP_S, window_s: int = DEFAULT_WINDOW_S
    ) -> None:
        if step_s <= 0 or window_s <= 0 or window_s % step_s:
            raise ValueError(f"the window ({window_s} s) must be a positive multiple of the step ({step_s} s)")
        self.step_s = step_s
        self.step_ms = step_s * 1000
        self.window = window_s // step_s
        self.types: tuple[str, ...] = tuple(sorted(capacity.amounts))
        self.cap: FloatArray = np.array([capacity.get(t) for t in self.types], dtype=np.float64)
        self.periodic: FloatArray = np.zeros((len(self.types), self.window))
        self.pages: dict[int, FloatArray] = {}
        self._peak: FloatArray | None = None
        self.version = 0  # bumps on every change; caches key on it

    # ------------------------------------------------------------------------------------- vectors

    @property
    def capacity(self) -> Resources:
        return self.resources(self.cap)

    def vector(self, r: Resources) -> FloatArray:
        """``r`` as a vector in ``types`` order; ValueError when it holds a type the plan does not have."""
        extra = [t for t in r.amounts if t not in self.types]
        if extra:
            raise ValueError(f"resource type(s) {', '.join(sorted(extra))} not in the plan's capacity")
        return np.array([r.get(t) for t in self.types], dtype=np.float64)

    def resources(self, v: Iterable[float]) -> Resources:
        return Resources({t: round(float(x)) for t, x in zip(self.types, v, strict=True)})

    def set_capacity(self, capacity: Resources) -> None:
        """New capacity (nodes came or went). New resource types get a row; missing ones count as zero."""
        self.ensure_types(capacity.amounts)
        self.cap = np.array([capacity.get(t) for t in self.types], dtype=np.float64)
        self.version += 1

    def ensure_types(self, names: Iterable[str]) -> None:
        """Add a row (of zero capacity until ``set_capacity`` says otherwise) for each type not yet known."""
        new = sorted(t for t in set(names) if t not in self.types)
        if not new:
            return
        self.types = self.types + tuple(new)
        grow = np.zeros((len(new), self.window))
        self.periodic = np.vstack([self.periodic, grow])
        self.pages = {k: np.vstack([p, grow]) for k, p in self.pages.items()}
        self.cap = np.concatenate([self.cap, np.zeros(len(new))])
        self._peak = None
        self.version += 1

    # ---------------------------------------------------------------------------------------- load

    def step_of(self, t_ms: int) -> int:
        return t_ms // self.step_ms

    def load(self, start: int, end: int) -> FloatArray:
        """Total load of absolute steps ``[start, end)``."""
        n = max(0, end - start)
        out = self.periodic[:, np.arange(start, start + n) % self.window]
        if self.pages and n:
            w = self.window
            for page in range(start // w, (end - 1) // w + 1):
                arr = self.pages.get(page)
                if arr is None:
                    continue
                lo = max(start, page * w)
                hi = min(end, (page + 1) * w)
                out[:, lo - start : hi - start] += arr[:, lo - page * w : hi - page * w]
        return out

    def oneoff_peak(self) -> FloatArray:
        """Per window position, the largest one-off load any page holds there."""
        if self._peak is None:
            if self.pages:
                self._peak = np.maximum.reduce(list(self.pages.values()))
            else:
                self._peak = np.zeros_like(self.periodic)
        return self._peak

    def folded(self, period: int, start: int, n: int) -> FloatArray:
        """The load a job of period ``period`` sees at steps ``start .. start+n-1`` of its first instance:
        at each offset, the worst over all its instances in the window (periodic load plus the worst page)."""
        if period <= 0 or self.window % period:
            raise ValueError(f"period {period} does not divide the window {self.window}")
        total = self.periodic + self.oneoff_peak()
        fold = total.reshape(len(self.types), self.window // period, period).max(axis=1)
        out: FloatArray = fold[:, (start + np.arange(n)) % period]
        return out

    # -------------------------------------------------------------------------------------- change

    def add(self, start: int, loads: FloatArray, *, period: int = 0, sign: float = 1.0) -> None:
        """Add (``sign`` 1) or remove (-1) ``loads`` (R × L) from absolute step ``start``.

        With ``period`` > 0 (dividing the window, ``L <= period``) the loads repeat every ``period`` steps
        forever, otherwise they are one-off.
        """
        length = loads.shape[1]
        if length == 0:
            return
        w = self.window
        if period > 0:
            if w % period or length > period:
                raise ValueError(f"periodic load of {length} steps with period {period} in a window of {w}")
            reps = w // period
            idx = ((start + np.arange(length))[None, :] + period * np.arange(reps)[:, None]) % w
            self.periodic[:, idx.ravel()] += sign * np.tile(loads, reps)
            np.maximum(self.periodic, 0.0, out=self.periodic)
        else:
            end = start + length
            for page in range(start // w, (end - 1) // w + 1):
                lo = max(start, page * w)
                hi = min(end, (page + 1) * w)
                arr = self.pages.get(page)
                if arr is None:
                    arr = self.pages[page] = np.zeros((len(self.types), w))
                arr[:, lo - page * w : hi - page * w] += sign * loads[:, lo - start : hi - start]
                np.maximum(arr, 0.0, out=arr)
                if sign < 0 and not arr.any():
                    del self.pages[page]
            self._peak = None
        self.version += 1

    def prune(self, before_step: int) -> None:
        """Forget one-off load in pages that ended before ``before_step`` (the past cannot be booked)."""
        first = before_step // self.window
        old = [k for k in self.pages if k < first]
        for k in old:
            del self.pages[k]
        if old:
            self._peak = None
            self.version += 1

    # -------------------------------------------------------------------------------------- reports

    def overbooked(self, start: int, end: int) -> list[int]:
        """Steps of ``[start, end)`` whose load exceeds the capacity (after the cluster shrank)."""
        load = self.load(start, end)
        bad = (load > self.cap[:, None] + _TOL).any(axis=0)
        return [start + int(i) for i in np.nonzero(bad)[0]]

    def utilization(self, start: int, end: int) -> FloatArray:
        """Per step, the largest fraction of any resource booked (Morpheus' cost c(t))."""
        return step_cost(self.load(start, end), self.cap)


def step_cost(load: FloatArray, cap: FloatArray) -> FloatArray:
    """c(t) = max over resources of load/capacity; a type with no capacity costs infinity once loaded."""
    if cap.size and cap.min() > 0:
        fast: FloatArray = (load / cap[:, None]).max(axis=0)
        return fast
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(cap[:, None] > 0, load / np.where(cap > 0, cap, 1.0)[:, None], np.where(load > _TOL, np.inf, 0.0))
    out: FloatArray = ratio.max(axis=0) if ratio.size else np.zeros(load.shape[1])
    return out
