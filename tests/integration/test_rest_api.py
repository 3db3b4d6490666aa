"""The REST API in process: YARN's shapes, filters, status codes and RemoteException bodies, over a real
Ledger and scheduling cycle (no daemons)."""

from __future__ import annotations

import asyncio
import re
from random import Random
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from common.resources import Resources
from rm.core.cycle import run_cycle
from rm.core.ledger import Ledger
from rm.core.policies.registry import default_pipeline
from rm.core.queues import build_queues
from rm.core.records import Record
from rm.core.state_types import NodeStatus
from rm.service.bounds_worker import BoundsChecks
from rm.service.config import RMConfig
from rm.service.metrics import RMMetrics
from rm.service.rest import build_app

TS = 1_700_000_000_000
QUEUES = {"default": {"capacity": 60}, "batch": {"capacity": 40, "maximum-capacity": 50}}


class FakeRM:
    """The parts of ResourceManager the REST layer uses, with a manual clock and an in-memory store."""

    def __init__(self, **cfg: Any) -> None:
        self.cfg = RMConfig(queues=QUEUES, **cfg)
        self.state = Ledger(Ledger.fresh_meta(TS), build_queues(QUEUES), self.cfg.core())
        self.clock = TS / 1000 + 10
        self.stored: list[Record] = []
        self.metrics = RMMetrics(self)  # type: ignore[arg-type]
        self.pipeline, self.shares = default_pipeline()
        self.bounds = BoundsChecks()  # its helper starts only for a big request
        self.cycle_lock = asyncio.Lock()

    def now(self) -> float:
        return self.clock

    async def persist(self) -> None:
        records = self.state.drain_records()
        self.stored += records
        self.state.stored(records)

    def kick(self) -> None:
        pass

    def cycle(self) -> None:
        plan = run_cycle(self.state.snapshot(), self.pipeline, shares=self.shares, now=self.clock, rng=Random(1))
        self.state.apply_plan(plan, self.clock)
        for launch in self.state.drain_launches():
            self.state.node_heartbeat(launch.node_id, 1, [NodeStatus(launch.container_id, "RUNNING")], True, "",
                                      self.clock)


@pytest.fixture
def rm() -> FakeRM:
    fake = FakeRM()
    for name in ("n1", "n2"):
        fake.state.register_node(f"{name}:7040", f"{name}:8042", "", Resources.of(memory_mb=4096, vcores=4), [],
                                 fake.clock)
    return fake


@pytest.fixture
def client(rm: FakeRM) -> TestClient:
    return TestClient(build_app(rm))  # type: ignore[arg-type]


def remote(resp: Any, status: int, exception: str | None = None) -> str:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()["RemoteException"]
    assert set(body) == {"exception", "message", "javaClassName"}
    if exception:
        assert body["exception"] == exception
    return str(body["message"])


def submit(client: TestClient, command: str = "sleep 30", **extra: Any) -> str:
    app_id = client.post("/ws/v1/cluster/apps/new-application", headers={"Content-Type": "application/json"}
                         ).json()["application-id"]
    body = {"application-id": app_id, "application-name": "t", "am-container-spec": {
        "commands": {"command": command}}, "resource": {"memory": 512, "vCores": 1}, **extra}
    resp = client.post("/ws/v1/cluster/apps", json=body)
    assert resp.status_code == 202, resp.text
    assert resp.content == b""
    assert resp.headers["location"].endswith(f"/ws/v1/cluster/apps/{app_id}")
    return str(app_id)


