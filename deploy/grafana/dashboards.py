"""shepherd's Grafana dashboards, written as code with Grafana's foundation SDK (grafana-foundation-sdk).

    python deploy/grafana/dashboards.py            # (re)write deploy/grafana/dashboards/*.json
    python deploy/grafana/dashboards.py --check    # exit 1 if a JSON file is not what this code makes

Every panel's query is PromQL over the metrics of docs/metrics.md; tests/e2e/test_dashboards.py runs each one
against a real Prometheus scraping a live cluster and checks that it returns data. Grafana loads the JSON files
through provisioning (deploy/grafana/provisioning/).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

OUT = Path(__file__).resolve().parent / "dashboards"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="shepherd-prometheus")  # provisioning/datasources


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


@dataclass(frozen=True)
class PanelSpec:
    title: str
    queries: tuple[Query, ...]
    unit: str = "short"
    kind: str = "timeseries"  # or "stat"
    width: int = 12


def _q(expr: str, legend: str = "") -> Query:
    return Query(expr, legend)


# Families that have series only where the feature is in use (reservable queues, deadline systems) are summed
# "or vector(0)": the panel shows 0 rather than "No data".


DASHBOARDS: dict[str, tuple[str, tuple[PanelSpec, ...]]] = {
    "shepherd-cluster": ("shepherd: cluster", (
        PanelSpec("NodeManagers by state", (_q("sum by (state) (shepherd_nodes)", "{{state}}"),)),
        PanelSpec("Cluster capacity: memory", (_q("shepherd_cluster_capacity_memory_bytes", "capacity"),
                                               _q("sum(shepherd_queue_allocated_memory_bytes{queue=\"root\"})",
                                                  "allocated")), unit="bytes"),
        PanelSpec("Cluster capacity: vcores", (_q("shepherd_cluster_capacity_vcores", "capacity"),
                                               _q("sum(shepherd_queue_allocated_vcores{queue=\"root\"})",
                                                  "allocated"))),
        PanelSpec("Scheduling cycle time (p50, p99)", (
            _q("histogram_quantile(0.5, sum by (le) (rate(shepherd_scheduling_cycle_seconds_bucket[1m])))", "p50"),
            _q("histogram_quantile(0.99, sum by (le) (rate(shepherd_scheduling_cycle_seconds_bucket[1m])))",
               "p99")), unit="s"),
        PanelSpec("Node heartbeat handling (p99)", (
            _q("histogram_quantile(0.99, sum by (le) (rate(shepherd_node_heartbeat_seconds_bucket[1m])))", "p99"),),
            unit="s"),
        PanelSpec("Containers placed per second", (
            _q("sum(rate(shepherd_containers_placed_total[1m]))", "placed"),
            _q("sum(rate(shepherd_leftover_containers_total[1m]))", "from the leftover")), unit="ops"),
        PanelSpec("State store: records waiting", (_q("shepherd_store_pending_records", "pending"),
                                                   _q("shepherd_store_write_failures_total", "write failures"))),
        PanelSpec("ResourceManager", (_q("shepherd_resourcemanager_info", "{{version}}"),), kind="stat"),
    )),
    "shepherd-queues": ("shepherd: queues", (
        PanelSpec("Applications running", (_q("shepherd_queue_apps_running", "{{queue}}"),)),
        PanelSpec("Applications pending", (_q("shepherd_queue_apps_pending", "{{queue}}"),)),
        PanelSpec("Allocated memory", (_q("shepherd_queue_allocated_memory_bytes", "{{queue}}"),), unit="bytes"),
        PanelSpec("Pending memory (asked, not allocated)", (_q("shepherd_queue_pending_memory_bytes", "{{queue}}"),),
                  unit="bytes"),
        PanelSpec("Headroom (available memory)", (_q("shepherd_queue_available_memory_bytes", "{{queue}}"),),
                  unit="bytes"),
        PanelSpec("Containers allocated", (_q("shepherd_queue_allocated_containers", "{{queue}}"),)),
        PanelSpec("Wait for the AM container (p90)", (
            _q("histogram_quantile(0.9, sum by (le, queue) (rate(shepherd_queue_wait_seconds_bucket[5m])))",
               "{{queue}}"),), unit="s"),
        PanelSpec("Containers preempted per second", (
            _q("sum by (queue) (rate(shepherd_queue_containers_preempted_total[5m]))", "{{queue}}"),), unit="ops"),
    )),
    "shepherd-nodes": ("shepherd: nodes", (
        PanelSpec("Containers per node", (_q("shepherd_nodemanager_containers", "{{instance}}"),)),
        PanelSpec("Memory allocated per node", (_q("shepherd_nodemanager_allocated_memory_bytes", "{{instance}}"),),
                  unit="bytes"),
        PanelSpec("Memory available per node", (_q("shepherd_nodemanager_available_memory_bytes", "{{instance}}"),),
                  unit="bytes"),
        PanelSpec("vcores allocated per node", (_q("shepherd_nodemanager_allocated_vcores", "{{instance}}"),)),
        PanelSpec("Containers launched per second", (
            _q("sum by (instance) (rate(shepherd_nodemanager_containers_launched_total[1m]))", "{{instance}}"),),
            unit="ops"),
        PanelSpec("Healthy and registered", (_q("min(shepherd_nodemanager_healthy)", "healthy (all)"),
                                             _q("min(shepherd_nodemanager_registered)", "registered (all)")),
                  kind="stat"),
    )),
    "shepherd-apps": ("shepherd: applications", (
        PanelSpec("Applications submitted per minute", (
            _q("sum(increase(shepherd_queue_apps_submitted_total{queue=\"root\"}[5m])) / 5", "submitted"),)),
        PanelSpec("Applications ended", (
            _q("sum(shepherd_queue_apps_completed_total{queue=\"root\"})", "completed"),
            _q("sum(shepherd_queue_apps_failed_total{queue=\"root\"})", "failed"),
            _q("sum(shepherd_queue_apps_killed_total{queue=\"root\"})", "killed"))),
        PanelSpec("Active applications and users", (
            _q("sum(shepherd_queue_active_applications{queue=\"root\"})", "applications"),
            _q("sum(shepherd_queue_active_users{queue=\"root\"})", "users"))),
        PanelSpec("ApplicationMaster memory", (_q("shepherd_queue_am_memory_bytes", "{{queue}}"),), unit="bytes"),
    )),
    "shepherd-promises": ("shepherd: reservations and deadlines", (
        PanelSpec("Reservations", (_q("sum(shepherd_reservations) or vector(0)", "accepted"),
                                   _q("sum(shepherd_reservations_active) or vector(0)", "active now"))),
        PanelSpec("Containers placed for reservations", (
            _q("sum(shepherd_reservation_containers_placed_total)", "placed"),
            _q("sum(shepherd_reservation_extension_containers_total)", "extensions (DRA)"),
            _q("sum(shepherd_reservation_reclaims_total)", "reclaimed"))),
        PanelSpec("Deadlines held", (_q("sum(shepherd_deadlines_active) or vector(0)", "active"),)),
        PanelSpec("Deadline quotes and admissions", (
            _q("sum(shepherd_deadline_quotes_total)", "quotes"),
            _q("sum by (outcome) (shepherd_deadline_admissions_total)", "{{outcome}}"))),
        PanelSpec("Deadline outcomes", (_q("sum by (outcome) (shepherd_deadline_outcomes_total)", "{{outcome}}"),)),
    )),
}


def queries() -> Iterator[tuple[str, str, str]]:
    """(dashboard uid, panel title, PromQL) of every panel."""
    for uid, (_, panels) in DASHBOARDS.items():
        for panel in panels:
            for query in panel.queries:
                yield uid, panel.title, query.expr


def _panel(spec: PanelSpec) -> db.Panel:
    builder = stat.Panel() if spec.kind == "stat" else timeseries.Panel()
    builder.title(spec.title).datasource(DATASOURCE).unit(spec.unit).span(spec.width).height(8)
    for i, query in enumerate(spec.queries):
        target = prometheus.Dataquery().expr(query.expr).ref_id(chr(ord("A") + i)).datasource(DATASOURCE)
        if query.legend:
            target.legend_format(query.legend)
        builder.with_target(target)
    return builder


def build(uid: str) -> str:
    title, panels = DASHBOARDS[uid]
    board = (db.Dashboard(title).uid(uid).tags(["shepherd"]).refresh("30s").time("now-1h", "now")
             .timezone("browser").editable())
    for spec in panels:
        board.with_panel(_panel(spec))
    return json.dumps(board.build(), cls=JSONEncoder, indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    OUT.mkdir(exist_ok=True)
    for uid in DASHBOARDS:
        path = OUT / f"{uid}.json"
        text = build(uid)
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.write_text(text)
    for path in stale:
        print(f"{path} is not what deploy/grafana/dashboards.py makes: run it", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
