"""One run of the load generators against a running RM: register K simulated nodes, start their heartbeats,
submit N apps whose AMs the harness plays, measure for a while, then wind down. ``run_load`` holds a steady
load for a window; ``run_batch`` pushes a fixed number of containers through and times it (M8)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

from bench.load.am_sim import AmPool, AmShape
from bench.load.nm_sim import NodeFleet, NodeShape
from bench.load.stats import Recorder

LAG_PROBE_S = 0.05
SAMPLE_S = 0.5


@dataclass(frozen=True)
class LoadConfig:
    rm_address: str
    node_secret: str
    client_secret: str
    nodes: int = 100
    node: NodeShape = field(default_factory=NodeShape)
    heartbeat_s: float = 1.0
    jitter: float = 0.1
    nodes_per_channel: int = 1
    out_of_band: bool = True  # nodes heartbeat out of band when a container ends, as NodeManagers do
    ams: int = 0
    am: AmShape = field(default_factory=AmShape)
    ramp_s: float = 2.0  # AM arrivals spread over this long
    warmup_s: float = 3.0  # after the AMs registered, before the window opens
    duration_s: float = 20.0
    rm_pid: int | None = None  # sampled for CPU and RSS
    rest_url: str = ""  # the RM's /metrics, read at the window's edges ("" = not read)


@dataclass
class ProcessProbe:
    """CPU and RSS of one process over the window, sampled every SAMPLE_S."""

    pid: int
    cpu_at_open: float = math.nan
    cpu_at_close: float = math.nan
    rss_mb: list[float] = field(default_factory=list)

    def _cpu(self) -> float:
        t = psutil.Process(self.pid).cpu_times()
        return float(t.user + t.system)

    def opened(self) -> None:
        self.cpu_at_open = self._cpu()

    def closed(self) -> None:
        self.cpu_at_close = self._cpu()

    def sample(self) -> None:
        with contextlib.suppress(psutil.Error):
            self.rss_mb.append(psutil.Process(self.pid).memory_info().rss / 2**20)

    def summary(self, seconds: float, prefix: str) -> dict[str, float]:
        return {f"{prefix}_cpu_pct": 100.0 * (self.cpu_at_close - self.cpu_at_open) / seconds,
                f"{prefix}_rss_mb_max": max(self.rss_mb, default=math.nan),
                f"{prefix}_rss_mb_end": self.rss_mb[-1] if self.rss_mb else math.nan}


# histogram -> (prefix of the result's keys, scale): seconds are reported in ms, counts as they are
RM_HISTOGRAMS = {"shepherd_scheduling_cycle_seconds": ("rm_cycle", 1000.0),
                 "shepherd_node_heartbeat_seconds": ("rm_heartbeat", 1000.0),
                 "shepherd_event_loop_lag_seconds": ("rm_loop_lag", 1000.0),
                 "shepherd_store_write_seconds": ("rm_store_write", 1000.0),
                 "shepherd_store_write_records": ("rm_store_records", 1.0)}


def read_histograms(rest_url: str, secret: str) -> dict[str, dict[str, float]]:
    """The RM's own latency histograms (cumulative bucket counts by upper bound, plus ``sum`` and ``count``)."""
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    text = httpx.get(f"{rest_url}/metrics", headers=headers, timeout=10.0).text
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name not in RM_HISTOGRAMS:
            continue
        h = out.setdefault(family.name, {})
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                h[sample.labels["le"]] = sample.value
            elif sample.name.endswith("_sum"):
                h["sum"] = sample.value
            elif sample.name.endswith("_count"):
                h["count"] = sample.value
    return out


