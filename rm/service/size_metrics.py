"""Prometheus families of the RM's size estimates and SLearn's sampling (``rm.core.sizes_glue``): unfinished
apps by estimate state, pilot containers started, the sampling ratio the next sampled app gets (read at scrape
time); how long gates held apps to their pilots, observed as each gate opens; and how far each source's first
estimate of an app was from the size its tasks took, observed when the app ends."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rm.core.ledger import Ledger
from rm.core.sizes_glue import DECLARED, ESTIMATED, SAMPLING, THIN, UNKNOWN

STATES = (SAMPLING, ESTIMATED, DECLARED, THIN, UNKNOWN)
GATE_WAIT_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
ERROR_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
"""|estimate − actual| / actual: 0.1 is 10 % off."""


class _SizeCollector(Collector):
    def __init__(self, st: Ledger) -> None:
        self.st = st

    def collect(self) -> Iterator[Metric]:
        sizes = self.st.sizes
        apps = GaugeMetricFamily("shepherd_size_apps", "Unfinished apps by the state of the RM's size estimate",
                                 labels=["state"])
        counts = dict.fromkeys(STATES, 0)
        for app_id in self.st.active:
            sizing = sizes.apps.get(app_id)
            state = UNKNOWN if sizing is None else sizing.state()
            counts[state] = counts.get(state, 0) + 1
        for state, n in counts.items():
            apps.add_metric([state], n)
        yield apps
        pilots = CounterMetricFamily("shepherd_sampling_pilot_containers",
                                     "Task containers started as pilots of apps held by a sampling gate")
        pilots.add_metric([], sizes.counters.get("pilot_containers", 0))
        yield pilots
        ratio = GaugeMetricFamily("shepherd_sampling_ratio",
                                  "The sampling ratio the next sampled app gets (pilots per task, adaptive)")
        ratio.add_metric([], sizes.ratio.ratio)
        yield ratio


class SizeMetrics:
    """Scrape-time families of the size tracker, and its histograms, observed as gates open and apps end."""

    def __init__(self, registry: CollectorRegistry, st: Ledger | None) -> None:
        self.gate_wait = Histogram(
            "shepherd_sampling_gate_wait_seconds", "Time a sampling gate held an app to its pilots, by what "
            "opened it (pilots, timeout, guarantee)", ["opened_by"], registry=registry, buckets=GATE_WAIT_BUCKETS)
        self.error = Histogram(
            "shepherd_size_relative_error", "Relative error |estimate - actual| / actual of each source's first "
            "estimate of a successful app's size (SLearn's at its pilots), observed when it ends", ["source"],
            registry=registry, buckets=ERROR_BUCKETS)
        if st is not None:
            registry.register(_SizeCollector(st))
            st.sizes.watchers.append(self)

    def gate_opened(self, why: str, waited_s: float) -> None:
        self.gate_wait.labels(opened_by=why).observe(max(0.0, waited_s))

    def app_sized(self, errors: Mapping[str, float]) -> None:
        for source, err in errors.items():
            self.error.labels(source=source).observe(err)
