"""The out-of-band gap the RM announces: what its CPU affords, and each node's completion rate."""

from __future__ import annotations

from rm.service.heartbeat_pace import OFF, OutOfBandPace, PaceConfig


class Clock:
    def __init__(self) -> None:
        self.cpu = 0.0  # the RM's CPU seconds
        self.now = 0.0

    def __call__(self) -> float:
        return self.cpu


def beats(pace: OutOfBandPace, clock: Clock, node: str, per_beat: int, n: int, every_s: float = 0.1,
          load: float = 0.0) -> float:
    """``n`` heartbeats of ``node``, ``every_s`` apart, each reporting ``per_beat`` completions while the RM
    uses ``load`` of a core; the last gap announced."""
    gap = pace.gap_s(node, 0, clock.now)
    for _ in range(n):
        clock.now += every_s
        clock.cpu += load * every_s
        gap = pace.gap_s(node, per_beat, clock.now)
    return gap


def test_a_quiet_rm_takes_every_completion_early() -> None:
    clock = Clock()
    pace = OutOfBandPace(1.0, cpu=clock)
    assert pace.gap_s("new:1", 0, 0.0) == 0.1  # nothing known of it yet
    assert beats(pace, clock, "fast:1", 3, 100, load=0.4) == 0.1
    assert beats(pace, clock, "slow:1", 1, 10, every_s=2.0, load=0.4) == 0.1
    assert pace.batch == 0


def test_a_busy_rm_takes_only_beats_worth_a_call() -> None:
    clock = Clock()
    pace = OutOfBandPace(1.0, cpu=clock)
    assert beats(pace, clock, "n:1", 1, 40, every_s=0.25) == 0.1  # 4 completions a second, quiet RM
    beats(pace, clock, "n:1", 1, 4, every_s=0.25, load=0.9)  # a busy second: one completion per beat
    assert pace.batch == 1
    assert abs(pace.gap_s("n:1", 0, clock.now) - 0.25) < 0.02
    beats(pace, clock, "n:1", 1, 4, every_s=0.25, load=0.9)  # another: two
    assert pace.batch == 2
    assert abs(pace.gap_s("n:1", 0, clock.now) - 0.5) < 0.03
    beats(pace, clock, "n:1", 1, 20, every_s=0.25, load=0.9)  # busy for longer: capped at max_batch
    assert pace.batch == 8
    assert pace.gap_s("n:1", 0, clock.now) == OFF  # 8 completions take 2 s there
    assert pace.gap_s("idle:1", 0, clock.now) == OFF  # nothing completes there
    # a node turning over 100 a second still beats early: 8 are ready within 80 ms, so at the floor
    assert abs(beats(pace, clock, "m8:1", 10, 50, load=0.9) - 0.1) < 0.01
    beats(pace, clock, "n:1", 1, 8, every_s=0.25, load=0.6)  # within the band: unchanged
    assert pace.batch == 8
    beats(pace, clock, "n:1", 1, 8, every_s=0.25, load=0.2)  # quiet for two seconds: halved twice
    assert pace.batch == 2
    beats(pace, clock, "n:1", 1, 8, every_s=0.25, load=0.2)  # and quiet again: every completion early
    assert pace.batch == 0
    assert pace.gap_s("n:1", 0, clock.now) == 0.1


def test_the_load_is_read_once_a_period() -> None:
    clock = Clock()
    pace = OutOfBandPace(1.0, PaceConfig(period_s=2.0), cpu=clock)
    pace.gap_s("n:1", 0, 0.0)
    clock.cpu = 1.9
    pace.gap_s("n:1", 0, 1.0)
    assert pace.batch == 0
    pace.gap_s("n:1", 0, 2.0)
    assert abs(pace.load - 0.95) < 1e-9
    assert pace.batch == 1


def test_an_interval_below_the_floor_means_no_out_of_band_beats() -> None:
    clock = Clock()
    pace = OutOfBandPace(0.05, cpu=clock)
    assert beats(pace, clock, "n:1", 10, 20, every_s=0.05) == OFF
