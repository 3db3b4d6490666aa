"""The Grafana dashboards (deploy/grafana, generated from code) and the compose stack (deploy/compose): every
panel's PromQL returns data from a real Prometheus scraping a live cluster while a job runs."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from rm.client import RMClient
from rm.local import LocalCluster
from tests.e2e.conftest import ROOT, sleep_job, submit_job, wait_final, wait_until, write_job
from tests.e2e.test_prometheus import prometheus, prometheus_binary  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow
GRAFANA = ROOT / "deploy" / "grafana"
COMPOSE = ROOT / "deploy" / "compose"


def _dashboards() -> object:
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk (the dev extra) is not installed")
    sys.path.insert(0, str(GRAFANA))
    try:
        import dashboards
    finally:
        sys.path.remove(str(GRAFANA))
    return dashboards


def test_dashboard_files_are_what_the_code_makes() -> None:
    _dashboards()
    run = subprocess.run([sys.executable, str(GRAFANA / "dashboards.py"), "--check"], capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr


def _query(base: str, expr: str) -> list[dict[str, object]]:
    reply = httpx.get(f"{base}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert reply["status"] == "success", (expr, reply)
    return list(reply["data"]["result"])


def _has_data(result: list[dict[str, object]]) -> bool:
    return any(math.isfinite(float(r["value"][1])) for r in result)  # type: ignore[index]


def test_every_panel_returns_data(prometheus: tuple[str, LocalCluster], tmp_path: Path) -> None:  # noqa: F811
    base, cluster = prometheus
    dashboards = _dashboards()
    panels = list(dashboards.queries())  # type: ignore[attr-defined]
    assert len(panels) >= 25
    job = write_job(tmp_path, sleep_job("watched", 20, tasks=3))
    # a few scrapes before the job: rates and histogram quantiles see its events as increases
    wait_until(lambda: _query(base, "count_over_time(up{job=\"rm\"}[1m]) >= 3"), 30, "a few scrapes")
    with RMClient(cluster.rm_address) as client:
        app_id = submit_job(cluster, job, tmp_path)
        missing: dict[tuple[str, str, str], object] = {}
        deadline = time.monotonic() + 60
        pending = set(panels)
        while pending and time.monotonic() < deadline:  # rates need two scrapes (1 s apart here) in their window
            for panel in sorted(pending):
                result = _query(base, panel[2])
                if _has_data(result):
                    pending.discard(panel)
                else:
                    missing[panel] = result
            time.sleep(1)
        report = wait_final(client, app_id)
    assert report.final_status == "SUCCEEDED"
    assert not pending, "panels without data:\n" + "\n".join(f"{d} / {t}: {q} -> {missing.get((d, t, q))}"
                                                             for d, t, q in sorted(pending))


def test_compose_stack_is_consistent(tmp_path: Path) -> None:
    """What compose.yaml wires together exists and agrees: services, the Prometheus targets, Grafana's
    provisioning, and a configuration that `shepherd rm/nm --check-config` accepts."""
    stack = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    services = stack["services"]
    assert {"rm", "nm1", "nm2", "prometheus", "grafana"} <= services.keys()
    scrape = yaml.safe_load((COMPOSE / "prometheus.yml").read_text())
    targets = {t for job in scrape["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]}
    assert targets == {"rm:8088", "nm1:8042", "nm2:8042"}
    for service in ("rm", "nm1", "nm2"):  # the names the daemons advertise resolve in the stack's network
        assert services[service]["hostname"] == service
    grafana_volumes = services["grafana"]["volumes"]
    for volume in grafana_volumes:
        assert (COMPOSE / volume.split(":")[0]).resolve().is_dir(), volume
    provisioned = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "prometheus.yaml").read_text())
    uids = {d["uid"] for d in provisioned["datasources"]}
    for board in (GRAFANA / "dashboards").glob("*.json"):
        assert '"uid": "shepherd-prometheus"' in board.read_text(), board
    assert uids == {"shepherd-prometheus"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHEPHERD_", "HADOOP_", "YARN_"))}
    env.update(SHEPHERD_NODE_SECRET="n" * 32, SHEPHERD_CLIENT_SECRET="c" * 32, PYTHONPATH=str(ROOT))
    for daemon in (["rm", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "rm")],
                   ["nm", "--rm", "rm:7030", "--host", "0.0.0.0", "--work-dir", str(tmp_path / "nm")]):
        run = subprocess.run([sys.executable, "-m", "rm.cli", *daemon, "--check-config", "--config",
                              str(COMPOSE / "shepherd.yaml"), "--hadoop-conf-dir", str(COMPOSE / "hadoop")],
                             capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=False)
        assert run.returncode == 0, f"{daemon[0]}: {run.stdout}{run.stderr}"
