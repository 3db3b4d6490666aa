"""Workload readers: every sample file loads, with the job, task and duration counts of traces/README.md."""

from __future__ import annotations

import itertools
import statistics
from pathlib import Path

import pytest

from am.jobspec import JobSpecError, dump_workload, load_workload
from sim.gen.tpcds import TpcdsOptions, dag_stats, generate, summary
from sim.traces.loader import LoadOptions, detect, load
from sim.traces.nodes import load_nodes, load_sls_nodes, parse_node_spec
from sim.traces.rumen import load_rumen
from sim.traces.sls import load_sls
from sim.traces.swim import SwimModel, SwimRow, load_swim, read_rows, row_to_job
from sim.traces.synth import load_synth
from sim.traces.tpch import TpchOptions, load_dags, load_tpch

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"
SLS = TRACES / "sls"
SWIM = TRACES / "swim"
TPCH = TRACES / "erdos-tpch"

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="the shared traces are not beside the repository")


def test_rumen_two_teragen_jobs_of_96_maps() -> None:
    jobs = load_rumen(SLS / "2jobs2min-rumen-jh.json", durations="task")  # the README's task spans
    assert [j.total_tasks for j in jobs] == [96, 96]
    assert all([s.name for s in j.stages] == ["map"] for j in jobs)  # 0 reduces
    assert jobs[0].arrival_s == 0.0
    assert jobs[1].arrival_s == pytest.approx(105.2, abs=0.05)
    for job, (lo, p50, hi) in zip(jobs, [(17.0, 44.7, 83.8), (20.9, 45.6, 85.8)], strict=True):
        d = job.stages[0].durations_s
        assert d is not None
        assert min(d) == pytest.approx(lo, abs=0.05)
        assert statistics.median(d) == pytest.approx(p50, abs=0.05)
        assert max(d) == pytest.approx(hi, abs=0.05)
    replayed = load_rumen(SLS / "2jobs2min-rumen-jh.json")  # as SLS: each task's (only) attempt
    for span, attempt in zip(jobs, replayed, strict=True):
        assert attempt.total_tasks == span.total_tasks
        assert all(a <= s for a, s in zip(attempt.stages[0].durations_s or (), span.stages[0].durations_s or (),
                                           strict=True))


@pytest.mark.parametrize("name", ["inputsls.json", "sls_dag.json"])
def test_sls_two_jobs_five_containers(name: str) -> None:
    jobs = load_sls(SLS / name)
    assert [j.total_tasks for j in jobs] == [3, 2]
    assert [j.arrival_s for j in jobs] == [0.0, 105.204]
    durations = sorted(d for j in jobs for s in j.stages for d in (s.durations_s or ()))
    assert (durations[0], statistics.median(durations), durations[-1]) == (14.928, 17.843, 22.163)
    assert all(s.memory_mb == 1024 and s.vcores == 1 for j in jobs for s in j.stages)


def test_sls_dag_request_delays_become_stage_order() -> None:
    first = load_sls(SLS / "sls_dag.json")[0]
    assert [s.tasks for s in first.stages] == [1, 1, 1]  # no delay, 1000 ms, 1500 ms
    assert first.depths() == {first.stages[0].name: 0, first.stages[1].name: 1, first.stages[2].name: 2}


@pytest.mark.parametrize("name", ["syn.json", "syn_generic.json"])
def test_synth_tiny_jobs(name: str) -> None:
    jobs = load_synth(SLS / name)
    assert len(jobs) == 10
    assert all(1.0 <= j.arrival_s < 60.0 for j in jobs)
    for j in jobs:
        maps, reduces = j.stages
        assert (maps.memory_mb, maps.vcores, reduces.memory_mb, reduces.vcores) == (1024, 1, 2048, 2)
        assert reduces.parents == (maps.name,)
        assert 0.001 < maps.estimated_task_s < 0.05  # about 10 ms: SYNTH task times are milliseconds
    mean_maps = statistics.fmean(j.stages[0].tasks for j in jobs)
    assert 3.5 < mean_maps < 6.5
    assert load_synth(SLS / name) == jobs  # seeded by the spec's rand_seed


def test_synth_stream_jobs() -> None:
    jobs = load_synth(SLS / "syn_stream.json")
    assert len(jobs) == 5
    assert all(1.0 <= j.arrival_s < 2.0 for j in jobs)
    assert all(j.total_tasks == 2 and j.stages[0].estimated_task_s == 60.0 for j in jobs)
    assert all((j.stages[0].memory_mb, j.stages[0].vcores) == (4096, 4) for j in jobs)


def test_sls_node_files_skip_the_empty_entry() -> None:
    nodes = load_sls_nodes(SLS / "nodes.json")
    assert len(nodes) == 19
    assert (nodes[-1].name, nodes[-1].rack) == ("node19", "/rack5")
    sized = {n.name: n for n in load_sls_nodes(SLS / "nodes-with-resources.json")}
    assert len(sized) == 4
    assert (sized["node1"].memory_mb, sized["node1"].vcores) == (2048, 6)
    assert (sized["node4"].memory_mb, sized["node4"].vcores) == (6144, 12)
    assert (sized["node2"].memory_mb, sized["node2"].vcores) == (8192, 8)  # SLS's default NM size


def test_node_specs() -> None:
    assert [n.name for n in parse_node_spec("3:4096:4")] == ["node1", "node2", "node3"]
    assert len(load_nodes(str(SLS / "nodes.json"))) == 19
    with pytest.raises(ValueError, match="N:MEM_MB:VCORES"):
        parse_node_spec("three")


