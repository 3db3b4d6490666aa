"""The deadline book (MRM): lazy layout, earliest feasible finish, eq. 13, try-and-commit admission."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rm.core.deadlines.book import DeadlineBook, Infeasible
from rm.core.deadlines.layout import Phase
from rm.core.deadlines.pricing import Pricer


def _fig7() -> DeadlineBook:
    book = DeadlineBook(1.0)
    book.admit("A", (Phase(10, 1),), 70, now=0)
    book.admit("B", (Phase(20, 1),), 110, now=0)
    return book


def test_fig7_lazy_layout_leaves_the_paper_slack() -> None:
    book = _fig7()
    a, b = book.claims["A"].placed, book.claims["B"].placed
    assert (a.start, len(a.rate)) == (60, 10)
    assert (b.start, len(b.rate)) == (90, 20)
    free = book.free(0, 120)
    assert free[:60].sum() == 60
    assert free[70:90].sum() == 20
    assert free[110:].sum() == 10


def test_fig7_earliest_finish() -> None:
    book = _fig7()
    assert book.earliest_finish((Phase(80, 1),), now=0) == pytest.approx(90)
    assert book.earliest_finish((Phase(100, 1),), now=0) == pytest.approx(130)


def test_earliest_finish_respects_the_critical_path() -> None:
    book = DeadlineBook(8.0)
    four_tasks = (Phase(40, 4, min_s=10),)  # 4 parallel tasks of 10 s: capacity 8 cannot make it 5 s
    assert book.earliest_finish(four_tasks, now=100) == pytest.approx(110)
    # one 40 s task among four of 10 s: the phase cannot end before its longest task does
    assert book.earliest_finish((Phase(70, 4, min_s=40),), now=0) == pytest.approx(40)


def test_phases_run_one_after_the_other() -> None:
    book = DeadlineBook(10.0)
    assert book.earliest_finish((Phase(20, 10), Phase(10, 1)), now=0) == pytest.approx(12)


def test_a_deadline_before_the_earliest_finish_is_refused_with_it_and_changes_nothing() -> None:
    book = _fig7()
    before = {k: (c.placed.start, c.placed.rate.copy()) for k, c in book.claims.items()}
    with pytest.raises(Infeasible) as err:
        book.admit("C", (Phase(80, 1),), 89, now=0)
    assert err.value.earliest == pytest.approx(90)
    assert set(book.claims) == {"A", "B"}
    for k, (start, rate) in before.items():
        assert book.claims[k].placed.start == start
        assert np.array_equal(book.claims[k].placed.rate, rate)
    book.admit("C", (Phase(80, 1),), 90, now=0)  # the earliest finish itself is admitted
    assert book.relayout(0)


def test_relayout_repacks_a_set_latest_deadline_first_cannot() -> None:
    """Capacity 2: A = 10 unit-s at width 1 by 10, B = 12 unit-s at width 2 by 11. Laid latest deadline first,
    B takes [5, 11) at width 2 and leaves A 5 unit-s; least laxity first (A's 0 s before B's 5 s), A takes
    [0, 10) at width 1 and B the rest: width 1 there and 2 in [10, 11)."""
    book = DeadlineBook(2)
    book.admit("A", (Phase(10, 1),), 10, now=0)
    book.admit("B", (Phase(12, 2),), 11, now=0)
    assert book.relayout(0)
    a, b = book.claims["A"].placed, book.claims["B"].placed
    assert [a.at(s) for s in range(11)] == [1.0] * 10 + [0.0]
    assert [b.at(s) for s in range(11)] == [1.0] * 10 + [2.0]
    assert {c.status for c in book.claims.values()} == {"ON_TRACK"}


def test_eq13_prices_fall_with_the_deadline_and_jumping_ahead_costs() -> None:
    book = _fig7()
    pricer = Pricer(book, (Phase(80, 1),), 0, kappa=2, avg_work=20)
    quote = pricer.quote()
    assert quote.earliest == pytest.approx(90)
    prices = [p.price for p in quote.curve]
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(prices))
    # at f^e = 90 the job jumps ahead of B (due 110): B's slack 80 -> 0, so 2·(80 + 20 - 20/5) = 192
    assert quote.curve[0].price == pytest.approx(192)
    assert pricer.jump_ahead(110) == 0
    assert pricer.jump_ahead(200) == 0
    assert pricer.jump_ahead(95) > 0
    assert prices[-1] == pytest.approx(80)  # floored at the job's own work
    assert pricer.price(89) == float("inf")


def test_a_job_that_would_jump_ahead_pays_more_than_the_same_job_on_an_empty_book() -> None:
    empty = Pricer(DeadlineBook(4.0), (Phase(40, 4),), 0, avg_work=40)
    busy_book = DeadlineBook(4.0)
    busy_book.admit("X", (Phase(40, 4),), 40, now=0)
    busy = Pricer(busy_book, (Phase(40, 4),), 0, avg_work=40)
    assert busy.price(busy.earliest) > empty.price(empty.earliest)


def test_sync_moves_a_claim_that_fell_behind_and_marks_it_at_risk_when_it_cannot_fit() -> None:
    book = DeadlineBook(2.0)
    book.admit("A", (Phase(20, 2),), 100, now=0)
    assert book.owed("A", 0) == 0  # lazily laid at [90, 100)
    assert book.sync("A", (Phase(130, 2),), 30) == "ON_TRACK"  # 130 more by 100: from 35 on
    assert book.owed("A", 34) == 0
    assert book.owed("A", 36) == pytest.approx(2)
    assert book.sync("A", (Phase(500, 2),), 40) == "AT_RISK"


def test_claims_that_fell_behind_never_overbook_and_a_quote_is_then_admitted() -> None:
    """A claim far behind (AT_RISK) is laid early, past every deadline; another that falls behind after it is
    laid around it, not on it; and a new job's quoted earliest finish is then admitted as quoted."""
    book = DeadlineBook(10.0)
    book.admit("A", (Phase(100, 10),), 20, now=0)
    book.admit("C", (Phase(50, 10),), 15, now=0)
    assert book.sync("A", (Phase(2000, 10),), 0) == "AT_RISK"  # laid from now for 200 s, far past 20
    assert book.sync("C", (Phase(80, 10),), 0) == "AT_RISK"  # 80 by 15 no longer fits: the rest after A
    end = max(c.placed.start + len(c.placed.rate) for c in book.claims.values())
    assert book.free(0, end + 10).min() >= -1e-9  # nothing overbooked
    assert book.owed("C", 100) == 0
    assert book.owed("C", 206) == pytest.approx(10)
    job = (Phase(30, 10),)
    earliest = book.earliest_finish(job, 0.5)
    assert earliest >= 208
    book.admit("D", job, earliest, 0.5)


