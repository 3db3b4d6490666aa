"""Reservations live (the morpheus pipeline): an ad-hoc job fills the cluster, an app submitted into a
reservation gets the reserved capacity back (the lender's newest containers are preempted, exit -102), and
the ad-hoc job keeps running on the rest. The lender's app report and the RM's Prometheus metrics show the
preemption."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from rm.local import LocalCluster
from tests.e2e.conftest import sleep_job, submit_job, wait_until, write_job

pytestmark = pytest.mark.slow

NODE_MB = 4096
RESERVED_MB = 2048
TASK_MB = 256  # the DAG AM's container is 256 MB too


def app(http: httpx.Client, app_id: str) -> dict[str, Any]:
    body: dict[str, Any] = http.get(f"/ws/v1/cluster/apps/{app_id}").json()["app"]
    return body


def test_reserved_app_gets_its_capacity_while_an_adhoc_job_fills_the_rest(
    make_cluster: Callable[..., LocalCluster], tmp_path: Path
) -> None:
    config = tmp_path / "rm.yaml"
    config.write_text(yaml.safe_dump({"shepherd.resourcemanager.scheduler": "morpheus",
                                      "queues": {"default": {"capacity": 100}}}))
    cluster = make_cluster(nodes=1, node_memory_mb=NODE_MB, node_vcores=32, rm_args=["--config", str(config)])
    with httpx.Client(base_url=cluster.rest_url, timeout=30.0,
                      headers={"Authorization": f"Bearer {cluster.client_secret}"}) as http:
        wait_until(lambda: http.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]["activeNodes"] == 1,
                   30, "the NodeManager to register")
        # an ad-hoc job that wants more than the whole node: it gets all of it while nothing is reserved
        adhoc = submit_job(cluster, write_job(tmp_path, sleep_job("adhoc", 300, tasks=30, memory_mb=TASK_MB)),
                           tmp_path / "client")
        wait_until(lambda: app(http, adhoc)["allocatedMB"] == NODE_MB, 60, "the ad-hoc job to fill the node")

        # a reservation for one 2 GB container, starting now, for ten minutes
        now_ms = int(time.time() * 1000)
        arrival = now_ms - now_ms % 60_000
        rid = http.post("/ws/v1/cluster/reservation/new-reservation").json()["reservation-id"]
        resp = http.post("/ws/v1/cluster/reservation/submit", json={
            "queue": "default", "reservation-id": rid, "reservation-definition": {
                "arrival": arrival, "deadline": arrival + 15 * 60_000, "reservation-name": "prod",
                "reservation-requests": {"reservation-request-interpreter": 1, "reservation-request": [
                    {"capability": {"memory": RESERVED_MB, "vCores": 1}, "num-containers": 1,
                     "min-concurrency": 1, "duration": 10 * 60_000}]}}})
        assert resp.status_code == 200, resp.text

        app_id = http.post("/ws/v1/cluster/apps/new-application").json()["application-id"]
        resp = http.post("/ws/v1/cluster/apps", json={
            "application-id": app_id, "application-name": "in-reservation", "queue": "default",
            "reservation-id": rid, "am-container-spec": {"commands": {"command": "sleep 300"}},
            "resource": {"memory": RESERVED_MB, "vCores": 1}})
        assert resp.status_code == 202, resp.text

        # the step may begin at the next minute boundary: allow for it
        wait_until(lambda: app(http, app_id)["state"] == "RUNNING", 90, "the reservation's app to run")
        reserved = app(http, app_id)
        assert reserved["allocatedMB"] == RESERVED_MB
        # the ad-hoc job lent the capacity, gave it back and keeps running on everything else
        wait_until(lambda: app(http, adhoc)["allocatedMB"] == NODE_MB - RESERVED_MB, 60,
                   "the ad-hoc job to fill the rest")
        lender = app(http, adhoc)
        assert lender["state"] == "RUNNING"  # its tasks were preempted (-102), not failed
        # YARN's app object: what preemption took (256 MB tasks until 2 GB were free)
        assert lender["numNonAMContainerPreempted"] * TASK_MB == lender["preemptedResourceMB"] >= RESERVED_MB
        assert lender["preemptedResourceVCores"] == lender["numNonAMContainerPreempted"]
        assert lender["numAMContainerPreempted"] == 0
        assert (reserved["preemptedResourceMB"], reserved["numNonAMContainerPreempted"]) == (0, 0)

        metrics = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for f in text_string_to_metric_families(http.get("/metrics").text) for s in f.samples}
        preempted = metrics[("shepherd_containers_preempted_total", (("reason", "RESERVATION_CAPACITY_LENT"),))]
        assert preempted == lender["numNonAMContainerPreempted"]
        assert metrics[("shepherd_queue_containers_preempted_total", (("queue", "root.default"),))] == preempted
        assert metrics[("shepherd_reservation_reclaims_total", ())] >= 1
        assert metrics[("shepherd_reservation_containers_placed_total", ())] >= 1  # the app's AM
        assert metrics[("shepherd_reservations", (("queue", "root.default"),))] == 1
        assert metrics[("shepherd_reservations_active", (("queue", "root.default"),))] == 1
