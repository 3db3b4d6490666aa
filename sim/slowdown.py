"""Contention episodes: spans of time in which tasks on some nodes run slower.

A production cluster's task times change while a job runs: other jobs compete for the network, the disks and
the cores of the machines it runs on (the Jockey paper's §2.4; its job F took twice its usual time on an
overloaded cluster). ``Faults`` already perturbs each attempt on its own (noise, stragglers, failures); an
episode instead hits every attempt running on its nodes while it lasts, those already running included, so a
job's progress slows part-way through and a plan made at its start no longer holds.

An attempt's duration is its *work*: how long it runs on an idle node. On a node slowed ``k`` times it does
``1 / k`` seconds of work a second. Where episodes overlap on a node the slowest counts. The episodes are drawn
before the run starts, so when an attempt ends is known at its launch, and the event queue never needs
rewriting.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Slowdown:
    """Tasks on ``nodes`` (every node when empty) run ``factor`` times slower from ``start_s`` to ``end_s``."""

    start_s: float
    end_s: float
    factor: float
    nodes: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not self.end_s > self.start_s >= 0.0:
            raise ValueError(f"a slowdown needs 0 <= start < end, not [{self.start_s}, {self.end_s}]")
        if not (self.factor >= 1.0 and math.isfinite(self.factor)):
            raise ValueError(f"a slowdown factor is at least 1, not {self.factor}")


DEFAULT_NODES = (0.25, 1.0)  # the share of the nodes an episode hits, drawn uniformly from this range
DEFAULT_FACTOR = (1.5, 3.0)  # how many times slower it makes them


@dataclass(frozen=True, slots=True)
class Contention:
    """How often episodes come and how hard they hit: they arrive as a Poisson process (``per_hour``), each
    lasts an exponential time (mean ``mean_s``), slows a uniformly drawn fraction of the nodes (``nodes``) by a
    uniformly drawn factor (``factor``)."""

    per_hour: float
    mean_s: float
    nodes: tuple[float, float] = DEFAULT_NODES
    factor: tuple[float, float] = DEFAULT_FACTOR

    def draw(self, rng: random.Random, horizon_s: float, node_names: Sequence[str]) -> tuple[Slowdown, ...]:
        """The episodes that start before ``horizon_s``."""
        out: list[Slowdown] = []
        if self.per_hour <= 0:
            return ()
        t = 0.0
        while True:
            t += rng.expovariate(self.per_hour / 3600.0)
            if t >= horizon_s:
                return tuple(out)
            length = rng.expovariate(1.0 / self.mean_s)
            share = rng.uniform(*self.nodes)
            count = max(1, round(share * len(node_names)))
            hit = frozenset(rng.sample(list(node_names), count)) if count < len(node_names) else frozenset()
            out.append(Slowdown(t, t + max(length, 1e-3), rng.uniform(*self.factor), hit))


def parse_contention(text: str) -> Contention:
    """``PER_HOUR,MEAN_S[,NODES_LO-NODES_HI[,FACTOR_LO-FACTOR_HI]]``, e.g. ``1,600`` or ``1,600,0.25-1,1.5-3``."""
    parts = [p.strip() for p in text.split(",")]
    if not 2 <= len(parts) <= 4:
        raise ValueError(f"contention is PER_HOUR,MEAN_S[,NODES_LO-NODES_HI[,FACTOR_LO-FACTOR_HI]], not {text!r}")

    def span(p: str) -> tuple[float, float]:
        lo, sep, hi = p.partition("-")
        if not sep:
            raise ValueError(f"a contention range is LO-HI, not {p!r}")
        return float(lo), float(hi)

    try:
        per_hour, mean_s = float(parts[0]), float(parts[1])
        nodes = span(parts[2]) if len(parts) > 2 else DEFAULT_NODES
        factor = span(parts[3]) if len(parts) > 3 else DEFAULT_FACTOR
    except ValueError as exc:
        raise ValueError(f"contention {text!r}: {exc}") from None
    if not (per_hour >= 0 and mean_s > 0 and 0 < nodes[0] <= nodes[1] <= 1 and 1 <= factor[0] <= factor[1]):
        raise ValueError(f"contention {text!r}: wants PER_HOUR >= 0, MEAN_S > 0, 0 < NODES_LO <= NODES_HI <= 1, "
                         "1 <= FACTOR_LO <= FACTOR_HI")
    return Contention(per_hour, mean_s, nodes, factor)


class NodeSpeeds:
    """When an attempt launched on a node ends, given the episodes: each node's slowed spans, merged."""

    def __init__(self, episodes: Iterable[Slowdown], node_names: Iterable[str]) -> None:
        names = list(node_names)
        self._names = tuple(names)
        self._fastest: list[tuple[float, float, float]] | None = None  # built at the first use, with its starts
        self._fastest_starts: list[float] = []
        hits: dict[str, list[Slowdown]] = {n: [] for n in names}
        for e in episodes:
            for n in (e.nodes or names):
                if n in hits:
                    hits[n].append(e)
        self._spans = {n: _merge(es) for n, es in hits.items() if es}
        self._starts = {n: [s for s, _, _ in spans] for n, spans in self._spans.items()}

    def __bool__(self) -> bool:
        return bool(self._spans)

    def factor(self, node: str, t: float) -> float:
        """How many times slower tasks on ``node`` run at ``t``."""
        spans = self._spans.get(node)
        if not spans:
            return 1.0
        i = bisect.bisect_right(self._starts[node], t) - 1
        return spans[i][2] if i >= 0 and spans[i][0] <= t < spans[i][1] else 1.0

    def end(self, node: str, start: float, work: float) -> float:
        """When ``work`` seconds of work begun at ``start`` on ``node`` are done."""
        spans = self._spans.get(node)
        if not spans:
            return start + max(work, 0.0)
        return _finish(spans, self._starts[node], start, work)

    def fastest_end(self, start: float, work: float) -> float:
        """When ``work`` begun at ``start`` would be done on whichever node runs fastest at each moment: no task
        started then can end sooner, so a chain of tasks that must run one after another ends no sooner than
        this with its total work."""
        if self._fastest is None:
            self._fastest = self._envelope()
            self._fastest_starts = [s for s, _, _ in self._fastest]
        if not self._fastest:
            return start + max(work, 0.0)
        return _finish(self._fastest, self._fastest_starts, start, work)

    def _envelope(self) -> list[tuple[float, float, float]]:
        """The (start, end, factor) spans in which every node is slowed, each with the smallest factor."""
        if not self._names or any(n not in self._spans for n in self._names):
            return []  # some node is never slowed
        edges = sorted({t for spans in self._spans.values() for s, e, _ in spans for t in (s, e)})
        out: list[tuple[float, float, float]] = []
        for a, b in itertools.pairwise(edges):
            k = min(self.factor(n, a) for n in self._names)
            if k <= 1.0:
                continue
            if out and out[-1][1] == a and out[-1][2] == k:
                out[-1] = (out[-1][0], b, k)
            else:
                out.append((a, b, k))
        return out