def test_read_endpoints_have_yarns_shapes(client: TestClient) -> None:
    assert client.get("/cluster").status_code == 200
    info = client.get("/ws/v1/cluster").json()["clusterInfo"]
    assert info == client.get("/ws/v1/cluster/info").json()["clusterInfo"]
    assert (info["state"], info["haState"], info["id"]) == ("STARTED", "ACTIVE", TS)
    m = client.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]
    for key in ("appsSubmitted", "appsCompleted", "appsPending", "appsRunning", "appsFailed", "appsKilled",
                "reservedMB", "availableMB", "allocatedMB", "totalMB", "reservedVirtualCores",
                "availableVirtualCores", "allocatedVirtualCores", "totalVirtualCores", "containersAllocated",
                "containersReserved", "containersPending", "totalNodes", "activeNodes", "lostNodes",
                "unhealthyNodes", "decommissioningNodes", "decommissionedNodes", "rebootedNodes", "shutdownNodes"):
        assert isinstance(m[key], int), key
    assert (m["totalMB"], m["activeNodes"]) == (8192, 2)
    root = client.get("/ws/v1/cluster/scheduler").json()["scheduler"]["schedulerInfo"]
    assert (root["type"], root["queueName"]) == ("capacityScheduler", "root")
    leaves = {q["queueName"]: q for q in root["queues"]["queue"]}
    assert leaves["batch"]["absoluteMaxCapacity"] == 50
    assert leaves["batch"]["type"] == "capacitySchedulerLeafQueueInfo"
    assert leaves["batch"]["capacities"]["queueCapacitiesByPartition"][0]["partitionName"] == ""
    nodes = client.get("/ws/v1/cluster/nodes", params={"states": "running,new"}).json()["nodes"]["node"]
    assert [n["id"] for n in nodes] == ["n1:7040", "n2:7040"]
    assert client.get("/ws/v1/cluster/nodes", params={"states": "LOST"}).json() == {"nodes": {"node": []}}
    assert client.get("/ws/v1/cluster/nodes/n1:7040").json()["node"]["totalResource"] == {"memory": 4096,
                                                                                         "vCores": 4}
    assert client.get("/ws/v1/cluster/apps").json() == {"apps": {"app": []}}
    remote(client.get("/ws/v1/cluster/nodes/nope:1"), 404, "NotFoundException")
    assert "Invalid node state BOGUS" in remote(client.get("/ws/v1/cluster/nodes?states=BOGUS"), 400)


def test_submit_runs_the_command_as_the_am(rm: FakeRM, client: TestClient) -> None:
    app_id = submit(client, "cat in.txt; echo $GREETING", **{
        "application-tags": {"tag": ["Nightly", "etl"]}, "application-type": "SPARK", "priority": 3,
        "max-app-attempts": 1})
    body = client.get(f"/ws/v1/cluster/apps/{app_id}").json()["app"]
    assert (body["state"], body["finalStatus"], body["trackingUI"]) == ("ACCEPTED", "UNDEFINED", "UNASSIGNED")
    assert (body["applicationType"], body["applicationTags"], body["priority"]) == ("SPARK", "nightly,etl", 3)
    assert body["resourceRequests"][0]["capability"] == {"memory": 512, "vCores": 1}
    rm.cycle()
    app = rm.state.apps[app_id]  # type: ignore[index]
    assert app.am_launch["commands"] == ["cat in.txt; echo $GREETING"]
    assert client.get(f"/ws/v1/cluster/apps/{app_id}/state").json() == {"state": "RUNNING"}
    attempt = client.get(f"/ws/v1/cluster/apps/{app_id}/appattempts").json()["appAttempts"]["appAttempt"][0]
    assert (attempt["id"], attempt["appAttemptState"]) == (1, "LAUNCHED")
    assert attempt["containerId"].startswith("container_")
    assert client.post("/ws/v1/cluster/apps", json={"application-id": app_id, "am-container-spec": {
        "commands": {"command": "x"}}}).status_code == 202  # a resubmission is a no-op success


