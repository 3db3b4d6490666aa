"""Prometheus families of apps with a deadline (``rm.service.app_slo``): unfinished apps by SLO status, the
guarantees requested and granted per queue, deadline changes by outcome (read at scrape time); and, observed
when an app ends, its deadline met or missed, how long it took against the time its deadline gave it, its
requested units' share above the oracle allocation, and how long its AM took to build its model."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from common.resources import MEMORY, VCORES, Resources
from rm.core.events import AppFinished, Event, Journal
from rm.core.ledger import Ledger
from rm.core.policies.api import Stage
from rm.service.app_slo import (
    AT_RISK,
    ON_TRACK,
    above_oracle,
    control_records,
    deadline_of,
    granted_floor,
    met_deadline,
    standing,
)

if TYPE_CHECKING:
    from rm.core.entities import App

MIB = 1024 * 1024
RATIO_BUCKETS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0)
"""Completion time over the time the deadline gave (both from submission): at most 1 met it."""
SHARE_BUCKETS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.5, 0.75, 1.0)
BUILD_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def slo_families(st: Ledger, pipeline: Sequence[Stage], now: float) -> Iterator[Metric]:
    apps = GaugeMetricFamily("shepherd_slo_apps", "Unfinished apps with a deadline, by SLO status",
                             labels=["status"])
    counts = dict.fromkeys((ON_TRACK, AT_RISK), 0)
    requested: dict[str, Resources] = {}
    granted: dict[str, Resources] = {}
    for app in st.active.values():
        q = str(app.queue)
        if app.terms.guarantee is not None:
            requested[q] = requested.get(q, Resources()) + app.terms.guarantee
            floor = granted_floor(app, pipeline)
            if floor is not None:
                granted[q] = granted.get(q, Resources()) + floor
        deadline = deadline_of(app)[0]
        if deadline is not None:
            status = standing(st, app, deadline, now)[0]
            counts[status] = counts.get(status, 0) + 1
    for status, count in sorted(counts.items()):
        apps.add_metric([status], count)
    yield apps
    for kind, per_queue in (("requested", requested), ("granted", granted)):
        mem = GaugeMetricFamily(f"shepherd_guarantee_{kind}_memory_bytes",
                                f"Memory of the guarantees unfinished apps' AMs {kind}", labels=["queue"])
        cpu = GaugeMetricFamily(f"shepherd_guarantee_{kind}_vcores",
                                f"Virtual cores of the guarantees unfinished apps' AMs {kind}", labels=["queue"])
        if kind == "granted":
            mem.documentation = cpu.documentation = "Guarantees the guarantee stage serves unfinished apps now"
        for q in sorted(per_queue):
            mem.add_metric([q], per_queue[q].get(MEMORY) * MIB)
            cpu.add_metric([q], per_queue[q].get(VCORES))
        yield mem
        yield cpu
    changes = CounterMetricFamily("shepherd_deadline_changes", "Deadline changes of running apps, by outcome",
                                  labels=["outcome"])
    counters = st.deadlines.counters
    changes.add_metric(["admitted"], counters.get("changes_admitted", 0))
    changes.add_metric(["infeasible"], counters.get("changes_infeasible", 0))
    yield changes


class SloOutcomes:
    """Listens to the ledger: an app that ends is observed if it had a deadline (met or missed by the same rule
    as its SLO report; its completion time over the time its deadline gave it, both from submission; with a
    control trace, the share of its requested units above the oracle) and if its AM reported a model build."""

    hears: frozenset[type] = frozenset({AppFinished})

    def __init__(self, registry: CollectorRegistry, unit: Resources) -> None:
        self.unit = unit
        self.histogram = Histogram(
            "shepherd_slo_completion_ratio", "Completion time of apps with a deadline over the time their "
            "deadline gave them, both from submission (at most 1: met)", registry=registry, buckets=RATIO_BUCKETS)
        self.deadlines = Counter("shepherd_slo_deadlines", "Apps with a deadline that ended, by outcome (met: "
                                 "succeeded by the deadline)", ["outcome"], registry=registry)
        for outcome in ("met", "missed"):
            self.deadlines.labels(outcome=outcome)
        self.above_oracle = Histogram(
            "shepherd_slo_allocation_above_oracle", "Of the units an ended app's AM asked to be guaranteed over "
            "its run, the share above the oracle allocation of the work it did (Jockey's impact measure)",
            registry=registry, buckets=SHARE_BUCKETS)
        self.model_build = Histogram(
            "shepherd_slo_model_build_seconds", "How long an ended app's AM took to build its model of the job "
            "(Jockey's C(p, a) precompute), as it reported it", registry=registry, buckets=BUILD_BUCKETS)

    def on_event(self, event: Event, journal: Journal) -> None:
        if isinstance(event, AppFinished):
            self.observe(event.app, event.now)

    def observe(self, app: App, now: float) -> None:
        if app.model_build_s is not None:
            self.model_build.observe(app.model_build_s)
        deadline = deadline_of(app)[0]
        if deadline is None or deadline <= app.submit_time:
            return
        end = app.finish_time or now
        self.histogram.observe(max(0.0, end - app.submit_time) / (deadline - app.submit_time))
        self.deadlines.labels(outcome="met" if met_deadline(app, deadline) else "missed").inc()
        share = above_oracle(app, deadline, self.unit, control_records(app), now)
        if share is not None:
            self.above_oracle.observe(share)