def _finish(spans: list[tuple[float, float, float]], starts: list[float], start: float, work: float) -> float:
    """When ``work`` begun at ``start`` is done, at 1 / k of full speed inside each (start, end, k) span."""
    if work <= 0:
        return start + max(work, 0.0)
    t, left = start, work
    i = max(0, bisect.bisect_right(starts, t) - 1)
    for s, e, k in spans[i:]:
        if e <= t:
            continue
        if s > t:  # full speed until the span begins
            if t + left <= s:
                return t + left
            left -= s - t
            t = s
        done = (e - t) / k  # work done by the span's end
        if left <= done:
            return t + left * k
        left -= done
        t = e
    return t + left


def _merge(episodes: list[Slowdown]) -> list[tuple[float, float, float]]:
    """Disjoint (start, end, factor) spans, sorted, each with the largest factor of the episodes covering it."""
    edges = sorted([(e.start_s, 1, e.factor) for e in episodes] + [(e.end_s, -1, e.factor) for e in episodes])
    active: dict[float, int] = {}  # factor -> how many covering episodes have it
    spans: list[tuple[float, float, float]] = []
    for (t, change, factor), nxt in zip(edges, [*edges[1:], (math.inf, 0, 1.0)], strict=True):
        active[factor] = active.get(factor, 0) + change
        if not active[factor]:
            del active[factor]
        k = max(active, default=1.0)
        b = nxt[0]
        if b <= t or k <= 1.0:
            continue
        if spans and spans[-1][1] == t and spans[-1][2] == k:
            spans[-1] = (spans[-1][0], b, k)
        else:
            spans.append((t, b, k))
    return spans
