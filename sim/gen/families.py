"""Named workload families for evaluating a scheduler beyond the workload it was tuned on.

A family is a generator setting (``TpcdsOptions``), a cluster and an arrival compression. The families
differ in what shapes a DAG scheduler's opportunity: DAG shape (depth, width, barriers, disjoint input
paths), the size distribution of stages and tasks, the mix of container shapes (memory- or CPU-bound),
the cluster's shape, and contention. Each belongs to one half: ``tune`` families are where settings may be
chosen, ``held`` families are only ever reported, so a figure on them is not the fruit of tuning.

Pure: a family and a seed give the same jobs every time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from am.jobspec import Job
from sim.gen.tpcds import TpcdsOptions, generate
from sim.runner import scale_load
from sim.traces.nodes import load_nodes

Half = Literal["tune", "held"]
# About the offered load of eval_carbyne's main TPC-DS-like run (250 jobs, seed 0, arrivals compressed 1.25x,
# on 20 nodes of 20 GB / 8 vcores: 1.10); the families are loaded alike unless their point is contention.
BASE_LOAD = 1.1


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    what: str
    half: Half
    options: TpcdsOptions = field(default_factory=TpcdsOptions)
    nodes: str = "20:20480:8"  # count:memory MB:vcores per node (or an SLS nodes file)
    load: float = BASE_LOAD  # offered load (``offered_load``) the arrivals are set for
    compress: float | None = None  # instead: the generator's arrivals compressed this much, whatever the load

    def jobs(self, count: int, seed: int) -> list[Job]:
        """``count`` jobs of the family, their Poisson arrivals compressed or stretched so that the work
        offered over the arrival span is ``load`` times the cluster (``offered_load``)."""
        jobs = generate(replace(self.options, jobs=count, seed=seed))
        factor = self.compress if self.compress is not None else self.load / offered_load(jobs, self.nodes)
        return scale_load(jobs, factor)


def offered_load(jobs: Sequence[Job], nodes: str) -> float:
    """The work the jobs offer over their arrival span, as a fraction of the cluster: every task's
    duration times its dominant share of the cluster (its larger fraction of memory or vcores), summed,
    over the span from the first arrival to the last. About 1 keeps the cluster busy with no backlog left
    on average; above 1 a backlog builds while jobs arrive and drains after."""
    cluster = load_nodes(nodes)
    memory, vcores = sum(n.memory_mb for n in cluster), sum(n.vcores for n in cluster)
    work = 0.0
    for job in jobs:
        for stage in job.stages:
            share = max(stage.memory_mb / memory, stage.vcores / vcores)
            seconds = sum(stage.durations_s) if stage.durations_s else stage.tasks * stage.estimated_task_s
            work += seconds * share
    arrivals = [j.arrival_s for j in jobs]
    span = max(arrivals) - min(arrivals)
    if span <= 0:
        raise ValueError("the jobs arrive at one instant: no arrival rate to scale")
    return work / span


_MEMORY_BOUND = ((4096, 0.35), (8192, 0.45), (12288, 0.2))
_CPU_BOUND = ((1024, 0.7), (2048, 0.3))

FAMILIES: tuple[Family, ...] = (
    Family("tpcds", "TPC-DS-like DAGs (Carbyne's Tables 1-2), the workload carbyne was first tuned on: "
           "eval_carbyne's main run, arrivals compressed 1.25x", "tune", compress=1.25),
    Family("chains", "long critical paths, few branches and barriers", "held",
           TpcdsOptions(depth_scale=1.8, join_p=0.2)),
    Family("bushy", "shallow DAGs: many stages side by side on few levels, more input paths", "tune",
           TpcdsOptions(depth_scale=0.5, root_p=0.3)),
    Family("barriers", "most stages join two branches", "held", TpcdsOptions(join_p=0.9)),
    Family("forests", "no joins but the output: disjoint paths that meet only at the end", "tune",
           TpcdsOptions(join_p=0.0, root_p=0.4)),
    Family("big-dags", "twice the stages (median 14, p95 40)", "held",
           TpcdsOptions(stages_median=14.0, stages_p95=40.0)),
    Family("small-dags", "two to six stages", "tune", TpcdsOptions(stages_median=3.0, stages_p95=6.0)),
    Family("skewed", "heavy-tailed stage widths and task times", "held",
           TpcdsOptions(tasks_sigma=1.5, task_s_sigma=1.2)),
    Family("even", "stages of similar widths and task times", "tune",
           TpcdsOptions(tasks_sigma=0.4, task_s_sigma=0.3)),
    Family("memory-bound", "containers of 4-12 GB with one vcore on 48 GB / 16 vcore nodes", "held",
           TpcdsOptions(memory_choices=_MEMORY_BOUND, vcore_choices=((1, 1.0),)), nodes="20:49152:16"),
    Family("cpu-bound", "containers of 1-2 GB with 2-8 vcores on 20 GB / 24 vcore nodes", "tune",
           TpcdsOptions(memory_choices=_CPU_BOUND, vcore_choices=((2, 0.4), (4, 0.4), (8, 0.2))),
           nodes="20:20480:24"),
    Family("big-nodes", "the same capacity in 5 nodes of 80 GB / 32 vcores", "tune", nodes="5:81920:32"),
    Family("small-nodes", "the same capacity in 40 nodes of 10 GB / 4 vcores (more fragmentation)", "held",
           nodes="40:10240:4"),
    Family("heavy", "offered load 1.6: a backlog builds for most of the run", "tune", load=1.6),
    Family("light", "offered load 0.8: the cluster mostly keeps up", "held", load=0.8),
)


def family(name: str) -> Family:
    for f in FAMILIES:
        if f.name == name:
            return f
    raise ValueError(f"unknown family {name!r}; known: {', '.join(f.name for f in FAMILIES)}")