def test_an_overbooked_step_offers_no_room_to_a_lazy_layout() -> None:
    """Steps held beyond capacity (AT_RISK claims laid over one another) count as no room, not as negative
    room: the lazy layout agrees with the earliest finish a quote gave."""
    book = DeadlineBook(10.0)
    book.admit("X", (Phase(50, 10),), 10, now=0)  # [5, 10)
    book.claims["X"].placed.rate[:] = 20.0  # as if another claim had been laid over it
    job = (Phase(60, 10),)
    earliest = book.earliest_finish(job, 0)  # [0, 5) and [10, 11)
    assert earliest == 11
    book.admit("Y", job, earliest, 0)


@st.composite
def _events(draw: st.DrawFn) -> list[tuple[str, float, float, float, float]]:
    n = draw(st.integers(1, 25))
    out = []
    for _ in range(n):
        kind = draw(st.sampled_from(["deadline", "deadline", "reservation"]))
        t = draw(st.floats(0, 50))
        work = draw(st.floats(1, 60))
        width = draw(st.floats(0.5, 4))
        span = draw(st.floats(0, 80))
        out.append((kind, t, work, width, span))
    return sorted(out, key=lambda e: e[1])


@settings(max_examples=150, deadline=None)
@given(_events())
def test_no_admission_makes_an_admitted_claim_infeasible(events: list[tuple[str, float, float, float, float]]) -> None:
    fixed = np.zeros(400)

    def load(s0: int, s1: int) -> np.ndarray:
        out = np.zeros(max(0, s1 - s0))
        lo, hi = max(s0, 0), min(s1, len(fixed))
        if lo < hi:
            out[lo - s0 : hi - s0] = fixed[lo:hi]
        return out

    book = DeadlineBook(4.0, fixed=load)
    for i, (kind, t, work, width, span) in enumerate(events):
        if kind == "deadline":
            phases = (Phase(work, width),)
            try:
                book.admit(f"j{i}", phases, t + span, now=t)
            except Infeasible as err:  # refused only when the deadline is before the earliest finish
                refused_early = err.earliest > t + span - 1e-6
                assert refused_early
        else:  # a fixed reservation of ``width`` units over [t, t + span): admitted only if the claims keep
            s0, s1 = int(t) + 1, int(t + span) + 1
            extra = np.zeros(400)
            extra[s0:s1] = width

            def more(a: int, b: int, extra: np.ndarray = extra) -> np.ndarray:
                out = np.zeros(max(0, b - a))
                lo, hi = max(a, 0), min(b, len(extra))
                if lo < hi:
                    out[lo - a : hi - a] = extra[lo:hi]
                return out

            room = 4.0 - fixed[s0:s1]
            if (room >= width).all() and book.fits_with(more):
                fixed[:] += extra
        for c in book.claims.values():  # every admitted claim still has its whole work by its deadline
            p = c.placed
            assert p.rate.sum() * book.dt == pytest.approx(c.work, rel=1e-6, abs=1e-6)
            assert (p.start + len(p.rate)) * book.dt <= c.deadline + 1e-6
            assert (p.rate <= c.phases[0].rate + 1e-6).all()
        assert (book.free(0, 400) >= -1e-6).all()  # and nothing is overbooked, reservations included
    # laying everything again from the start (their current layouts are one answer) keeps every claim whole and
    # nothing overbooked, whichever order fits or, when none does, claim by claim from the current layouts
    book.relayout(0.0)
    for c in book.claims.values():
        assert c.status == "ON_TRACK"
        assert c.placed.rate.sum() * book.dt == pytest.approx(c.work, rel=1e-6, abs=1e-6)
        assert (c.placed.start + len(c.placed.rate)) * book.dt <= c.deadline + 1e-6
    assert (book.free(0, 400) >= -1e-6).all()


