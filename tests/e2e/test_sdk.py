"""The Python SDK on a real cluster, synchronous and asynchronous: each plans a job, submits a small DAG and waits
for it with a progress callback (app and per-stage progress), reads a finished task's log, explains an app that
waits and kills it; the clients present the cluster's client secret as the CLI does (a wrong one is refused) and
find the cluster as the CLI does (addresses given, or a named cluster of the user config file)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rm.sdk import AsyncClient, Client, ClientError, JobPlan, WaitProgress
from tests.e2e.conftest import sleep_job, wait_until, write_job

pytestmark = pytest.mark.slow
WAITING = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED")


def dag(job_id: str) -> dict[str, Any]:
    """Two stages of two tasks, each writing two lines on stdout, then sleeping a little."""
    job = sleep_job(job_id, 1.5, tasks=2, stages=2)
    for stage in job["stages"]:
        stage["command"] = "echo start-{task}; echo hello-{task}; sleep 1.5"
    return job


def check_plan(plan: JobPlan) -> None:
    assert plan.status == "SUCCEEDED"
    assert plan.queue == "root.default"
    assert plan.am_container is not None
    assert plan.first_stage.name == "s0"
    assert sum(p.tasks for p in plan.first_stage.placements) == 2
    assert plan.predicted_start_time_ms is not None
    assert plan.predicted_finish_time_ms is not None
    assert plan.predicted_finish_time_ms > plan.predicted_start_time_ms
    assert plan.raw["job"] == plan.job


def check_progress(heard: list[WaitProgress]) -> None:
    """At least two distinct progress values, rising; a snapshot of both stages while they ran."""
    values = [p.progress for p in heard]
    assert len(set(values)) >= 2, values
    assert values == sorted(values)
    assert heard[-1].state == "FINISHED"
    assert any([s.name for s in p.stages] == ["s0", "s1"] and any(s.done > 0 or s.running for s in p.stages)
               and p.state == "RUNNING" for p in heard), heard
    final = {s.name: (s.done, s.tasks, s.state) for s in heard[-1].stages}
    assert final == {"s0": (2, 2, "SUCCEEDED"), "s1": (2, 2, "SUCCEEDED")}


def check_logs(files: list[Any], app_id: str) -> None:
    tasks = [f for f in files if not f.container_id.endswith("_000001")]  # the AM's is _000001
    assert len(tasks) == 4, files
    assert all(re.fullmatch(r"start-([01])\nhello-\1\n", f.text) for f in tasks), tasks
    assert all(f.file == "stdout" and f.container_id.startswith(f"container_{app_id[12:]}_") for f in tasks)


@pytest.mark.asyncio
async def test_the_sync_and_async_clients(make_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = make_cluster(nodes=1, node_memory_mb=4096, node_vcores=4)
    # the async client finds this cluster by name in the user config file, as `shepherd --cluster here` would
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"clusters": {"here": {"rm": cluster.rm_address, "rest": cluster.rest_url}}}))
    monkeypatch.setenv("SHEPHERD_CONFIG", str(config))
    for var in ("SHEPHERD_RM", "SHEPHERD_REST", "SHEPHERD_CLIENT_SECRET", "SHEPHERD_CREDENTIALS"):
        monkeypatch.delenv(var, raising=False)

    with Client(cluster.rm_address, cluster.rest_url) as rm:
        check_plan(rm.plan(write_job(tmp_path, dag("planned"))))
        heard: list[WaitProgress] = []
        app_id = rm.submit(write_job(tmp_path, dag("sync-dag")), data_dir=tmp_path)
        final = rm.wait(app_id, progress=heard.append, timeout=120, interval=0.2)
        assert final.succeeded, final
        check_progress(heard)
        check_logs(rm.logs(app_id), app_id)
        task = next(c for c in rm.containers(app_id) if c.container_id.endswith("_000002"))
        tailed = rm.logs(app_id, container=task.container_id, file="ALL", tail=1)
        assert [f.container_id for f in tailed] == [task.container_id] * len(tailed)
        # the DAG AM starts a first stage's tasks in an order drawn from the app id: the first container's task is
        # either of the two
        (out,) = [f.text for f in tailed if f.file == "stdout"]
        assert re.fullmatch(r"hello-[01]\n", out), out
        assert all(f.text == "" for f in tailed if f.file == "stderr")
        assert {a.app_id for a in rm.apps(states=["FINISHED"])} == {app_id}
        assert [n.state for n in rm.nodes()] == ["RUNNING"]

    async with AsyncClient(cluster="here") as arm:
        assert arm.address == cluster.rm_address
        check_plan(await arm.plan(write_job(tmp_path, dag("planned-too"))))
        heard = []
        async_id = await arm.submit(write_job(tmp_path, dag("async-dag")), data_dir=tmp_path)
        final = await arm.wait(async_id, progress=heard.append, timeout=120, interval=0.2)
        assert final.succeeded, final
        check_progress(heard)
        check_logs(await arm.logs(async_id), async_id)

        # a job that fills the node, then an app of each client that waits for room: explained, then killed
        with Client(cluster.rm_address, cluster.rest_url) as rm:
            blocker = rm.submit(write_job(tmp_path, sleep_job("blocker", 60, tasks=1, memory_mb=3840)),
                                data_dir=tmp_path)
            wait_until(lambda: any(not c.container_id.endswith("_000001") and c.state == "RUNNING"
                                   for c in rm.containers(blocker)), 60, "the blocker's task to run")
            waiting = rm.submit(write_job(tmp_path, sleep_job("waiter", 1, tasks=1)), data_dir=tmp_path)
            async_waiting = await arm.submit(write_job(tmp_path, sleep_job("waiter-too", 1, tasks=1)),
                                             data_dir=tmp_path)
            why = wait_until(lambda: (e := rm.explain(waiting)).reason != "NOT_YET_SCHEDULED" and e, 30,
                             "a scheduling cycle to pass over the waiter")
            assert why.state in WAITING
            assert why.reason not in ("NOT_WAITING", "APP_FINISHED")
            assert [a.am for a in why.asks] == [True]  # its AM container is what waits
            assert why.waiting_in_queue == 2
            assert why.position_in_queue == 1
            assert why.raw["reason"] == why.reason
            async_why = await arm.explain(async_waiting)
            assert async_why.state in WAITING
            assert async_why.position_in_queue == 2
            rm.kill(waiting)
            await arm.kill(async_waiting)
            for killed in (waiting, async_waiting):
                assert wait_until(lambda k=killed: rm.app(k).state == "KILLED", 30, f"{killed} to be killed")
            with pytest.raises(ClientError) as refused:
                await arm.kill(waiting)
            assert refused.value.code == "FAILED_PRECONDITION"
            assert "already finished" in refused.value.message
            rm.kill(blocker)

        # the client secret was found on its own; a wrong one is refused, over gRPC and over REST
        async with AsyncClient(cluster.rm_address, cluster.rest_url, secret="not-the-secret") as wrong:
            with pytest.raises(ClientError) as denied:
                await wrong.submit(write_job(tmp_path, dag("denied")))
            assert denied.value.code in ("UNAUTHENTICATED", "PERMISSION_DENIED")
            with pytest.raises(ClientError):
                await wrong.plan(write_job(tmp_path, dag("denied")))
        with Client(cluster.rm_address, cluster.rest_url, secret="not-the-secret") as wrong_sync, \
                pytest.raises(ClientError) as denied:
            wrong_sync.submit(write_job(tmp_path, dag("denied")))
        assert denied.value.code in ("UNAUTHENTICATED", "PERMISSION_DENIED")