def test_bad_input_is_a_4xx_remote_exception_and_changes_nothing(rm: FakeRM, client: TestClient) -> None:
    app_id = submit(client)
    rm.cycle()
    before = client.get("/ws/v1/cluster/apps").json()
    metrics_before = client.get("/ws/v1/cluster/metrics").json()
    rm.state.drain_records()  # what the cycle changed
    rm.stored.clear()
    new_id = client.post("/ws/v1/cluster/apps/new-application").json()["application-id"]
    spec = {"commands": {"command": "sleep 1"}}
    bad_submits: list[tuple[Any, str]] = [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ({"am-container-spec": spec}, "application-id is required"),
        ({"application-id": new_id}, "am-container-spec is required"),
        ({"application-id": new_id, "am-container-spec": {"commands": {}}}, "commands"),
        ({"application-id": new_id, "am-container-spec": spec, "queue": "nope"}, "unknown queue"),
        ({"application-id": new_id, "am-container-spec": spec, "queue": "root"}, "not a leaf"),
        ({"application-id": new_id, "am-container-spec": spec, "priority": "high"}, "priority"),
        ({"application-id": new_id, "am-container-spec": spec, "resource": {"memory": 99999, "vCores": 1}},
         "maximum allocation"),
        ({"application-id": "application_1_0001", "am-container-spec": spec}, "not handed out"),
        ({"application-id": "bogus", "am-container-spec": spec}, "Invalid ApplicationId"),
        ({"application-id": new_id, "am-container-spec": {**spec, "local-resources": {"entry": [
            {"key": "f", "value": {"resource": "hdfs://nn/f", "type": "FILE"}}]}}}, "file://"),
        ({"application-id": new_id, "am-container-spec": {**spec, "environment": {"entry": [
            {"key": "BAD NAME", "value": "1"}]}}}, "environment variable"),
    ]
    for body, message in bad_submits:
        kwargs: dict[str, Any] = {"content": body} if isinstance(body, str) else {"json": body}
        resp = client.post("/ws/v1/cluster/apps", headers={"Content-Type": "application/json"}, **kwargs)
        assert message in remote(resp, 400), body
    remote(client.get("/ws/v1/cluster/apps/application_1700000000000_0999"), 404, "NotFoundException")
    remote(client.get("/ws/v1/cluster/apps/application_bogus"), 400)
    assert "Invalid application-state RUNNNG" in remote(client.get("/ws/v1/cluster/apps?states=RUNNNG"), 400)
    for query in ("limit=0", "limit=ten", "startedTimeBegin=-1", "startedTimeBegin=9&startedTimeEnd=1",
                  "finalStatus=MAYBE", "queue=nope", "deSelects=everything"):
        remote(client.get(f"/ws/v1/cluster/apps?{query}"), 400)
    for body in ({"state": "FINISHED"}, {"state": "bogus"}, {}):
        remote(client.put(f"/ws/v1/cluster/apps/{app_id}/state", json=body), 400)
    remote(client.put(f"/ws/v1/cluster/apps/{app_id}/queue", json={"queue": "nope"}), 400)
    remote(client.put(f"/ws/v1/cluster/apps/{app_id}/priority", json={"priority": "x"}), 400)
    remote(client.put(f"/ws/v1/cluster/apps/{app_id}/timeout", json={"timeout": {"type": "LIFETIME",
                                                                                "expiryTime": "2001-01-01"}}), 400)
    remote(client.get(f"/ws/v1/cluster/apps/{app_id}/timeouts/WALLCLOCK"), 400)
    remote(client.get("/ws/v1/cluster/no/such/path"), 404, "NotFoundException")
    remote(client.delete("/ws/v1/cluster/apps"), 405)
    after = client.get("/ws/v1/cluster/apps").json()
    for b, a in zip(before["apps"]["app"], after["apps"]["app"], strict=True):
        assert {k: v for k, v in b.items() if k != "elapsedTime"} == {k: v for k, v in a.items()
                                                                      if k != "elapsedTime"}
    assert client.get("/ws/v1/cluster/metrics").json() == metrics_before
    assert [type(r).__name__ for r in rm.stored] == ["MetaRecord"]  # only the new-application id


