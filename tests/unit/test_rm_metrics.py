"""The RM's Prometheus families for preemption and reservations, read from a Ledger at scrape time:
a reservation takes its capacity back from an ad-hoc app, then dynamic reprovisioning stretches it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from common.resources import Resources
from rm.core.entities import Ask
from rm.core.ledger import Ledger
from rm.service.metrics import RMMetrics
from tests.unit.test_reservations_glue import NOW, cycle, make_state, reserve, start_am, submit

if TYPE_CHECKING:
    from rm.service.server import ResourceManager


@dataclass
class FakeRM:
    state: Ledger
    t: float = NOW

    def now(self) -> float:
        return self.t


def scrape(st: Ledger, now: float = NOW) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(RMMetrics(cast("ResourceManager", FakeRM(st, now))).registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_reservation_and_preemption_families() -> None:
    st, _ = make_state()
    before = scrape(st)
    assert before[("shepherd_containers_preempted_total", (("reason", "RESERVATION_CAPACITY_LENT"),))] == 0
    assert before[("shepherd_reservation_reclaims_total", ())] == 0
    assert before[("shepherd_reservations", (("queue", "root.prod"),))] == 0
    assert before[("shepherd_reservation_dra_decisions_total", (("outcome", "EXTENDED"),))] == 0

    adhoc = submit(st, "default")
    token = start_am(st, adhoc)
    st.am_allocate(token, 0, [Ask(1, 1, Resources.of(memory_mb=512, vcores=1), 30)], [], 0.1, [], [], NOW)
    cycle(st)  # the ad-hoc app fills the node
    rid = reserve(st, "prod")
    app_id = submit(st, "prod", mb=2048, reservation_id=rid)
    cycle(st)  # the reservation takes 2 GB back: 4 containers of 512 MB
    cycle(st)  # and its AM is placed inside it
    token = st.drain_launches()[-1].amrm_token
    st.am_register(token, "h", 1, "", NOW)
    st.am_allocate(token, 0, [Ask(1, 1, Resources.of(memory_mb=2048, vcores=1), 2)], [], 0.1, [], [], NOW)
    st.reprovision(NOW)

    m = scrape(st)
    assert m[("shepherd_containers_preempted_total", (("reason", "RESERVATION_CAPACITY_LENT"),))] == 4
    assert m[("shepherd_queue_containers_preempted_total", (("queue", "root.default"),))] == 4
    assert m[("shepherd_queue_containers_preempted_total", (("queue", "root"),))] == 4
    assert m[("shepherd_queue_containers_preempted_total", (("queue", "root.prod"),))] == 0
    assert m[("shepherd_reservation_reclaims_total", ())] == 1
    assert m[("shepherd_reservation_containers_placed_total", ())] == 1
    assert m[("shepherd_reservation_extension_containers_total", ())] == 1
    assert m[("shepherd_reservation_dra_decisions_total", (("outcome", "EXTENDED"),))] == 1
    assert m[("shepherd_reservation_dra_decisions_total", (("outcome", "NO_ROOM_IN_PLAN"),))] == 0
    assert m[("shepherd_reservations", (("queue", "root.prod"),))] == 1
    assert m[("shepherd_reservations", (("queue", "root.default"),))] == 0
    assert m[("shepherd_reservations_active", (("queue", "root.prod"),))] == 1
    assert st.apps[app_id].reservation_id == rid

    later = scrape(st, NOW + 3600)  # the ten-minute reservation is over (not yet rolled away)
    assert later[("shepherd_reservations", (("queue", "root.prod"),))] == 1
    assert later[("shepherd_reservations_active", (("queue", "root.prod"),))] == 0
