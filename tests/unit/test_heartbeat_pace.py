"""The out-of-band gap the RM announces: each node's completion rate, and what the RM's CPU affords."""

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


def test_a_node_whose_containers_turn_over_fast_beats_at_the_floor_a_slow_one_at_its_interval() -> None:
    clock = Clock()
    pace = OutOfBandPace(1.0, cpu=clock)
    assert pace.gap_s("idle:1", 0, 0.0) == OFF  # nothing completes there: nothing to report early
    # 30 completions a second: a completion is ready to report every 33 ms
    assert beats(pace, clock, "fast:1", 3, 100) == 0.1
    # one completion every 2 s: the gap would pass the interval
    assert beats(pace, clock, "slow:1", 1, 10, every_s=2.0) == OFF
    # four a second: a quarter of a second
    assert abs(beats(pace, clock, "mid:1", 1, 100, every_s=0.25) - 0.25) < 0.01


def test_a_busy_rm_asks_for_bigger_batches_and_a_quiet_one_for_smaller() -> None:
    clock = Clock()
    pace = OutOfBandPace(1.0, cpu=clock)
    assert abs(beats(pace, clock, "n:1", 1, 40, every_s=0.25) - 0.25) < 0.01  # 4/s, quiet RM
    beats(pace, clock, "n:1", 1, 4, every_s=0.25, load=0.9)  # a busy second
    assert pace.batch == 2
    assert abs(pace.gap_s("n:1", 1, clock.now + 0.25) - 0.5) < 0.02
    clock.now += 0.25
    beats(pace, clock, "n:1", 1, 20, every_s=0.25, load=0.9)  # busy for longer: capped at max_batch
    assert pace.batch == 8
    assert pace.gap_s("n:1", 1, clock.now + 0.25) == OFF  # 8 completions take 2 s there
    clock.now += 0.25
    # a node turning over 100 a second still beats early, every 80 ms of completions but at least the floor
    assert abs(beats(pace, clock, "m8:1", 10, 50, load=0.9) - 0.1) < 0.01
    beats(pace, clock, "n:1", 1, 8, every_s=0.25, load=0.6)  # within the band: unchanged
    assert pace.batch == 8
    beats(pace, clock, "n:1", 1, 8, every_s=0.25, load=0.2)  # quiet for two seconds: halved twice
    assert pace.batch == 2


def test_the_load_is_read_once_a_period() -> None:
    clock = Clock()
    pace = OutOfBandPace(1.0, PaceConfig(period_s=2.0), cpu=clock)
    pace.gap_s("n:1", 0, 0.0)
    clock.cpu = 1.9
    pace.gap_s("n:1", 0, 1.0)
    assert pace.batch == 1
    pace.gap_s("n:1", 0, 2.0)
    assert abs(pace.load - 0.95) < 1e-9
    assert pace.batch == 2


def test_an_interval_below_the_floor_means_no_out_of_band_beats() -> None:
    clock = Clock()
    pace = OutOfBandPace(0.05, cpu=clock)
    assert beats(pace, clock, "n:1", 10, 20, every_s=0.05) == OFF
