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

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rm.core.resources import Resources

INFINITE = math.inf


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


def _fits_at_all(capacity: Resources, demand: Resources) -> bool:
    return fit_count(capacity, demand, 1) == 1


def pack_forward(stages: Sequence[StagePlan], capacity: Resources) -> Packing:
    """List-schedule the remaining DAG from now (t = 0) within ``capacity``."""
    by_name = {s.name: s for s in stages}
    out = Packing(makespan=0.0)
    for s in stages:
        if s.pending and not _fits_at_all(capacity, s.demand):
            out.makespan = INFINITE
            return out
    free = capacity
    events: list[tuple[float, int, str, int]] = []  # (time, seq, stage, count) completions
    seq = 0
    unfinished = {s.name: s.pending + len(s.running_remaining_s) for s in stages}
    for s in stages:
        for rem in s.running_remaining_s:
            free = free - s.demand
            heapq.heappush(events, (rem, seq, s.name, 1))
            seq += 1
    pending = {s.name: s.pending for s in stages}
    order = sorted(stages, key=lambda s: (s.priority, s.name))
    t = 0.0
    while True:
        for s in order:  # start what is ready and fits
            if pending[s.name] == 0 or any(unfinished.get(p, 0) for p in s.parents if p in by_name):
                continue
            k = fit_count(free, s.demand, pending[s.name])
            if k == 0:
                continue
            pending[s.name] -= k
            free = free - s.demand * k
            out.starts.setdefault(s.name, []).append((t, k))
            heapq.heappush(events, (t + s.duration_s, seq, s.name, k))
            seq += 1
        if not events:
            break
        t, _, name, k = heapq.heappop(events)
        free = free + by_name[name].demand * k
        unfinished[name] -= k
        while events and events[0][0] <= t:  # everything ending at the same instant
            _, _, name, k = heapq.heappop(events)
            free = free + by_name[name].demand * k
            unfinished[name] -= k
        out.makespan = t
    if any(pending.values()):
        out.makespan = INFINITE  # a dependency that can never be met
    return out


def pack_reverse(stages: Sequence[StagePlan], capacity: Resources, makespan: float) -> dict[str, list[float]]:
    """Latest start times (from now) of every pending task of every stage, packed back from ``makespan``.

    Running tasks hold their resources over [0, remaining) in forward time. Returns, per stage, the
    latest start of each pending task, earliest first.
    """
    if makespan == INFINITE:
        return {s.name: [0.0] * s.pending for s in stages}
    by_name = {s.name: s for s in stages}
    children: dict[str, list[str]] = {s.name: [] for s in stages}
    for s in stages:
        for p in s.parents:
            if p in children:
                children[p].append(s.name)
    # running tasks, seen from the reversed clock tau = makespan - t, occupy (makespan - rem, makespan]
    releases = sorted(makespan - rem for s in stages for rem in s.running_remaining_s)
    held: list[tuple[float, Resources]] = []
    for s in stages:
        for rem in s.running_remaining_s:
            held.append((makespan - rem, s.demand))
    latest: dict[str, list[float]] = {s.name: [] for s in stages}
    remaining = {s.name: s.pending for s in stages}
    reverse_done = {s.name: s.pending for s in stages}  # pending tasks not yet finished in reverse
    events: list[tuple[float, int, str, int]] = []
    seq = 0
    order = sorted(stages, key=lambda s: (-s.priority, s.name))
    tau = 0.0
    used = Resources()

    def free_at(now: float) -> Resources:
        taken = used
        for start, demand in held:
            if start <= now:
                taken = taken + demand
        return capacity - taken

    while True:
        free = free_at(tau)
        for s in order:
            if remaining[s.name] == 0:
                continue
            if any(reverse_done[c] for c in children[s.name]):
                continue
            k = fit_count(free, s.demand, remaining[s.name])
            # tasks placed now must also fit when running tasks reclaim their resources later
            while k > 0 and not _fits_until(held, capacity, used + s.demand * k, tau, tau + s.duration_s):
                k -= 1
            if k == 0:
                continue
            remaining[s.name] -= k
            used = used + s.demand * k
            free = free - s.demand * k
            start_forward = makespan - (tau + s.duration_s)
            latest[s.name].extend([start_forward] * k)
            heapq.heappush(events, (tau + s.duration_s, seq, s.name, k))
            seq += 1
        next_release = next((r for r in releases if r > tau), None)
        if not events and next_release is None:
            break
        if events and (next_release is None or events[0][0] <= next_release):
            tau, _, name, k = heapq.heappop(events)
            used = used - by_name[name].demand * k
            reverse_done[name] -= k
            while events and events[0][0] <= tau:
                _, _, name, k = heapq.heappop(events)
                used = used - by_name[name].demand * k
                reverse_done[name] -= k
        else:
            assert next_release is not None
            tau = next_release
    for s in stages:  # whatever could not be placed backwards must start now
        latest[s.name].extend([0.0] * remaining[s.name])
        latest[s.name].sort()
    return latest


def _fits_until(held: Sequence[tuple[float, Resources]], capacity: Resources, used: Resources,
                start: float, end: float) -> bool:
    """Held resources only grow with the reversed clock, so checking the interval's end suffices."""
    taken = used
    for at, demand in held:
        if at < end:
            taken = taken + demand
    return not (capacity - taken).any_negative()


def must_start_now(latest: Mapping[str, list[float]], runnable: Mapping[str, int], horizon_s: float) -> dict[str, int]:
    """How many runnable tasks of each stage have to start within ``horizon_s`` to keep the makespan."""
    out: dict[str, int] = {}
    for name, count in runnable.items():
        starts = latest.get(name, [])
        urgent = sum(1 for t in starts if t <= horizon_s)
        out[name] = min(count, urgent)
    return out