def histogram_delta(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> dict[str, float]:
    """Per RM histogram over the window: how many, the mean and the bucket bound under which 99 % fell (ms for
    the histograms of seconds, under the keys ``*_mean_ms`` and ``*_p99_le_ms``, as they are for the others)."""
    out: dict[str, float] = {}
    for name, (prefix, scale) in RM_HISTOGRAMS.items():
        a, b = after.get(name, {}), before.get(name, {})
        count = a.get("count", 0.0) - b.get("count", 0.0)
        out[f"{prefix}_count"] = count
        out[f"{prefix}_mean_ms"] = scale * (a.get("sum", 0.0) - b.get("sum", 0.0)) / count if count else math.nan
        p99 = math.nan
        bounds = sorted((float(k), k) for k in a if k not in ("sum", "count"))
        for bound, key in bounds:
            if count and a[key] - b.get(key, 0.0) >= 0.99 * count:
                p99 = bound * scale
                break
        out[f"{prefix}_p99_le_ms"] = p99
    return out


def busy_cpu_s() -> float:
    """CPU seconds the whole machine spent busy since boot (all cores, idle and iowait excluded)."""
    t = psutil.cpu_times()
    return float(sum(t) - t.idle - getattr(t, "iowait", 0.0) - getattr(t, "steal", 0.0)
                 - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0))


async def _lag_probe(recorder: Recorder) -> None:
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + LAG_PROBE_S
        await asyncio.sleep(LAG_PROBE_S)
        if recorder.window.holds(due):
            recorder.loop_lag.append(loop.time() - due)


async def _sampler(probes: list[ProcessProbe]) -> None:
    while True:
        for p in probes:
            p.sample()
        await asyncio.sleep(SAMPLE_S)


@dataclass
class Run:
    """A started fleet and AM pool, and the background probes."""

    cfg: LoadConfig
    recorder: Recorder
    fleet: NodeFleet
    pool: AmPool
    stop: asyncio.Event
    probes: list[ProcessProbe]
    background: list[asyncio.Task[None]]
    facts: dict[str, Any]
    busy_at_open: float = math.nan
    busy_at_close: float = math.nan
    rm_before: dict[str, dict[str, float]] = field(default_factory=dict)
    rm_after: dict[str, dict[str, float]] = field(default_factory=dict)

    async def _rm_histograms(self) -> dict[str, dict[str, float]]:
        if not self.cfg.rest_url:
            return {}
        try:
            return await asyncio.to_thread(read_histograms, self.cfg.rest_url, self.cfg.client_secret)
        except (httpx.HTTPError, ValueError):
            return {}

    async def open_window(self, duration: float) -> None:
        self.rm_before = await self._rm_histograms()
        self.busy_at_open = busy_cpu_s()
        for p in self.probes:
            p.opened()
            p.sample()
        self.recorder.window.open(asyncio.get_running_loop().time(), duration)

    async def close_window(self) -> None:
        self.recorder.window.end = asyncio.get_running_loop().time()
        for p in self.probes:
            p.closed()
            p.sample()
        self.busy_at_close = busy_cpu_s()
        self.rm_after = await self._rm_histograms()

    async def wind_down(self) -> None:
        self.stop.set()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.pool.finish_all(), 15.0)
        await asyncio.sleep(min(2.0, 2 * self.cfg.heartbeat_s))  # the AM containers' ends are reported
        for t in self.background:
            t.cancel()
        await self.pool.close()
        await self.fleet.close()

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.facts)
        out.update(self.recorder.summary())
        seconds = self.recorder.window.seconds
        names = ["rm", "harness"]
        for name, probe in zip(names, self.probes, strict=False):
            out.update(probe.summary(seconds, name))
        # what everything else on the machine used meanwhile, in % of one core (2 cores: at most 200)
        ours = sum(p.cpu_at_close - p.cpu_at_open for p in self.probes)
        out["others_cpu_pct"] = 100.0 * (self.busy_at_close - self.busy_at_open - ours) / seconds
        if self.rm_before and self.rm_after:
            out.update(histogram_delta(self.rm_before, self.rm_after))
        out["node_resyncs"] = self.fleet.resyncs
        out["out_of_band_beats"] = self.fleet.out_of_band_beats
        errors = [e for p in self.pool.progress() for e in p.errors]
        out["am_errors"] = len(errors)
        out["am_error_sample"] = errors[:3]
        return out


