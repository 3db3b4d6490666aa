"""The native job format: validation, loading, DAG views."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from am.jobspec import (
    DEFAULT_TASK_DURATION_S,
    Job,
    JobSpecError,
    dump_workload,
    load_job,
    load_workload,
    parse_job,
)
from common.resources import Resources

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def stage(name: str, *parents: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "tasks": 2, "memory_mb": 512, "vcores": 1, "parents": list(parents), **fields}


def job(*stages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"id": "j1", "stages": list(stages), **fields}


def test_minimal_job_gets_defaults() -> None:
    j = parse_job(job(stage("a")))
    assert j.queue == "default"
    assert j.arrival_s == 0.0
    assert j.env == {}
    assert j.key == "j1"
    a = j.stage("a")
    assert a.max_attempts == 3
    assert a.capability == Resources.of(memory_mb=512, vcores=1)
    assert a.estimated_task_s == DEFAULT_TASK_DURATION_S


def test_cycle_is_named() -> None:
    with pytest.raises(JobSpecError, match="cycle") as err:
        parse_job(job(stage("a", "c"), stage("b", "a"), stage("c", "b"), stage("d")))
    message = str(err.value)
    assert any(c in message for c in ("a -> b -> c -> a", "b -> c -> a -> b", "c -> a -> b -> c"))
    assert "d" not in message.split("cycle")[1]


def test_self_parent_is_a_cycle() -> None:
    with pytest.raises(JobSpecError, match=r"cycle a -> a"):
        parse_job(job(stage("a", "a")))


def test_unknown_parent() -> None:
    with pytest.raises(JobSpecError, match="stage 'b' has unknown parent 'nope'"):
        parse_job(job(stage("a"), stage("b", "nope")))


def test_duplicate_stage_names() -> None:
    with pytest.raises(JobSpecError, match="duplicate stage name 'a'"):
        parse_job(job(stage("a"), stage("a")))


def test_duplicate_parent() -> None:
    with pytest.raises(JobSpecError, match="listed twice"):
        parse_job(job(stage("a"), stage("b", "a", "a")))


@pytest.mark.parametrize(
    ("field", "value"),
    [("tasks", 0), ("memory_mb", 0), ("vcores", 0), ("max_attempts", 0), ("duration_s", 0)],
)
def test_lower_bounds(field: str, value: int) -> None:
    with pytest.raises(JobSpecError, match=f"stages.0.{field}"):
        parse_job(job(stage("a", **{field: value})))


def test_durations_must_match_tasks() -> None:
    with pytest.raises(JobSpecError, match="durations_s has 3 entries but the stage has 2 tasks"):
        parse_job(job(stage("a", durations_s=[1, 2, 3])))


def test_per_task_durations_give_the_estimate() -> None:
    a = parse_job(job(stage("a", durations_s=[2.0, 4.0]))).stage("a")
    assert a.estimated_task_s == 3.0
    assert a.task_duration_s(1) == 4.0


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(JobSpecError, match=r"stages\.0\.memory"):
        parse_job(job(stage("a", memory=5)))


def test_memory_in_resources_is_rejected() -> None:
    with pytest.raises(JobSpecError, match="memory_mb / vcores"):
        parse_job(job(stage("a", resources={"memory-mb": 5})))


def test_extra_resources_join_the_capability() -> None:
    a = parse_job(job(stage("a", resources={"gpu": 2}))).stage("a")
    assert a.capability == Resources.of(memory_mb=512, vcores=1, gpu=2)


def test_no_stages() -> None:
    with pytest.raises(JobSpecError, match="stages"):
        parse_job(job())


def test_not_a_mapping() -> None:
    with pytest.raises(JobSpecError, match="expected a mapping"):
        parse_job([1, 2])  # type: ignore[arg-type]


def test_topological_order_and_depths_of_a_diamond() -> None:
    j = parse_job(job(stage("d", "b", "c"), stage("b", "a"), stage("c", "a"), stage("a")))
    order = [s.name for s in j.topological_order()]
    assert order == ["a", "b", "c", "d"]
    assert j.depths() == {"a": 0, "b": 1, "c": 1, "d": 2}
    assert [s.name for s in j.children("a")] == ["b", "c"]
    assert j.total_tasks == 8


def test_to_json_round_trips() -> None:
    j = parse_job(
        job(
            stage("a", command="echo {task}", resources={"gpu": 1}),
            stage("b", "a", durations_s=[1, 2]),
            name="nightly", deadline_s=600, env={"K": "v"}, inputs=["logs"], priority=3,
        )
    )
    again = parse_job(json.loads(j.to_json()))
    assert again == j
    assert "deadline_s" in j.to_dict()
    assert "period_s" not in j.to_dict()


@pytest.mark.parametrize("name", ["wordcount.yaml", "tpch-q5.yaml"])
def test_examples_load(name: str) -> None:
    j = load_job(EXAMPLES / name)
    assert all(s.command for s in j.stages)
    assert j.topological_order()[-1].tasks == 1


def test_wordcount_example_shape() -> None:
    j = load_job(EXAMPLES / "wordcount.yaml")
    assert [(s.name, s.tasks, s.parents) for s in j.stages] == [
        ("generate", 4, ()), ("count", 4, ("generate",)), ("merge", 1, ("count",)),
    ]


def test_load_json_job(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job(stage("a"))))
    assert load_job(path).id == "j1"


def test_load_job_reports_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("id: x\nstages: [{name: a, tasks: 1, memory_mb: 1, parents: [zz]}]\n")
    with pytest.raises(JobSpecError, match=r"bad.yaml: .*unknown parent 'zz'"):
        load_job(path)
    broken = tmp_path / "broken.yaml"
    broken.write_text("id: [\n")
    with pytest.raises(JobSpecError, match="not valid YAML"):
        load_job(broken)
    with pytest.raises(JobSpecError, match="cannot read"):
        load_job(tmp_path / "missing.yaml")


def test_workload_jsonl(tmp_path: Path) -> None:
    lines = [
        "# two jobs",
        json.dumps(job(stage("a"), arrival_s=5.0) | {"id": "late"}),
        "",
        json.dumps(job(stage("a"), arrival_s=1.0) | {"id": "early"}),
    ]
    path = tmp_path / "w.jsonl"
    path.write_text("\n".join(lines) + "\n")
    jobs = load_workload(path)
    assert [j.id for j in jobs] == ["early", "late"]
    again = tmp_path / "again.jsonl"
    again.write_text(dump_workload(jobs))
    assert load_workload(again) == jobs


def test_workload_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps(job(stage("a"))) + "\n" + json.dumps(job(stage("a"))) + "\n")
    with pytest.raises(JobSpecError, match=r"w.jsonl:2: duplicate job id 'j1' \(first on line 1\)"):
        load_workload(path)
    path.write_text(json.dumps(job(stage("a"))) + "\n{not json\n")
    with pytest.raises(JobSpecError, match=r"w.jsonl:2: not valid JSON"):
        load_workload(path)
    path.write_text(json.dumps(job(stage("a", tasks=0))) + "\n")
    with pytest.raises(JobSpecError, match=r"w.jsonl:1: stages.0.tasks"):
        load_workload(path)


@st.composite
def random_dags(draw: st.DrawFn) -> Job:
    n = draw(st.integers(min_value=1, max_value=8))
    stages = []
    for i in range(n):
        parents = draw(st.sets(st.integers(min_value=0, max_value=i - 1))) if i else set()
        stages.append(stage(f"s{i}", *[f"s{p}" for p in sorted(parents)]))
    order = draw(st.permutations(stages))
    return parse_job(job(*order))


@given(random_dags())
def test_topological_order_puts_parents_first(j: Job) -> None:
    position = {s.name: i for i, s in enumerate(j.topological_order())}
    depths = j.depths()
    assert len(position) == len(j.stages)
    for s in j.stages:
        for p in s.parents:
            assert position[p] < position[s.name]
            assert depths[p] < depths[s.name]


def test_documented_examples_parse(tmp_path: Path) -> None:
    doc = (EXAMPLES.parent / "docs" / "workload-format.md").read_text()
    yaml_block = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "job.yaml").write_text(yaml_block)
    assert [s.name for s in load_job(tmp_path / "job.yaml").stages] == ["generate", "count", "merge"]
    jsonl_block = doc.split("```text\n", 1)[1].split("```", 1)[0]
    (tmp_path / "w.jsonl").write_text(jsonl_block)
    assert [j.id for j in load_workload(tmp_path / "w.jsonl")] == ["etl-0001", "adhoc-17"]