@pytest.mark.parametrize(("name", "jobs", "first", "last", "map_only"), [
    ("FB-2009_samples_24_times_1hr_0.tsv", 5_894, 49, 86_404, 0.755),
    ("FB-2009_samples_24_times_1hr_0_first50jobs.tsv", 50, 49, 2_826, 0.36),
    ("FB-2009_samples_24_times_1hr_1.tsv", 6_638, 23, 86_402, 0.728),
])
def test_swim_rows(name: str, jobs: int, first: int, last: int, map_only: float) -> None:
    rows = read_rows(SWIM / name)
    assert len(rows) == jobs
    assert (rows[0].submit_s, max(r.submit_s for r in rows)) == (first, last)
    assert sum(1 for r in rows if r.shuffle_bytes == 0) / jobs == pytest.approx(map_only, abs=0.0005)


def test_swim_jobs_follow_the_documented_bytes_to_tasks_model() -> None:
    jobs = load_swim(SWIM / "FB-2009_samples_24_times_1hr_0_first50jobs.tsv", SwimModel(nodes=600))
    assert len(jobs) == 50
    assert sum(1 for j in jobs if len(j.stages) == 1) == 18  # 36% map-only
    model = SwimModel(nodes=600)  # scale 1
    j = row_to_job(SwimRow("x", 10.0, 300 * 2**20, 1000 * 2**20, 24 * 2**20), model)
    maps, reduces = j.stages
    assert (maps.tasks, reduces.tasks, reduces.parents) == (3, 2, ("map",))
    assert maps.durations_s == (34.0, 34.0, 13.0)  # 2 s + 128 MiB / 4 MiB/s; the last split is 44 MiB
    assert reduces.estimated_task_s == 130.0  # 2 s + (1000 + 24) MiB / 2 reduces / 4 MiB/s
    half = row_to_job(SwimRow("x", 10.0, 300 * 2**20, 0, 0), SwimModel(nodes=300))
    assert [s.tasks for s in half.stages] == [2]  # bytes scale with the cluster size


def test_swim_day_size() -> None:
    jobs = load_swim(SWIM / "FB-2009_samples_24_times_1hr_0.tsv", SwimModel(nodes=100))
    assert len(jobs) == 5_894
    assert 40_000 < sum(j.total_tasks for j in jobs) < 60_000  # tens of thousands of tasks on 100 nodes


def test_tpch_profiles_and_dags() -> None:
    dags = load_dags(TPCH / "queries.yaml")
    assert len(dags) == 22
    assert sum(len(d) for d in dags.values()) == 171
    assert sum(len(p) for d in dags.values() for p in d.values()) == 154
    jobs = load_tpch(TPCH)
    assert len(jobs) == 352
    assert sum(len(j.stages) for j in jobs) == 2_736
    tasks = [j.total_tasks for j in jobs]
    assert (min(tasks), statistics.median(tasks), max(tasks)) == (192, 1_294.5, 11_106)  # README: 1,295
    runtimes = [s.estimated_task_s for j in jobs for s in j.stages]
    assert (min(runtimes), max(runtimes)) == (pytest.approx(0.053, abs=0.0005), pytest.approx(50.489, abs=0.0005))
    depth = [max(j.depths().values()) + 1 for j in jobs[::16]]
    assert (min(depth), statistics.median(depth), max(depth)) == (2, 4, 8)


def test_tpch_selection_and_poisson_arrivals() -> None:
    jobs = load_tpch(TPCH, TpchOptions(scale="50g", max_cores=50, interarrival_s=20.0, seed=1))
    assert len(jobs) == 22
    gaps = [b.arrival_s - a.arrival_s for a, b in itertools.pairwise(jobs)]
    assert all(g >= 0 for g in gaps)
    assert 5 < statistics.fmean(gaps) < 60


def test_native_workloads_and_format_detection(tmp_path: Path) -> None:
    generated = generate(TpcdsOptions(jobs=5, seed=3))
    path = tmp_path / "w.jsonl"
    path.write_text(dump_workload(generated))
    assert load(path) == load_workload(path) == generated
    assert detect(SLS / "2jobs2min-rumen-jh.json") == "rumen"
    assert detect(SLS / "inputsls.json") == "sls"
    assert detect(SLS / "syn.json") == "synth"
    assert detect(SWIM / "FB-2009_samples_24_times_1hr_0_first50jobs.tsv") == "swim"
    assert detect(TPCH) == "tpch"
    assert len(load(SLS / "syn.json", "sls")) == 10  # --format sls takes SYNTH specs too
    assert len(load(TPCH, "tpch", LoadOptions())) == 352
    bad = tmp_path / "bad.json"
    bad.write_text('{"what": 1}')
    with pytest.raises(JobSpecError, match="format"):
        load(bad)


def test_tpcds_generator_matches_carbyne_tables() -> None:
    jobs = generate(TpcdsOptions(jobs=1_000, seed=11))
    s = summary(jobs)
    assert s["stages_p50"] == 7
    assert 20 <= s["stages_p95"] <= 26
    assert s["critical_path_p50"] == 5
    assert s["multi_barrier_fraction"] > 0.5  # multiple barriers in most DAGs
    assert s["multi_root_fraction"] > 0.3  # many DAGs have disjoint paths
    assert all(dag_stats(j).critical_path <= dag_stats(j).stages for j in jobs)
    arrivals = [j.arrival_s for j in jobs]
    assert arrivals == sorted(arrivals)
    assert arrivals[0] == 0.0
    assert statistics.fmean(b - a for a, b in itertools.pairwise(arrivals)) == pytest.approx(20, rel=0.1)
    assert generate(TpcdsOptions(jobs=20, seed=11)) == jobs[:20]