def test_a_maximum_price_buys_the_earliest_deadline_within_it_and_the_curve_reaches_the_floor() -> None:
    pricer = Pricer(_fig7(), (Phase(80, 1),), 0, kappa=2, avg_work=20)
    assert pricer.floor_deadline() == pytest.approx(130)  # after B, with one average job's slack
    assert pricer.quote().curve[-1].deadline == pytest.approx(130)
    assert pricer.quote().curve[-1].price == pytest.approx(80)
    assert pricer.earliest_within(200) == pytest.approx(90)
    assert pricer.earliest_within(160) == pytest.approx(110)
    assert pricer.earliest_within(100) == pytest.approx(122)  # 2·80/((d - 110)/20 + 1) <= 100
    assert pricer.earliest_within(79) is None  # below the job's own work


def test_no_capacity_decades_of_work_and_far_deadlines_are_not_laid_out() -> None:
    """Found by fuzzing: each was laid one step a second (TBs, or GBs the RM could get)."""
    book = DeadlineBook(0.0)
    assert book.earliest_finish((Phase(100, 2),), now=0) == float("inf")
    book = DeadlineBook(4.0)
    assert book.earliest_finish((Phase(1e12, 1),), now=0) == float("inf")
    assert book.try_place((Phase(100, 2),), book.horizon_s() + 10, now=0) is None
    with pytest.raises(Infeasible):
        book.admit("far", (Phase(100, 2),), 30 * 365 * 86_400.0, now=0)
    assert not book.claims
    assert book.earliest_finish((Phase(100, 2),), now=0) == pytest.approx(50)
