"""SLO inference in the live RM (Morpheus §4–5), real RM and NodeManager processes on loopback.

The run history is seeded through the store API with past timestamps (daily runs of "nightly-report" with
declared inputs and outputs, the writes of its input and the reads of its output by other jobs); then the
REST proposals, accept (with overrides) into a periodic reservation, reject, the state after an RM restart,
bad requests, and the ``shepherd slo`` commands. A second test runs a real short job and finds its run and
its dataset accesses in the store, and attaches apps to a reservation over gRPC and Hadoop IPC. A third
submits apps of an accepted job over REST without a reservation id: they run inside its reservation unless
they name another queue."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from common.hadoop import records as ipc_records
from common.hadoop import tokens
from common.hadoop.client import IpcClient
from common.resources import Resources
from proto.hadoop import ipc_pb2 as ipc
from proto.hadoop import yarn_protocols_pb2 as yp
from proto.hadoop import yarn_records_pb2 as yr
from rm.client import RMClient
from rm.core.records import DatasetAccessRecord, JobRunRecord, Record
from rm.core.reservation.inference import percentile
from rm.core.reservation.requests import parse_reservation_id
from rm.local import LocalCluster
from rm.service.store import Store, default_sqlite_url
from tests.e2e.conftest import kill_strays, sleep_job, submit_job, wait_final, wait_until, write_job

SLO = "/ws/v1/shepherd/slo-proposals"
RES = "/ws/v1/cluster/reservation"
DAY = 86_400
HOUR = 3600
SKYLINES = [(2, 2, 4, 4, 2), (2, 3, 4, 4, 2), (2, 2, 4, 5, 2), (2, 2, 4, 4, 1), (2, 2, 4, 4, 2)]
UNIT = {"memory-mb": 512, "vcores": 1}
TODAY = math.floor(time.time() / DAY) * DAY


def store_url(cluster_dir: Path) -> str:
    return default_sqlite_url(cluster_dir / "rm")  # where LocalCluster's RM keeps its SQLite store


def write(cluster_dir: Path, records: list[Record]) -> None:
    store = Store(store_url(cluster_dir))
    try:
        store.migrate()
        store.write(records)
    finally:
        store.close()


def run(job: str, n: int, submit: float, *, minutes: int = 5, skyline: tuple[float, ...] = (1.0,),
        inputs: tuple[str, ...] = (), outputs: tuple[str, ...] = (), ok: bool = True) -> JobRunRecord:
    return JobRunRecord(app_id=f"application_1000_{n:04d}", job=job, queue="root.default", user="etl",
                        submit_time=submit, start_time=submit + 30, finish_time=submit + 30 + minutes * 60,
                        succeeded=ok, skyline=skyline, unit=UNIT, step_s=60, inputs=inputs, outputs=outputs)


def access(app_id: str, kind: str, path: str, t: float) -> DatasetAccessRecord:
    return DatasetAccessRecord(f"{app_id} {kind} {path}", path, kind, t, app_id)


def history() -> tuple[list[Record], float, float]:
    """Five daily runs of nightly-report at 02:00 (+ jitter) over the last five days: its input written at
    01:00 and its output read at 06:00 by other jobs. Also an hourly job whose output nobody reads, a job
    with two runs and one that is not periodic. Returns the records, the expected earliest start and deadline."""
    out: list[Record] = []
    writes, reads = [], []
    for d in range(5):
        day = TODAY - (5 - d) * DAY
        jitter = (d % 3) * 60
        r = run("nightly-report", d + 1, day + 2 * HOUR + jitter, skyline=tuple(float(x) for x in SKYLINES[d]),
                inputs=("/warehouse/events",), outputs=("/reports/nightly",))
        out.append(r)
        out.append(access(r.app_id, "read", "/warehouse/events", r.start_time))
        out.append(access(r.app_id, "write", "/reports/nightly", r.finish_time))
        out.append(access(f"application_1000_{100 + d:04d}", "write", "/warehouse/events", day + HOUR + jitter))
        out.append(access(f"application_1000_{200 + d:04d}", "read", "/reports/nightly", day + 6 * HOUR + jitter))
        writes.append(HOUR + jitter)
        reads.append(6 * HOUR + jitter)
    for h in range(4):
        out.append(run("hourly-sync", 300 + h, TODAY - DAY + h * HOUR + 120, minutes=2, skyline=(1.0, 1.0),
                       outputs=("/sync/out",)))
    out += [run("adhoc", 400 + i, TODAY - DAY + i * 999) for i in range(2)]
    out += [run("erratic", 500 + i, TODAY - DAY + t) for i, t in enumerate((0, 100, 1000, 1900, 4000))]
    return out, percentile(writes, 95), percentile(reads, 50)


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[tuple[LocalCluster, float, float]]:
    records, earliest, deadline = history()
    write(tmp_path / "cluster", records)
    c = LocalCluster(tmp_path / "cluster", allow_root_containers=True,
                     nodes=1, grpc_port=0, rest_port=0, ipc_client_port=-1,
                     ipc_scheduler_port=-1, node_memory_mb=4096, node_vcores=4)
    c.start()
    try:
        yield c, earliest, deadline
    finally:
        c.stop()
        kill_strays(tmp_path)


def writer(cluster: LocalCluster) -> dict[str, str]:
    return {"Authorization": f"Bearer {cluster.client_secret}"}


def remote(resp: httpx.Response, status: int, exception: str = "") -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()["RemoteException"]
    assert set(body) == {"exception", "message", "javaClassName"}
    if exception:
        assert body["exception"] == exception
    return str(body["message"])


def proposals(http: httpx.Client, **params: str) -> dict[str, dict[str, Any]]:
    resp = http.get(SLO, params=params)
    assert resp.status_code == 200, resp.text
    return {p["job"]: p for p in resp.json()["sloProposals"]["sloProposal"]}


def show(http: httpx.Client, job: str) -> dict[str, Any]:
    resp = http.get(f"{SLO}/{job}")
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()["sloProposal"]
    return out


def reservations(http: httpx.Client) -> list[dict[str, Any]]:
    resp = http.get(f"{RES}/list", params={"queue": "default"})
    assert resp.status_code == 200, resp.text
    listed = resp.json()["reservations"]
    return [] if listed is None else [listed] if isinstance(listed, dict) else list(listed)


def cli(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rm.cli", "slo", *args, "--rest", cluster.rest_url],
                          capture_output=True, text=True, timeout=120, check=False)


def test_proposals_accept_reject_restart_and_bad_requests(seeded: tuple[LocalCluster, float, float],
                                                          tmp_path: Path) -> None:
    cluster, earliest, deadline = seeded
    with httpx.Client(base_url=cluster.rest_url, timeout=120.0, headers=writer(cluster)) as http:
        listed = proposals(http)
        assert sorted(listed) == ["hourly-sync", "nightly-report"]  # adhoc: 2 runs; erratic: no period
        p = show(http, "nightly-report")
        assert p == listed["nightly-report"]
        assert (p["status"], p["period"], p["runs"], p["queue"], p["user"]) == ("proposed", DAY, 5, "root.default",
                                                                                 "etl")
        assert p["earliestStart"] == pytest.approx(earliest, abs=1e-3)  # p95 of the input writes
        assert p["deadline"] == pytest.approx(deadline, abs=1e-3)  # p50 of the output reads
        assert p["actionable"]
        assert p["reasons"] == []
        assert len(p["skyline"]) == 5
        assert max(p["skyline"]) >= 4
        assert p["unit"] == UNIT
        assert p["step"] == 60
        assert p["basedOn"] == "application_1000_0005"
        assert p["reservationId"] == ""
        assert p["decision"] is None
        nxt = p["nextInstance"]
        assert nxt["deadline"] > time.time() * 1000
        assert (nxt["deadline"] - nxt["arrival"]) < DAY * 1000
        hourly = listed["hourly-sync"]
        assert hourly["period"] == HOUR
        assert not hourly["actionable"]
        assert any("never read" in r for r in hourly["reasons"])

        # bad requests: a YARN RemoteException, and nothing changes
        assert "no runs" in remote(http.get(f"{SLO}/nosuch"), 404, "NotFoundException")
        assert "no runs" in remote(http.post(f"{SLO}/nosuch/accept"), 404)
        assert "at least 3" in remote(http.get(f"{SLO}/adhoc"), 409, "ConflictException")
        assert "not periodic" in remote(http.post(f"{SLO}/erratic/reject"), 409)
        bad_bodies: list[tuple[bytes | dict[str, Any], str]] = [
            (b"{not json", "not valid JSON"), (b"[1]", "JSON object"), ({"deadlin": 1}, "unknown field"),
            ({"deadline": "7h"}, "number of seconds"), ({"deadline": 100}, "after the earliest start"),
            ({"period": 61}, "plan steps"), ({"queue": "nosuch"}, "not managed by reservation system"),
            ({"skyline": [0]}, "at least one"),
        ]
        for body, why in bad_bodies:
            resp = http.post(f"{SLO}/nightly-report/accept", content=body) if isinstance(body, bytes) else \
                http.post(f"{SLO}/nightly-report/accept", json=body)
            assert why in remote(resp, 400), body
        assert "not actionable" in remote(http.post(f"{SLO}/hourly-sync/accept"), 409)
        assert "takes no fields" in remote(http.post(f"{SLO}/hourly-sync/reject", json={"why": "x"}), 400)
        assert "Invalid status" in remote(http.get(SLO, params={"status": "done"}), 400)
        assert reservations(http) == []
        assert {j: q["status"] for j, q in proposals(http).items()} == {"hourly-sync": "proposed",
                                                                        "nightly-report": "proposed"}
        new_id = http.post(f"{RES}/new-reservation").json()["reservation-id"]  # the id counter did not move

        # sign off with a later deadline: a periodic reservation, listed by YARN's reservation API
        resp = http.post(f"{SLO}/nightly-report/accept", json={"deadline": 7 * HOUR},
                         params={"user.name": "alice"})
        assert resp.status_code == 200, resp.text
        rid = resp.json()["reservation-id"]
        assert parse_reservation_id(rid)[1] == parse_reservation_id(new_id)[1] + 1
        accepted = resp.json()["sloProposal"]
        assert (accepted["status"], accepted["reservationId"], accepted["deadline"]) == ("accepted", rid,
                                                                                         pytest.approx(deadline))
        assert accepted["decision"]["overrides"] == {"deadline": 7 * HOUR}
        assert accepted["decision"]["user"] == "alice"
        (res,) = reservations(http)
        assert res["reservation-id"] == rid
        assert res["user"] == "alice"
        d = res["reservation-definition"]
        assert d["recurrence-expression"] == str(DAY * 1000)
        assert d["reservation-name"] == "nightly-report"
        assert int(d["deadline"]) % (DAY * 1000) == 7 * HOUR * 1000
        assert int(d["arrival"]) % (DAY * 1000) == math.floor(earliest / 60) * 60 * 1000
        assert d["reservation-requests"]["reservation-request-interpreter"] == "3"  # R_ORDER_NO_GAP
        assert "already accepted" in remote(http.post(f"{SLO}/nightly-report/accept"), 409)
        assert "already accepted" in remote(http.post(f"{SLO}/nightly-report/reject"), 409)

        resp = http.post(f"{SLO}/hourly-sync/reject")
        assert resp.status_code == 200, resp.text
        assert resp.json()["sloProposal"]["status"] == "rejected"
        assert sorted(proposals(http, status="rejected")) == ["hourly-sync"]
        assert sorted(proposals(http, status="accepted,proposed")) == ["nightly-report"]

    cluster.restart_rm()
    with httpx.Client(base_url=cluster.rest_url, timeout=120.0, headers=writer(cluster)) as http:
        after = proposals(http)
        assert (after["nightly-report"]["status"], after["nightly-report"]["reservationId"]) == ("accepted", rid)
        assert after["hourly-sync"]["status"] == "rejected"
        assert [r["reservation-id"] for r in reservations(http)] == [rid]

        # a new run of the rejected job makes it a proposal again
        write(tmp_path / "cluster", [run("hourly-sync", 304, TODAY - DAY + 4 * HOUR + 120, minutes=2,
                                         skyline=(1.0, 1.0), outputs=("/sync/out",))])
        again = show(http, "hourly-sync")
        assert (again["status"], again["runs"], again["basedOn"]) == ("proposed", 5, "application_1000_0304")
        assert again["decision"]["status"] == "rejected"  # the old decision stays visible

        # the command line: list, show, reject, accept after the reservation was deleted
        out = cli(cluster, "list", "-o", "json")
        assert out.returncode == 0, out.stderr
        assert {p["job"]: p["status"] for p in json.loads(out.stdout)} == {"hourly-sync": "proposed",
                                                                           "nightly-report": "accepted"}
        out = cli(cluster, "list")
        assert out.returncode == 0, out.stderr
        assert "nightly-report" in out.stdout
        assert "1d" in out.stdout
        out = cli(cluster, "show", "nightly-report", "-o", "yaml")
        assert out.returncode == 0, out.stderr
        assert yaml.safe_load(out.stdout)["reservationId"] == rid
        out = cli(cluster, "show", "adhoc")
        assert out.returncode == 2
        assert "at least 3" in out.stderr
        assert cli(cluster, "reject", "hourly-sync").returncode == 0
        assert show(http, "hourly-sync")["status"] == "rejected"
        assert http.post(f"{RES}/delete", json={"reservation-id": rid}).status_code == 200
        assert show(http, "nightly-report")["status"] == "proposed"  # its reservation is gone
        out = cli(cluster, "accept", "nightly-report", "--deadline", "06:30", "--earliest-start", "1h")
        assert out.returncode == 0, out.stderr
        (res,) = reservations(http)
        assert res["reservation-id"] in out.stdout
        assert int(res["reservation-definition"]["deadline"]) % (DAY * 1000) == (6 * HOUR + 1800) * 1000
        assert int(res["reservation-definition"]["arrival"]) % (DAY * 1000) == HOUR * 1000
        out = cli(cluster, "accept", "nightly-report", "--period", "2d")
        assert out.returncode == 2
        assert "already accepted" in out.stderr


def etl_token(cluster: LocalCluster) -> ipc.Token:
    """An RM delegation token for user etl, as the RM issues to a holder of the client secret."""
    return tokens.issue_rm_delegation(cluster.client_secret, "etl", cluster.ipc_client_address,
                                      now_ms=int(time.time() * 1000))


def ipc_submit(address: str, ctx: yr.ApplicationSubmissionContext, token: ipc.Token) -> None:
    host, _, port = address.rpartition(":")

    async def go() -> None:
        async with IpcClient(host, int(port), "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB",
                             user="etl", token=token) as c:
            await c.call("submitApplication", yp.SubmitApplicationRequest(application_submission_context=ctx),
                         yp.SubmitApplicationResponse)

    asyncio.run(go())


def ipc_new_app(address: str, token: ipc.Token) -> yr.ApplicationId:
    host, _, port = address.rpartition(":")

    async def go() -> yr.ApplicationId:
        async with IpcClient(host, int(port), "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB",
                             user="etl", token=token) as c:
            resp = await c.call("getNewApplication", yp.GetNewApplicationRequest(), yp.GetNewApplicationResponse)
            return resp.application_id

    return asyncio.run(go())


def test_a_finished_job_leaves_its_run_and_dataset_accesses(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "cluster", allow_root_containers=True,
                           nodes=1, grpc_port=0, rest_port=0, ipc_client_port=0,
                           ipc_scheduler_port=-1, node_memory_mb=4096, node_vcores=4)
    cluster.start()
    try:
        with httpx.Client(base_url=cluster.rest_url, timeout=30.0, headers=writer(cluster)) as http, RMClient(cluster.rm_address) as rm:
            wait_until(lambda: http.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]["activeNodes"] == 1,
                       30, "the NodeManager to register")
            # a reservation to run in (an hour from now, one container for ten minutes)
            rid = http.post(f"{RES}/new-reservation").json()["reservation-id"]
            arrival = (math.floor(time.time() / 60) + 60) * 60_000
            resp = http.post(f"{RES}/submit", json={"queue": "default", "reservation-id": rid,
                                                    "reservation-definition": {
                "arrival": arrival, "deadline": arrival + HOUR * 1000, "reservation-requests": {
                    "reservation-request-interpreter": 1, "reservation-request": [{
                        "capability": {"memory": 512, "vCores": 1}, "num-containers": 1, "duration": 600_000}]}}})
            assert resp.status_code == 200, resp.text

            job = sleep_job("daily-etl", 1, 2, inputs=["/lake/raw events"], outputs=["/lake/Clean"])
            path = write_job(tmp_path, job)
            app_id = submit_job(cluster, path, tmp_path / "out")
            report = wait_final(rm, app_id)
            assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED"), report.diagnostics
            attached = subprocess.run(
                [sys.executable, "-m", "rm.cli", "submit", str(path), "--rm", cluster.rm_address, "--data-dir",
                 str(tmp_path / "out"), "--reservation", rid], capture_output=True, text=True, timeout=60,
                check=True).stdout.split()[1]
            bad = subprocess.run(
                [sys.executable, "-m", "rm.cli", "submit", str(path), "--rm", cluster.rm_address, "--data-dir",
                 str(tmp_path / "out"), "--reservation", "reservation_1_9999"], capture_output=True, text=True,
                timeout=60, check=False)
            assert bad.returncode == 2
            assert "unknown" in bad.stderr

            new = ipc_new_app(cluster.ipc_client_address, etl_token(cluster))
            ipc_submit(cluster.ipc_client_address, yr.ApplicationSubmissionContext(
                application_id=new, application_name="spark-etl", application_type="SPARK",
                am_container_spec=yr.ContainerLaunchContext(command=["sleep", "1"]),
                resource=ipc_records.resource_pb(Resources.of(memory_mb=256, vcores=1)),
                application_tags=["shepherd.inputs=/lake/Clean,/lake/dims", "shepherd.outputs=/lake/marts"],
                reservation_id=yr.ReservationId(cluster_timestamp=parse_reservation_id(rid)[0],
                                                id=parse_reservation_id(rid)[1])), etl_token(cluster))
            via_ipc = ipc_records.app_id_str(new)
            wait_until(lambda: rm.app(via_ipc).state in ("RUNNING", "FINISHED"), 60, "the IPC app to run")

        store = Store(store_url(tmp_path / "cluster"))
        try:
            def finished() -> list[JobRunRecord]:
                return store.job_runs("daily-etl")

            (run_rec,) = [r for r in wait_until(finished, 30, "the run record") if r.app_id == app_id]
            assert run_rec.succeeded
            assert run_rec.queue == "root.default"
            assert run_rec.inputs == ("/lake/raw events",)
            assert run_rec.outputs == ("/lake/Clean",)
            assert run_rec.skyline, run_rec
            assert all(x > 0 for x in run_rec.skyline), run_rec
            assert run_rec.step_s == 60
            assert run_rec.unit == {"memory-mb": 128, "vcores": 1}
            assert run_rec.submit_time <= run_rec.start_time < run_rec.finish_time
            seen = [(a.app_id, a.kind, a.path) for a in store.dataset_accesses({"/lake/raw events", "/lake/Clean",
                                                                                 "/lake/dims", "/lake/marts"})]
            assert (app_id, "read", "/lake/raw events") in seen
            assert (app_id, "write", "/lake/Clean") in seen
            assert (via_ipc, "read", "/lake/Clean") in seen
            assert (via_ipc, "read", "/lake/dims") in seen
            apps = {a.app_id: a for a in store.load().apps}
            assert apps[attached].reservation_id == rid
            assert apps[via_ipc].reservation_id == rid
            assert apps[via_ipc].inputs == ("/lake/Clean", "/lake/dims")  # as declared, case kept
            assert apps[app_id].reservation_id == ""
        finally:
            store.close()
    finally:
        cluster.stop()
        kill_strays(tmp_path)


def test_apps_of_an_accepted_job_run_in_its_reservation_without_naming_it(tmp_path: Path) -> None:
    records, _, _ = history()
    write(tmp_path / "cluster", records)
    config = tmp_path / "rm.yaml"
    config.write_text(yaml.safe_dump({"queues": {"default": {"capacity": 50}, "batch": {"capacity": 50}}}))
    cluster = LocalCluster(tmp_path / "cluster", allow_root_containers=True,
                           nodes=1, grpc_port=0, rest_port=0, ipc_client_port=-1,
                           ipc_scheduler_port=-1, node_memory_mb=8192, node_vcores=16,
                           rm_args=["--config", str(config)])
    cluster.start()
    try:
        with httpx.Client(base_url=cluster.rest_url, timeout=120.0, headers=writer(cluster)) as http:
            wait_until(lambda: http.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]["activeNodes"] == 1,
                       30, "the NodeManager to register")
            resp = http.post(f"{SLO}/nightly-report/accept")
            assert resp.status_code == 200, resp.text
            rid = resp.json()["reservation-id"]

            def submit(name: str, **fields: str) -> str:
                app_id: str = http.post("/ws/v1/cluster/apps/new-application").json()["application-id"]
                resp = http.post("/ws/v1/cluster/apps", json={
                    "application-id": app_id, "application-name": name, "unmanaged-AM": True, **fields})
                assert resp.status_code == 202, resp.text
                return app_id

            # no queue and no reservation named: the job's reservation, in its queue
            plain = submit("nightly-report")
            in_default = submit("nightly-report", queue="default")
            elsewhere = submit("nightly-report", queue="batch")  # another queue, named: left outside
            other = submit("adhoc")
            queues = {a: http.get(f"/ws/v1/cluster/apps/{a}").json()["app"]["queue"]
                      for a in (plain, in_default, elsewhere, other)}
            assert queues == {plain: "root.default", in_default: "root.default", elsewhere: "root.batch",
                              other: "root.default"}

        store = Store(store_url(tmp_path / "cluster"))
        try:
            apps = {a.app_id: a for a in store.load().apps}
            (res,) = store.load().reservations
        finally:
            store.close()
        assert {a: apps[a].reservation_id for a in queues} == {plain: rid, in_default: rid, elsewhere: "",
                                                              other: ""}
        assert res.reservation_id == rid
        assert set(res.apps) == {plain, in_default}
    finally:
        cluster.stop()
        kill_strays(tmp_path)
