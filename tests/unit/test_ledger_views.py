"""The ledger keeps its snapshot views incrementally; whatever the commands, they equal views built afresh."""

from __future__ import annotations

from random import Random

import pytest

from common.errors import YarnError
from common.ids import AppId, NodeId
from common.resources import Resources
from common.terms import SIZE_SOURCES, SizeEstimate
from rm.core.cycle import run_cycle
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.core.policies.registry import named_pipeline
from rm.core.queues import build_queues
from rm.core.state_types import CoreConfig, NodeStatus, SubmitSpec


def _drive(seed: int, durable: bool) -> Ledger:
    rng = Random(seed)
    st = Ledger(Ledger.fresh_meta(1), build_queues(), CoreConfig(durable=durable, nm_expiry_s=30.0))
    pipeline, shares = named_pipeline("carbyne")
    nodes: list[NodeId] = []
    tokens: dict[AppId, str] = {}
    responses: dict[AppId, int] = {}
    now = 0.0
    for step in range(400):
        now += rng.random()
        roll = rng.random()
        try:
            if roll < 0.08 or not nodes:
                name = f"n{rng.randrange(6)}:7040"
                st.register_node(name, name, "", Resources.of(memory_mb=rng.choice([4096, 8192]), vcores=4), [], now)
                if name not in nodes:
                    nodes.append(NodeId(name))
            elif roll < 0.2:
                app_id = st.new_application(now)
                st.submit(SubmitSpec(app_id=app_id, am_launch={"commands": ["am"]},
                                     am_resource=Resources.of(memory_mb=512, vcores=1)), now)
            elif roll < 0.45:
                plan = run_cycle(st.snapshot(now), pipeline, shares=shares, now=now, rng=Random(step))
                st.apply_plan(plan, now)
                for launch in st.drain_launches():
                    tokens[launch.app_id] = launch.amrm_token
            elif roll < 0.7 and tokens:
                app_id = rng.choice(sorted(tokens))
                app = st.apps[app_id]
                if app.final:
                    continue
                att = app.current
                assert att is not None
                if not att.registered:
                    st.am_register(tokens[app_id], "h", 1, "", now)
                    responses[app_id] = 0
                asks = [Ask(allocation_request_id=k, priority=1, capability=Resources.of(memory_mb=1024, vcores=1),
                            num_containers=rng.randrange(4), ask_type=rng.choice(["DEFAULT", "ALTRUISTIC"]))
                        for k in range(rng.randrange(3))]
                held = sorted(c for c in app.containers if not st.containers[c].is_am)
                releases = [c for c in held if rng.random() < 0.2]
                res = st.am_allocate(tokens[app_id], responses.get(app_id, 0), asks, releases, 0.5,
                                     [rng.choice(nodes)] if rng.random() < 0.1 else [], [], now)
                responses[app_id] = res.response_id
                if rng.random() < 0.1:
                    st.am_finish(tokens[app_id], "SUCCEEDED", "", "", now)
            elif roll < 0.85 and st.containers:
                node = rng.choice(nodes)
                live = [c for c in st.containers.values() if c.live and c.node_id == node]
                statuses = [NodeStatus(c.container_id, "COMPLETE", rng.choice([0, 1]), "", now)
                            for c in live if rng.random() < 0.5]
                st.node_heartbeat(node, 0, statuses, rng.random() < 0.95, "", now)
            elif roll < 0.9 and st.active:
                st.kill(rng.choice(sorted(st.active)), "", now)
            elif roll < 0.93 and st.active:
                st.report_size(rng.choice(sorted(st.active)), SizeEstimate(rng.random() * 100, rng.choice(SIZE_SOURCES)))
            else:
                now += 40.0 if rng.random() < 0.2 else 0.0  # now and then a node misses its heartbeats
                st.check_liveness(now)
        except YarnError:
            pass
        assert st.check_views() == [], f"step {step}"
    return st


@pytest.mark.parametrize("seed", range(6))
def test_kept_views_equal_fresh_ones_whatever_happens(seed: int) -> None:
    st = _drive(seed, durable=seed % 2 == 0)
    assert st.apps  # the walk did something
    assert all(not a.final for a in st.active.values())
    assert {a for a, app in st.apps.items() if not app.final} == set(st.active)
