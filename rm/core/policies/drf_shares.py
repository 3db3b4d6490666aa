"""DRF fair shares (Ghodsi et al., NSDI 2011): the fair-share vector every AM is told about, by progressive
filling over continuous amounts at two levels, the same two levels ``DrfStage`` (``drf.py``) orders by:

* Across leaf queues, a queue's dominant share grows in proportion to its ``abs_capacity``. With every queue
  backlogged on the same kind of work the cluster splits exactly by capacity (70/30 queues get 70/30); a
  queue whose apps' demand (used + pending) is met stops growing, and what it leaves keeps being shared by
  the others in proportion to their capacities (work conservation), each up to its ``abs_max_capacity``
  (and its parents'), which is a limit in every resource type. Queues of capacity zero share what is left
  once all the others have stopped.
* Inside a queue, apps grow along their own demand vectors at equal weight-scaled dominant share until an
  app's demand is met — it stops — or a resource it needs runs out, in the cluster or under a max capacity —
  every app needing that resource stops. The others keep growing.

Dominant shares rather than a per-type split across queues: dividing each type separately would leave a
CPU-heavy queue holding memory it cannot use while a memory-heavy queue starves. Apps with nothing pending
take part with their usage as their demand, and are reported their usage.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from common.ids import AppId, QueuePath
from common.resources import Resources
from rm.core.model import AppView, ClusterSnapshot
from rm.core.policies.api import ShareCalculator, app_tiebreak

_EPS = 1e-9
_ALONE = (0, 0.0, "")  # the heap key of the only queue left
_ROUND_UP = 1e-6  # 2.9999999 cores is 3 cores when shares are rounded down to integers
_MIN_WEIGHT = 1e-3  # a zero weight means "far behind the others", not "never"


@dataclass(slots=True)
class _Group:
    """One leaf queue in the filling: its unfrozen apps share one app level ``theta``."""

    rate: float  # how fast the queue's dominant share grows with the global level (its abs_capacity)
    members: list[int]  # indices of its apps
    order: list[int]  # members by the theta at which their demand is met
    theta: float = 0.0
    pos: int = 0
    live: int = 0
    frozen: dict[str, float] = field(default_factory=dict)  # amounts held by its frozen apps
    growth: dict[str, float] = field(default_factory=dict)  # amounts gained per unit of theta
    users: dict[str, int] = field(default_factory=dict)  # unfrozen apps needing each type


@dataclass(slots=True)
class _Limit:
    """At most ``amount`` of type ``r`` for the apps of ``groups`` (None: every group)."""

    r: str
    amount: float
    groups: frozenset[int] | None


class _Filling:
    """Nested progressive filling: queues by weighted dominant share, apps inside by weighted dominant share.

    A global level ``lam`` rises; every queue still growing keeps ``dominant_share(its apps' amounts) = lam ×
    rate``, and inside a queue every unfrozen app ``i`` holds ``theta × weight_i`` of dominant share along its
    demand vector. An app freezes when its demand is met or when a limit on a type it needs is reached. The
    level moves from event to event; between events everything is linear in ``lam``.
    """

    def __init__(
        self,
        demands: Sequence[Resources],
        weights: Sequence[float],
        groups: Sequence[tuple[float, Sequence[int]]],
        limits: Sequence[_Limit],
        cluster: Resources,
    ) -> None:
        self.cluster = {r: float(v) for r, v in cluster.amounts.items()}
        self.w = [max(x, _MIN_WEIGHT) for x in weights]
        self.dirs: list[dict[str, float]] = []
        self.need: list[float] = []  # dominant share of the demand: where the app stops
        for d in demands:
            ds = d.dominant_share(cluster)
            ok = 0 < ds < math.inf
            self.dirs.append({r: v / ds for r, v in d.amounts.items()} if ok else {})
            self.need.append(ds if ok else 0.0)
        self.share = [0.0] * len(demands)
        self.active = [n > 0 for n in self.need]
        self.limits = list(limits)
        self.groups = [
            _Group(rate, list(members), sorted(members, key=lambda i: (self.need[i] / self.w[i], i)))
            for rate, members in groups
        ]
        for g in self.groups:
            for i in g.members:
                if self.active[i]:
                    g.live += 1
                    for r, v in self.dirs[i].items():
                        g.growth[r] = g.growth.get(r, 0.0) + self.w[i] * v
                        g.users[r] = g.users.get(r, 0) + 1

    def run(self) -> list[dict[str, float]]:
        """Queues with a capacity first; queues without one share what is left, equally."""
        weighted = [k for k, g in enumerate(self.groups) if g.rate > 0]
        spare = [k for k, g in enumerate(self.groups) if g.rate <= 0]
        self._rise(weighted)
        for k in spare:
            self.groups[k].rate = 1.0
        self._rise(spare)
        return [{r: self.share[i] * v for r, v in self.dirs[i].items()} for i in range(len(self.share))]

    def _piece(self, g: _Group, lam: float) -> tuple[float, float, float]:
        """``theta = a + b × lam`` for the group from ``lam`` on, and the level where that stops holding.

        theta is the smallest over the types the group's apps grow in of the theta at which that type
        reaches ``lam × rate`` of the cluster: a minimum of lines, so one line holds until another crosses it.
        """
        lines: list[tuple[float, float]] = []  # (theta at lam, d theta / d lam) per growing type
        for r, grow in sorted(g.growth.items()):
            if g.users.get(r, 0) == 0 or grow <= 0:
                continue
            lines.append(
                (
                    (lam * g.rate * self.cluster[r] - g.frozen.get(r, 0.0)) / grow,
                    g.rate * self.cluster[r] / grow,
                )
            )
        if not lines:
            return g.theta, 0.0, math.inf
        low = min(v for v, _ in lines)
        tie = _EPS * max(1.0, abs(low))
        value, slope = min(((v, s) for v, s in lines if v <= low + tie), key=lambda line: line[1])
        switch = math.inf
        for v, s in lines:
            if s < slope and v > value + tie:
                switch = min(switch, lam + (v - value) / (slope - s))
        return value - slope * lam, slope, switch

    def _rise(self, use: list[int]) -> None:
        lam = 0.0
        budget = 16 * (len(self.share) + len(self.limits) + len(use) + 4) * (len(self.cluster) + 1)
        while budget > 0:
            budget -= 1
            for k in use:
                self._catch_up(k, lam)
            live = [k for k in use if self.groups[k].live]
            if not live:
                break
            pieces = {k: self._piece(self.groups[k], lam) for k in live}
            nxt = min(p[2] for p in pieces.values())
            for k in live:
                a, b, _ = pieces[k]
                target = self._next_met(self.groups[k])
                nxt = min(nxt, lam if a + b * lam >= target else (target - a) / b if b > 0 else math.inf)
            for lim in self.limits:
                base, slope = self._usage_line(lim, pieces)
                if slope > _EPS * max(1.0, lim.amount):
                    nxt = min(nxt, max(lam, (lim.amount - base) / slope))
            if math.isinf(nxt):
                break
            lam = max(lam, nxt)
            for k in live:
                a, b, _ = pieces[k]
                g = self.groups[k]
                g.theta = max(g.theta, a + b * lam)
            self._freeze_met(live)
            self._freeze_full(live)
        for k in use:  # only if the budget ran out: keep what the level reached
            g = self.groups[k]
            for i in g.members:
                if self.active[i]:
                    self._freeze(g, i)

    def _catch_up(self, k: int, lam: float) -> None:
        """Raise a group's theta to where its level says it should be, at a standstill of ``lam``.

        After some of a queue's apps freeze, the others may grow without the queue's dominant share moving
        (it is set by a type they do not need): theta jumps. The jump still stops where an app's demand is
        met or a limit is reached.
        """
        g = self.groups[k]
        for _ in range(2 * (len(g.members) + len(self.limits)) + 2):
            if not g.live:
                return
            a, b, _ = self._piece(g, lam)
            target = a + b * lam
            if target <= g.theta * (1 + _EPS) + _EPS:
                return
            stop = min(target, self._next_met(g))
            for lim in self.limits:
                grow = g.growth.get(lim.r, 0.0) if g.users.get(lim.r, 0) else 0.0
                if grow > 0 and (lim.groups is None or k in lim.groups):
                    stop = min(stop, g.theta + max(0.0, lim.amount - self._used(lim)) / grow)
            g.theta = max(g.theta, stop)
            self._freeze_met([k])
            self._freeze_full([k])

    def _next_met(self, g: _Group) -> float:
        """The theta at which the next app of a live group has its demand met."""
        self._skip_frozen(g)
        i = g.order[g.pos]
        return self.need[i] / self.w[i]

    def _used(self, lim: _Limit) -> float:
        """How much of the limit's type its groups hold at their current thetas."""
        out = 0.0
        for k, g in enumerate(self.groups):
            if lim.groups is None or k in lim.groups:
                out += g.frozen.get(lim.r, 0.0)
                if g.live and g.users.get(lim.r, 0):
                    out += g.theta * g.growth.get(lim.r, 0.0)
        return out

    def _freeze_full(self, live: list[int]) -> None:
        """Freeze the apps of ``live`` groups that need a type whose limit is reached."""
        for lim in self.limits:
            if self._used(lim) < lim.amount - _EPS * max(1.0, lim.amount):
                continue
            for k in live:
                if lim.groups is not None and k not in lim.groups:
                    continue
                g = self.groups[k]
                for i in g.members:
                    if self.active[i] and lim.r in self.dirs[i]:
                        self._freeze(g, i)

    def _usage_line(
        self, lim: _Limit, pieces: Mapping[int, tuple[float, float, float]]
    ) -> tuple[float, float]:
        """The limit's type in use by its groups as ``base + slope × lam`` on the current pieces."""
        base = slope = 0.0
        for k, g in enumerate(self.groups):
            if lim.groups is not None and k not in lim.groups:
                continue
            base += g.frozen.get(lim.r, 0.0)
            if k in pieces and g.live:
                a, b, _ = pieces[k]
                grow = g.growth.get(lim.r, 0.0) if g.users.get(lim.r, 0) else 0.0
                base += a * grow
                slope += b * grow
        return base, slope

    def _skip_frozen(self, g: _Group) -> None:
        while g.pos < len(g.order) and not self.active[g.order[g.pos]]:
            g.pos += 1

    def _freeze_met(self, live: list[int]) -> None:
        for k in live:
            g = self.groups[k]
            while g.live:
                self._skip_frozen(g)
                i = g.order[g.pos]
                if self.need[i] / self.w[i] > g.theta * (1 + _EPS) + _EPS * _EPS:
                    break
                self._freeze(g, i)

    def _freeze(self, g: _Group, i: int) -> None:
        self.active[i] = False
        g.live -= 1
        self.share[i] = min(g.theta * self.w[i], self.need[i])
        for r, v in self.dirs[i].items():
            g.frozen[r] = g.frozen.get(r, 0.0) + self.share[i] * v
            g.growth[r] -= self.w[i] * v
            g.users[r] -= 1
            if g.users[r] == 0:
                g.growth[r] = 0.0


def progressive_fill(
    demands: Sequence[Resources],
    weights: Sequence[float],
    cluster: Resources,
    caps: Mapping[str, float],
) -> list[dict[str, float]]:
    """DRF progressive filling of one group of users over continuous amounts.

    User ``i`` receives ``s_i × demands[i] / dominant_share(demands[i])``; the ``s_i`` grow at rates
    ``weights[i]`` until ``s_i`` reaches the demand's dominant share or a resource of ``caps`` (absolute
    amounts) is used up, which stops every user needing it. A demand the cluster lacks a type for gets nothing.
    """
    limits = [_Limit(r, float(v), None) for r, v in caps.items()]
    users = list(range(len(demands)))
    return _Filling(demands, weights, [(1.0, users)], limits, cluster).run()


def _floor(amounts: Mapping[str, float]) -> Resources:
    return Resources({r: math.floor(v + _ROUND_UP) for r, v in amounts.items()})


def _within(demand: Resources, cluster: Resources) -> Resources:
    return Resources({r: v for r, v in demand.amounts.items() if cluster.get(r) > 0})


class DrfShares:
    """Fair-share vectors: DRF across queues weighted by capacity, then DRF among each queue's apps."""

    name: ClassVar[str] = "drf"

    def shares(self, snap: ClusterSnapshot) -> Mapping[AppId, Resources]:
        cluster = snap.capacity
        out: dict[AppId, Resources] = {a.app_id: a.used for a in snap.apps.values()}
        leaves: dict[QueuePath, list[AppView]] = {}
        for app in sorted(snap.apps.values(), key=app_tiebreak):
            q = snap.queues.get(app.queue)
            if q is not None and q.is_leaf:
                leaves.setdefault(q.path, []).append(app)
        # Apps without pending asks take part too (their usage is their demand), so what they hold is not
        # handed to the others twice; their reported share is simply their usage. Types the cluster lacks
        # are left out of every demand: nobody can be given them.
        apps = [a for path in sorted(leaves) for a in leaves[path]]
        index = {a.app_id: i for i, a in enumerate(apps)}
        paths = sorted(leaves)
        groups = [(snap.queues[p].abs_capacity, [index[a.app_id] for a in leaves[p]]) for p in paths]
        limits = [_Limit(r, float(v), None) for r, v in cluster.amounts.items()]
        for q in snap.queues.values():
            if q.abs_max_capacity < 1.0 - _EPS:
                under = frozenset(k for k, p in enumerate(paths) if p == q.path or p.startswith(q.path + "."))
                if under:
                    limits += [_Limit(r, q.abs_max_capacity * v, under) for r, v in cluster.amounts.items()]
        pending = [a.pending for a in apps]
        demands = [_within(a.used + p, cluster) for a, p in zip(apps, pending, strict=True)]
        fills = _Filling(demands, [a.weight for a in apps], groups, limits, cluster).run()
        for app, p, fill in zip(apps, pending, fills, strict=True):
            if app.asks and not p.is_zero():
                out[app.app_id] = _floor(fill)
        return out


_shares: type[ShareCalculator] = DrfShares
