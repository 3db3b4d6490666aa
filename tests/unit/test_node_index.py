"""The cycle's node index picks exactly the node a plain ring scan followed by ``best_node`` would pick."""

from __future__ import annotations

import math
from random import Random

import numpy as np
import pytest

from common.ids import AppId, NodeId, QueuePath, app_id
from common.resources import Resources
from rm.core.context import CycleContext
from rm.core.model import AppView, AskView, ClusterSnapshot, NodeView
from rm.core.plan import Plan
from rm.core.policies.api import LinearScorer, NodeScorer
from rm.core.policies.node_index import DEFAULT_CANDIDATE_LIMIT, choose_node, node_index
from rm.core.policies.node_math import round_like_python
from rm.core.policies.tetris import (
    NODE_LOCAL,
    OFF_SWITCH,
    RACK_LOCAL,
    TetrisPacker,
    best_node,
    locality_level,
    score_weights,
)
from rm.core.queues import build_queues


class _OtherScorer:
    """TetrisPacker's scores without its vectorised (``LinearScorer``) form: the index calls it node by node."""

    name = "other"

    def __init__(self) -> None:
        self._inner = TetrisPacker()

    def score(self, ask: AskView, node: NodeView, ctx: CycleContext) -> float:
        return self._inner.score(ask, node, ctx)


class _HalfTetris:
    """Another linear scorer (half Tetris's weights, other locality bonuses): the index's fast path serves it."""

    name = "half-tetris"

    def weights(self, demand: Resources, capacity: Resources) -> list[tuple[str, float]]:
        return [(r, w / 2) for r, w in score_weights(demand, capacity)]

    def locality_bonus(self, level: int) -> float:
        return 500.0 if level == NODE_LOCAL else 50.0 if level == RACK_LOCAL else 0.0

    def score(self, ask: AskView, node: NodeView, ctx: CycleContext) -> float:
        free = ctx.available(node).amounts
        value = 0.0
        for r, w in self.weights(ask.capability, ctx.snap.capacity):
            value += w * free.get(r, 0)
        level = locality_level(ask, node)
        return value + self.locality_bonus(level) if level > OFF_SWITCH else value


def test_the_fast_path_serves_any_linear_scorer_and_only_those() -> None:
    assert isinstance(_HalfTetris(), LinearScorer)
    assert isinstance(TetrisPacker(), LinearScorer)
    assert not isinstance(_OtherScorer(), LinearScorer)


def _resources(rng: Random, types: list[str], *, scale: int) -> Resources:
    amounts = {
        "memory-mb": rng.choice([256, 512, 1024, 2048, 4096, 8192]) * scale,
        "vcores": rng.choice([1, 1, 2, 3, 4]) * scale,
    }
    for t in types[2:]:
        if rng.random() < 0.5:
            amounts[t] = rng.choice([1, 2])
    keys = list(amounts)
    if rng.random() < 0.2:
        rng.shuffle(keys)  # another type order: the scores and waste sum in the vector's own order
    return Resources({k: amounts[k] for k in keys})


def _cluster(seed: int, nodes: int) -> ClusterSnapshot:
    rng = Random(seed)
    types = ["memory-mb", "vcores"] + (["gpu"] if seed % 2 else [])
    views: dict[NodeId, NodeView] = {}
    for i in range(nodes):
        capability = _resources(rng, types, scale=8)
        used = Resources({r: int(v * rng.random() * rng.choice([0.0, 0.5, 1.0])) for r, v in
                          capability.amounts.items()})
        host = f"h{i:03d}"
        nid = NodeId(f"{host}:8041")
        views[nid] = NodeView(nid, host, f"/r{i % 4}", capability, used, schedulable=rng.random() > 0.05)
    ids = sorted(views)
    apps: dict[AppId, AppView] = {}
    for a in range(12):
        aid = app_id(1, a + 1)
        asks = []
        for k in range(3):
            named: tuple[str, ...] = ()
            racks: tuple[str, ...] = ()
            if rng.random() < 0.2:
                named = tuple(rng.sample([views[n].host for n in ids], 2))
            elif rng.random() < 0.1:
                racks = ("/r1",)
            asks.append(AskView(aid, k + 1, 1, _resources(rng, types, scale=1), 30, nodes=named, racks=racks,
                                relax_locality=rng.random() < 0.7))
        blacklist = frozenset(rng.sample(ids, 3)) if rng.random() < 0.2 else frozenset()
        apps[aid] = AppView(aid, QueuePath("root.default"), "u", 0, float(a), Resources(), tuple(asks),
                            blacklist=blacklist)
    return ClusterSnapshot(version=1, nodes=views, apps=apps, queues=build_queues())


