"""Fuzz the ResourceManager's REST API with schemathesis, from the OpenAPI document the RM serves.

A real local cluster (an RM process and ``--nodes`` NodeManagers, ``rm.local.LocalCluster``) is started, two
applications are submitted so that some path parameters name things that exist, and every operation of
``/openapi.json`` gets at least ``--examples`` generated requests, each sent twice: without credentials and
with the cluster's client secret (``Authorization: Bearer <secret>``). The cases are schemathesis's positive and
negative examples of the operation, and positive ones with the path parameters set to the ids of real apps,
attempts and nodes. Each response is checked with schemathesis's ``not_a_server_error``,
``status_code_conformance``, ``content_type_conformance``, ``response_headers_conformance`` and
``response_schema_conformance``; afterwards the RM's log is searched for tracebacks.

An operation with fewer distinct inputs than ``--examples`` (``GET /ws/v1/cluster/info`` has none) is sent
its inputs again until it reaches the count: hypothesis stops when it has generated every distinct case.

Writes the ``rest`` section of ``docs/results/fuzzing.md`` (and ``fuzzing.json`` beside it). Exit status 1
when anything was found.

    python bench/fuzz_rest.py [--examples 200] [--nodes 1] [--seed 1] [--only SUBSTRING] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import hypothesis
import requests
import schemathesis
from fuzz_report import PAGE, log_problems, table, write_section
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from rm.local import LocalCluster

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]
MAX_SAMPLES = 5  # failure descriptions kept per operation


@dataclass
class OpStats:
    """What one operation's fuzzing found, under one identity."""

    label: str
    identity: str
    examples: int = 0
    distinct: int = 0  # cases hypothesis generated (the rest are repeats, see the module doc)
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: int = 0  # 5xx answers
    violations: int = 0  # answers whose status, content type, headers or body the document does not allow
    transport_errors: int = 0  # no answer at all (connection refused or reset, timeout)
    samples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.samples) < MAX_SAMPLES and text not in self.samples:
            self.samples.append(text)

    def row(self) -> dict[str, Any]:
        return {"operation": self.label, "identity": self.identity, "examples": self.examples,
                "distinct": self.distinct, "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
                "server_errors": self.server_errors, "violations": self.violations,
                "transport_errors": self.transport_errors, "samples": self.samples}


def submit_seed_apps(rest_url: str, secret: str, count: int = 2) -> list[str]:
    """Submit ``count`` long-sleeping apps through the REST API (so that paths can name real ones)."""
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    ids = []
    for i in range(count):
        r = requests.post(f"{rest_url}/ws/v1/cluster/apps/new-application", headers=headers, timeout=30)
        r.raise_for_status()
        app_id = r.json()["application-id"]
        body = {"application-id": app_id, "application-name": f"fuzz-seed-{i}", "queue": "default",
                "am-container-spec": {"commands": {"command": "sleep 3600"}},
                "resource": {"memory": 128, "vCores": 1}, "application-type": "YARN"}
        r = requests.post(f"{rest_url}/ws/v1/cluster/apps", json=body, headers=headers, timeout=30)
        if r.status_code != 202:
            raise RuntimeError(f"seed submission refused: {r.status_code} {r.text}")
        ids.append(app_id)
    return ids


def known_values(rest_url: str, app_ids: list[str], node_ids: list[str], secret: str) -> dict[str, list[str]]:
    """Real values for the document's path parameters, by parameter name (read as the apps' owner: an
    anonymous reader may not see another user's attempts)."""
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    attempts = []
    for app_id in app_ids:
        r = requests.get(f"{rest_url}/ws/v1/cluster/apps/{app_id}/appattempts", headers=headers, timeout=30)
        attempts += [a["appAttemptId"] for a in r.json()["appAttempts"]["appAttempt"]]
    known = {"app_id": app_ids, "node_id": node_ids, "kind": ["LIFETIME", "lifetime"]}
    if attempts:
        known["attempt_id"] = attempts
    return known


def path_combinations(names: list[str], known: dict[str, list[str]]) -> list[dict[str, str]]:
    """Path parameter assignments from real values (a parameter without one is left to the generator)."""
    combos: list[dict[str, str]] = [{}]
    for name in names:
        values = known.get(name)
        if values:
            combos = [{**c, name: v} for c in combos for v in values]
    return [c for c in combos if c][:8]


