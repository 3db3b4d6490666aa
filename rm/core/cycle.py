"""One scheduling cycle: snapshot in, plan out. Pure: time and randomness are arguments.

The cycle's scratch, ``CycleContext``, lives in ``rm.core.context`` so that policies can name it without
importing the cycle that runs them."""

from __future__ import annotations

from collections.abc import Iterable
from random import Random

from rm.core.context import CycleContext
from rm.core.model import AskView, ClusterSnapshot
from rm.core.plan import Plan
from rm.core.policies.api import Pipeline, ShareCalculator


def run_cycle(
    snap: ClusterSnapshot,
    pipeline: Pipeline,
    *,
    shares: ShareCalculator | None = None,
    now: float,
    rng: Random,
) -> Plan:
    plan = Plan(based_on=snap.version)
    ctx = CycleContext(snap=snap, now=now, rng=rng, plan=plan)
    try:
        if shares is not None:
            plan.shares.update(shares.shares(snap))
        for stage in pipeline:
            stage.run(snap, ctx)
    finally:
        # the node index refers back to the context: left linked, the whole cycle's scratch (the snapshot's
        # views, every rejection) would wait for the garbage collector's full passes, which on a big heap hold
        # the RM's event loop for hundreds of milliseconds
        ctx.node_index = None
    return plan


def pending_asks(snap: ClusterSnapshot) -> Iterable[AskView]:
    for app in snap.apps.values():
        for ask in app.asks:
            if ask.num_containers > 0:
                yield ask
