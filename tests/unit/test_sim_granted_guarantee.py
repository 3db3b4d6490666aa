"""The simulator hands each allocate answer's granted guarantee and its ceiling to the AM policy, as the DAG AM
does: a jockey job that asks for more than its queue's floors may hold plans with what it is granted, and from
then on asks for no more than the ceiling."""

from __future__ import annotations

import pytest

from am.policies.jockey_policy import JockeyAsks, JockeyOutcome
from common.resources import Resources, component_min
from sim.engine import SimConfig, Simulator
from sim.policies import make_policy
from tests.unit.test_jockey_policy import NODES, slo_job


class Watched(Simulator):
    """Records, at every AM heartbeat, the grant the jockey policy had heard when it decided, and its decision."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.heard: list[tuple[float, Resources | None, JockeyOutcome]] = []

    def _heartbeat(self, index: int) -> None:
        policy = self.ams[index].policy
        before = policy._granted if isinstance(policy, JockeyAsks) else None  # heard in the previous answer
        super()._heartbeat(index)
        if isinstance(policy, JockeyAsks) and policy.last is not None:
            self.heard.append((self.now, before, policy.last))


def watch() -> Watched:
    """Alone on 32 containers, due 40 s after it starts: the job asks for 50 units, above the 0.8 of its queue
    the guarantee stage may grant (25 of 32 vcores)."""
    job = slo_job(arrival=0.0, utility=[[0, 1], [40 / 60, 1], [60 / 60, -1]])
    sim = Watched([job], NODES, make_policy("jockey"), SimConfig(seed=1))
    sim.run()
    return sim


def default_asked(outcome: JockeyOutcome) -> int:
    return sum(outcome.default.values())


def test_a_jockey_am_in_the_simulator_plans_with_the_guarantee_it_is_granted() -> None:
    sim = watch()
    granted = [(g, o) for _, g, o in sim.heard if g is not None]
    assert granted  # the answers after the first cycle carry the grant
    assert sim.heard[0][1] is None  # none before the stage has seen the request
    assert sim.heard[0][2].guarantee.vcores == 50  # before it hears anything it asks for what its model wants
    assert granted[0][0] == Resources.of(memory_mb=26_214, vcores=25)  # 0.8 of the queue, per resource
    for g, o in granted:
        assert g.vcores <= 25
        assert o.guarantee.vcores <= 25  # told the ceiling with the grant, it asks for no more than that
        assert o.floor == component_min(g, o.guarantee)  # and counts on the grant, never beyond its request


def test_a_grant_below_the_request_moves_default_asks_to_altruistic(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run with an AM that does not hear the grant keeps asking DEFAULT up to its request."""
    heard = watch()
    monkeypatch.setattr(JockeyAsks, "set_granted", lambda self, granted, ceiling=None: None)
    deaf = watch()
    assert all(g is None for _, g, _ in deaf.heard)
    assert all(o.floor == o.guarantee for _, _, o in deaf.heard)  # it counts on all it asked for
    deaf_asks = {t: default_asked(o) for t, _, o in deaf.heard}
    pairs = [(default_asked(o), deaf_asks[t]) for t, g, o in heard.heard if g is not None and t in deaf_asks]
    assert pairs
    assert all(mine <= theirs for mine, theirs in pairs)
    assert sum(mine for mine, _ in pairs) < sum(theirs for _, theirs in pairs)
