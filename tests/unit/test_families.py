"""Workload families: each is loaded as it says, and its knobs move the DAGs the way its name says."""

from __future__ import annotations

import statistics

import pytest

from sim.gen.families import FAMILIES, family, offered_load
from sim.gen.tpcds import TpcdsOptions, dag_stats, generate
from sim.runner import scale_load


def test_the_base_family_is_the_main_tpcds_run() -> None:
    jobs = family("tpcds").jobs(40, 0)
    assert jobs == scale_load(generate(TpcdsOptions(jobs=40, seed=0)), 1.25)


@pytest.mark.parametrize("name", [f.name for f in FAMILIES if f.compress is None])
def test_each_family_offers_its_load(name: str) -> None:
    f = family(name)
    jobs = f.jobs(60, 1)
    assert len(jobs) == 60
    assert offered_load(jobs, f.nodes) == pytest.approx(f.load, rel=1e-9)


def test_the_shape_knobs_change_the_dags_they_name() -> None:
    def median(name: str, what: str) -> float:
        return statistics.median(getattr(dag_stats(j), what) for j in family(name).jobs(120, 2))

    assert median("chains", "critical_path") > median("tpcds", "critical_path") > median("bushy", "critical_path")
    assert median("bushy", "roots") > median("tpcds", "roots")
    assert median("forests", "barriers") <= 1 < median("barriers", "barriers")
    assert median("big-dags", "stages") > median("tpcds", "stages") > median("small-dags", "stages")


def test_container_mixes_and_unknown_names() -> None:
    memory = family("memory-bound").jobs(30, 0)
    assert all(s.vcores == 1 and s.memory_mb >= 4096 for j in memory for s in j.stages)
    cpu = family("cpu-bound").jobs(30, 0)
    assert all(s.vcores >= 2 and s.memory_mb <= 2048 for j in cpu for s in j.stages)
    with pytest.raises(ValueError, match="unknown family"):
        family("nope")
