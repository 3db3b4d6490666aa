"""Where every task of a DAG job stands: the ApplicationMaster's state, kept pure.

A task is WAITING until every task of every parent stage has succeeded, then RUNNABLE; it is
RUNNING while a container runs it, and ends SUCCEEDED or, after ``max_attempts`` failed attempts,
FAILED (which fails the job). Containers lost through no fault of the task (exit status -100
ABORTED, -102 PREEMPTED) send it back to RUNNABLE without counting an attempt.

No I/O and no clock: callers pass ``now``. The live AM (``am.dag``) and the simulator drive it the
same way.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from random import Random
from typing import Any, Literal

from am.jobspec import Job, Stage
from common.exits import EXIT_ABORTED, EXIT_PREEMPTED, EXIT_SUCCESS
from common.resources import Resources

TaskStatus = Literal["WAITING", "RUNNABLE", "RUNNING", "SUCCEEDED", "FAILED"]
Outcome = Literal["succeeded", "retry", "failed", "requeued", "unknown"]

NOT_THE_TASKS_FAULT = frozenset({EXIT_ABORTED, EXIT_PREEMPTED})


@dataclass(slots=True)
class TaskState:
    stage: str
    index: int
    status: TaskStatus = "WAITING"
    failures: int = 0  # attempts that count toward the stage's max_attempts
    launches: int = 0  # every launch, including ones lost with their node
    container_id: str | None = None
    started_at: float | None = None
    measured_s: float | None = None
    last_exit_status: int | None = None
    last_diagnostics: str = ""

    @property
    def attempt(self) -> int:
        """The number of the current (or next) launch, from 0."""
        return self.launches - 1 if self.status == "RUNNING" else self.launches


@dataclass(frozen=True, slots=True)
class Completion:
    """What a finished container meant for its task."""

    outcome: Outcome
    stage: str = ""
    task: int = -1
    exit_status: int = 0
    duration_s: float = 0.0
    newly_runnable: tuple[str, ...] = ()  # stages whose tasks became runnable


@dataclass(frozen=True, slots=True)
class StageTally:
    """What ``DagState.tally`` counts in one stage."""

    work_s: float
    running_s: list[float]
    runnable: int
    waiting: int


@dataclass(slots=True)
class _StageState:
    spec: Stage
    index: int
    depth: int
    tasks: list[TaskState] = field(default_factory=list)
    measured: list[float] = field(default_factory=list)
    measured_sum: float = 0.0  # of ``measured``, kept as it grows: estimates are read on every heartbeat
    declared_sum: float = 0.0  # the job file's per-task durations of the tasks in ``measured``
    # the tasks not yet succeeded, in the order they start (index order, or a shuffled one for a first stage):
    # remaining-work sums skip the others (each adds 0.0 exactly)
    unfinished: dict[int, None] = field(default_factory=dict)


class DagState:
    """Task states of one job attempt, and the duration estimates they imply.

    Runnable tasks start in index order, except that with ``shuffle_seed`` the tasks of a stage with no parents
    start in an order drawn from it: the RM may hold a wide job of unknown size to a few pilot tasks (SLearn's
    sampling gate), and its estimate is only as good as the pilots are a random sample of their stage, which
    the first few partitions of an input (often the largest, or sorted by key) need not be. The same seed gives
    the same order, so a restarted attempt goes on where the last one stopped."""

    def __init__(self, job: Job, shuffle_seed: int | None = None) -> None:
        self._job = job
        depths = job.depths()
        self._topological = [s.name for s in job.topological_order()]  # parents before children
        self._stages: dict[str, _StageState] = {}
        for i, spec in enumerate(job.stages):
            st = _StageState(spec=spec, index=i, depth=depths[spec.name])
            st.tasks = [TaskState(stage=spec.name, index=t) for t in range(spec.tasks)]
            order = list(range(spec.tasks))
            if shuffle_seed is not None and not spec.parents:
                Random(shuffle_seed * 1_000_003 + i).shuffle(order)
            st.unfinished = dict.fromkeys(order)
            self._stages[spec.name] = st
        self._by_container: dict[str, TaskState] = {}
        self._provisional: set[str] = set()  # resumed tasks whose container's fate the RM has yet to tell
        self._failed: TaskState | None = None
        for st in self._stages.values():
            if not st.spec.parents:
                for task in st.tasks:
                    task.status = "RUNNABLE"

    # ------------------------------------------------------------------ read side

    @property
    def job(self) -> Job:
        return self._job

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self._job.stages

    def stage_index(self, stage: str) -> int:
        return self._stages[stage].index

    def depth(self, stage: str) -> int:
        return self._stages[stage].depth

    def capability(self, stage: str) -> Resources:
        return self._stages[stage].spec.capability

    def tasks(self, stage: str | None = None) -> Iterator[TaskState]:
        states = [self._stages[stage]] if stage is not None else list(self._stages.values())
        for st in states:
            yield from st.tasks

    def task(self, stage: str, index: int) -> TaskState:
        return self._stages[stage].tasks[index]

    def count(self, stage: str, status: TaskStatus) -> int:
        return sum(1 for t in self._stages[stage].tasks if t.status == status)

    def runnable(self, stage: str) -> list[int]:
        """Indices of the stage's tasks that may start now and are not running."""
        st = self._stages[stage]
        tasks = st.tasks
        return [i for i in st.unfinished if tasks[i].status == "RUNNABLE"]

    def stage_done(self, stage: str) -> bool:
        st = self._stages[stage]
        return len(st.measured) == len(st.tasks)  # one measurement per succeeded task

    def stage_ready(self, stage: str) -> bool:
        """True when every parent stage has fully succeeded."""
        return all(self.stage_done(p) for p in self._stages[stage].spec.parents)

    def task_for_container(self, container_id: str) -> TaskState | None:
        return self._by_container.get(container_id)

    def running(self) -> list[TaskState]:
        return list(self._by_container.values())

    @property
    def total_tasks(self) -> int:
        return self._job.total_tasks

    @property
    def succeeded(self) -> int:
        return sum(len(st.measured) for st in self._stages.values())  # one measurement per success

    def progress(self) -> float:
        """Succeeded tasks as a fraction of all tasks."""
        return self.succeeded / self.total_tasks

    @property
    def failed_task(self) -> TaskState | None:
        """The first task that ran out of attempts; set means the job has failed."""
        return self._failed

    @property
    def succeeded_all(self) -> bool:
        return self.succeeded == self.total_tasks

    @property
    def finished(self) -> bool:
        return self._failed is not None or self.succeeded_all

    # ------------------------------------------------------------------ estimates

    def measured_durations(self, stage: str) -> list[float]:
        return list(self._stages[stage].measured)

    def measured_total(self, stage: str) -> tuple[int, float]:
        """How many of the stage's finished tasks have a run time, and those run times summed."""
        st = self._stages[stage]
        return len(st.measured), st.measured_sum

    def estimate_s(self, stage: str, task: int | None = None) -> float:
        """Expected duration of one task: the mean measured duration of the stage's finished tasks
        once there is one, else the spec's per-task (or per-stage) estimate."""
        st = self._stages[stage]
        if st.measured:
            return st.measured_sum / len(st.measured)
        return st.spec.task_duration_s(task) if task is not None else st.spec.estimated_task_s

    def remaining_task_s(self, task: TaskState, now: float) -> float:
        if task.status == "SUCCEEDED":
            return 0.0
        estimate = self.estimate_s(task.stage, task.index)
        if task.status == "RUNNING" and task.started_at is not None:
            return max(0.0, estimate - (now - task.started_at))
        return estimate

    def tally(self, stage: str, now: float) -> StageTally:
        """One pass over the stage's tasks not yet succeeded, in index order: their ``remaining_task_s`` summed
        in that order, each running task's, and how many wait to run (runnable, or waiting for a parent)."""
        st = self._stages[stage]
        tasks = st.tasks
        if st.measured:
            each = st.measured_sum / len(st.measured)
            durations = None
        else:
            durations = st.spec.durations_s
            each = st.spec.estimated_task_s if durations is None else 0.0
        work = 0.0
        running: list[float] = []
        runnable = waiting = 0
        for i in st.unfinished:
            task = tasks[i]
            status = task.status
            estimate = each if durations is None else durations[i]
            if status == "RUNNING":
                left = max(0.0, estimate - (now - task.started_at)) if task.started_at is not None else estimate
                running.append(left)
                work += left
            elif status == "RUNNABLE":
                runnable += 1
                work += estimate
            elif status == "WAITING":
                waiting += 1
                work += estimate
            elif status != "SUCCEEDED":
                work += estimate
        return StageTally(work, running, runnable, waiting)

    def longest_remaining_s(self, now: float) -> dict[str, float]:
        """Per stage, its longest remaining task (0 for a stage done). A stage whose job file gives each task its
        own duration (``durations_s``) counts its longest one, scaled by how its finished tasks ran against
        theirs (the job's finished tasks, for a stage with none yet); else every task is the stage's estimate.
        A running task counts what is left of it."""
        measured = sum(st.measured_sum for st in self._stages.values())
        declared = sum(st.declared_sum for st in self._stages.values())
        job_ratio = measured / declared if declared > 0 and measured > 0 else 1.0
        out: dict[str, float] = {}
        for name, st in self._stages.items():
            durations = st.spec.durations_s
            if durations is None:
                each, ratio = self.estimate_s(name), 1.0
            else:
                each = 0.0
                ratio = st.measured_sum / st.declared_sum if st.declared_sum > 0 and st.measured else job_ratio
            longest = 0.0
            for i in st.unfinished:
                task = st.tasks[i]
                estimate = each if durations is None else durations[i] * ratio
                if task.status == "RUNNING" and task.started_at is not None:
                    estimate = max(0.0, estimate - (now - task.started_at))
                longest = max(longest, estimate)
            out[name] = longest
        return out

    def remaining_critical_path_s(self, now: float, longest: Mapping[str, float] | None = None) -> float:
        """The least time the job still needs with as many containers as it likes: the longest chain, through
        the stages not yet done, of each stage's longest remaining task (``longest_remaining_s``). The packers
        see a stage's tasks as alike, so a stage with one long task ends later than they plan; this is the
        bound they miss."""
        longest = self.longest_remaining_s(now) if longest is None else longest
        finish: dict[str, float] = {}
        for name in self._topological:
            after = max((finish[p] for p in self._stages[name].spec.parents), default=0.0)
            finish[name] = after + longest[name]
        return max(finish.values(), default=0.0)

    def tails_s(self, now: float, longest: Mapping[str, float] | None = None) -> dict[str, float]:
        """Per stage, the longest chain of longest remaining tasks from it to the job's end, itself included:
        a stage with a longer tail holds up the job's end longer for every second it waits."""
        longest = self.longest_remaining_s(now) if longest is None else longest
        children: dict[str, list[str]] = {name: [] for name in self._stages}
        for name, st in self._stages.items():
            for p in st.spec.parents:
                children[p].append(name)
        tail: dict[str, float] = {}
        for name in reversed(self._topological):
            tail[name] = longest[name] + max((tail[c] for c in children[name]), default=0.0)
        return {name: tail[name] for name in self._stages}  # in the job's stage order

    def remaining_stage_s(self, stage: str, now: float) -> float:
        """``remaining_task_s`` of the stage's tasks, summed in index order (read at every heartbeat)."""
        if self.stage_done(stage):
            return 0.0
        return self.tally(stage, now).work_s

    def remaining_work_s(self, now: float) -> float:
        """Estimated container-seconds still to run, for all unfinished tasks of the job."""
        return sum(self.remaining_stage_s(name, now) for name in self._stages)

    # ------------------------------------------------------------------ transitions

    def start(self, stage: str, index: int, container_id: str, now: float) -> int:
        """A container was assigned to a runnable task; returns the launch's attempt number."""
        task = self._stages[stage].tasks[index]
        if task.status != "RUNNABLE":
            raise ValueError(f"task {stage}/{index} is {task.status}, not RUNNABLE")
        if container_id in self._by_container:
            raise ValueError(f"container {container_id} already runs a task")
        task.status = "RUNNING"
        task.container_id = container_id
        task.started_at = now
        task.launches += 1
        self._by_container[container_id] = task
        return task.launches - 1

    def complete(
        self,
        container_id: str,
        exit_status: int,
        now: float,
        diagnostics: str = "",
        *,
        measured_s: float | None = None,
    ) -> Completion:
        """The container ended with ``exit_status``; move its task on. ``measured_s`` is the run
        time when the NodeManager reported one; otherwise it is ``now`` minus the start."""
        task = self._by_container.pop(container_id, None)
        self._provisional.discard(container_id)
        if task is None:
            return Completion(outcome="unknown", exit_status=exit_status)
        started = task.started_at if task.started_at is not None else now
        duration = max(0.0, measured_s if measured_s is not None else now - started)
        task.container_id = None
        task.started_at = None
        task.last_exit_status = exit_status
        task.last_diagnostics = diagnostics

        def outcome(kind: Outcome, newly_runnable: tuple[str, ...] = ()) -> Completion:
            return Completion(kind, task.stage, task.index, exit_status, duration, newly_runnable)

        if exit_status == EXIT_SUCCESS:
            task.status = "SUCCEEDED"
            self._stages[task.stage].unfinished.pop(task.index, None)
            task.measured_s = duration
            self._stages[task.stage].measured.append(duration)
            self._stages[task.stage].measured_sum += duration
            self._stages[task.stage].declared_sum += self._stages[task.stage].spec.task_duration_s(task.index)
            return outcome("succeeded", self._release_children(task.stage))
        if exit_status in NOT_THE_TASKS_FAULT:
            task.status = "RUNNABLE"
            return outcome("requeued")
        task.failures += 1
        if task.failures >= self._stages[task.stage].spec.max_attempts:
            task.status = "FAILED"
            if self._failed is None:
                self._failed = task
            return outcome("failed")
        task.status = "RUNNABLE"
        return outcome("retry")

    def _release_children(self, stage: str) -> tuple[str, ...]:
        if not self.stage_done(stage):
            return ()
        released = []
        for child in self._job.children(stage):
            if self.stage_ready(child.name):
                for task in self._stages[child.name].tasks:
                    if task.status == "WAITING":
                        task.status = "RUNNABLE"
                released.append(child.name)
        return tuple(released)

    # ------------------------------------------------------------------ across attempts

    def checkpoint(self) -> dict[str, Any]:
        """What a later attempt of the job needs to go on where this one is: the run time of every succeeded
        task, and which container runs which task (containers may pass to the next attempt)."""
        done = {name: {str(t.index): t.measured_s or 0.0 for t in st.tasks if t.status == "SUCCEEDED"}
                for name, st in self._stages.items()}
        return {"done": {name: tasks for name, tasks in done.items() if tasks},
                "running": {cid: [t.stage, t.index, t.launches] for cid, t in self._by_container.items()}}

    def resume(self, checkpoint: Mapping[str, Any], inherited: Collection[str], now: float) -> tuple[int, int]:
        """Go on from an earlier attempt's ``checkpoint``: its succeeded tasks stay succeeded, and the tasks of
        the ``inherited`` containers (passed on by the RM) go on running in them. A task whose container was
        not passed on may have ended while no AM could hear it: it is held until :meth:`settle`, after the RM
        has handed over those completions. Entries that do not fit this job are ignored. Returns (tasks carried
        over as succeeded, containers adopted)."""
        carried = adopted = 0
        done = checkpoint.get("done", {})
        for name, tasks in done.items() if isinstance(done, dict) else ():
            st = self._stages.get(str(name))
            for key, secs in tasks.items() if st is not None and isinstance(tasks, dict) else ():
                task = _task_at(st, key) if st is not None else None
                if task is None or task.status == "SUCCEEDED" or not isinstance(secs, int | float):
                    continue
                assert st is not None
                task.status, task.measured_s = "SUCCEEDED", float(secs)
                st.unfinished.pop(task.index, None)
                st.measured.append(float(secs))
                st.measured_sum += float(secs)
                st.declared_sum += st.spec.task_duration_s(task.index)
                carried += 1
        for name, st in self._stages.items():
            if self.stage_ready(name):
                for task in st.tasks:
                    if task.status == "WAITING":
                        task.status = "RUNNABLE"
        running = checkpoint.get("running", {})
        for cid, entry in running.items() if isinstance(running, dict) else ():
            if cid in self._by_container or not isinstance(entry, list) or len(entry) != 3:
                continue
            st = self._stages.get(str(entry[0]))
            task = _task_at(st, entry[1]) if st is not None else None
            if task is None or task.status != "RUNNABLE":
                continue
            task.status, task.container_id, task.started_at = "RUNNING", cid, now
            task.launches = max(task.launches + 1, int(entry[2]) if isinstance(entry[2], int) else 0)
            self._by_container[cid] = task
            if cid in inherited:
                adopted += 1
            else:
                self._provisional.add(cid)
        return carried, adopted

    def settle(self, now: float) -> int:
        """The RM has handed over what ended before this attempt: a held task whose container it did not
        report is gone with its container, and runs again. Returns how many were given up."""
        lost = [cid for cid in self._provisional if cid in self._by_container]
        for cid in lost:
            self.complete(cid, EXIT_ABORTED, now, "its container ended with the attempt that started it")
        self._provisional.clear()
        return len(lost)


def _task_at(st: _StageState, key: object) -> TaskState | None:
    try:
        index = int(str(key))
    except ValueError:
        return None
    return st.tasks[index] if 0 <= index < len(st.tasks) else None