class _RingScan:
    """The reference: candidates by a plain scan round the ring of nodes, then ``best_node``."""

    def __init__(self, ctx: CycleContext, limit: int = DEFAULT_CANDIDATE_LIMIT) -> None:
        self.ctx, self.limit = ctx, limit
        self.nodes = sorted((n for n in ctx.snap.nodes.values() if n.schedulable), key=lambda n: n.node_id)
        self.cursor = ctx.rng.randrange(len(self.nodes)) if len(self.nodes) > limit else 0

    def candidates(self, ask: AskView) -> list[NodeView]:
        if len(self.nodes) <= self.limit:
            return self.nodes
        named = [n for n in self.nodes if locality_level(ask, n) != OFF_SWITCH]
        if not ask.relax_locality and (ask.nodes or ask.racks):
            return named
        blacklist = self.ctx.snap.apps[ask.app_id].blacklist
        out, found, i = list(named), 0, self.cursor
        for _ in range(len(self.nodes)):
            node = self.nodes[i]
            i = (i + 1) % len(self.nodes)
            if node in named or node.node_id in blacklist:
                continue
            if ask.capability.fits_in(self.ctx.available(node)):
                out.append(node)
                found += 1
                if found >= self.limit:
                    break
        self.cursor = i
        return out

    def choose(self, ask: AskView, scorer: NodeScorer) -> NodeView | None:
        return best_node(ask, self.candidates(ask), self.ctx, scorer)


@pytest.mark.parametrize("nodes", [5, 32, 33, 120])
@pytest.mark.parametrize("scorer", [TetrisPacker(), _OtherScorer(), _HalfTetris()],
                         ids=["tetris", "other", "half-tetris"])
@pytest.mark.parametrize("seed", range(6))
def test_choose_matches_a_ring_scan_and_best_node(nodes: int, scorer: NodeScorer, seed: int) -> None:
    snap = _cluster(seed, nodes)
    fast = CycleContext(snap=snap, now=0.0, rng=Random(seed), plan=Plan(based_on=1))
    slow = CycleContext(snap=snap, now=0.0, rng=Random(seed), plan=Plan(based_on=1))
    reference = _RingScan(slow)
    node_index(fast)
    asks = [a for app in snap.apps.values() for a in app.asks]
    rng = Random(seed + 100)
    placed = 0
    for _ in range(600):
        ask = rng.choice(asks)
        got, want = choose_node(ask, fast, scorer), reference.choose(ask, scorer)
        assert (got and got.node_id) == (want and want.node_id)
        if got is not None and want is not None:
            fast.place(ask, got)
            slow.place(ask, want)
            placed += 1
    assert placed > 0


def test_rounding_is_pythons_to_the_bit() -> None:
    rng = Random(7)
    values = [rng.random() * 10.0 ** rng.randrange(-12, 4) for _ in range(20_000)]
    for _ in range(5_000):  # halves and their neighbours, where rounding is delicate
        half = (rng.randrange(10**rng.randrange(1, 12)) + 0.5) / 1e9
        values += [half, math.nextafter(half, 0.0), math.nextafter(half, math.inf)]
    values += values[20_000:23_000]  # the same delicate values again (nodes alike give alike scores)
    rng.shuffle(values)
    got = round_like_python(np.array(values))
    assert got.tolist() == [round(v, 9) for v in values]


def test_a_shape_that_fits_nowhere_is_rejected_quickly_and_stays_so() -> None:
    snap = _cluster(3, 60)
    ctx = CycleContext(snap=snap, now=0.0, rng=Random(0), plan=Plan(based_on=1))
    ask = AskView(app_id(1, 1), 99, 1, Resources.of(memory_mb=10**9, vcores=1), 1)
    assert choose_node(ask, ctx, TetrisPacker()) is None
    assert choose_node(ask, ctx, TetrisPacker()) is None
    assert not node_index(ctx).fits(ask.capability).any()
