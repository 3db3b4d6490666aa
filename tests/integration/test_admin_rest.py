"""Node decommission over REST, in process: ``POST /ws/v1/shepherd/admin/nodes/{id}/decommission`` and
``.../recommission`` change what ``/ws/v1/cluster/nodes`` shows; bad input is a 4xx RemoteException that
changes nothing; writes need the client secret."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from common.ids import NodeId
from common.resources import Resources
from rm.core.records import NodeRecord
from rm.core.state_types import NodeStatus
from rm.service.rest import build_app
from tests.integration.test_rest_api import FakeRM, client, remote, rm, submit

__all__ = ["client", "rm"]  # the fixtures

ADMIN = "/ws/v1/shepherd/admin/nodes"


def nodes(client: TestClient) -> dict[str, dict[str, object]]:
    return {n["id"]: n for n in client.get("/ws/v1/cluster/nodes").json()["nodes"]["node"]}


def test_graceful_decommission_over_rest(rm: FakeRM, client: TestClient) -> None:
    app_id = submit(client)
    rm.cycle()  # its AM runs on one node
    (am,) = [c for c in rm.state.containers.values() if c.app_id == app_id]
    busy, idle = am.node_id, next(n for n in ("n1:7040", "n2:7040") if n != am.node_id)
    resp = client.post(f"{ADMIN}/{busy}/decommission", json={"gracefulTimeoutSeconds": 300})
    assert resp.status_code == 200, resp.text
    assert resp.json()["changed"] is True
    shown = nodes(client)[busy]
    assert shown["state"] == "DECOMMISSIONING"
    assert shown["decommissioningTimeout"] == 300
    stored = [r for r in rm.stored if isinstance(r, NodeRecord) and r.node_id == busy]
    assert stored[-1].state == "DECOMMISSIONING"  # written to the store before the answer
    assert stored[-1].decommission_deadline == rm.clock + 300
    assert client.get("/ws/v1/cluster/nodes?states=DECOMMISSIONING").json()["nodes"]["node"][0]["id"] == busy
    assert client.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]["decommissioningNodes"] == 1
    # a new app goes to the other node
    second = submit(client)
    rm.cycle()
    (am2,) = [c for c in rm.state.containers.values() if c.app_id == second]
    assert am2.node_id == idle
    # the idle node without a timeout: at once
    assert client.post(f"{ADMIN}/{idle}/decommission").json()["node"]["state"] == "DECOMMISSIONED"
    # the first AM ends: its node is decommissioned
    rm.clock += 5
    res = rm.state.node_heartbeat(busy, 5, [NodeStatus(am.container_id, "COMPLETE", 0, "", rm.clock - 5, rm.clock)],
                                  True, "", rm.clock)
    assert res.action == "SHUTDOWN"
    assert nodes(client)[busy]["state"] == "DECOMMISSIONED"
    assert nodes(client)[busy]["nodeHTTPAddress"] == ""
    again = client.post(f"{ADMIN}/{busy}/decommission", json={"gracefulTimeoutSeconds": 10}).json()
    assert again["changed"] is False
    # recommissioned, it may register again
    back = client.post(f"{ADMIN}/{busy}/recommission").json()
    assert back["node"]["state"] == "NEW"
    rm.state.register_node(busy, "n:8042", "", Resources.of(memory_mb=4096, vcores=4), [], rm.clock)
    assert nodes(client)[busy]["state"] == "RUNNING"


def test_bad_input_is_a_4xx_remote_exception_and_changes_nothing(rm: FakeRM, client: TestClient) -> None:
    version = rm.state.version
    msg = remote(client.post(f"{ADMIN}/ghost:1/decommission"), 404, "NotFoundException")
    assert "ghost:1" in msg
    remote(client.post(f"{ADMIN}/ghost:1/recommission"), 404, "NotFoundException")
    for body in ({"gracefulTimeoutSeconds": -5}, {"gracefulTimeoutSeconds": "10"}, {"gracefulTimeoutSeconds": True},
                 {"timeout": 10}):
        remote(client.post(f"{ADMIN}/n1:7040/decommission", json=body), 400, "BadRequestException")
    remote(client.post(f"{ADMIN}/n1:7040/decommission", content=b"[1]"), 400)
    remote(client.post(f"{ADMIN}/n1:7040/decommission", content=b"{\"gracefulTimeoutSeconds\": NaN}"), 400)
    assert rm.state.version == version
    assert {n["state"] for n in nodes(client).values()} == {"RUNNING"}
    assert rm.state.nodes[NodeId("n1:7040")].decommission_deadline == 0.0


def test_decommission_needs_the_client_secret() -> None:
    rm = FakeRM(client_secret="s3cret")
    rm.state.register_node("n1:7040", "n1:8042", "", Resources.of(memory_mb=4096, vcores=4), [], rm.clock)
    client = TestClient(build_app(rm))  # type: ignore[arg-type]
    remote(client.post(f"{ADMIN}/n1:7040/decommission"), 401, "AuthorizationException")
    remote(client.post(f"{ADMIN}/n1:7040/recommission", headers={"Authorization": "Bearer nope"}), 403)
    assert rm.state.nodes[NodeId("n1:7040")].state == "RUNNING"
    ok = client.post(f"{ADMIN}/n1:7040/decommission", headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200
    assert rm.state.nodes[NodeId("n1:7040")].state == "DECOMMISSIONED"


def test_check_health_reads_the_rms_rest_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """`shepherd admin check-health` against the REST API in process: its exit status and its one line."""
    from typer.testing import CliRunner

    from rm.cli import app as cli
    from rm.commands import health

    fake = FakeRM()
    client = TestClient(build_app(fake))  # type: ignore[arg-type]
    monkeypatch.setattr(health.httpx, "get", lambda url, **_: client.get(url.removeprefix("http://rm:8088")))

    def run() -> tuple[int, str]:
        done = CliRunner().invoke(cli, ["admin", "check-health", "--rest", "http://rm:8088"])
        return done.exit_code, " ".join(done.output.split())

    assert run() == (4, "unhealthy: the ResourceManager at http://rm:8088 has no RUNNING node (0 known)")
    for name in ("n1", "n2"):
        fake.state.register_node(f"{name}:7040", f"{name}:8042", "", Resources.of(memory_mb=4096, vcores=4), [],
                                 fake.clock)
    assert run() == (0, "healthy: the ResourceManager at http://rm:8088 is active with 2 RUNNING node(s)")
    fake.state.decommission("n2:7040", None, fake.clock)  # taken out on purpose: still healthy
    assert run() == (0, ("healthy: the ResourceManager at http://rm:8088 is active with 1 RUNNING node(s) "
                         "(DECOMMISSIONED 1)"))
    fake.state.node_heartbeat("n1:7040", 1, [], False, "disk full", fake.clock)
    code, line = run()
    assert code == 4
    assert line == "unhealthy: 1 of 2 node(s) not healthy at http://rm:8088: n1:7040 UNHEALTHY (disk full)"


def test_check_health_exit_codes_for_rms_that_do_not_serve() -> None:
    from rm.commands.health import Probe, verdict

    down = Probe("http://a:8088", None, "connection refused")
    standby = Probe("http://b:8088", {"haState": "STANDBY"})
    assert verdict([down]) == (1, "no ResourceManager answers: http://a:8088: connection refused")
    assert verdict([down, standby]) == (3, "no active ResourceManager: http://b:8088 is standing by")
    lost = Probe("http://c:8088", {"haState": "ACTIVE"}, nodes=[{"id": "h:1", "state": "RUNNING"},
                                                                {"id": "h:2", "state": "LOST"}])
    assert verdict([standby, lost]) == (4, "1 of 2 node(s) not healthy at http://c:8088: h:2 LOST")


def test_node_administration_is_audited_by_name() -> None:
    from rm.service.rest.audit import operation

    assert operation("POST", "/ws/v1/shepherd/admin/nodes/n1:7040/decommission") == ("Decommission Node", "")
    assert operation("POST", "/ws/v1/shepherd/admin/nodes/n1:7040/recommission") == ("Recommission Node", "")
