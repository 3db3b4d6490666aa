"""Reservation submit latency while a one-day plan fills up with 1,000 reservations.

Morpheus kept submissions within 10 s with up to 900 concurrent reservations in its plan; shepherd's target is
a p99 under 100 ms. The workload mixes periodic skylines (periods from 1 h to 1 day, 3 to 40 one-minute steps
of 5 to 120 containers, compressed into R_ORDER_NO_GAP requests as inference proposes them) with one-off
reservations of one to three requests (R_ALL, R_ORDER, R_ANY), on a plan of 20,000 containers with one-minute
steps. Each agent gets the same workload; every submission is timed (``ReservationSystem.submit``: validation,
placement and booking).

    python bench/bench_reservations.py [--reservations 1000] [--agent lowcost greedy] [--seed 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from random import Random

from common.errors import BadRequest
from common.resources import Resources
from rm.core.reservation.requests import ReservationDefinition, ReservationRequest, skyline_definition
from rm.core.reservation.system import ReservationConfig, ReservationSystem

DAY_MS = 86_400_000
MIN_MS = 60_000
UNIT = Resources.of(memory_mb=4096, vcores=1)
PERIODS_H = (1, 2, 3, 4, 6, 8, 12, 24, 24, 24)


def workload(n: int, seed: int) -> list[ReservationDefinition]:
    rng = Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.6:
            period = rng.choice(PERIODS_H) * 60 * MIN_MS
            steps = rng.randint(3, 40)
            level = rng.randint(5, 120)
            sky = []
            for _ in range(steps):
                if rng.random() < 0.3:
                    level = max(1, min(150, level + rng.randint(-40, 40)))
                sky.append(level)
            arrival = rng.randrange(0, period // MIN_MS) * MIN_MS
            window = min(period - MIN_MS, steps * MIN_MS * rng.randint(2, 6))
            out.append(skyline_definition(sky, UNIT, arrival_ms=arrival, deadline_ms=arrival + window,
                                          step_ms=MIN_MS, recurrence_ms=period))
        else:
            arrival = rng.randrange(0, 22 * 60) * MIN_MS
            reqs = tuple(
                ReservationRequest(UNIT, rng.randint(10, 400), rng.randint(5, 90) * MIN_MS, rng.choice((1, 1, 5, 10)))
                for _ in range(rng.randint(1, 3))
            )
            interp = rng.choice(("R_ALL", "R_ORDER", "R_ANY"))
            need = sum(r.duration_ms for r in reqs) if interp == "R_ORDER" else max(r.duration_ms for r in reqs)
            deadline = arrival + need + rng.randint(10, 240) * MIN_MS
            out.append(ReservationDefinition(arrival, min(deadline, DAY_MS - MIN_MS), reqs, interp))  # type: ignore[arg-type]
    return out


def run(agent: str, defs: list[ReservationDefinition]) -> dict[str, float]:
    system = ReservationSystem(ReservationConfig(agent=agent), cluster_ts=1)
    system.set_capacity("root.default", UNIT * 20_000)
    times: list[float] = []
    accepted = 0
    for d in defs:
        rid = system.new_reservation_id()
        t0 = time.perf_counter()
        try:
            system.submit(rid, "default", d, user="bench", now=0.0)
            accepted += 1
        except BadRequest:
            pass
        times.append(time.perf_counter() - t0)
    tl = system.plans["root.default"].timeline
    util = tl.utilization(0, tl.window)
    t_view = time.perf_counter()
    for minute in range(0, 1440, 10):
        system.view(minute * 60.0)
    view_ms = (time.perf_counter() - t_view) / 144 * 1000
    ms = sorted(t * 1000 for t in times)
    tail = sorted(t * 1000 for t in times[-100:])
    return {
        "accepted": accepted,
        "p50": statistics.median(ms),
        "p99": ms[int(0.99 * (len(ms) - 1))],
        "max": ms[-1],
        "p99_last100": tail[int(0.99 * (len(tail) - 1))],
        "peak_util": float(util.max()),
        "mean_util": float(util.mean()),
        "view_ms": view_ms,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reservations", type=int, default=1000)
    ap.add_argument("--agent", nargs="+", default=["lowcost", "greedy"])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    defs = workload(args.reservations, args.seed)
    print(f"{args.reservations} reservations into a one-day plan of 20,000 containers, 1-minute steps")
    print(f"{'agent':<8} {'accepted':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'p99 last100':>12} "
          f"{'peak util':>10} {'mean util':>10} {'view ms':>8}")
    for agent in args.agent:
        r = run(agent, defs)
        print(f"{agent:<8} {int(r['accepted']):>8} {r['p50']:>8.2f} {r['p99']:>8.2f} {r['max']:>8.2f} "
              f"{r['p99_last100']:>12.2f} {r['peak_util']:>10.3f} {r['mean_util']:>10.3f} {r['view_ms']:>8.3f}")


if __name__ == "__main__":
    main()
