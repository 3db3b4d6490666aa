"""Packing a job's remaining DAG in time within a resource allocation (Carbyne's intra-job scheduler).

``pack_forward`` answers "if the job keeps allocation A, when does it finish?" (T_k): list scheduling of
the remaining tasks, stage by stage as their parents finish, starting as many as fit at every event.

``pack_reverse`` answers "how late can each remaining task start without moving T_k?": the same list
scheduling on the reversed DAG (children first), packed from T_k backwards, so tasks sit as close to
T_k as the allocation allows. A task whose latest start is now must start now; the others can yield.

Tasks of one stage are alike (same demand, the stage's estimated duration), so the packer moves them
in groups: its cost grows with the number of stages and events, not tasks. Pure: no clock, no I/O.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from common.resources import Resources

INFINITE = math.inf
# Passes (event times visited) a packing may make. Each pass costs about the number of ready stages, so
# this bounds an AM's re-planning at every scheduling event however many tasks its job has left. Past it,
# forward packing ends with a lower bound of what is left (T_k comes out early: the job yields less) and
# backward packing leaves the tasks not yet placed to start now (they are urged, never put off). DAGs of
# hundreds of tasks per stage need a few hundred passes.
PASSES = 2000


@dataclass(frozen=True, slots=True)
class StagePlan:
    """The remaining work of one stage, as the packer sees it."""

    name: str
    demand: Resources  # per task
    duration_s: float  # per task (estimate)
    pending: int  # tasks not started yet (runnable or waiting for parents)
    running_remaining_s: tuple[float, ...] = ()  # time left of each running task
    parents: tuple[str, ...] = ()
    priority: int = 0  # lower first when several stages are ready at once


@dataclass(slots=True)
class Packing:
    makespan: float  # INFINITE when the allocation can never run some task
    truncated: bool = False  # ran out of passes: makespan is a lower bound, starts are partial
    # per stage: (start time, count) groups of the pending tasks, in start order
    starts: dict[str, list[tuple[float, int]]] = field(default_factory=dict)


def fit_count(free: Resources, demand: Resources, limit: int) -> int:
    """How many tasks of ``demand`` fit in ``free`` (at most ``limit``)."""
    n = limit
    for rtype, amount in demand.amounts.items():
        if amount <= 0:
            continue
        n = min(n, max(0, free.get(rtype)) // amount)
        if n <= 0:
            return 0
    return n


# The packers run on plain integer vectors (one slot per resource type), not on ``Resources``: an AM
# re-plans at every event, and the packing loops are where its time goes.
Vector = list[int]


def _vectors(stages: Sequence[StagePlan], capacity: Resources) -> tuple[Vector, dict[str, tuple[int, ...]]]:
    types = sorted(set(capacity.types()).union(*(s.demand.types() for s in stages)))
    return [capacity.get(t) for t in types], {s.name: tuple(s.demand.get(t) for t in types) for s in stages}


def _fit(free: Sequence[int], demand: Sequence[int], limit: int) -> int:
    n = limit
    for i, need in enumerate(demand):
        if need > 0:
            have = free[i]
            if have < need:
                return 0
            q = have // need
            n = min(n, q)
    return n


def _fit_less(base: Sequence[int], used: Sequence[int], demand: Sequence[int], limit: int) -> int:
    """``_fit`` in ``base`` less ``used``."""
    n = limit
    for i, need in enumerate(demand):
        if need > 0:
            have = base[i] - used[i]
            if have < need:
                return 0
            q = have // need
            n = min(n, q)
    return n


def _take(free: Vector, demand: Sequence[int], k: int) -> None:
    for i, need in enumerate(demand):
        if need:
            free[i] -= need * k


def _done(name: str, k: int, left: dict[str, int], next_of: dict[str, list[str]], blocked: dict[str, int],
          waiting: dict[str, int], ready: list[int], rank: dict[str, int]) -> None:
    """``k`` tasks of ``name`` finished (in the packing's direction of time): once none is left, each stage
    waiting on it loses a blocker and, with none left and tasks to start, joins ``ready`` in rank order."""
    left[name] -= k
    if left[name] == 0:
        for other in next_of[name]:
            blocked[other] -= 1
            if blocked[other] == 0 and waiting[other]:
                bisect.insort(ready, rank[other])


def pack_forward(stages: Sequence[StagePlan], capacity: Resources, passes: int = PASSES) -> Packing:
    """List-schedule the remaining DAG from now (t = 0) within ``capacity``, in at most ``passes``
    passes (``PASSES``)."""
    cap, demand = _vectors(stages, capacity)
    out = Packing(makespan=0.0)
    for s in stages:
        if s.pending and _fit(cap, demand[s.name], 1) == 0:
            out.makespan = INFINITE
            return out
    names = {s.name for s in stages}
    free = list(cap)
    events: list[tuple[float, int, str, int]] = []  # (time, seq, stage, count) completions
    seq = 0
    unfinished = {s.name: s.pending + len(s.running_remaining_s) for s in stages}
    for s in stages:  # running tasks ending at the same time end as one group
        for rem, k in Counter(s.running_remaining_s).items():
            _take(free, demand[s.name], k)
            heapq.heappush(events, (rem, seq, s.name, k))
            seq += 1
    pending = {s.name: s.pending for s in stages}
    # stages in start order; a stage is ready once none of its parents has unfinished tasks
    order = [s.name for s in sorted(stages, key=lambda s: (s.priority, s.name))]
    rank = {name: i for i, name in enumerate(order)}
    children: dict[str, list[str]] = {s.name: [] for s in stages}
    blocked = {s.name: 0 for s in stages}
    for s in stages:
        for p in set(s.parents) & names:
            children[p].append(s.name)
            if unfinished[p]:
                blocked[s.name] += 1
    ready = sorted(rank[n] for n in order if pending[n] and not blocked[n])
    t = 0.0
    duration = {s.name: s.duration_s for s in stages}

    def finish(name: str, k: int) -> None:
        _take(free, demand[name], -k)
        _done(name, k, unfinished, children, blocked, pending, ready, rank)

    while True:
        passes -= 1
        if passes < 0:
            out.makespan = t + _rest_bound(t, events, pending, duration, demand, cap)
            out.truncated = True
            return out
        for r in tuple(ready):  # start what is ready and fits
            name = order[r]
            k = _fit(free, demand[name], pending[name])
            if k == 0:
                continue
            pending[name] -= k
            if pending[name] == 0:
                ready.remove(r)
            _take(free, demand[name], k)
            out.starts.setdefault(name, []).append((t, k))
            heapq.heappush(events, (t + duration[name], seq, name, k))
            seq += 1
        if not events:
            break
        t, _, name, k = heapq.heappop(events)
        finish(name, k)
        while events and events[0][0] <= t:  # everything ending at the same instant
            _, _, name, k = heapq.heappop(events)
            finish(name, k)
        out.makespan = t
    if any(pending.values()):
        out.makespan = INFINITE  # a dependency that can never be met
    return out


def _rest_bound(t: float, events: list[tuple[float, int, str, int]], pending: Mapping[str, int],
                duration: Mapping[str, float], demand: Mapping[str, Sequence[int]], cap: Sequence[int]) -> float:
    """A lower bound of the time from ``t`` to the end of a forward packing cut short: the last running
    task's end, or the work left in the scarcest resource over the capacity."""
    work = [0.0] * len(cap)
    last = 0.0
    for end, _, name, k in events:
        last = max(last, end - t)
        for i, need in enumerate(demand[name]):
            work[i] += (end - t) * k * need
    for name, count in pending.items():
        for i, need in enumerate(demand[name]):
            work[i] += count * duration[name] * need
    return max([last, *(w / c for w, c in zip(work, cap, strict=True) if c > 0)])


def pack_reverse(stages: Sequence[StagePlan], capacity: Resources, makespan: float,
                 passes: int = PASSES) -> dict[str, list[float]]:
    """Latest start times (from now) of every pending task of every stage, packed back from ``makespan``
    in at most ``passes`` passes (``PASSES``; tasks still unplaced then must start now).

    Running tasks hold their resources over [0, remaining) in forward time. Returns, per stage, the
    latest start of each pending task, earliest first.
    """
    if makespan == INFINITE:
        return {s.name: [0.0] * s.pending for s in stages}
    cap, demand = _vectors(stages, capacity)
    width = len(cap)
    children: dict[str, list[str]] = {s.name: [] for s in stages}
    for s in stages:
        for p in s.parents:
            if p in children:
                children[p].append(s.name)
    # running tasks, seen from the reversed clock tau = makespan - t, occupy (makespan - rem, makespan]:
    # sorted by when they start holding, with the capacity they leave after each, so "left by time x" is a
    # bisection
    held = sorted(((makespan - rem, s.name), k) for s in stages
                  for rem, k in Counter(s.running_remaining_s).items())
    held_at = [h[0][0] for h in held]
    avail: list[tuple[int, ...]] = [tuple(cap)]
    for (_, name), k in held:
        avail.append(tuple(a - b * k for a, b in zip(avail[-1], demand[name], strict=True)))
    releases = sorted(set(held_at))
    latest: dict[str, list[float]] = {s.name: [] for s in stages}
    remaining = {s.name: s.pending for s in stages}
    reverse_done = {s.name: s.pending for s in stages}  # pending tasks not yet finished in reverse
    events: list[tuple[float, int, str, int]] = []
    seq = 0
    order = sorted(stages, key=lambda s: (-s.priority, s.name))
    rank = {s.name: i for i, s in enumerate(order)}
    parents: dict[str, list[str]] = {s.name: [] for s in stages}
    blocked = {s.name: 0 for s in stages}  # children with tasks still to finish in reverse
    for s in stages:
        for c in set(children[s.name]):
            parents[c].append(s.name)
            if reverse_done[c]:
                blocked[s.name] += 1
    ready = sorted(rank[s.name] for s in stages if remaining[s.name] and not blocked[s.name])
    tau = 0.0
    used = [0] * width

    def finish(name: str, k: int) -> None:
        _take(used, demand[name], k)
        _done(name, k, reverse_done, parents, blocked, remaining, ready, rank)

    while passes > 0:
        passes -= 1
        now_free = avail[bisect.bisect_right(held_at, tau)]  # less what is held from at <= tau
        for r in tuple(ready):
            s = order[r]
            name = s.name
            need = demand[name]
            k = _fit_less(now_free, used, need, remaining[name])
            if k == 0:
                continue
            # tasks placed now must also fit when running tasks reclaim their resources later: held
            # resources only grow with the reversed clock, so the interval's end is what counts
            later = avail[bisect.bisect_left(held_at, tau + s.duration_s)]  # less what is held from at < end
            k = _fit_less(later, used, need, k)
            if k == 0:
                continue
            remaining[name] -= k
            if remaining[name] == 0:
                ready.remove(r)
            _take(used, need, -k)
            start_forward = makespan - (tau + s.duration_s)
            latest[name].extend([start_forward] * k)
            heapq.heappush(events, (tau + s.duration_s, seq, name, k))
            seq += 1
        next_release = releases[bisect.bisect_right(releases, tau)] if releases and releases[-1] > tau else None
        if not events and next_release is None:
            break
        if events and (next_release is None or events[0][0] <= next_release):
            tau, _, name, k = heapq.heappop(events)
            finish(name, k)
            while events and events[0][0] <= tau:
                _, _, name, k = heapq.heappop(events)
                finish(name, k)
        else:
            assert next_release is not None
            tau = next_release
    for s in stages:  # whatever could not be placed backwards must start now
        latest[s.name].extend([0.0] * remaining[s.name])
        latest[s.name].sort()
    return latest


def must_start_now(latest: Mapping[str, list[float]], runnable: Mapping[str, int], horizon_s: float) -> dict[str, int]:
    """How many runnable tasks of each stage have to start within ``horizon_s`` to keep the makespan."""
    out: dict[str, int] = {}
    for name, count in runnable.items():
        starts = latest.get(name, [])
        urgent = sum(1 for t in starts if t <= horizon_s)
        out[name] = min(count, urgent)
    return out