def test_kill_move_priority_and_lifetime(rm: FakeRM, client: TestClient) -> None:
    app_id = submit(client)
    rm.cycle()
    url = f"/ws/v1/cluster/apps/{app_id}"
    assert client.put(f"{url}/queue", json={"queue": "batch"}).json() == {"queue": "root.batch"}
    assert client.get(f"{url}/queue").json() == {"queue": "root.batch"}
    assert client.put(f"{url}/priority", json={"priority": 4}).json() == {"priority": 4}
    assert client.put(f"{url}/priority", json={"priority": 99}).json() == {"priority": 10}  # capped
    t = client.get(f"{url}/timeouts").json()["timeouts"]["timeout"]
    assert t == [{"type": "LIFETIME", "expiryTime": "UNLIMITED", "remainingTimeInSeconds": -1}]
    for expiry in ("2099-01-01T00:00:00.000+0000", "2099-01-01T05:30:00.000+05:30"):
        got = client.put(f"{url}/timeout", json={"timeout": {"type": "LIFETIME", "expiryTime": expiry}}).json()
        assert got["timeout"]["expiryTime"] == "2099-01-01T00:00:00.000+0000"
    assert client.get(f"{url}/timeouts/LIFETIME").json()["timeout"]["remainingTimeInSeconds"] > 0
    assert client.put(f"{url}/state", json={"state": "KILLED"}).json() == {"state": "KILLED"}
    assert client.put(f"{url}/state", json={"state": "KILLED"}).json() == {"state": "KILLED"}
    app = client.get(url).json()["app"]
    assert (app["state"], app["finalStatus"], app["allocatedMB"]) == ("KILLED", "KILLED", -1)
    assert "resourceRequests" not in client.get(f"{url[:-len(app_id) - 1]}?deSelects=resourceRequests"
                                                ).json()["apps"]["app"][0]
    remote(client.put(f"{url}/queue", json={"queue": "default"}), 400)
    # killing an app that has ended is answered with its state and changes nothing, as YARN does
    done = submit(client)
    rm.cycle()
    st = rm.state
    att = st.apps[done].current  # type: ignore[index]
    assert att is not None
    node = att.node_id or ""
    st.node_heartbeat(node, 5, [NodeStatus(att.am_container_id or "", "COMPLETE", 0)], True, "", rm.clock)
    # its end is reported once the store holds it (YARN's FINAL_SAVING); until then, as it was before
    assert client.get(f"/ws/v1/cluster/apps/{done}/state").json() == {"state": "RUNNING"}
    listed = {a["id"]: a["state"] for a in client.get("/ws/v1/cluster/apps").json()["apps"]["app"]}
    assert listed[done] == "RUNNING"  # the list too, and it keeps no report of the end it may not tell yet
    records = rm.state.drain_records()  # the heartbeat's changes, as the RM would have stored them
    rm.stored += records
    rm.state.stored(records)
    assert client.get(f"/ws/v1/cluster/apps/{done}/state").json() == {"state": "FINISHED"}
    listed = {a["id"]: a["state"] for a in client.get("/ws/v1/cluster/apps").json()["apps"]["app"]}
    assert listed[done] == "FINISHED"
    stored = len(rm.stored)
    resp = client.put(f"/ws/v1/cluster/apps/{done}/state", json={"state": "KILLED"})
    assert (resp.status_code, resp.json()) == (200, {"state": "FINISHED"})
    assert client.get(f"/ws/v1/cluster/apps/{done}").json()["app"]["finalStatus"] == "SUCCEEDED"
    assert len(rm.stored) == stored


def test_app_filters(rm: FakeRM, client: TestClient) -> None:
    a = submit(client, **{"application-type": "SPARK", "application-tags": {"tag": "x"}})
    rm.clock += 10
    b = submit(client, queue="batch")
    rm.cycle()
    client.put(f"/ws/v1/cluster/apps/{a}/state", json={"state": "KILLED"})

    def ids(**params: Any) -> list[str]:
        return [x["id"] for x in client.get("/ws/v1/cluster/apps", params=params).json()["apps"]["app"]]

    assert ids() == [a, b]
    assert ids(states="killed") == [a]
    assert ids(state="RUNNING") == [b]
    assert ids(finalStatus="KILLED") == [a]
    assert ids(queue="batch") == [b]
    assert ids(queue="default") == []  # only unfinished apps are listed by queue
    assert ids(applicationTypes="spark,YARN") == [a, b]
    assert ids(applicationTypes="spark") == [a]
    assert ids(applicationTags="X,y") == [a]
    assert ids(limit=1) == [a]
    assert ids(user="dr.who") == [a, b]
    assert ids(user="nobody") == []
    started_b = client.get(f"/ws/v1/cluster/apps/{b}").json()["app"]["startedTime"]
    assert ids(startedTimeBegin=started_b) == [b]
    assert ids(startedTimeEnd=started_b - 1) == [a]
    assert ids(finishedTimeBegin=0) == [a]
    stats = client.get("/ws/v1/cluster/appstatistics").json()["appStatInfo"]["statItem"]
    assert {s["state"]: s["count"] for s in stats}["KILLED"] == 1