async def start(cfg: LoadConfig, *, shape: AmShape | None = None, ams: int | None = None) -> Run:
    """Register the nodes, start their heartbeats, submit the apps and wait until their AMs registered."""
    recorder = Recorder()
    fleet = NodeFleet(cfg.rm_address, cfg.node_secret, cfg.nodes, shape=cfg.node, interval_s=cfg.heartbeat_s,
                      jitter=cfg.jitter, nodes_per_channel=cfg.nodes_per_channel, recorder=recorder,
                      out_of_band=cfg.out_of_band)
    stop = asyncio.Event()
    pool = AmPool(cfg.rm_address, cfg.client_secret, fleet, recorder, shape or cfg.am)
    probes = [ProcessProbe(cfg.rm_pid)] if cfg.rm_pid else []
    probes.append(ProcessProbe(psutil.Process().pid))
    background = [asyncio.create_task(_lag_probe(recorder)), asyncio.create_task(_sampler(probes))]
    facts: dict[str, Any] = {"nodes": cfg.nodes}
    await fleet.start_server()
    facts["register_s"] = round(await fleet.register_all(), 2)
    fleet.run(stop)
    await pool.channels.connect([n.key for n in fleet.nodes])
    count = cfg.ams if ams is None else ams
    facts["ams"] = count
    if count:
        started = time.perf_counter()
        await pool.submit_all(count, stop, ramp_s=cfg.ramp_s)
        await asyncio.wait_for(pool.all_registered.wait(), timeout=max(30.0, 2 * cfg.ramp_s))
        facts["ams_up_s"] = round(time.perf_counter() - started, 2)
    return Run(cfg, recorder, fleet, pool, stop, probes, background, facts)


async def run_load(cfg: LoadConfig) -> dict[str, Any]:
    """Steady load: nodes heartbeating and AMs holding their backlog, measured for ``duration_s``."""
    run = await start(cfg)
    try:
        await asyncio.sleep(cfg.warmup_s)
        await run.open_window(cfg.duration_s)
        await asyncio.sleep(cfg.duration_s)
        await run.close_window()
        out = run.summary()
        out["running_containers_end"] = run.fleet.running_containers()
        return out
    finally:
        await run.wind_down()


async def run_batch(cfg: LoadConfig, containers: int, *, ams: int = 1, timeout_s: float = 60.0) -> dict[str, Any]:
    """M8: ``containers`` no-op containers split over ``ams`` AMs, asked for at once, completed as soon as
    started; the window runs from the first ask to the last completion an AM hears of."""
    per_am = -(-containers // ams)
    shape = AmShape(backlog=per_am, total=per_am, memory_mb=cfg.am.memory_mb, vcores=cfg.am.vcores, run_s=0.0,
                    release_fraction=0.0, interval_s=cfg.am.interval_s, jitter=cfg.am.jitter)
    run = await start(cfg, shape=shape, ams=0)
    try:
        await asyncio.sleep(cfg.warmup_s)
        await run.open_window(timeout_s)
        await run.pool.submit_all(ams, run.stop)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline and not (
                len(run.pool.ams) == ams and all(am.complete() for am in run.pool.ams.values())):
            await asyncio.sleep(0.02)
        await run.close_window()
        progress = run.pool.progress()
        first = min((p.first_ask_at for p in progress if p.first_ask_at), default=math.nan)
        last = max((p.last_done_at for p in progress), default=math.nan)
        done = sum(p.done for p in progress)
        out = run.summary()
        out["ams"] = ams
        out.update({"containers": containers, "done": done, "failed": sum(p.failed for p in progress),
                    "first_ask_to_last_done_s": last - first,
                    "submit_to_last_done_s": last - run.recorder.window.start,
                    "containers_per_s": done / (last - first) if done and last > first else math.nan})
        return out
    finally:
        await run.wind_down()
