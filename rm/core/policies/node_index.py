"""The cycle's node index: which nodes an ask may go to, and the packer's pick among them, fast.

On a cluster of at most ``limit`` nodes every node is a candidate, so placements are exactly those of a full
scan. On a larger one the candidates for an ask are the nodes it names (its node and rack preferences), plus
the next ``limit`` nodes that can take it, scanning round the ring of nodes (in node id order) from a cursor
that starts at a seeded random position and moves on with every scan — the score then picks the best of
those, as Nomad limits its ranking to a few feasible nodes.

``choose`` returns exactly what ``best_node`` would over those candidates; only the way there is faster:

* Free capacity is a matrix (resource type × node) that ``CycleContext.place`` keeps up to date, so the
  nodes an ask fits on come from one vectorized comparison per type, not a loop over nodes, and a demand
  that fits nowhere is remembered for the rest of the cycle (free capacity only shrinks within one).
* With a scorer that offers the vectorised form (``LinearScorer``, such as ``TetrisPacker``: a score linear
  in the node's free amounts, plus a locality bonus), each demand shape seen keeps, per node, whether it
  fits and its packing key — the score and the best-fit waste, each rounded to ``SCORE_DIGITS`` decimals.
  The floats are computed with the same operations in the same order as the scorer's ``score`` (the
  ``LinearScorer`` contract) and ``best_node`` (numpy's element-wise float64 arithmetic is IEEE's, like
  Python's), and rounded as ``round()`` rounds. A placement changes one node, so a shape's keys are brought
  up to date for the nodes placed on since it was last used, and picking the best candidate is a few
  vectorized operations over at most ``limit`` nodes. Asks with locality preferences or a blacklist take a
  vectorised general path; scorers without the linear form are called node by node on the candidates.

Amounts are taken to be non-negative, as ``Ledger`` validates them; a placement with a negative amount
only switches off the "fits nowhere for the rest of the cycle" shortcut.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from common.ids import NodeId
from common.resources import Resources
from rm.core.model import AskView, NodeView
from rm.core.policies.api import LinearScorer, NodeScorer
from rm.core.policies.node_layout import node_allocation, node_layout
from rm.core.policies.node_math import Floats, Positions, best_position, round_like_python
from rm.core.policies.tetris import OFF_SWITCH, SCORE_DIGITS, FreeMemo, best_node, locality_level

if TYPE_CHECKING:
    from rm.core.context import CycleContext

DEFAULT_CANDIDATE_LIMIT = 32
_NONE: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
_REFRESH_ONE_BY_ONE = 48  # fewer changed nodes than this are brought up to date in plain Python

Shape = tuple[tuple[str, int], ...]  # a demand's items, in its own order (the order its score sums in)


class _ShapeInfo:
    """One demand shape: how it is tested for fit, scored and charged for waste; its per-node keys."""

    __slots__ = (
        "dead",
        "demand",
        "fit",
        "fit_list",
        "fit_pos",
        "impossible",
        "need",
        "score_key",
        "seen",
        "waste_key",
        "waste_need",
        "waste_terms",
        "weights",
    )

    def __init__(self, demand: Resources, index: NodeIndex, scorer: LinearScorer | None = None) -> None:
        col = index.col
        self.demand = demand
        self.need = [(col[r], d) for r, d in demand.amounts.items() if d > 0 and r in col]
        # a type no schedulable node has: fits nowhere (a node's free amount of it is zero)
        self.impossible = any(d > 0 and r not in col for r, d in demand.amounts.items())
        # the scorer's linear terms; a type no node has adds w × 0 = 0.0, which changes no sum
        self.weights = [] if scorer is None else \
            [(col[r], w) for r, w in scorer.weights(demand, index.capacity) if r in col]
        self.waste_need = [demand.amounts.get(r, 0) for r in col]
        self.waste_terms = [(k, self.waste_need[k], index.inverse[k]) for k in index.waste_order or ()]
        self.dead = False  # fits on no node any more (free capacity only shrinks during a cycle)
        # per-node keys, once ``NodeIndex.keys`` builds them: as of ``seen`` placements in the index's log
        self.seen = -1
        self.fit: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self.fit_list: list[bool] = []
        self.fit_pos: Positions = _NONE
        self.score_key: Floats = np.zeros(0)
        self.waste_key: Floats = np.zeros(0)


class NodeIndex:
    """The schedulable nodes of one cycle; see the module docstring."""

    def __init__(self, ctx: CycleContext, limit: int = DEFAULT_CANDIDATE_LIMIT) -> None:
        self.ctx = ctx
        self.limit = limit
        layout = node_layout(ctx.snap)
        self.nodes, allocated = node_allocation(ctx.snap, layout)
        self.position = layout.position
        self.free = FreeMemo()
        self.capacity = ctx.snap.capacity
        self.by_name = layout.by_name
        self.by_rack = layout.by_rack
        self.cursor = ctx.rng.randrange(len(self.nodes)) if len(self.nodes) > limit else 0
        self.col = layout.col
        types = list(self.col)
        shape = (len(types), len(self.nodes))
        self.capability_matrix = layout.capability_matrix
        base = np.maximum(self.capability_matrix - allocated, 0)  # NodeView.available
        extra = np.zeros(shape, dtype=np.int64)  # placed earlier in the cycle (ctx.node_alloc)
        for node_id, placed in ctx.node_alloc.items():
            at = self.position.get(node_id)
            if at is not None:
                for r, v in placed.amounts.items():
                    if r in self.col:
                        extra[self.col[r], at] += v
        # free capacity per type and node, as ``ctx.available`` has it, and a list copy for one-node reads
        self.room = np.maximum(base - extra, 0)
        self._base: list[list[int]] = base.tolist()
        self._extra: list[list[int]] = extra.tolist()
        self.free_lists: list[list[int]] = self.room.tolist()
        self.inverse = layout.inverse
        self.waste_order = layout.waste_order
        self.log: list[int] = []  # the node (position) of every placement, in order
        self.shrinking = True  # no placement has given capacity back (a negative amount)
        self._shapes: dict[Shape, _ShapeInfo] = {}
        # per scorer seen (by identity): its linear form, or None, and its shapes with their keys
        self._scorers: dict[int, tuple[NodeScorer, LinearScorer | None, dict[Shape, _ShapeInfo]]] = {}
        self._last: tuple[NodeScorer, LinearScorer | None, dict[Shape, _ShapeInfo]] | None = None

    # ------------------------------------------------------------------------------------ upkeep

    def placed(self, node_id: NodeId, demand: Resources) -> None:
        """Charge one container placed this cycle (``CycleContext.place`` calls this)."""
        i = self.position.get(node_id)
        if i is None:
            return
        self.log.append(i)
        for r, d in demand.amounts.items():
            k = self.col.get(r)
            if k is not None:
                if d < 0:
                    self.shrinking = False
                extra = self._extra[k]
                extra[i] += d
                left = max(0, self._base[k][i] - extra[i])
                self.free_lists[k][i] = left
                self.room[k, i] = left

    def shape(self, demand: Resources) -> _ShapeInfo:
        key = tuple(demand.amounts.items())
        info = self._shapes.get(key)
        if info is None:
            info = self._shapes[key] = _ShapeInfo(demand, self)
        return info

    def _scorer(self, scorer: NodeScorer) -> tuple[NodeScorer, LinearScorer | None, dict[Shape, _ShapeInfo]]:
        last = self._last
        if last is not None and last[0] is scorer:
            return last
        entry = self._scorers.get(id(scorer))
        if entry is None or entry[0] is not scorer:
            linear = cast(LinearScorer, scorer) if _is_linear(type(scorer)) else None
            entry = self._scorers[id(scorer)] = (scorer, linear, {})
        self._last = entry
        return entry

    def _gone(self, info: _ShapeInfo) -> bool:
        """The shape fits no node now, nor will for the rest of the cycle."""
        return info.impossible or (info.dead and self.shrinking)

    def fits(self, demand: Resources) -> npt.NDArray[np.bool_]:
        """Which nodes (by position) have room for one container of ``demand`` now."""
        return self._fits(self.shape(demand))

    def _fits(self, info: _ShapeInfo) -> npt.NDArray[np.bool_]:
        n = len(self.nodes)
        if self._gone(info):
            return np.zeros(n, dtype=np.bool_)
        mask: npt.NDArray[np.bool_] | None = None
        for k, d in info.need:
            ok = self.room[k] >= d
            mask = ok if mask is None else np.logical_and(mask, ok, out=mask)
        return np.ones(n, dtype=np.bool_) if mask is None else mask

    # -------------------------------------------------------------------------------- candidates

    def candidates(self, ask: AskView) -> list[NodeView]:
        """The nodes that can take one container of ``ask`` now, among those the ring offers it.

        Named nodes come first (in the order the ask names them), then the ring's nodes in scan order;
        the cursor moves on as a scan would move it.
        """
        return [self.nodes[i] for i in self._positions(ask).tolist()]

    def _positions(self, ask: AskView) -> Positions:
        info = self.shape(ask.capability)
        if self._gone(info):
            return _NONE  # a scan would find nothing and leave the cursor where it is
        mask = self._fits(info)
        if not mask.any():
            info.dead = True
            return _NONE
        app = self.ctx.snap.apps.get(ask.app_id)
        if app is not None and app.blacklist:
            mask[self._blacklisted(app.blacklist)] = False
        named = self.named(ask) if ask.nodes or ask.racks else []
        strict = not ask.relax_locality and bool(ask.nodes or ask.racks)
        if len(self.nodes) <= self.limit:
            if strict:
                return np.array(sorted(i for i in named if mask[i]), dtype=np.intp)
            return mask.nonzero()[0]
        first = np.array([i for i in named if mask[i]], dtype=np.intp)
        if strict:
            return first
        if named:
            mask[named] = False
        take = self._window(mask.nonzero()[0])
        return np.concatenate((first, take)) if first.size else take

    def _window(self, ring: Positions) -> Positions:
        """The next ``limit`` of ``ring`` (sorted positions) from the cursor, in scan order; moves the cursor.

        Fewer than ``limit``: a scan goes all the way round and stops where it started.
        """
        total = ring.size
        if total == 0:
            return ring
        start = int(ring.searchsorted(self.cursor))
        if total < self.limit:
            return np.concatenate((ring[start:], ring[:start])) if start else ring
        end = start + self.limit
        take = ring[start:end] if end <= total else np.concatenate((ring[start:], ring[: end - total]))
        last = int(take[-1]) + 1
        self.cursor = last if last < len(self.nodes) else 0
        return take

    def _blacklisted(self, blacklist: frozenset[NodeId]) -> list[int]:
        return [i for i in (self.position.get(n) for n in blacklist) if i is not None]

    def allowed(self, blacklist: frozenset[NodeId]) -> npt.NDArray[np.bool_]:
        """Which nodes (by position) are not on ``blacklist``."""
        mask = np.ones(len(self.nodes), dtype=np.bool_)
        mask[self._blacklisted(blacklist)] = False
        return mask

    def named(self, ask: AskView) -> list[int]:
        """The positions of the nodes ``ask`` names, by node id, host name or rack (locality level > 0)."""
        named: dict[int, None] = {}
        for name in ask.nodes:
            for i in self.by_name.get(name, ()):
                named[i] = None
        for rack in ask.racks:
            for i in self.by_rack.get(rack, ()):
                named[i] = None
        return list(named)

    def ever_fits(self, demand: Resources) -> npt.NDArray[np.bool_]:
        """Which nodes (by position) could take ``demand`` when empty: ``demand.fits_in(capability)``."""
        capability = self.capability_matrix
        mask = np.ones(len(self.nodes), dtype=np.bool_)
        for r, d in demand.amounts.items():
            k = self.col.get(r)
            if k is not None:
                mask &= capability[k] >= d
            elif d > 0:
                mask[:] = False
        return mask

    def nearest(self, demand: Resources, among: npt.NDArray[np.bool_], *, empty: bool) -> NodeView | None:
        """The node of ``among`` nearest to fitting ``demand``: the largest worst-case free/demand ratio.

        ``empty``: compare capabilities rather than what is free now. The first such node in node id order
        wins, as a scan keeping the first strictly larger ratio would pick.
        """
        where = among.nonzero()[0]
        if not where.size:
            return None
        matrix = self.capability_matrix if empty else self.room
        ratio: Floats | None = None
        for r, d in demand.amounts.items():
            if d <= 0:
                continue
            k = self.col.get(r)
            part = matrix[k, where] / d if k is not None else np.zeros(where.size)
            ratio = part if ratio is None else np.minimum(ratio, part)
        if ratio is None:
            return self.nodes[int(where[0])]
        return self.nodes[int(where[int(ratio.argmax())])]

    # ----------------------------------------------------------------------------------- choosing

    def choose(self, ask: AskView, scorer: NodeScorer) -> NodeView | None:
        """``best_node`` over ``candidates(ask)``: the best node for one container of ``ask``, or None."""
        _, linear, shapes = self._scorer(scorer)
        if linear is None:
            if self._gone(self.shape(ask.capability)):
                return None
            nodes = self.candidates(ask)
            return best_node(ask, nodes, self.ctx, scorer, capacity=self.capacity, free=self.free)
        key = tuple(ask.capability.amounts.items())
        info = shapes.get(key)
        if info is None:
            info = shapes[key] = _ShapeInfo(ask.capability, self, linear)
        if self._gone(info):
            return None
        if ask.nodes or ask.racks or self.waste_order is None or self._has_blacklist(ask):
            return self._choose_general(ask, info, linear)
        self.keys(info)
        if not info.fit_pos.size:
            info.dead = True
            return None
        take = info.fit_pos if len(self.nodes) <= self.limit else self._window(info.fit_pos)
        return self.nodes[best_position(take, info.score_key[take], info.waste_key[take])]

    def _has_blacklist(self, ask: AskView) -> bool:
        app = self.ctx.snap.apps.get(ask.app_id)
        return app is not None and bool(app.blacklist)

    def _choose_general(self, ask: AskView, info: _ShapeInfo, scorer: LinearScorer) -> NodeView | None:
        pos = self._positions(ask)
        if pos.size <= 1:
            return self.nodes[int(pos[0])] if pos.size else None
        room = self.room[:, pos]
        score = self._score(info, room)
        if ask.nodes or ask.racks:
            bonus = np.zeros(pos.size)
            for j, i in enumerate(pos.tolist()):
                level = locality_level(ask, self.nodes[i])
                if level > OFF_SWITCH:
                    bonus[j] = scorer.locality_bonus(level)
            score = score + bonus
        score_key = round_like_python(score)
        tied = (score_key == score_key.max()).nonzero()[0]
        if tied.size == 1:
            return self.nodes[int(pos[tied[0]])]
        pos = pos[tied]
        if self.waste_order is None:
            waste_key = np.array([round(self._node_waste(info, i), SCORE_DIGITS) for i in pos.tolist()])
        else:
            waste_key = round_like_python(self._waste(info, room[:, tied]))
        return self.nodes[int(pos[waste_key == waste_key.min()].min())]

    # ------------------------------------------------------------------------------------- keys

    def _score(self, info: _ShapeInfo, room: npt.NDArray[np.int64]) -> Floats:
        """The linear scorer's score without bonus: the sum of w × free, in its weights' order."""
        score: Floats | None = None
        for k, w in info.weights:
            term = room[k] * w
            score = term if score is None else score + term
        return np.zeros(room.shape[1]) if score is None else score

    def _waste(self, info: _ShapeInfo, room: npt.NDArray[np.int64]) -> Floats:
        """best_node's waste: what stays free after the container, per type over the cluster's capacity."""
        total: Floats | None = None
        for k, d, inverse in info.waste_terms:
            term = np.maximum(room[k] - d, 0) * inverse
            total = term if total is None else total + term
        return np.zeros(room.shape[1]) if total is None else total

    def _node_waste(self, info: _ShapeInfo, i: int) -> float:
        """best_node's waste for one node, summed over its free vector in that vector's order."""
        demand = info.demand.amounts
        waste = 0.0
        for r, f in self.free.get(self.ctx, self.nodes[i]).amounts.items():
            k = self.col.get(r)
            waste += max(0, f - demand.get(r, 0)) * (self.inverse[k] if k is not None else 0.0)
        return waste

    def keys(self, info: _ShapeInfo) -> None:
        """Bring the shape's per-node fit and keys up to date with the placements since it last looked."""
        log = self.log
        if info.seen < 0:
            info.fit = self._fits(info)
            info.fit_list = info.fit.tolist()
            info.fit_pos = info.fit.nonzero()[0]
            info.score_key = round_like_python(self._score(info, self.room))
            info.waste_key = round_like_python(self._waste(info, self.room))
            info.seen = len(log)
            return
        if info.seen == len(log):
            return
        changed = log[info.seen :]
        info.seen = len(log)
        if len(changed) >= _REFRESH_ONE_BY_ONE:
            self._refresh_many(info, np.unique(np.array(changed, dtype=np.intp)))
            return
        free, fit_list, need = self.free_lists, info.fit_list, info.need
        moved = False
        for i in set(changed):
            fit = not info.impossible
            for k, d in need:
                if free[k][i] < d:
                    fit = False
                    break
            if fit != fit_list[i]:
                fit_list[i] = fit
                info.fit[i] = fit
                moved = True
            if fit:
                score = 0.0
                for k, w in info.weights:
                    score += w * free[k][i]
                waste = 0.0
                for k, d, inverse in info.waste_terms:
                    left = free[k][i] - d
                    if left > 0:
                        waste += left * inverse
                info.score_key[i] = round(score, SCORE_DIGITS)
                info.waste_key[i] = round(waste, SCORE_DIGITS)
        if moved:
            info.fit_pos = info.fit.nonzero()[0]

    def _refresh_many(self, info: _ShapeInfo, pos: Positions) -> None:
        room = self.room[:, pos]
        fit = np.ones(pos.size, dtype=np.bool_)
        for k, d in info.need:
            fit &= room[k] >= d
        if info.impossible:
            fit[:] = False
        if (info.fit[pos] != fit).any():
            info.fit[pos] = fit
            info.fit_list = info.fit.tolist()
            info.fit_pos = info.fit.nonzero()[0]
        info.score_key[pos] = round_like_python(self._score(info, room))
        info.waste_key[pos] = round_like_python(self._waste(info, room))


def node_index(ctx: CycleContext) -> NodeIndex:
    """The cycle's node index, built on first use."""
    index = ctx.node_index
    if not isinstance(index, NodeIndex):
        index = ctx.node_index = NodeIndex(ctx)
    return index


def choose_node(ask: AskView, ctx: CycleContext, scorer: NodeScorer) -> NodeView | None:
    """The best node for one container of ``ask`` among the cycle's candidates for it."""
    return node_index(ctx).choose(ask, scorer)


@lru_cache(maxsize=64)
def _is_linear(cls: type) -> bool:
    """Whether a scorer class offers the vectorised form (a runtime Protocol check is slow: once per class)."""
    return all(callable(getattr(cls, m, None)) for m in ("score", "weights", "locality_bonus"))