def test_the_app_list_keeps_ended_reports_only_while_they_hold(rm: FakeRM, client: TestClient) -> None:
    """The list encodes an ended app's report once and reuses it; a change the ledger records after its end
    (here a priority change, which YARN allows only while an app runs, so made on the ledger) is shown at once,
    and apps submitted later are listed after it."""
    a = submit(client)
    client.put(f"/ws/v1/cluster/apps/{a}/state", json={"state": "KILLED"})

    def listed() -> list[dict[str, Any]]:
        return list(client.get("/ws/v1/cluster/apps").json()["apps"]["app"])

    first = listed()
    assert [x["id"] for x in first] == [a]
    assert listed() == first  # from the kept report
    app = rm.state.apps[a]  # type: ignore[index]
    app.priority = 7
    rm.state._touch_app(app)  # what every change of the ledger does
    assert listed()[0]["priority"] == 7
    rm.clock += 5
    b = submit(client)
    assert [x["id"] for x in listed()] == [a, b]
    before = listed()[1]["elapsedTime"]
    rm.clock += 5
    assert listed()[1]["elapsedTime"] == before + 5000  # a live app's report is made anew at every answer


def test_explain_and_diagnostics(rm: FakeRM, client: TestClient) -> None:
    first = submit(client, queue="batch")
    rm.cycle()
    second = submit(client, queue="batch", resource={"memory": 3800, "vCores": 1})
    rm.cycle()
    e = client.get(f"/ws/v1/shepherd/apps/{second}/explain").json()["explanation"]
    assert e["reason"] == "QUEUE_AT_MAX_CAPACITY"
    assert e["numbers"]["queue"] == "root.batch"
    assert e["numbers"]["max"]["memory-mb"] == 4096
    assert e["positionInQueue"] == 1
    diag = client.get(f"/ws/v1/cluster/apps/{second}").json()["app"]["diagnostics"]
    assert diag.startswith("[QUEUE_AT_MAX_CAPACITY]")
    assert client.get(f"/ws/v1/shepherd/apps/{first}/explain").json()["explanation"]["reason"] == "NOT_WAITING"
    remote(client.get("/ws/v1/shepherd/apps/application_1700000000000_0099/explain"), 404)


def test_writes_need_the_client_secret_when_one_is_set() -> None:
    rm = FakeRM(client_secret="s3cret")
    client = TestClient(build_app(rm))  # type: ignore[arg-type]
    remote(client.post("/ws/v1/cluster/apps/new-application"), 401, "AuthorizationException")
    remote(client.post("/ws/v1/cluster/apps/new-application", headers={"Authorization": "Bearer nope"}), 403)
    ok = client.post("/ws/v1/cluster/apps/new-application", headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200
    assert client.get("/ws/v1/cluster/apps").status_code == 200  # reads stay open


def test_prometheus_metrics_carry_every_queue(rm: FakeRM, client: TestClient) -> None:
    submit(client, queue="batch")
    rm.cycle()
    text = client.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    allocated = {s.labels["queue"]: s.value for s in families["shepherd_queue_allocated_memory_bytes"].samples}
    assert allocated == {"root": 512 * 2**20, "root.default": 0, "root.batch": 512 * 2**20}
    m = client.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]
    assert allocated["root"] == m["allocatedMB"] * 2**20
    for name in ("shepherd_queue_apps_submitted", "shepherd_queue_apps_pending", "shepherd_queue_apps_running",
                 "shepherd_queue_pending_memory_bytes", "shepherd_queue_available_vcores",
                 "shepherd_queue_reserved_memory_bytes", "shepherd_queue_pending_containers", "shepherd_nodes",
                 "shepherd_scheduling_cycle_seconds", "shepherd_node_heartbeat_seconds",
                 "shepherd_store_write_seconds", "shepherd_store_write_records", "shepherd_queue_wait_seconds", "shepherd_event_loop_lag_seconds", "shepherd_size_apps",
                 "shepherd_sampling_pilot_containers", "shepherd_sampling_ratio",
                 "shepherd_sampling_gate_wait_seconds", "shepherd_size_relative_error"):
        assert name in families, name
    active = {s.labels["state"]: s.value for s in families["shepherd_nodes"].samples}
    assert active["running"] == 2