def strategy_for(operation: Any, known: dict[str, list[str]]) -> st.SearchStrategy[Any]:
    strategies = [operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)]
    names = [p.name for p in operation.path_parameters]
    strategies += [operation.as_strategy(GenerationMode.POSITIVE, path_parameters=c)
                   for c in path_combinations(names, known)]
    return st.one_of(strategies)


def describe(failure: Failure) -> str:
    first = (failure.message or "").strip().splitlines()
    return f"{failure.title}: {first[0][:200]}" if first else failure.title


def send(case: Any, base_url: str, session: requests.Session, headers: dict[str, str] | None,
         stats: OpStats) -> None:
    stats.examples += 1
    try:
        response = case.call(base_url=base_url, session=session, headers=headers, timeout=60)
    except requests.RequestException as exc:
        stats.transport_errors += 1
        stats.note(f"no answer: {type(exc).__name__}: {exc}"[:300])
        return
    stats.statuses[response.status_code] += 1
    try:
        case.validate_response(response, checks=CHECKS, headers=headers)
    except FailureGroup as group:
        server = any(type(f).__name__ in ("ServerError", "ContentTypeServerError") for f in group.exceptions)
        if server:
            stats.server_errors += 1
        if any(type(f).__name__ not in ("ServerError", "ContentTypeServerError") for f in group.exceptions):
            stats.violations += 1
        for f in group.exceptions:
            stats.note(f"{case.method} {case.formatted_path} -> {response.status_code}: {describe(f)}")


def fuzz_operation(operation: Any, base_url: str, identities: dict[str, dict[str, str] | None], examples: int,
                   known: dict[str, list[str]], seed: int) -> list[OpStats]:
    """Send at least ``examples`` generated requests for ``operation`` as each identity (name: its headers;
    each case goes as every identity in turn); what they found, per identity."""
    stats = {name: OpStats(operation.label, name) for name in identities}
    session = requests.Session()
    seen: list[Any] = []
    strategy = strategy_for(operation, known)

    def each(case: Any) -> None:
        for name, headers in identities.items():
            send(case, base_url, session, headers, stats[name])

    @hypothesis.seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), print_blob=False)
    @hypothesis.given(strategy)
    def run(case: Any) -> None:
        for s in stats.values():
            s.distinct += 1
        if len(seen) < examples:
            seen.append(case)
        each(case)

    run()
    i = 0
    while min(s.examples for s in stats.values()) < examples and seen:  # a small input space: again
        each(seen[i % len(seen)])
        i += 1
    session.close()
    return list(stats.values())


@contextmanager
def cluster(work: Path, nodes: int) -> Iterator[LocalCluster]:
    c = LocalCluster(work / "cluster", allow_root_containers=True,
                     nodes=nodes, grpc_port=0, rest_port=0, ipc_client_port=0,
                     ipc_scheduler_port=0, node_memory_mb=1024, node_vcores=2)
    c.start()
    try:
        yield c
    finally:
        c.stop()


def run_fuzz(c: LocalCluster, examples: int, seed: int, only: str = "",
             progress: Callable[[OpStats], None] | None = None) -> dict[str, Any]:
    """Fuzz every operation of the running cluster ``c`` under both identities; the totals and rows."""
    started = time.monotonic()
    schema = schemathesis.openapi.from_url(f"{c.rest_url}/openapi.json")
    app_ids = submit_seed_apps(c.rest_url, c.client_secret)
    known = known_values(c.rest_url, app_ids, list(c.node_ids), c.client_secret)
    operations, invalid = [], []
    for result in schema.get_all_operations():  # an operation the document describes wrongly is a finding
        if isinstance(result, Ok):
            operations.append(result.ok())
        else:
            invalid.append(str(result.err())[:300])
    operations = [op for op in operations if only in op.label]
    rows: list[OpStats] = []
    identities = {"anonymous": None, "client secret": {"Authorization": f"Bearer {c.client_secret}"}}
    for n, op in enumerate(operations):
        for stats in fuzz_operation(op, c.rest_url, identities, examples, known, seed + n):
            rows.append(stats)
            if progress is not None:
                progress(stats)
    log_path = c.data_dir / "logs" / "rm.log"
    problems = log_problems(log_path.read_text()) if log_path.exists() else []
    return {
        "operations": len(operations),
        "examples_per_operation": examples,
        "requests": sum(r.examples for r in rows),
        "server_errors": sum(r.server_errors for r in rows),
        "violations": sum(r.violations for r in rows),
        "transport_errors": sum(r.transport_errors for r in rows),
        "min_examples": min((r.examples for r in rows), default=0),
        "invalid_operations": invalid,
        "rm_alive": c.alive(),
        "rm_log_problems": problems[:20],
        "rm_log_problem_count": len(problems),
        "seconds": round(time.monotonic() - started, 1),
        "schemathesis": schemathesis.__version__,
        "hypothesis": hypothesis.__version__,
        "rows": [r.row() for r in rows],
    }


