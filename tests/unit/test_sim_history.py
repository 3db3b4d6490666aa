"""The simulator keeps each Jockey run's stage report as the live RM does, and hands a recurring job's next AM
the profile its earlier runs make (``sim.history``)."""

from __future__ import annotations

from am.jobspec import Job, parse_job
from am.policies.jockey_policy import JockeyAsks
from sim.engine import Faults, SimConfig, Simulator
from sim.policies import make_policy
from tests.unit.test_jockey_policy import GB, NODES

DUE = [[0, 1], [2, 1], [3, -1]]  # minutes: due 120 s after it starts


def daily(run: int, arrival: float) -> Job:
    """One run of a recurring job whose file says its tasks take 10 s."""
    return parse_job({"id": f"daily-r{run}", "name": "daily", "arrival_s": arrival, "utility": DUE,
                      "am_policy": "jockey",
                      "stages": [{"name": "map", "tasks": 60, "duration_s": 10.0, "memory_mb": GB},
                                 {"name": "reduce", "tasks": 10, "duration_s": 10.0, "memory_mb": GB,
                                  "parents": ["map"]}]})


class Watched(Simulator):
    """Keeps each AM's jockey policy, to read the profile it was given and its first request."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.policies: dict[str, JockeyAsks] = {}

    def _arrived(self, index: int) -> None:
        super()._arrived(index)
        policy = self.ams[index].policy
        assert isinstance(policy, JockeyAsks)
        self.policies[self.jobs[index].id] = policy


def run(learn: bool) -> Watched:
    """Every task runs twice as long as the job file says; the second run starts after the first has ended."""
    sim = Watched([daily(0, 0.0), daily(1, 1_000.0)], NODES, make_policy("jockey"),
                  SimConfig(seed=1, faults=Faults(slowdown=2.0), learn_profiles=learn))
    result = sim.run()
    assert all(r.status == "SUCCEEDED" for r in result.jobs)
    return sim


def first_request(sim: Watched, job_id: str) -> int:
    controller = sim.policies[job_id].controller
    assert controller is not None
    return controller.trace[0].requested_units


def test_a_recurring_jockey_job_is_modelled_from_its_earlier_run() -> None:
    sim = run(learn=True)
    assert sim.policies["daily-r0"].profile is None  # the first run models itself from its job file
    learnt = sim.policies["daily-r1"].profile
    assert learnt is not None
    assert learnt.name == "daily"
    assert [s.name for s in learnt.stages] == ["map", "reduce"]
    assert [s.tasks for s in learnt.stages] == [60, 10]
    assert all(19.0 <= s.mean_run_s <= 21.0 for s in learnt.stages)  # the run times it measured, not the file's
    assert sim.history.runs(("daily", "root.default", "sim")) == 2
    # knowing its tasks take 20 s, the second run asks for more from its first decision
    assert first_request(sim, "daily-r1") > first_request(sim, "daily-r0")


def test_without_learning_every_run_models_its_job_file() -> None:
    sim = run(learn=False)
    assert sim.policies["daily-r1"].profile is None
    assert first_request(sim, "daily-r1") == first_request(sim, "daily-r0")
