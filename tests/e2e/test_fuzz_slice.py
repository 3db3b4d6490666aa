"""A slice of the two fuzzers of bench/ on real local clusters, so that a regression shows in every run: the
REST API with schemathesis (20 requests per operation, anonymous and with the client secret) and every gRPC
method with 200 mutated messages. The full runs (bench/fuzz_rest.py, bench/fuzz_grpc.py; docs/rest.md#fuzzing)
send 200 and 10,000."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_rest_fuzz_slice_finds_no_5xx_and_no_schema_violation(tmp_path: Path) -> None:
    pytest.importorskip("schemathesis")
    from bench import fuzz_rest

    with fuzz_rest.cluster(tmp_path, nodes=0) as c:
        result = fuzz_rest.run_fuzz(c, examples=20, seed=7)
    found = [s for r in result["rows"] for s in r["samples"]]
    assert result["operations"] >= 40
    assert result["min_examples"] >= 20
    assert result["server_errors"] == 0, found
    assert result["violations"] == 0, found
    assert result["transport_errors"] == 0, found
    assert result["rm_alive"]
    assert result["rm_log_problem_count"] == 0, result["rm_log_problems"]


def test_grpc_fuzz_slice_finds_no_unhandled_exception(tmp_path: Path) -> None:
    from bench import fuzz_grpc

    with fuzz_grpc.cluster(tmp_path, nodes=1) as c:
        result = fuzz_grpc.run_fuzz(c, tmp_path, count=200, concurrency=8, seed=7)
    found = [f"{r['method']}: {s}" for r in result["rows"] for s in r["samples"]]
    assert result["methods"] >= 23
    assert result["min_sent"] >= 200
    assert result["unhandled"] == 0, found  # UNKNOWN or INTERNAL
    assert result["unnamed"] == 0, found  # a refusal without its Java exception class
    assert result["rm_alive"]
    assert result["log_problem_count"] == 0, result["log_problems"]
    assert result["heartbeat"]["samples"] > 0