def passed(result: dict[str, Any]) -> bool:
    return (result["server_errors"] == 0 and result["violations"] == 0 and result["transport_errors"] == 0
            and result["rm_alive"] and result["rm_log_problem_count"] == 0 and not result["invalid_operations"]
            and result["min_examples"] >= result["examples_per_operation"])


def _statuses(counts: dict[str, int]) -> str:
    return " ".join(f"{k}×{v}" for k, v in counts.items())


def render_section(result: dict[str, Any], command: str) -> str:
    by_op: dict[str, dict[str, dict[str, Any]]] = {}
    for r in result["rows"]:
        by_op.setdefault(r["operation"], {})[r["identity"]] = r
    rows = []
    for label, ids in by_op.items():
        a, s = ids.get("anonymous", {}), ids.get("client secret", {})
        rows.append([f"`{label}`", f"{a.get('examples', 0)} ({a.get('distinct', 0)})", _statuses(a.get("statuses", {})),
                     f"{s.get('examples', 0)} ({s.get('distinct', 0)})", _statuses(s.get("statuses", {})),
                     a.get("server_errors", 0) + s.get("server_errors", 0),
                     a.get("violations", 0) + s.get("violations", 0)])
    verdict = "**passed**" if passed(result) else "**FAILED**"
    lines = [
        "## REST: schemathesis over `/openapi.json`",
        "",
        (f"Produced by `{command}` (schemathesis {result['schemathesis']}, hypothesis {result['hypothesis']}, "
        f"{result['seconds']} s on this 2-core machine)."),
        "",
        (f"* {result['operations']} operations, each with ≥ {result['examples_per_operation']} requests "
        f"anonymous and ≥ {result['examples_per_operation']} with the client secret: {result['requests']} "
        "requests in all."),
        (f"* 5xx answers: **{result['server_errors']}**; answers the document does not allow (status code, "
        f"content type, headers, body schema): **{result['violations']}**; requests without an answer: "
        f"{result['transport_errors']}."),
        (f"* The RM process alive afterwards: {result['rm_alive']}; tracebacks in its log: "
        f"{result['rm_log_problem_count']}."),
        (f"* Operations of the document schemathesis could not use (a malformed description): "
         f"{len(result['invalid_operations'])}."),
        f"* Verdict: {verdict}.",
        "",
        ("Per operation: requests sent (distinct generated cases in brackets; an operation with fewer distinct "
        "inputs gets them again), and the statuses answered."),
        "",
        *table(["operation", "anonymous", "statuses", "client secret", "statuses", "5xx", "violations"], rows),
        "",
    ]
    samples = [s for r in result["rows"] for s in r["samples"]]
    if samples:
        lines += ["What was found (first few per operation):", ""] + [f"* `{s}`" for s in samples[:40]] + [""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=200, help="requests per operation and identity")
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="fuzz only the operations whose label contains this")
    ap.add_argument("--out", type=Path, default=PAGE)
    ap.add_argument("--no-write", action="store_true", help="print, do not write the results page")
    ap.add_argument("--keep", type=Path, help="run in this directory and keep it (the daemons' logs)")
    args = ap.parse_args()

    def progress(s: OpStats) -> None:
        print(f"{s.identity:14} {s.label:70} {s.examples:5} 5xx={s.server_errors} violations={s.violations}"
              f" {_statuses({str(k): v for k, v in sorted(s.statuses.items())})}", flush=True)
        for sample in s.samples:
            print(f"    {sample}", flush=True)

    with tempfile.TemporaryDirectory(prefix="shepherd-fuzz-rest-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        with cluster(work, args.nodes) as c:
            result = run_fuzz(c, args.examples, args.seed, args.only, progress)
    command = "python bench/fuzz_rest.py " + " ".join(a for a in sys.argv[1:] if a != "--no-write")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
    if not args.no_write:
        write_section("rest", render_section(result, command.strip()), result, args.out)
        print(f"wrote {args.out}")
    sys.exit(0 if passed(result) else 1)


if __name__ == "__main__":
    main()