def test_the_metrics_mapping_documents_every_family_and_the_yarn_names(rm: FakeRM, client: TestClient) -> None:
    """docs/metrics.md names each family the RM exports, and maps YARN's familiar names to families it has."""
    from pathlib import Path

    submit(client, queue="batch")
    rm.cycle()
    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    rows: dict[str, str] = {}  # family -> its YARN name column
    for line in doc.splitlines():
        cells = line.split("|")
        if line.startswith("| `shepherd_") and len(cells) > 5:
            rows.update({name: cells[4] for name in re.findall(r"`(shepherd_\w+)`", cells[1])})
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)
                if f.name.startswith("shepherd_") and not f.name.endswith("_created")}
    undocumented = {name for name, f in families.items()
                    if name not in rows and f"{name}_total" not in rows}
    assert not undocumented, undocumented
    for yarn, family in (("AllocatedMB", "shepherd_queue_allocated_memory_bytes"),
                         ("AvailableMB", "shepherd_queue_available_memory_bytes"),
                         ("PendingMB", "shepherd_queue_pending_memory_bytes"),
                         ("AllocatedVCores", "shepherd_queue_allocated_vcores"),
                         ("PendingContainers", "shepherd_queue_pending_containers"),
                         ("AppsPending", "shepherd_queue_apps_pending"),
                         ("AppsRunning", "shepherd_queue_apps_running"),
                         ("NumActiveNMs", "shepherd_nodes"), ("NumLostNMs", "shepherd_nodes"),
                         ("NumUnhealthyNMs", "shepherd_nodes")):
        assert re.search(rf"\b{yarn}\b", rows[family]), (yarn, family)
        assert family in families, family
    for family in ("shepherd_queue_allocated_memory_bytes", "shepherd_queue_available_memory_bytes",
                   "shepherd_queue_pending_memory_bytes", "shepherd_queue_allocated_vcores",
                   "shepherd_queue_available_vcores", "shepherd_queue_pending_vcores", "shepherd_queue_apps_pending",
                   "shepherd_queue_apps_running"):
        assert {s.labels.get("queue") for s in families[family].samples} >= {"root", "root.batch"}, family
    states = {s.labels["state"] for s in families["shepherd_nodes"].samples}
    assert {"running", "lost", "unhealthy"} <= states


def test_docs_work_without_internet(client: TestClient) -> None:
    html = client.get("/docs").text
    urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html) + re.findall(r"url: '([^']+)'", html)
    assert urls
    for url in urls:
        assert url.startswith("/"), url  # nothing from a CDN
        assert client.get(url).status_code == 200, url
    assert "openapi" in client.get("/openapi.json").json()
    redoc = client.get("/redoc").text
    assert "fonts.googleapis" not in redoc
    for url in re.findall(r"""src=["']([^"']+)["']""", redoc):
        assert url.startswith("/")
        assert client.get(url).status_code == 200


def test_the_openapi_document_lists_the_remote_exceptions_each_operation_answers(client: TestClient) -> None:
    """The document bench/fuzz_rest.py checks the RM against: FastAPI's 422 (never answered) replaced by the
    RemoteException statuses each operation can answer, and YARN's raw query filters declared."""
    doc = client.get("/openapi.json").json()
    assert "RemoteException" in doc["components"]["schemas"]
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    ref = {"$ref": "#/components/schemas/RemoteException"}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            codes = op["responses"]
            assert "422" not in codes, (method, path)
            if method != "get":  # writes: refused without or with wrong credentials, bad input, a busy store
                assert {"400", "401", "403", "409", "413", "503"} <= set(codes), (method, path)
            if "{" in path:
                assert "404" in codes, (method, path)
            for code, answer in codes.items():
                if code.startswith(("4", "5")):
                    assert answer["content"]["application/json"]["schema"] == ref, (method, path, code)
    apps = {p["name"] for p in doc["paths"]["/ws/v1/cluster/apps"]["get"]["parameters"]}
    assert {"states", "finalStatus", "queue", "limit", "startedTimeBegin", "deSelects"} <= apps
    # and the RM answers as documented: a bad filter is a 400 RemoteException, not a 422
    bad = client.get("/ws/v1/cluster/apps", params={"limit": "x"})
    assert bad.status_code == 400
    assert set(bad.json()["RemoteException"]) == {"exception", "message", "javaClassName"}
